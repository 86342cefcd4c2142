"""What the rule probes and the snapshots they re-run on cost, per notebook, side by side with another revision.

    python benchmarks/bench_probes.py [--students 3] [--before main] [--repeat 1]

In the kernel: each notebook's solution runs as autograde runs it (its cells, hidden tests included, one after the
other in an IPython shell of a fresh Python, with this tree's code or with --before REV's), and the seconds spent in
the rule probes (``in_kernel.probe_runner``) and in the snapshots (``in_kernel.snapshot_hook``'s AST hook, which take
each statement's inputs as it runs) are added up, with the tensor bytes the snapshots hold at the end.

Through nbgrader: each notebook in a course of its own, a class of --students copies of its solution graded with
``nbgrader autograde`` and the course's configuration (kernels in the sandbox): without probes (the hidden tests'
``probe=(...)`` removed) and with them, with this tree's code and with REV's. Seconds per notebook. On a shared
machine, compare figures of the same run only; --repeat runs the configurations again, in turn, and keeps each one's
fastest.
"""

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENT = "backprop_ninja"
NOTEBOOKS = ["ex1_atomic_backward", "ex2_cross_entropy_backward", "ex3_batchnorm_backward", "ex4_manual_training"]
PROBE_ARGUMENT = re.compile(r", probe=\([^)]*\)")


def in_kernel(path: str) -> dict:
    """In a fresh Python (``--in-kernel PATH``): the notebook's cells run as autograde runs them; seconds, bytes."""
    import nbformat
    import torch
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from autograder import in_kernel
    from autograder.data import EMBEDDED_NAMES, NAMES_VARIABLE, SEED_VARIABLE

    os.environ.update(
        {"NBGRADER_EXECUTION": "autograde", SEED_VARIABLE: "1234567", NAMES_VARIABLE: str(EMBEDDED_NAMES)}
    )
    os.environ["MPLBACKEND"] = "Agg"
    spent = {"probes": 0.0, "snapshots": 0.0}

    def timed(key, function):
        def run(*args):
            start = time.process_time()
            try:
                return function(*args)
            finally:
                spent[key] += time.process_time() - start

        return run

    if hasattr(in_kernel, "reports"):  # this tree's package
        from autograder.in_kernel import reports, snapshot_hook

        reports.run_probe = timed("probes", reports.run_probe)
        snapshot_hook._snapshot = timed("snapshots", snapshot_hook._snapshot)
        snapshot_hook._SnapshotCalls.visit = timed("snapshots", snapshot_hook._SnapshotCalls.visit)
        snapshots = snapshot_hook.snapshots
    else:  # an older revision's module, with or without snapshots
        in_kernel._probe = timed("probes", in_kernel._probe)
        if hasattr(in_kernel, "_snapshot"):
            in_kernel._snapshot = timed("snapshots", in_kernel._snapshot)
            in_kernel._SnapshotCalls.visit = timed("snapshots", in_kernel._SnapshotCalls.visit)
        snapshots = getattr(in_kernel, "_snapshots", {})
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    start = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for source in cells:
            shell.run_cell(source, store_history=True)
    total = time.process_time() - start
    values = [v for seen in snapshots.values() for v in seen.values()]
    values += [x for v in values if isinstance(v, (list, tuple)) for x in v]
    values += [x for v in values if isinstance(v, dict) for x in v.values()]
    held = sum(v.element_size() * v.nelement() for v in values if isinstance(v, torch.Tensor))
    return {"cells": total, **spent, "count": len(snapshots), "bytes": held}


def measure_in_kernel(package, repeat: int) -> dict:
    """notebook -> in_kernel()'s figures (the fastest of ``repeat``), each run in a fresh Python with ``package`` (or
    this tree) first on the path."""
    env = {**os.environ, "PYTHONPATH": str(package or REPO)}
    found = {}
    for _ in range(repeat):
        for name in NOTEBOOKS:
            path = REPO / "source" / ASSIGNMENT / f"{name}.ipynb"
            argv = [sys.executable, __file__, "--in-kernel", str(path)]
            result = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
            if result.returncode != 0:
                raise RuntimeError(f"{name}: {result.stderr[-3000:]}")
            figures = json.loads(result.stdout.splitlines()[-1])
            found[name] = {k: min(v, found.get(name, figures)[k]) for k, v in figures.items()}
    return found


def nbgrader(root: Path, *args, env=None) -> float:
    start = time.monotonic()
    argv = [sys.executable, "-m", "nbgrader", *args]
    result = subprocess.run(argv, cwd=root, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
    return time.monotonic() - start


def build_course(root: Path, name: str, students: int, probes: bool) -> None:
    """A course whose assignment is the notebook ``name`` alone, and a class of ``students`` copies of its solution."""
    import nbformat

    from autograder.authoring.notebooks import write_notebook
    from autograder.authoring.submissions import solved

    root.mkdir(parents=True)
    root.chmod(0o755)  # the sandboxed kernels run as other uids
    shutil.copy(REPO / "nbgrader_config.py", root)
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    source = nbformat.read(REPO / "source" / ASSIGNMENT / f"{name}.ipynb", as_version=4)
    if not probes:
        for cell in source.cells:
            cell.source = PROBE_ARGUMENT.sub("", cell.source)
    write_notebook(source, root / "source" / ASSIGNMENT / f"{name}.ipynb")
    nbgrader(root, "generate_assignment", ASSIGNMENT, "--force", "--log-level=ERROR")
    release = nbformat.read(root / "release" / ASSIGNMENT / f"{name}.ipynb", as_version=4)
    for k in range(students):
        folder = root / "submitted" / f"student{k:02d}" / ASSIGNMENT
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(solved(release, source), folder / f"{name}.ipynb")


def measure_nbgrader(folder: Path, runs: list, students: int, repeat: int) -> dict:
    """(label, notebook) -> the fastest of ``repeat`` autogrades, in seconds per notebook."""
    best = {}
    for _ in range(repeat):
        for label, package, probes in runs:
            env = {**os.environ, "PYTHONPATH": str(package)} if package else None
            for name in NOTEBOOKS:
                root = folder / f"{'with' if probes else 'without'}-{name}"
                if not root.exists():
                    build_course(root, name, students, probes)
                shutil.rmtree(root / "autograded", ignore_errors=True)
                seconds = nbgrader(root, "autograde", ASSIGNMENT, "--force", "--log-level=ERROR", env=env) / students
                best[label, name] = min(best.get((label, name), seconds), seconds)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=3)
    parser.add_argument("--before", help="also measure the autograder package of this git revision (e.g. main)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--in-kernel", help=argparse.SUPPRESS)  # the fresh Python of measure_in_kernel
    args = parser.parse_args()
    if args.in_kernel:
        print(json.dumps(in_kernel(args.in_kernel)))
        return
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from revision import package_at

    package = package_at(args.before) if args.before else None
    revisions = [("now", None)] + ([(f"@{args.before[:10]}", package)] if package else [])
    try:
        kernel = {label: measure_in_kernel(p, args.repeat) for label, p in revisions}
        runs = [
            (f"{'with' if probes else 'without'} probes {lb}", p, probes) for lb, p in revisions for probes in (0, 1)
        ]
        with tempfile.TemporaryDirectory(prefix="bench-probes-") as folder:
            Path(folder).chmod(0o755)
            seconds = measure_nbgrader(Path(folder), runs, args.students, args.repeat)
    finally:
        if package:
            shutil.rmtree(package, ignore_errors=True)
    columns = [(f"{what} {lb}", lb, what) for what in ("cells", "probes") for lb, _ in revisions]
    print(f"In the kernel: the solution run as autograde runs it, seconds (fastest of {args.repeat})")
    print(f"  {'notebook':28s}" + "".join(f"{title:>18s}" for title, _, _ in columns) + "  snapshots now: s, count, MB")
    for name in NOTEBOOKS:
        now = kernel["now"][name]
        row = "".join(f"{kernel[lb][name][what]:18.3f}" for _, lb, what in columns)
        print(f"  {name:28s}{row}  {now['snapshots']:8.3f} {now['count']:5d} {now['bytes'] / 1e6:6.1f}")
    print(f"\nThrough nbgrader autograde, seconds per notebook ({args.students} students, fastest of {args.repeat}):")
    print(f"  {'notebook':28s}" + "".join(f"{label:>26s}" for label, _, _ in runs))
    for name in NOTEBOOKS:
        print(f"  {name:28s}" + "".join(f"{seconds[label, name]:26.2f}" for label, _, _ in runs))


if __name__ == "__main__":
    main()

"""Seconds per student: stock ``nbgrader autograde`` against ``backprop-ninja grade``.

    python benchmarks/bench_class_grading.py --students 20          # every configuration
    python benchmarks/bench_class_grading.py --students 100 --configs grade-2-sandbox

Builds a demo class in a fresh course (every notebook present in source/, each student a
perfect, a blank or a one-mistake submission of each), then grades the same class from scratch
with each configuration and prints seconds per student:

  floor             starting a kernel and ``import torch`` (what no grader can avoid), per notebook
  stock             ``nbgrader autograde`` with the course config, GradingExecute.sandbox=False:
                    nbgrader's own Execute loop, one process, one student after another
  grade-W-sandbox   ``backprop-ninja grade --workers W`` (W = 1, 2), kernels in bubblewrap
  grade-W-plain     the same with ``--unsandboxed``

``grade`` runs here with ``--no-feedback`` (stock autograde writes none); the feedback's cost is
measured on its own (``grade-2-sandbox-feedback``). ``--before REV`` also grades with the autograder
package of git revision REV, right after each ``grade`` configuration (``grade-2-sandbox@REV``), and
prints the two side by side:

    python benchmarks/bench_class_grading.py --configs grade-2-plain grade-2-sandbox --before main --repeat 3
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from revision import package_at  # noqa: E402

from autograder.authoring.submissions import grade_id, solved  # noqa: E402

ASSIGNMENT = "backprop_ninja"
CONFIGS = [
    "floor",
    "stock",
    "grade-1-plain",
    "grade-1-sandbox",
    "grade-2-plain",
    "grade-2-sandbox",
    "grade-2-sandbox-feedback",
]


def build_course(root: Path, students: int, only=None) -> list:
    root.mkdir(parents=True)
    root.chmod(0o755)
    shutil.copy(REPO / "nbgrader_config.py", root)
    shutil.copytree(REPO / "source", root / "source")
    for path in (root / "source" / ASSIGNMENT).glob("*.ipynb"):
        if only and path.stem not in only:
            path.unlink()
    run(root, [sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT, "--force", "--log-level=ERROR"])
    notebooks = sorted(p.stem for p in (root / "source" / ASSIGNMENT).glob("*.ipynb"))
    for notebook in notebooks:
        release = nbformat.read(root / "release" / ASSIGNMENT / f"{notebook}.ipynb", as_version=4)
        source = nbformat.read(root / "source" / ASSIGNMENT / f"{notebook}.ipynb", as_version=4)
        answers = [grade_id(c) for c in release.cells if grade_id(c).startswith("answer_")]
        for k in range(students):
            if k % 5 == 4:
                nb = release  # blank
            elif k % 5 in (1, 3) and answers:
                nb = solved(release, source, {answers[(k * 7) % len(answers)]: "pass"})  # one step left out
            else:
                nb = solved(release, source)
            folder = root / "submitted" / f"student{k:03d}" / ASSIGNMENT
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, folder / f"{notebook}.ipynb")
    shutil.copy(root / "gradebook.db", root / "gradebook.pristine.db")
    return notebooks


def cpu_seconds() -> float:
    """CPU time of every finished child process (kernels included, once their parents reaped them)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cwd: Path, argv: list, env=None) -> float:
    start = time.monotonic()
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
    return time.monotonic() - start


def reset(root: Path) -> None:
    for folder in ("autograded", "feedback", ".grading"):
        shutil.rmtree(root / folder, ignore_errors=True)
    shutil.copy(root / "gradebook.pristine.db", root / "gradebook.db")


def floor(repeats: int = 3) -> float:
    """Seconds to start a plain ipykernel and import torch in it (the median of a few)."""
    from jupyter_client.manager import start_new_kernel

    times = []
    for _ in range(repeats):
        start = time.monotonic()
        km, kc = start_new_kernel(kernel_name="python3")
        kc.execute_interactive("import torch", timeout=120)
        times.append(time.monotonic() - start)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return statistics.median(times)


def measure(root: Path, config: str, notebooks: list, package=None) -> float:
    """Seconds for one configuration; ``package``: a folder holding another revision's autograder package."""
    if config == "floor":
        return floor() * len(notebooks)
    reset(root)
    if config == "stock":
        return run(
            root,
            [
                sys.executable,
                "-m",
                "nbgrader",
                "autograde",
                ASSIGNMENT,
                "--GradingExecute.sandbox=False",
                "--log-level=ERROR",
            ],
        )
    _, workers, kind, *rest = config.split("-")
    argv = (
        [sys.executable, "-m", "autograder.cli", "grade", "--course", str(root), "--workers", workers, "--quiet"]
        + (["--unsandboxed"] if kind == "plain" else [])
        + ([] if rest else ["--no-feedback"])
    )
    return run(root, argv, env={**os.environ, "PYTHONPATH": str(package)} if package else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--configs", nargs="+", default=CONFIGS, choices=CONFIGS)
    parser.add_argument("--notebooks", nargs="+", help="grade only these notebooks (default: all in source/)")
    parser.add_argument("--dir", help="course folder to use (default: a temporary one, removed afterwards)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--before", help="also grade with the autograder package of this git revision (e.g. main)")
    parser.add_argument("--repeat", type=int, default=1, help="run all configurations this many times; medians")
    args = parser.parse_args()
    before = package_at(args.before) if args.before else None
    root = Path(args.dir or tempfile.mkdtemp(prefix="bench-class-", dir="/var/tmp")) / "course"
    notebooks = build_course(root, args.students, args.notebooks)
    print(
        f"{args.students} students x {len(notebooks)} notebooks ({', '.join(notebooks)}), "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start",
        flush=True,
    )
    seconds, cpu = {}, {}
    runs = []
    for config in args.configs:  # with --before, each grade configuration twice in a row: now, then at REV
        runs.append((config, None))
        if before and config.startswith("grade"):
            runs.append((f"{config}@{args.before}", before))
    for config, package in runs * args.repeat:  # a busy machine slows every configuration of a round alike
        cpu_before = cpu_seconds()
        seconds.setdefault(config, []).append(measure(root, config.split("@")[0], notebooks, package))
        cpu.setdefault(config, []).append((cpu_seconds() - cpu_before) / (1 if config == "floor" else args.students))
        per = seconds[config][-1] if config == "floor" else seconds[config][-1] / args.students
        print(
            f"  {config:26s} {per:7.2f} s/student"
            + ("" if config == "floor" else f"  ({seconds[config][-1]:.0f} s)")
            + f"  CPU {cpu[config][-1]:6.2f} s/student  load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    seconds = {c: statistics.median(s) for c, s in seconds.items()}
    cpu = {c: statistics.median(s) for c, s in cpu.items()}
    per_student = {c: (s if c == "floor" else s / args.students) for c, s in seconds.items()}
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    if args.repeat > 1:
        print(f"medians of {args.repeat} runs:")
        for c, s in per_student.items():
            print(f"  {c:26s} {s:7.2f} s/student")
    if "stock" in per_student:
        for c in per_student:
            if c.startswith("grade"):
                print(f"  speed-up of {c} over stock nbgrader: {per_student['stock'] / per_student[c]:.2f}x")
    for revision in ("", f"@{args.before}") if before else ("",):
        for w in ("1", "2"):
            plain, boxed = (
                per_student.get(f"grade-{w}-plain{revision}"),
                per_student.get(f"grade-{w}-sandbox{revision}"),
            )
            if plain and boxed:
                print(f"  sandbox cost with {w} worker(s){revision or ' now'}: {100 * (boxed - plain) / plain:+.1f}%")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "students": args.students,
                    "notebooks": notebooks,
                    "seconds_per_student": per_student,
                    "cpu_per_student": cpu,
                },
                indent=1,
            )
        )
    if not args.dir:
        shutil.rmtree(root.parent, ignore_errors=True)
    if before:
        shutil.rmtree(before, ignore_errors=True)


if __name__ == "__main__":
    main()

"""How long each release notebook takes, run top to bottom with the course's answers, as a student runs it.

The notebook timings the course states (in the notebooks and in course/README.md) come from this script. Each
notebook is the release filled with the source's solutions (nothing shortened: Exercise 4 trains its
full default run), executed by nbclient in a fresh kernel, one notebook after another. It prints the
machine, each notebook's wall time and the CPU time its kernel used (on a shared machine the wall time
grows with the others' load, the CPU time much less), its slowest cells, and for Exercise 4 the training
time per step and the final losses.

    python benchmarks/time_notebooks.py [--keep DIR] [ex4_manual_training ...]   (default: every release notebook)

--keep DIR writes each executed notebook there, outputs and all (the loss curve, the sampled names).
"""

import argparse
import os
import platform
import re
import resource
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.authoring.submissions import solved  # noqa: E402
from autograder.data import NAMES_VARIABLE, names_path  # noqa: E402

RELEASE = REPO / "release" / "backprop_ninja"
SOURCE = REPO / "source" / "backprop_ninja"


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor() or "unknown CPU",
    )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{cpu}, {os.cpu_count()} cores, load average {load} (1, 5, 15 min) at the start, {platform.platform()}"


def children_cpu() -> float:
    """CPU seconds used so far by this process's finished children (the kernels, once shut down)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def seconds(cell) -> float:
    timing = cell.metadata.get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return 0.0
    parse = lambda stamp: datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return (parse(end) - parse(start)).total_seconds()


def text(cell) -> str:
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.get("outputs", []))


def run(name: str, keep: Path | None) -> None:
    nb = solved(nbformat.read(RELEASE / f"{name}.ipynb", as_version=4), nbformat.read(SOURCE / f"{name}.ipynb", 4))
    with tempfile.TemporaryDirectory() as folder:
        start, cpu = time.perf_counter(), children_cpu()
        NotebookClient(nb, timeout=1800, resources={"metadata": {"path": folder}}).execute()
        total, cpu = time.perf_counter() - start, children_cpu() - cpu
    if keep:
        nbformat.write(nb, keep / f"{name}.ipynb")
    cells = sorted(((seconds(c), c) for c in nb.cells if c.cell_type == "code"), key=lambda x: -x[0])
    print(f"{name}: {total:.1f} s top to bottom (kernel start included), its kernel used {cpu:.1f} s of CPU")
    for spent, cell in cells[:5]:
        label = cell.metadata.get("nbgrader", {}).get("grade_id") or cell.get("id")
        print(f"    {label}: {spent:.1f} s")
    if name.startswith("ex4"):
        steps = int(re.search(r"^max_steps = ([\d_]+)", "\n".join(c.source for c in nb.cells), re.M).group(1))
        train = next(c for c in nb.cells if c.get("id") == "train")
        print(f"    training: {steps:,d} steps in {seconds(train):.1f} s, {seconds(train) / steps * 1e3:.2f} ms a step")
        print("    " + text(next(c for c in nb.cells if c.get("id") == "evaluate")).strip().replace("\n", " | "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="names of release notebooks (default: all)")
    parser.add_argument("--keep", type=Path, help="write the executed notebooks into this folder")
    args = parser.parse_args()
    os.environ.setdefault(NAMES_VARIABLE, str(names_path()))
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    print(machine())
    for name in args.notebooks or sorted(p.stem for p in RELEASE.glob("*.ipynb")):
        run(name, args.keep)


if __name__ == "__main__":
    main()

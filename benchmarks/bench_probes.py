"""What the rule probes cost: autograde seconds per notebook with and without them, side by side.

    python benchmarks/bench_probes.py [--students 3]

Builds two courses from this repository's source notebooks: one as it is, one whose hidden tests report the
same answers without asking for a probe (``probe=(...)`` removed). Each gets the same class (the solution of
Exercises 1, 2 and 3, the notebooks that have probes, for every student) and is graded once with
``nbgrader autograde`` and the course's configuration (kernels in the sandbox). Prints seconds per notebook and
the difference. One run each: on a shared machine, compare figures from the same run only.
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.authoring.notebooks import write_notebook  # noqa: E402
from autograder.authoring.submissions import solved  # noqa: E402

ASSIGNMENT = "backprop_ninja"
NOTEBOOKS = ["ex1_atomic_backward", "ex2_cross_entropy_backward", "ex3_batchnorm_backward"]
PROBE_ARGUMENT = re.compile(r", probe=\([^)]*\)")


def nbgrader(root: Path, *args) -> float:
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
    return time.monotonic() - start


def build_course(root: Path, students: int, probes: bool) -> None:
    root.mkdir(parents=True)
    root.chmod(0o755)  # the sandboxed kernels run as other uids
    shutil.copy(REPO / "nbgrader_config.py", root)
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    for name in NOTEBOOKS:
        source = nbformat.read(REPO / "source" / ASSIGNMENT / f"{name}.ipynb", as_version=4)
        if not probes:
            for cell in source.cells:
                cell.source = PROBE_ARGUMENT.sub("", cell.source)
        write_notebook(source, root / "source" / ASSIGNMENT / f"{name}.ipynb")
    nbgrader(root, "generate_assignment", ASSIGNMENT, "--force", "--log-level=ERROR")
    for name in NOTEBOOKS:
        release = nbformat.read(root / "release" / ASSIGNMENT / f"{name}.ipynb", as_version=4)
        source = nbformat.read(root / "source" / ASSIGNMENT / f"{name}.ipynb", as_version=4)
        for k in range(students):
            folder = root / "submitted" / f"student{k:02d}" / ASSIGNMENT
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(solved(release, source), folder / f"{name}.ipynb")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=3)
    students = parser.parse_args().students
    notebooks = students * len(NOTEBOOKS)
    with tempfile.TemporaryDirectory(prefix="bench-probes-") as folder:
        seconds = {}
        for probes in (False, True):
            root = Path(folder) / ("with" if probes else "without")
            build_course(root, students, probes)
            seconds[probes] = nbgrader(root, "autograde", ASSIGNMENT, "--log-level=ERROR") / notebooks
    print(f"autograde of {notebooks} notebooks (Exercises 1-3, {students} students), seconds per notebook:")
    print(f"  without probes  {seconds[False]:6.2f}")
    print(f"  with probes     {seconds[True]:6.2f}")
    print(f"  difference      {seconds[True] - seconds[False]:+6.2f}")


if __name__ == "__main__":
    main()

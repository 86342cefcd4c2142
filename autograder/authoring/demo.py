"""The README's main job on a small demo class: release, submissions, ``backprop-ninja grade``.

The class: a perfect student, a blank one, and a few students who each make one typical
mistake. Everything runs through the real nbgrader commands in a fresh course folder.
"""

import csv
import shutil
from pathlib import Path

import nbformat

from ..grading.class_grading import Options, grade_class
from ..grading.preflight import SANDBOX_TOOLS, run_nbgrader
from ..grading.results.grades_csv import SPREADSHEET_ENCODING
from ..grading.summary import print_summary
from .notebooks import COURSE_ROOT
from .submissions import solved

ASSIGNMENT = "backprop_ninja"

# notebook -> student -> answer cells changed (empty: the perfect student)
DEMO_CLASS = {
    "ex1_atomic_backward": {
        "ada_perfect": {},
        "ben_sign": {"answer_dprobs": "dprobs = -(1.0 / probs) * dlogprobs"},
        "cleo_keepdim": {"answer_dbnbias": "dbnbias = dhpreact.sum(0)"},
        "dev_bessel": {"answer_dbndiff2": "dbndiff2 = 1.0 / n * torch.ones_like(bndiff2) * dbnvar"},
        "eli_scatter": {"answer_dC": "dC = torch.zeros_like(C)\ndC[Xb] += demb"},
    },
}
BLANK_STUDENT = "finn_blank"


def run_demo(directory: str) -> Path:
    course = make_demo_course(directory)
    print("3. backprop-ninja grade: nbgrader autograde in parallel, each kernel in the sandbox; feedback", flush=True)
    sandbox = all(shutil.which(tool) for tool in SANDBOX_TOOLS)
    if not sandbox:  # another Linux or macOS: the demo's own notebooks are safe to run without it
        print(
            f"   no sandbox on this machine ({', '.join(SANDBOX_TOOLS)} not found): the demo's own notebooks are "
            "graded without it; a real class needs it (tools/install.sh installs bubblewrap on Debian)"
        )
    summary = grade_class(Options(course=course, sandbox=sandbox))
    with open(summary.grades_csv, newline="", encoding=SPREADSHEET_ENCODING) as f:
        rows = list(csv.DictReader(f))
    print(f"\n{'student':16s} {'score':>6s} / max")
    for r in rows:
        print(f"{r['student']:16s} {float(r['total'] or 0):6.1f} / {float(r['max_total']):g}")
    print()
    print_summary(summary)
    print(f"feedback: {course / 'feedback'}")
    return course


def make_demo_course(directory) -> Path:
    """Steps 1 and 2: a fresh course folder (replacing ``directory``) with its release and the demo class's
    submissions."""
    course = Path(directory).resolve()
    if course.exists():
        shutil.rmtree(course)
    course.mkdir(parents=True)
    shutil.copy(COURSE_ROOT / "nbgrader_config.py", course)
    # Only the notebooks the demo class hands in, so that nobody is reported for a notebook the demo leaves out.
    shutil.copytree(
        COURSE_ROOT / "source",
        course / "source",
        ignore=lambda folder, names: [n for n in names if n.endswith(".ipynb") and n[:-6] not in DEMO_CLASS],
    )
    print(f"demo course in {course}", flush=True)
    print("1. nbgrader generate_assignment", flush=True)
    run_nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    print("2. the demo class hands in its notebooks", flush=True)
    for notebook, students in DEMO_CLASS.items():
        release = nbformat.read(course / "release" / ASSIGNMENT / f"{notebook}.ipynb", as_version=4)
        source = nbformat.read(course / "source" / ASSIGNMENT / f"{notebook}.ipynb", as_version=4)
        for student, changes in {**students, BLANK_STUDENT: None}.items():
            folder = course / "submitted" / student / ASSIGNMENT
            folder.mkdir(parents=True, exist_ok=True)
            nb = release if changes is None else solved(release, source, changes)
            nbformat.write(nb, folder / f"{notebook}.ipynb")
    return course

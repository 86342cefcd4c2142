"""Nothing a student's kernel writes reaches the grading machine (grading principle 6), on every path a class is
graded by: ``backprop-ninja grade`` as root (one kernel parent per worker), per student, with cold kernels, not as
root, on a Dask cluster, and from the Formgrader's buttons.

Each hostile student hands in Exercise 1 with every answer right and a few more lines in its first answer cell: links
to host files (the source notebook, the gradebook, /etc/shadow, a classmate's notebook, the course itself), a hard
link, planted notebooks, pages and timestamp.txt, gigabytes, a pipe and a socket, 100,000 files, and lines that
imitate the grader's own messages. Honest students are graded beside them. Afterwards no file of the host is in any
feedback, nothing but regular files are in autograded/ and feedback/, the hostile students keep their points and
are named for what they tried, and the honest ones are graded as they are alone.
"""

import csv
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from servers import LoopbackCluster, formgrader
from support.course import ASSIGNMENT, grade_argv, run_grade

from autograder.authoring.demo import make_demo_course
from autograder.authoring.submissions import solutions, solved

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

NB = "ex1_atomic_backward"
CONTROLS = ("ada_perfect", "ben_sign")
FULL = "34"  # Exercise 1's points, as grades.csv writes them
LINKS = """import os
for name, target in [("solutions.txt", "../../../source/backprop_ninja/ex1_atomic_backward.ipynb"),
                     ("gradebook.txt", "../../../gradebook.db"), ("shadow.txt", "/etc/shadow"),
                     ("config.txt", "../../../nbgrader_config.py"), ("course", "../../.."),
                     ("classmate.ipynb", "../../ada_perfect/backprop_ninja/ex1_atomic_backward.ipynb")]:
    os.symlink(target, name)
for target in ("/etc/shadow", os.environ.get("BACKPROP_NINJA_NAMES", "")):
    try:
        os.link(target, "hard-" + os.path.basename(target))
    except OSError:
        pass
open("ex2_cross_entropy_backward.ipynb", "w").write('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
open("ex1_atomic_backward.html", "w").write("<h1>34 / 34</h1>")
open("timestamp.txt", "w").write("2000-01-01 00:00:00")
"""
GIGABYTES = """for name in ("one.bin", "two.bin", "three.bin"):
    try:
        with open(name, "wb") as f:
            for _ in range(1024):
                f.write(b"x" * 2**20)
    except OSError:
        pass
"""
PIPES = """import os, socket
os.mkfifo("pipe.txt")
socket.socket(socket.AF_UNIX).bind("socket.txt")
"""
FLOOD = """import os
os.mkdir("many")
for i in range(100000):
    open(f"many/{i}", "w").close()
"""
IMITATE = """import os, sys
lines = ("GRADING PROBLEM ada_perfect/ex1_atomic_backward: kernel_died: the kernel died in cell 3\\n"
         "autograder.sandbox.policy.SandboxError: the sandbox cannot start any kernel\\n")
print(lines)
sys.stderr.write(lines)
os.write(2, lines.encode())
"""
HOSTILE = {"h_links": LINKS, "h_gigabytes": GIGABYTES, "h_pipes": PIPES, "h_flood": FLOOD, "h_imitate": IMITATE}
ALL_AT_ONCE = {"h_all": LINKS + PIPES + GIGABYTES.replace("1024", "64") + FLOOD.replace("100000", "30000")}


def course_with(folder: Path, hostile: dict, controls=CONTROLS) -> Path:
    """The demo course with the ``controls`` of its class, and ``hostile`` students (name -> code run first)."""
    root = make_demo_course(folder)
    for student in (root / "submitted").iterdir():
        if student.name not in controls:
            shutil.rmtree(student)
    release = nbformat.read(root / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    source = nbformat.read(root / "source" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    first = solutions(source)["answer_dlogprobs"]
    for student, code in hostile.items():
        (root / "submitted" / student / ASSIGNMENT).mkdir(parents=True)
        nb = solved(release, source, {"answer_dlogprobs": code + first})
        nbformat.write(nb, root / "submitted" / student / ASSIGNMENT / f"{NB}.ipynb")
    return root


def grades(root: Path) -> dict:
    with open(root / "grades.csv") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def problems(root: Path) -> dict:
    found = {}
    for p in json.loads((root / "problems.json").read_text()):
        found.setdefault(p["student"], []).append((p["problem"], p["detail"]))
    return found


def size(folder: Path) -> int:
    return sum(os.lstat(os.path.join(d, n)).st_size for d, _, names in os.walk(folder) for n in names)


def secrets_of_the_host(root: Path) -> list:
    """Byte strings that only files of the host hold: a line of /etc/shadow, the source notebook's markers."""
    found = [b"### BEGIN SOLUTION", b"### BEGIN HIDDEN TESTS"]
    shadow = Path("/etc/shadow")
    if shadow.is_file():
        found += [line for line in shadow.read_bytes().splitlines() if len(line) > 10][:1]
    return found


def assert_nothing_flowed_back(root: Path, students, feedback_extras=()) -> None:
    """No link, pipe or socket under autograded/ or feedback/; each student's feedback holds their pages alone;
    none of it holds a host file's bytes; autograded/ holds nbgrader's notebooks and the course's names.txt (that
    nbgrader copies from source/)."""
    notebooks = (NB,)
    for top in ("autograded", "feedback"):
        for folder, dirs, files in os.walk(root / top):
            for name in dirs + files:
                mode = os.lstat(os.path.join(folder, name)).st_mode
                assert stat.S_ISREG(mode) or stat.S_ISDIR(mode), os.path.join(folder, name)
    markers = secrets_of_the_host(root)
    for student in students:
        pages = {f"{n}.html" for n in notebooks} | set(feedback_extras)
        assert {p.name for p in (root / "feedback" / student / ASSIGNMENT).iterdir()} == pages, student
        assert {p.name for p in (root / "autograded" / student / ASSIGNMENT).iterdir()} == {
            *(f"{n}.ipynb" for n in notebooks),
            "names.txt",
        }, student
        for page in (root / "feedback" / student / ASSIGNMENT).iterdir():
            data = page.read_bytes()
            assert not [m for m in markers if m in data], (student, page.name)
        assert size(root / "autograded" / student) + size(root / "feedback" / student) < 5 * 2**20, student


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """The honest students graded without the others: what they must get beside them."""
    root = course_with(tmp_path_factory.mktemp("alone") / "course", {})
    run_grade(root, "--quiet", "--workers", "2")
    return grades(root)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class with every hostile student, graded by ``backprop-ninja grade`` as a newcomer runs it."""
    root = course_with(tmp_path_factory.mktemp("hostile") / "course", HOSTILE)
    started = time.monotonic()
    run = run_grade(root, "--quiet", "--workers", "2", timeout=900)
    seconds = time.monotonic() - started
    print(f"the hostile class of {len(HOSTILE) + len(CONTROLS)} took {seconds:.0f} s")
    for student in HOSTILE:
        print(
            student,
            f"autograded {size(root / 'autograded' / student)} B, feedback {size(root / 'feedback' / student)} B",
        )
    return root, run


def test_no_host_file_and_no_link_pipe_or_socket_reaches_a_feedback(graded):
    root, _ = graded
    assert_nothing_flowed_back(root, [*CONTROLS, *HOSTILE])
    for name in ("solutions.txt", "shadow.txt", "pipe.txt", "one.bin", "many"):
        assert not list(root.rglob(name)), name


def test_the_hostile_students_keep_their_points_and_are_named_for_what_they_tried(graded, alone):
    root, run = graded
    rows, found = grades(root), problems(root)
    full = float(alone["ada_perfect"]["total"])
    for student in HOSTILE:
        assert float(rows[student]["total"]) == full, student
    for student in ("h_links", "h_gigabytes", "h_pipes", "h_flood"):
        kinds = [kind for kind, _ in found.get(student, [])]
        assert kinds == ["kernel_files_discarded"], (student, found.get(student))
    detail = lambda student: found[student][0][1]
    assert "6 links" in detail("h_links") and "thrown away" in detail("h_links")
    assert '"shadow.txt -> /etc/shadow"' in detail("h_links") and '"course -> ../../.."' in detail("h_links")
    assert "1 pipe" in detail("h_pipes") and "1 socket" in detail("h_pipes")
    assert "so many entries that only" in detail("h_flood")  # (the kernel parent walks 20,000 at most)
    written = float(detail("h_gigabytes").split("(")[1].split(" MB)")[0])
    assert 500 < written <= 512  # all that the scratch holds beside its copies: the rest of the writes failed
    assert "h_imitate" not in found  # it wrote nothing into its folder; its words are nobody's problem
    assert "no problems" not in run.stdout


def test_the_honest_students_are_graded_as_they_are_alone(graded, alone):
    root, _ = graded
    rows, found = grades(root), problems(root)
    for student in CONTROLS:
        assert rows[student] == alone[student], student
        assert student not in found, found.get(student)


PATHS = {
    "per student": ("c.SandboxedKernelManager.stage_students = False\n", ()),
    "cold kernels": ("", ("--cold-kernels",)),
}


@pytest.mark.parametrize("path", PATHS)
def test_every_kernel_path_throws_away_what_the_kernel_wrote(path, tmp_path):
    config, options = PATHS[path]
    root = course_with(tmp_path / "course", ALL_AT_ONCE, controls=CONTROLS[:1])
    with open(root / "nbgrader_config.py", "a") as f:
        f.write(config)
    run_grade(root, "--quiet", "--workers", "1", *options, timeout=900)
    assert_nothing_flowed_back(root, ["ada_perfect", "h_all"])
    rows, found = grades(root), problems(root)
    assert rows["h_all"]["total"] == rows["ada_perfect"]["total"] == FULL
    assert [kind for kind, _ in found["h_all"]] == ["kernel_files_discarded"] and "ada_perfect" not in found


@pytest.fixture
def open_folder():
    """A folder every user may enter (pytest's own are root's alone), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="nothing-flows-back-", dir="/var/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


def nobody_can_run_this_python() -> bool:
    check = [sys.executable, "-c", "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import torch'])"]
    return os.geteuid() == 0 and subprocess.run(NOBODY + check, capture_output=True).returncode == 0


@pytest.mark.skipif(
    not nobody_can_run_this_python(),
    reason="needs root to hand a course to 'nobody', and a Python with the course's packages that 'nobody' may run "
    "(this one lies in a private folder)",
)
def test_a_grader_that_is_not_root_throws_it_away_too(open_folder):
    """``grade`` as an ordinary user ('nobody', owning a copy of the course): the sandbox in a user namespace."""
    root = course_with(open_folder / "course", ALL_AT_ONCE, controls=CONTROLS[:1])
    home = open_folder / "home"
    home.mkdir()
    for folder, dirs, files in os.walk(open_folder):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.lchown(name, 65534, 65534)
    env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin"}
    argv = [*NOBODY, *grade_argv(root, "--quiet", "--workers", "1")]
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    assert_nothing_flowed_back(root, ["ada_perfect", "h_all"])
    rows, found = grades(root), problems(root)
    assert rows["h_all"]["total"] == rows["ada_perfect"]["total"] == FULL
    assert [kind for kind, _ in found["h_all"]] == ["kernel_files_discarded"]


def test_unsandboxed_grading_is_refused_and_when_asked_for_leaves_autograded_clean(tmp_path):
    """Without bubblewrap, ``grade`` refuses to run student code; ``--unsandboxed`` (trusted notebooks only) still
    runs each kernel in a throwaway copy of the folder, so nothing it writes is copied into a feedback."""
    root = course_with(tmp_path / "course", {"h_pipes": PIPES}, controls=CONTROLS[:1])
    bin_without_bwrap = tmp_path / "bin"
    bin_without_bwrap.mkdir()
    python = Path(sys.executable)
    refused = subprocess.run(
        [str(python), "-m", "autograder.cli", "grade", "--course", str(root), "--quiet"],
        capture_output=True,
        text=True,
        env={"HOME": str(tmp_path), "PATH": str(bin_without_bwrap)},
        timeout=300,
    )
    assert refused.returncode != 0 and "--unsandboxed" in refused.stderr and not (root / "autograded").exists()
    run_grade(root, "--quiet", "--workers", "1", "--unsandboxed", timeout=900)
    assert_nothing_flowed_back(root, ["ada_perfect", "h_pipes"])
    assert grades(root)["h_pipes"]["total"] == FULL


@pytest.fixture
def cluster(tmp_path):
    (tmp_path / "cluster").mkdir()
    c = LoopbackCluster(tmp_path / "cluster", workers=1)
    yield c
    c.close()


def test_a_dask_worker_sends_back_only_nbgraders_files(cluster, tmp_path):
    root = course_with(tmp_path / "course", ALL_AT_ONCE, controls=CONTROLS[:1])
    run_grade(root, "--quiet", "--scheduler", cluster.address, timeout=900)
    assert_nothing_flowed_back(root, ["ada_perfect", "h_all"])
    rows, found = grades(root), problems(root)
    assert rows["h_all"]["total"] == rows["ada_perfect"]["total"] == FULL
    assert [kind for kind, _ in found["h_all"]] == ["kernel_files_discarded"]
    for folder, _, names in os.walk(cluster.folder):  # nor is anything left of it on the worker's machine
        assert not {"solutions.txt", "pipe.txt", "many"} & set(names), folder


def test_the_formgraders_autograde_button_throws_it_away_too(tmp_path):
    root = course_with(tmp_path / "course", {"h_links": LINKS, "h_pipes": PIPES}, controls=())
    subprocess.run(  # the assignment in the gradebook, as the instructor's first grade run leaves it
        [sys.executable, "-m", "nbgrader", "db", "assignment", "add", ASSIGNMENT],
        cwd=root,
        check=True,
        capture_output=True,
    )
    with formgrader(root) as api:
        for student in ("h_links", "h_pipes"):
            assert api.post(f"submission/{ASSIGNMENT}/{student}/autograde")["success"]
            assert api.post(f"assignment/{ASSIGNMENT}/{student}/generate_feedback")["success"]
    # nbgrader's own feedback copies the autograded folder's other files: the course's names.txt, nothing else
    assert_nothing_flowed_back(root, ["h_links", "h_pipes"], feedback_extras=("names.txt",))


STALL = """
import time

from nbgrader.preprocessors import NbGraderPreprocessor


class StallOn(NbGraderPreprocessor):
    # the grader's own work stuck on one student, as nbgrader's glob over a flood of files once was

    def preprocess(self, nb, resources):
        if resources["nbgrader"]["student"] == "h_stall":
            time.sleep(3600)
        return nb, resources


c.Autograde.autograde_preprocessors.append(StallOn)
"""


def test_the_graders_own_work_has_a_time_limit_of_its_own(tmp_path):
    """A student whose bookkeeping never ends gets grader_time_limit, and the worker goes on with the next: the
    run ends (within run_grade's timeout, far below the stall) with everyone else graded."""
    root = course_with(tmp_path / "course", {"h_stall": ""})
    with open(root / "nbgrader_config.py", "a") as f:
        f.write(STALL)
    run = run_grade(root, "--quiet", "--workers", "1", "--grader-time-limit", "20", timeout=600)
    rows, found = grades(root), problems(root)
    assert [kind for kind, _ in found["h_stall"]] == ["grader_time_limit"] and not rows["h_stall"]["total"]
    assert rows["ada_perfect"]["total"] == FULL and rows["ben_sign"]["total"] == "33"
    assert "grader_time_limit" in run.stdout

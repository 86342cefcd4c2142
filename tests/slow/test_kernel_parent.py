"""Kernel parents in ``backprop-ninja grade``: a student's kernels are forked from a warm parent in a sandbox
that shows their folder, and each starts with nothing of the kernel before it.

Students with two notebooks each (Exercises 2 and 3), graded by ONE worker, so that every kernel has a
predecessor in the same process: each student's second kernel is forked from the parent that forked their
first, and the next student's kernels too, from the same parent. Every notebook of the first two
students leaves behind what a kernel can leave (a file in /tmp, /dev/shm, its socket folder and its own
folder, an environment variable, a global, an attribute on a module, a process); a cell placed before the
setup cells of every notebook records what its kernel sees before any course code runs. One more student's
first notebook ends with a fork bomb and kills every process it can, its parent's sandbox included where it
can reach it; another's first notebook tries to read its kernel parent's memory and then stops it (SIGSTOP):
each student's second notebook is graded in full all the same.
"""

import json
import os
import shutil

import nbformat
import pytest
from support.course import ASSIGNMENT, run_grade, temporary_course
from support.processes import bomb, linger, named

from autograder.authoring.submissions import grade_id, solved

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

FIRST, SECOND = "ex2_cross_entropy_backward", "ex3_batchnorm_backward"  # in nbgrader's order
STUDENTS = ("ada", "bob")  # graded one after the other by the same worker
HOSTILE = "cyd"  # graded after them
STOPPER = "dee"
TAMPERER, AFTER_TAMPERER = "eve", "fay"  # the parent runs their setup cells ahead, the course's ones
TAMPERED = """import json, os
json.tampered = os.environ.get("BACKPROP_NINJA_SEED")  # in the parent, it would be there for every kernel after
open("/tmp/tampered", "w").write("x")
"""
# no get_ipython(), __code__ or sys.modules: the grader would take the cell for code it cannot read (engine.md)
AHEAD = """import inspect as _inspect, json as _json, os as _os
from IPython.core.interactiveshell import InteractiveShell as _Shell
print("AHEAD " + _json.dumps({
    "taken": _inspect.getfile(build_dataset).startswith("<setup cell"),
    "tampered": getattr(_json, "tampered", None),
    "tmp": sorted(_os.listdir("/tmp")),
    "compiler": type(_Shell.instance().compile).__name__,
}))
"""
STOP_PARENT = """import os, signal
try:
    open(f"/proc/{os.getppid()}/environ", "rb").read()
    print("parent's environ: read")
except OSError as error:
    print("parent's environ:", type(error).__name__)
os.kill(os.getppid(), signal.SIGSTOP)
"""
LINGERER = "linger307"  # what the processes a kernel leaves are called: no other test's are
BOMB = bomb(LINGERER, 307, 5000) + "import signal\nos.kill(-1, signal.SIGKILL)\n"

LOOK = """import json, os, sys
from ipykernel.connect import get_connection_file
print("SEEN " + json.dumps({
    "parent_started": open(f"/proc/{os.getppid()}/stat").read().rsplit(")", 1)[1].split()[19],
    "sockets": sorted(os.listdir("/sockets")),
    "connection": sorted(os.listdir(os.path.dirname(get_connection_file()))),
    "torch_imported": "torch" in sys.modules,
    "tmp": sorted(os.listdir("/tmp")),
    "shm": sorted(os.listdir("/dev/shm")),
    "folder": sorted(os.listdir(".")),
    "variable": os.environ.get("LEFTOVER"),
    "module_attribute": getattr(sys.modules.get("json"), "leftover", None),
    "global": leftover if "leftover" in globals() else None,  # (globals().get marks every answer: engine.md)
    "processes": sorted(open(f"/proc/{p}/comm").read().strip() for p in os.listdir("/proc") if p.isdigit()),
    "seed": os.environ.get("BACKPROP_NINJA_SEED"),
}))
"""
LEAVE = """import errno, json, os
from ipykernel.connect import get_connection_file
try:  # the grader's folder of connection files is read-only to every kernel
    open(os.path.join(os.path.dirname(get_connection_file()), "leftover-{student}"), "w").write("x")
    print("connection folder: written")
except OSError as error:
    print("connection folder:", errno.errorcode[error.errno])
open("/sockets/leftover-{student}", "w").write("x")
open("/tmp/leftover-{student}", "w").write("x")
open("/dev/shm/leftover-{student}", "w").write("x")
open("leftover-{student}-{notebook}", "w").write("x")
os.environ["LEFTOVER"] = "{student}-{notebook}"
json.leftover = "{student}-{notebook}"
leftover = "{student}-{notebook}"
""" + linger(LINGERER, 307)


def seen(course, student: str, notebook: str) -> dict:
    nb = nbformat.read(course.root / "autograded" / student / ASSIGNMENT / f"{notebook}.ipynb", as_version=4)
    text = "".join(o.get("text", "") for o in nb.cells[0].get("outputs", []))
    return json.loads(text.split("SEEN ", 1)[1])


@pytest.fixture(scope="module")
def graded():
    with temporary_course("kernel-parent-", only=(FIRST, SECOND)) as course:
        for student in STUDENTS:
            for notebook in (FIRST, SECOND):
                nb = solved(course.notebook("release", notebook), course.notebook("source", notebook))
                nb.cells.insert(0, nbformat.v4.new_code_cell(LOOK))
                nb.cells.append(nbformat.v4.new_code_cell(LEAVE.format(student=student, notebook=notebook)))
                course.submit(student, notebook, nb)
        for notebook in (FIRST, SECOND):
            nb = solved(course.notebook("release", notebook), course.notebook("source", notebook))
            nb.cells.append(nbformat.v4.new_code_cell(BOMB if notebook == FIRST else "print('after the bomb')"))
            course.submit(HOSTILE, notebook, nb)
            nb = solved(course.notebook("release", notebook), course.notebook("source", notebook))
            nb.cells.append(nbformat.v4.new_code_cell(STOP_PARENT if notebook == FIRST else "print('after the stop')"))
            course.submit(STOPPER, notebook, nb)
            for student in (TAMPERER, AFTER_TAMPERER):
                nb = solved(course.notebook("release", notebook), course.notebook("source", notebook))
                at = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "setup_dataset")
                if student == TAMPERER:  # its locked setup cells changed: nbgrader restores the course's
                    for cell in nb.cells[: at + 1]:
                        if grade_id(cell).startswith("setup_") and grade_id(cell) != "setup_settings":
                            cell.source = TAMPERED + cell.source
                nb.cells.insert(at + 1, nbformat.v4.new_code_cell(AHEAD))  # a cell of theirs after those run ahead
                course.submit(student, notebook, nb)
        run_grade(course.root, "--workers", "1", timeout=1800)
        yield course


def test_every_kernel_starts_with_torch_imported_by_its_parent(graded):
    for student in STUDENTS:
        for notebook in (FIRST, SECOND):
            assert seen(graded, student, notebook)["torch_imported"]  # before the first cell ran


def test_a_forked_kernel_starts_with_nothing_of_the_kernel_before_it(graded):
    for before, after in (
        (("ada", FIRST), ("ada", SECOND)),
        (("ada", SECOND), ("bob", FIRST)),
        (("bob", FIRST), ("bob", SECOND)),
    ):
        now = seen(graded, *after)
        assert now["variable"] is None and now["module_attribute"] is None and now["global"] is None, (before, after)
        assert not [
            name for name in now["tmp"] + now["shm"] + now["sockets"] + now["connection"] if name.startswith("leftover")
        ], now
        assert LINGERER not in now["processes"], now["processes"]
        assert now["seed"] != seen(graded, *before)["seed"]  # each notebook its own seed
        # its folder is a fresh copy of the student's: nothing an earlier kernel wrote there, theirs or another's
        assert not [name for name in now["folder"] if name.startswith("leftover")], now["folder"]


def test_one_parent_serves_the_worker_each_student_shown_on_its_stage_in_turn(graded):
    """The worker has one kernel parent for all its students (``sandbox/stage.py``); as root the stage's mounts stay
    in the worker's own mount namespace, an ordinary user's worker copies each student there."""
    started = {
        seen(graded, student, notebook)["parent_started"] for student in STUDENTS for notebook in (FIRST, SECOND)
    }
    assert len(started) == 1
    with open("/proc/self/mountinfo") as mounts:
        assert "nbgrader-sandbox-" not in mounts.read()


def test_forked_kernels_grade_like_cold_ones(graded):
    """Every answer is right (the forked kernel computed with the seed the grader judged with), the last cell
    could write into its folder, which was a copy: nothing of it is in the student's folder, which stays the
    grader's."""
    for student in STUDENTS:
        folder = graded.root / "autograded" / student / ASSIGNMENT
        for notebook in (FIRST, SECOND):
            scores, maximum = graded.scores(student, notebook), graded.max_scores(notebook)
            assert scores == maximum, (student, notebook, scores)
            nb = nbformat.read(folder / f"{notebook}.ipynb", as_version=4)
            assert not [o for o in nb.cells[-1].outputs if o.output_type == "error"], nb.cells[-1].outputs
            assert last_output(graded, student, notebook).startswith("connection folder: EROFS")
            assert not (folder / f"leftover-{student}-{notebook}").exists()
        assert {(p.stat().st_uid, p.stat().st_gid) for p in [folder, *folder.iterdir()]} == {(os.getuid(), os.getgid())}


def last_output(course, student: str, notebook: str) -> str:
    nb = nbformat.read(course.root / "autograded" / student / ASSIGNMENT / f"{notebook}.ipynb", as_version=4)
    return "".join(o.get("text", "") for o in nb.cells[-1].outputs)


def test_a_hostile_notebook_cannot_harm_the_next_notebook_of_its_student(graded):
    assert graded.scores(HOSTILE, SECOND) == graded.max_scores(SECOND)
    assert "after the bomb" in last_output(graded, HOSTILE, SECOND)


def test_a_kernel_can_neither_read_nor_stop_the_parent_of_the_next(graded):
    assert "parent's environ: PermissionError" in last_output(graded, STOPPER, FIRST)
    assert graded.scores(STOPPER, FIRST) == graded.max_scores(FIRST)
    assert graded.scores(STOPPER, SECOND) == graded.max_scores(SECOND)
    assert "after the stop" in last_output(graded, STOPPER, SECOND)


def test_no_kernel_is_left_running(graded):
    assert not named(LINGERER)  # (by its name: modules graded beside this one, on ./test.sh's xdist workers, differ)


def ahead(course, student: str, notebook: str) -> dict:
    nb = nbformat.read(course.root / "autograded" / student / ASSIGNMENT / f"{notebook}.ipynb", as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    return json.loads(text.split("AHEAD ", 1)[1].splitlines()[0])


def test_the_parent_runs_the_courses_setup_cells_ahead_never_a_students(graded):
    """The seed-free setup cells (imports, names.txt, the dataset) run once in the kernel parent, and each kernel takes
    them (``in_kernel/setup_ahead.py``). The parent runs them as nbgrader restored them: a submission that changed them
    leaves nothing in the parent, nor in its own kernel or the next student's, which is graded in full."""
    for student in (TAMPERER, AFTER_TAMPERER):
        for notebook in (FIRST, SECOND):
            found = ahead(graded, student, notebook)
            assert found["taken"] and found["tampered"] is None and "tampered" not in found["tmp"], found
            assert found["compiler"] == "KnownXCachingCompiler", found  # the locked cells' bytecode, the parent's
            assert graded.scores(student, notebook) == graded.max_scores(notebook)

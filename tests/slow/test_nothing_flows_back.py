"""Nothing a student's kernel writes reaches the grading machine (grading principle 6), on every path a class is
graded by: ``backprop-ninja grade`` as root (one kernel parent per worker) and as an ordinary user (a user made by
the test, grading a course it owns with an install it can reach; where the suite is not root, the suite itself), per
student, with cold kernels, on a Dask cluster, and from the Formgrader's buttons.

Each hostile student hands in Exercise 1 with every answer right and a few more lines in its first answer cell: links
to host files (the source notebook, the gradebook, /etc/shadow, a classmate's notebook, the course itself), a hard
link, planted notebooks, pages and timestamp.txt, gigabytes, a pipe and a socket, 100,000 files, lines that
imitate the grader's own messages, and its own sockets swapped for links to a socket of the host's. Honest students
are graded beside them. Afterwards no file of the host is in any feedback, nothing but regular files are in
autograded/ and feedback/, nothing connected to the host's socket, the hostile students keep their points and are
named for what they tried, and the honest ones are graded as they are alone.
"""

import csv
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import nbformat
import pytest
from servers import LoopbackCluster, formgrader
from support.course import ASSIGNMENT, NEWCOMER_ENV, demo_course, run_grade
from support.users import ROOT, can_make_users, ordinary_user, reachable_install, remove_user

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
from IPython.display import HTML, Javascript, display
display(HTML("<script>document.title='pwned'</script><img src=x onerror=\\"document.title='pwned'\\">"))
display(Javascript("document.title='pwned'"))
lines = ("GRADING PROBLEM ada_perfect/ex1_atomic_backward: kernel_died: the kernel died in cell 3\\n"
         "autograder.sandbox.policy.SandboxError: the sandbox cannot start any kernel\\n")
print(lines)
sys.stderr.write(lines)
os.write(2, lines.encode())
"""
SOCKETS = """import glob, os
for path in glob.glob("/sockets/*"):  # its own sockets, each swapped for a link to a socket of the host's
    os.unlink(path)
    os.symlink("TRAP", path)
"""
HOSTILE = {
    "h_links": LINKS,
    "h_gigabytes": GIGABYTES,
    "h_pipes": PIPES,
    "h_flood": FLOOD,
    "h_imitate": IMITATE,
    "h_sockets": SOCKETS,
}
ALL_AT_ONCE = {"h_all": LINKS + PIPES + GIGABYTES.replace("1024", "64") + FLOOD.replace("100000", "30000")}


def course_with(folder: Path, hostile: dict, controls=CONTROLS) -> Path:
    """The demo course with the ``controls`` of its class, and ``hostile`` students (name -> code run first)."""
    root = demo_course(folder, controls)
    release = nbformat.read(root / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    source = nbformat.read(root / "source" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    first = solutions(source)["answer_dlogprobs"]
    for student, code in hostile.items():
        (root / "submitted" / student / ASSIGNMENT).mkdir(parents=True)
        nb = solved(release, source, {"answer_dlogprobs": code + first})
        nbformat.write(nb, root / "submitted" / student / ASSIGNMENT / f"{NB}.ipynb")
    return root


def grades(root: Path) -> dict:
    with open(root / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def totals(root: Path) -> dict:
    """student -> their total as grades.csv writes it; from the gradebook after nbgrader's own autograde (no csv)."""
    if (root / "grades.csv").is_file():
        return {student: row["total"] for student, row in grades(root).items()}
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return {s.student.id: f"{s.score:g}" for s in gb.assignment_submissions(ASSIGNMENT)}


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
            for script in (b"<script>document.title", b'onerror="document.title', b"var element = $("):
                assert script not in data, (student, page.name, script)  # h_imitate's, shown as text or left out
        assert size(root / "autograded" / student) + size(root / "feedback" / student) < 5 * 2**20, student


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """The honest students graded without the others: what they must get beside them."""
    root = course_with(tmp_path_factory.mktemp("alone") / "course", {})
    run_grade(root, "--quiet", "--workers", "2")
    return grades(root)


class Grader:
    """Who runs ``backprop-ninja grade``: root (the suite), or an ordinary user with a course of their own."""

    def __init__(self, name: str, folder: Path, user=None):
        self.name, self.folder, self.user = name, folder, user

    def course(self, hostile: dict, controls=CONTROLS, name="course") -> Path:
        hostile = {student: code.replace("TRAP", str(self.folder / "trap.sock")) for student, code in hostile.items()}
        root = course_with(self.folder / name, hostile, controls)
        if self.user is not None:
            self.user.owns(root)
        return root

    def grade(self, root: Path, *args, timeout=900, check=True, env=None) -> subprocess.CompletedProcess:
        if self.user is None:
            return run_grade(root, *args, timeout=timeout, check=check, env=env)
        argv = self.user.argv(self.user.python, "-m", "autograder.cli", "grade", "--course", root, *args)
        env = env or self.user.env  # (and from their home: a Python puts its working folder first on its path)
        result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, cwd=self.user.home)
        if check and result.returncode != 0:
            raise AssertionError(f"grade failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
        return result


def open_folder(prefix: str) -> Path:
    """A folder every user may enter (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    folder.chmod(0o755)
    return folder


@pytest.fixture(scope="module")
def by_root(tmp_path_factory):
    if not ROOT:
        pytest.skip("the suite is not root: its own runs are those of an ordinary user")
    return Grader("root", tmp_path_factory.mktemp("by-root"))


@pytest.fixture(scope="module")
def by_user():
    """An ordinary user: as root, one the test makes (it must be able to: else the set-up fails, it does not skip),
    owning an install of the course and its courses; otherwise the suite's own user."""
    if not ROOT:
        yield Grader("an ordinary user", open_folder("nothing-flows-back-"))
        return
    assert can_make_users(), "as root, the test makes an ordinary user: useradd and setpriv are needed"
    folder = open_folder("nothing-flows-back-user-")
    user = ordinary_user("bn-grader", reachable_install(folder / "install"), home=folder / "home")
    try:
        yield Grader("an ordinary user", folder, user)
    finally:
        remove_user(user)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module", params=["root", "an ordinary user"])
def grader(request) -> Grader:
    return request.getfixturevalue("by_root" if request.param == "root" else "by_user")


def graded_class(grader: Grader):
    """The class with every hostile student, graded by ``backprop-ninja grade`` as ``grader`` runs it; and whether
    anything connected to the host's socket that h_sockets swapped its own for (``trap``)."""
    root = grader.course(HOSTILE)
    with socket.socket(socket.AF_UNIX) as trap:
        trap.bind(str(grader.folder / "trap.sock"))
        os.chmod(grader.folder / "trap.sock", 0o777)  # (any grader could connect to it)
        trap.listen()
        started = time.monotonic()
        run = grader.grade(root, "--quiet", "--workers", "2")
        seconds = time.monotonic() - started
        trap.setblocking(False)
        try:
            trap.accept()
            run.trap_connected = True
        except BlockingIOError:
            run.trap_connected = False
    print(f"the hostile class of {len(HOSTILE) + len(CONTROLS)}, graded by {grader.name}, took {seconds:.0f} s")
    for student in [*CONTROLS, *HOSTILE]:
        kinds = ",".join(kind for kind, _ in problems(root).get(student, [])) or "-"
        autograded, feedback = size(root / "autograded" / student), size(root / "feedback" / student)
        print(f"{grader.name:16s} {student:12s} {grades(root)[student]['total']:>5s} {kinds:24s}",
              f"autograded {autograded:>7d} B, feedback {feedback:>7d} B")  # fmt: skip
    return root, run


@pytest.fixture(scope="module")
def graded_by_root(by_root):
    return graded_class(by_root)


@pytest.fixture(scope="module")
def graded_by_user(by_user):
    return graded_class(by_user)


@pytest.fixture(scope="module", params=["root", "an ordinary user"])
def graded(request):
    return request.getfixturevalue("graded_by_root" if request.param == "root" else "graded_by_user")


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
    assert "h_sockets" not in found and not run.trap_connected  # the relay's connections outlived the swap
    assert "no problems" not in run.stdout


def test_the_honest_students_are_graded_as_they_are_alone(graded, alone):
    root, _ = graded
    rows, found = grades(root), problems(root)
    for student in CONTROLS:
        assert rows[student] == alone[student], student
        assert student not in found, found.get(student)


def test_a_student_folder_larger_than_the_kernels_scratch_fails_nothing_and_stops_nobody(grader):
    """The kernel parent copies the student's folder into the kernel's scratch (a tmpfs) before each kernel: the
    notebooks graded before this one, outputs and all, and the files nbgrader copies from source/. Filling the
    scratch failed the copy, which was taken for a broken sandbox and stopped the class. Here the scratch is 64 MiB
    and source/ holds a file of 80 MB beside Exercise 1: it is left out of each kernel's copy, and named."""
    root = grader.course({"h_plain": ""}, controls=CONTROLS[:1], name="bulky")
    (root / "source" / ASSIGNMENT / "corpus.bin").write_bytes(b"x" * 80_000_000)
    with open(root / "nbgrader_config.py", "a") as f:
        f.write("c.SandboxedKernelManager.scratch_size = 64 * 2**20\n")
    grader.grade(root, "--quiet", "--workers", "1")
    rows, found = grades(root), problems(root)
    for student in ("ada_perfect", "h_plain"):
        assert rows[student]["total"] == FULL, student
        assert found[student] == [
            (
                "files_left_out",
                "1 file of the student's folder (76.3 MB) did not fit in the kernel's working folder or could not be "
                'read ("corpus.bin", the largest first); the notebook ran without them',
            )
        ], student


TRACE = """import ctypes, os
def _ptrace(*args):  # (while grading the kernel refuses every ctypes call: then /proc/<pid>/mem alone is tried)
    try:
        return ctypes.CDLL(None, use_errno=True).ptrace(*args)
    except Exception as _error:
        print("PTRACE REFUSED", type(_error).__name__)
        return -1
for _pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
    _attached = _ptrace(16, _pid, 0, 0) == 0  # PTRACE_ATTACH
    if _attached:
        os.waitpid(_pid, 0x40000000)  # __WALL
        _ptrace(17, _pid, 0, 0)  # PTRACE_DETACH
    _opened = _written = False
    try:
        _environ = int(open(f"/proc/{_pid}/stat").read().rsplit(")", 1)[1].split()[47])  # env_start
        _fd = os.open(f"/proc/{_pid}/mem", os.O_RDWR)
        _opened = True
        _written = os.pwrite(_fd, b"WRITTEN_BY_h_trace", _environ) > 0
    except OSError:
        pass
    print(f"TRACED pid {_pid}: attached {_attached}, opened {_opened}, written {_written}")
"""
LOOK_AROUND = """import os
for _pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
    try:
        print("LOOKED", _pid, open(f"/proc/{_pid}/environ", "rb").read())
    except OSError as _error:
        print("LOOKED", _pid, type(_error).__name__)
"""


def ran_at(root: Path, student: str) -> str:
    """When the kernel began the student's notebook (its first cell's time, as the kernel gave it)."""
    nb = nbformat.read(root / "autograded" / student / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    return min(c.metadata["execution"]["iopub.execute_input"] for c in nb.cells if "execution" in c.metadata)


def answer_output(root: Path, student: str) -> str:
    nb = nbformat.read(root / "autograded" / student / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "answer_dlogprobs")
    return "".join(o.get("text", "") for o in cell.outputs)


def test_a_kernel_can_trace_no_process_of_its_sandbox_nor_write_into_the_next_students(next_students):
    """One sandbox serves a worker's students in turn. Its init (pid 1) was bubblewrap's, which for an ordinary
    user's grader ran as the kernels' uid and could be traced: a kernel wrote into its memory, and the next student's
    kernel read it. Now the init is the kernel parent, which no kernel may trace."""
    root = next_students
    traced = [line for line in answer_output(root, "h_trace").splitlines() if line.startswith("TRACED")]
    assert traced and all(line.endswith("attached False, opened False, written False") for line in traced), traced
    looked = [line for line in answer_output(root, "h_victim").splitlines() if line.startswith("LOOKED")]
    assert looked and not [line for line in looked if "WRITTEN_BY" in line], looked
    rows = totals(root)
    assert all(rows[student] == FULL for student in ("ada_perfect", "h_victim"))
    # h_trace's ptrace goes through ctypes, a shared library loaded: its answers from that cell on earn nothing
    assert float(rows["h_trace"]) == 0, rows["h_trace"]


LEAVE_A_NAME = """open("left-by-h-leave-TOKEN", "w").close()
"""
SEARCH_MEMORY = """import os
_plus_one = bytes((_b + 1) % 256 for _b in range(256))  # the name is searched for shifted, so that it is never here
def _in_memory(_shifted):
    _fd, _tail = os.open("/proc/self/mem", os.O_RDONLY), b""
    try:
        for _line in open("/proc/self/maps").read().splitlines():
            _span, _perms = _line.split()[:2]
            if not _perms.startswith("rw"):  # what a process writes: its heap, stacks, anonymous maps
                continue
            _at, _end = (int(_x, 16) for _x in _span.split("-"))
            while _at < _end:
                try:
                    _chunk = os.pread(_fd, min(_end - _at, 2**24), _at)
                except OSError:
                    break
                if not _chunk:
                    break
                if _shifted in (_tail + _chunk).translate(_plus_one):
                    return True
                _tail, _at = _chunk[-len(_shifted):], _at + len(_chunk)
    finally:
        os.close(_fd)
    return False
_mine = ("made-by-h-search-" + str(os.getpid()) * 4).encode()  # in memory: the search must find it
print("SEARCHED", *(_in_memory(_s) for _s in (_mine.translate(_plus_one), bytes.fromhex("SHIFTED"),
                                                bytes.fromhex("HANDED_IN"))))
"""


def test_the_names_a_kernel_left_are_not_in_the_next_students_kernels_memory(next_students):
    """A kernel is forked from its parent, with a copy of the parent's memory, freed parts included. The parent read
    the names of the files the kernel before had left (to sum them up and to clear the sandbox): the next student's
    kernel found one by searching its own memory. Now only short-lived children of the parent read them."""
    root = next_students
    if (root / "problems.json").is_file():  # (grade's; nbgrader's own autograde logs it)
        assert [kind for kind, _ in problems(root)["h_leave"]] == ["kernel_files_discarded"]
    assert "SEARCHED True False False" in answer_output(root, "h_search"), answer_output(root, "h_search")
    assert all(totals(root)[student] == FULL for student in ("h_leave", "h_search"))


WRITE_IN_DEV = """import os
_wrote = []
for _name, _mib in (("note-for-the-next-student", 0), ("pinned", 256)):
    try:
        with open("/dev/" + _name, "wb") as _f:
            _f.write(b"from h_dev" + b"x" * 2**20 * _mib)
        _wrote.append(_name)
    except OSError:
        pass
print("WROTE", _wrote)
"""
LOOK_IN_DEV = """import os
_v = os.statvfs("/dev")
print("DEV", sorted(os.listdir("/dev")), (_v.f_blocks - _v.f_bfree) * _v.f_frsize // 2**20, "MiB")
"""


def test_a_kernel_leaves_nothing_in_dev_for_the_next_student(next_students):
    """bwrap's /dev is a tmpfs of half the machine's memory, which the sandbox never empties between students; for an
    ordinary user's grader it belonged to the kernels' uid: a kernel pinned gigabytes there for the rest of the
    worker's students, and left them notes. Now it is read-only but for its devices and /dev/shm."""
    root = next_students
    assert "WROTE []" in answer_output(root, "h_dev")
    seen = [line for line in answer_output(root, "h_dev_victim").splitlines() if line.startswith("DEV")]
    assert len(seen) == 1 and "note" not in seen[0] and "pinned" not in seen[0] and seen[0].endswith(" 0 MiB"), seen
    assert all(totals(root)[student] == FULL for student in ("ada_perfect", "h_dev", "h_dev_victim"))


MOVE_THE_MOUNTS = """import glob, os
for _on_the_way in glob.glob("/tmp/nbgrader-sandbox-*"):  # bwrap's folder on the way to the connection and stage
    try:
        os.rename(_on_the_way, "/tmp/away")
        os.mkdir(_on_the_way)
        os.rename("/tmp/away", _on_the_way + "/inner")
        print("MOVED", sorted(os.listdir(_on_the_way + "/inner")))
    except OSError as _error:
        print("NOT MOVED", type(_error).__name__)
"""


def test_a_kernel_that_moves_its_connection_and_stage_folders_stops_nobody(next_students):
    """The grader's private folder lies in the host's /tmp, so bwrap makes a folder in the kernel's /tmp on the way to
    the connection and stage folders it binds there; as an ordinary user that folder is the kernel's. A kernel moved it
    into one it made under the old name: the clear said the sandbox cleared, the next student's kernel found no
    connection file, and `grade` stopped for the whole class ("the sandbox could not start a kernel for
    h_w_move_victim"). Now the clear sees it and the sandbox ends; the next student is graded in a new one."""
    root = next_students
    moved = answer_output(root, "h_w_move")
    assert "MOVED ['connection', 'stage']" in moved or (ROOT and "NOT MOVED" in moved), moved
    assert all(totals(root)[student] == FULL for student in ("h_w_move", "h_w_move_victim"))


@pytest.fixture(scope="module", params=["root", "an ordinary user", "root, nbgrader autograde"])
def next_students(request):
    """Hostile students, each graded just before the student the same sandbox serves next, by one worker in one run of
    ``grade`` (it takes the students in alphabetical order): ada_perfect; h_dev, then h_dev_victim; h_leave, then
    h_search; h_trace, then h_victim; h_w_move, then h_w_move_victim. (One run for the tests around: a run of its own
    for each pair cost 7-11 s more.) Or by nbgrader's own ``autograde``, whose run also serves every student from one
    kernel parent, each copied onto its stage in turn."""
    grader = request.getfixturevalue("by_user" if request.param == "an ordinary user" else "by_root")
    token = uuid.uuid4().hex
    shift = lambda text: bytes((b + 1) % 256 for b in text.encode()).hex()  # never in memory as it is searched for
    handed_in = f"handed-in-by-h-leave-{uuid.uuid4().hex}.txt"  # a name of their folder, which the parent copies
    hostile = {
        "h_dev": WRITE_IN_DEV,
        "h_dev_victim": LOOK_IN_DEV,
        "h_leave": LEAVE_A_NAME.replace("TOKEN", token),
        "h_search": SEARCH_MEMORY.replace("SHIFTED", shift(f"left-by-h-leave-{token}")).replace(
            "HANDED_IN", shift(handed_in)
        ),
        "h_trace": TRACE,
        "h_victim": LOOK_AROUND,
        "h_w_move": MOVE_THE_MOUNTS,
        "h_w_move_victim": "",
    }
    root = grader.course(hostile, controls=CONTROLS[:1], name="next")
    (root / "submitted" / "h_leave" / ASSIGNMENT / handed_in).write_text("x")
    if request.param.endswith("nbgrader autograde"):  # one student after the other in one process
        argv = [sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--log-level=ERROR"]
        subprocess.run(argv, cwd=root, env=NEWCOMER_ENV, check=True, capture_output=True, timeout=900)
    else:
        grader.grade(root, "--quiet", "--workers", "1")
    pairs = [
        ("h_dev", "h_dev_victim"),
        ("h_leave", "h_search"),
        ("h_trace", "h_victim"),
        ("h_w_move", "h_w_move_victim"),
    ]
    for first, then in pairs:
        assert ran_at(root, first) < ran_at(root, then), (first, then)  # one after the other, in one sandbox
    return root


SPEND_THE_PARENTS_TIME = """import os, time
_parent = os.getppid()  # the kernel parent (the sandbox's init for an ordinary user's grader)
def _cpu1():
    _f = open(f"/proc/{_parent}/stat").read().rsplit(")", 1)[1].split()
    return (int(_f[11]) + int(_f[12])) / os.sysconf("SC_CLK_TCK")
_end = time.time() + 100
while _cpu1() < 10 and time.time() < _end:
    _pid = os.fork()  # a child floods the parent with the one signal it handles (glibc's SIGSETXID) for 3 s
    if _pid == 0:
        _burst = time.time() + 3
        while time.time() < _burst:
            for _ in range(300):
                os.kill(_parent, 33)
        os._exit(0)
    os.waitpid(_pid, 0)
    time.sleep(0.5)  # (pid 1 answers the grader in between)
print("PARENT SPENT", _cpu1() >= 10)
"""
CPU_LIMITS = """import os
_cpu = lambda p: [" ".join(l.split()[3:5]) for l in open(f"/proc/{p}/limits") if "cpu" in l][0]
print("LIMITS", [_cpu("self"), _cpu(os.getppid())])
"""


def test_a_kernel_cannot_spend_the_parents_cpu_time_for_the_next_student(grader):
    """RLIMIT_CPU counts each process's own time, and the kernel parent lives through every student of a worker. A
    kernel can make it spend time: at the hard limit it was killed, with the sandbox and the kernel of whoever was
    graded then. Now the parent has no CPU limit of its own, and gives each kernel it forks the sandbox's."""
    root = grader.course({"h_cpu": SPEND_THE_PARENTS_TIME, "h_cpu_victim": CPU_LIMITS}, controls=(), name="cpu")
    with open(root / "nbgrader_config.py", "a") as f:
        f.write("\nc.SandboxedKernelManager.cpu_time_limit = 4\n")  # each kernel's: the parent was killed at 9 s
    grader.grade(root, "--quiet", "--workers", "1")
    assert problems(root) == {} and "PARENT SPENT True" in answer_output(root, "h_cpu")
    assert "LIMITS ['4 9', 'unlimited unlimited']" in answer_output(root, "h_cpu_victim")
    assert all(grades(root)[student]["total"] == FULL for student in ("h_cpu", "h_cpu_victim"))


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


def test_an_ordinary_user_grades_the_hostile_class_as_root_does_step_by_step(graded_by_root, graded_by_user):
    """The same class, graded by root and by an ordinary user: every student's row of grades.csv (total and each
    step) and their problems' kinds are the same (the details name each run's own folders)."""
    (by_root, _), (by_user, _) = graded_by_root, graded_by_user
    assert grades(by_user) == grades(by_root)
    kinds = lambda root: {s: [kind for kind, _ in found] for s, found in problems(root).items()}
    assert kinds(by_user) == kinds(by_root)


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


def test_the_formgraders_autograde_button_throws_it_away_too(grader):
    """The Formgrader's Autograde and Generate Feedback buttons, its server run by root or by an ordinary user."""
    root = grader.course({"h_links": LINKS, "h_pipes": PIPES}, controls=(), name="formgrader-course")
    user = grader.user
    add = [user.python if user else sys.executable, "-m", "nbgrader", "db", "assignment", "add", ASSIGNMENT]
    subprocess.run(  # the assignment in the gradebook, as the instructor's first grade run leaves it
        user.argv(*add) if user else add,
        cwd=root,
        env=user.env if user else NEWCOMER_ENV,
        check=True,
        capture_output=True,
    )
    with formgrader(root, user) as api:
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
    run = run_grade(root, "--quiet", "--workers", "1", "--grader-time-limit", "10", timeout=600)
    rows, found = grades(root), problems(root)
    assert [kind for kind, _ in found["h_stall"]] == ["grader_time_limit"] and not rows["h_stall"]["total"]
    assert rows["ada_perfect"]["total"] == FULL and rows["ben_sign"]["total"] == "33"
    assert "grader_time_limit" in run.stdout


BROKEN_FEEDBACK = """
from nbgrader.preprocessors import NbGraderPreprocessor


class BreakFeedback(NbGraderPreprocessor):
    def preprocess(self, nb, resources):
        raise RuntimeError("the feedback page cannot be made here")


c.GenerateFeedback.preprocessors.append(BreakFeedback)
"""


def test_a_feedback_page_that_cannot_be_made_is_named_and_the_grade_stands(tmp_path):
    """nbgrader's generate_feedback failing for a student (a course file missing, a broken template) keeps the
    grade and names feedback_failed with nbgrader's error, instead of 'no problems'."""
    root = course_with(tmp_path / "course", {}, controls=CONTROLS[:1])
    with open(root / "nbgrader_config.py", "a") as f:
        f.write(BROKEN_FEEDBACK)
    run = run_grade(root, "--quiet", "--workers", "1")
    assert grades(root)["ada_perfect"]["total"] == FULL and "no problems" not in run.stdout
    ((kind, detail),) = problems(root)["ada_perfect"]
    assert kind == "feedback_failed" and detail == "RuntimeError: the feedback page cannot be made here", detail


def read_only(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & ~0o222)


def owned_by_root(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        os.lchown(path, 0, 0)


BAD_PLACES = {  # what is wrong -> (how the test makes it, what the one line must say)
    "read-only course files": (read_only, "is read-only: chmod u+w"),
    "a read-only gradebook": (lambda root: (root / "gradebook.db").chmod(0o444), "gradebook.db, which you"),
    "a course folder owned by another user": (owned_by_root, "belongs to root, and you (bn-grader) cannot write in it"),
    "a TMPDIR the user cannot write": (None, "TMPDIR is"),
}


def tree(root: Path) -> dict:
    return {str(p): (p.lstat().st_mode, p.lstat().st_size, p.lstat().st_mtime_ns) for p in [root, *root.rglob("*")]}


@pytest.mark.parametrize("wrong", BAD_PLACES)
def test_an_ordinary_user_who_cannot_write_where_grade_writes_is_told_in_one_line_and_nothing_is_written(
    by_user, wrong
):
    """Each refusal is one line naming the path and what to do; the course is as it was, to the byte."""
    if by_user.user is None and wrong == "a course folder owned by another user":
        pytest.skip("the suite is not root: it cannot give a course to another user")
    make, says = BAD_PLACES[wrong]
    root = by_user.course({}, controls=CONTROLS[:1], name="bad-" + "-".join(wrong.split()))
    env = None
    if make is None:
        unwritable = by_user.folder / "no-tmp"
        unwritable.mkdir(mode=0o555, exist_ok=True)
        env = {**(by_user.user.env if by_user.user else NEWCOMER_ENV), "TMPDIR": str(unwritable)}
    else:
        make(root)
    before = tree(root)
    run = by_user.grade(root, "--quiet", "--workers", "1", check=False, env=env)
    lines = run.stderr.strip().splitlines()
    print(wrong, "->", lines[-1:])
    assert run.returncode != 0 and len(lines) == 1 and says in lines[0] and "Nothing was graded" in lines[0], run.stderr
    assert str(root) in lines[0] or "TMPDIR is" in lines[0] and str(by_user.folder / "no-tmp") in lines[0]
    assert tree(root) == before


def test_an_ordinary_user_whose_home_is_read_only_grades_all_the_same(by_user):
    """grade needs nothing of its user's home: with a home it cannot write in, the class is graded in full."""
    if by_user.user is None:
        pytest.skip("the suite is not root: it will not take write access from its own home")
    root = by_user.course({}, controls=CONTROLS, name="read-only-home")
    home = by_user.folder / "read-only-home-of-the-user"
    home.mkdir()
    os.chown(home, by_user.user.uid, by_user.user.gid)
    home.chmod(0o500)
    run = by_user.grade(root, "--quiet", "--workers", "1", env={**by_user.user.env, "HOME": str(home)})
    assert grades(root)["ada_perfect"]["total"] == FULL and grades(root)["ben_sign"]["total"] == "33"
    assert "no problems" in run.stdout

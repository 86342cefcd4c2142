"""OwnedCollect (``grade --from-exchange``'s collect) on a folder of the exchange, as the user running the tests: it
takes the assignment's notebooks by name, as regular files of their student's, and nothing else of the folder.
tests/slow/test_jupyterhub.py runs it through a real hub, with users of their own."""

import datetime
import os
import pwd
import shutil
import subprocess
import sys
import time

import nbformat
import pytest
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config
from traitlets.utils.importstring import import_item

from autograder.grading.intake.owned_collect import OwnedCollect

ASSIGNMENT, NB = "ps1", "answers.ipynb"


@pytest.fixture(autouse=True)
def course_gradebook(new_gradebook, tmp_path):
    """The course's gradebook.db, as nbgrader makes one, there before the collect opens it (for the due date), as in
    a course that released the assignment: without it nbgrader made one in each test, an alembic run each (a
    subprocess, 0.8 s; 1.5 s with the collect's own process of ``grade --from-exchange``)."""
    (tmp_path / "course").mkdir()
    shutil.copy(new_gradebook, tmp_path / "course" / "gradebook.db")


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
    assert sorted(p.name for p in got.iterdir()) == [NB, "submission_secret.txt", "timestamp.txt"]
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
    return start(tmp_path), course / "submitted" / me / ASSIGNMENT


def configured(tmp_path) -> Config:
    config = Config()
    config.CourseDirectory.root = str(tmp_path / "course")
    config.CourseDirectory.course_id = "course101"
    config.CourseDirectory.assignment_id = ASSIGNMENT
    config.Exchange.root = str(tmp_path / "exchange")
    return config


def start(tmp_path, kind=OwnedCollect):
    """``kind`` (OwnedCollect, or nbgrader's release_feedback) started in the course of ``tmp_path``."""
    config = configured(tmp_path)
    exchange = kind(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config), config=config)
    exchange.start()
    return exchange


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
    assert sorted(p.name for p in got.iterdir()) == [NB, "other.ipynb", "submission_secret.txt", "timestamp.txt"]
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
    root = course_with_the_exchange(tmp_path)
    problems = from_exchange(root, ASSIGNMENT)  # (collected already: its copies are listed again)
    assert [(p.student, p.notebook, p.kind, p.detail) for p in problems] == [
        (me, stem, "duplicate_file", f"2 files for {stem}: took {stem}-Copy1.ipynb (the newest); ignored {NB}")
    ]


def course_with_the_exchange(tmp_path):
    """The course root, configured as docs/jupyterhub.md says for ``grade --from-exchange``."""
    root = tmp_path / "course"
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        "c.CourseDirectory.course_id = 'course101'\n"
        f"c.Exchange.root = {str(tmp_path / 'exchange')!r}\n"
        "c.ExchangeFactory.collect = 'autograder.grading.intake.owned_collect.OwnedCollect'\n"
    )
    return root


def released(tmp_path, cells_of: dict):
    """The course of ``tmp_path`` with ``NB`` released, and in its exchange's inbound one folder of the user running the
    tests for each name of ``cells_of`` (-> the cells' source of its NB), made in that order: inbound."""
    release = tmp_path / "course" / "release" / ASSIGNMENT
    release.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), release / NB)
    inbound = tmp_path / "exchange" / "course101" / "inbound"
    inbound.mkdir(parents=True)
    for name, source in cells_of.items():
        time.sleep(0.02)  # (a ctime of its own)
        (inbound / name).mkdir()
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source, id="c")]), inbound / name / NB)
    return inbound


CLAIMS = ["notatime", "", "9999-12-31 23:59:59 -1400", "0001-01-01 00:00:00 +1400"]  # no time; none a datetime holds


def test_a_folder_whose_name_claims_no_time_stops_no_collect(tmp_path):
    """Any student of the course may make a folder in inbound/ (2733). Measured on a machine set up as
    docs/jupyterhub.md says: mallory's ``mkdir 'inbound/xa_mallory+backprop_ninja+notatime'`` stopped ``grade
    --from-exchange`` for the whole class ("collecting from nbgrader's exchange failed: ... ParserError", nobody
    collected nor graded), since nbgrader's collect reads the time in every name of inbound/ and raises on one it
    cannot read, or that no datetime holds (OverflowError). Such a folder now counts from its arrival, as any folder
    whose name claims an earlier time; one named after another student is refused as before."""
    me = pwd.getpwuid(os.getuid()).pw_name
    mine = [f"{me}+{ASSIGNMENT}+{claim}" for claim in CLAIMS]
    another = [f"ghost+{ASSIGNMENT}+{claim}+x" for claim in CLAIMS]
    inbound = released(
        tmp_path,
        {f"{me}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+abc": "made first", **dict.fromkeys(another, "")}
        | {name: f"made {i}" for i, name in enumerate(mine)},
    )
    collect = start(tmp_path)
    assert collect.collected == [me] and sorted(r[0] for r in collect.refused) == sorted(another)
    got = tmp_path / "course" / "submitted" / me / ASSIGNMENT
    assert cells(got / NB) == [f"made {len(mine) - 1}"]  # the newest by its arrival
    last = inbound / mine[-1]
    arrived = datetime.datetime.fromtimestamp(max(last.stat().st_ctime, (last / NB).stat().st_ctime), datetime.UTC)
    assert (got / "timestamp.txt").read_text() == f"{arrived:%Y-%m-%d %H:%M:%S.%f} UTC"
    secret = (got / "submission_secret.txt").read_bytes()  # (none was handed in: one that nobody holds)
    assert len(secret) == 128 and secret.isascii()


def test_a_notebook_written_into_after_its_folder_arrived_counts_from_that_write(tmp_path):
    """Writing into a file of a folder changes no time of the folder. Measured on a machine set up as
    docs/jupyterhub.md says: mallory submitted an empty notebook in time (01:36:00), wrote her answers into it in the
    exchange 16 s after the due date (her folder, 0777, and her files there are hers), and was collected as at
    01:36:00, 40 of 40 points and no late penalty; so could she hours later. The time of a submission is now also
    the last change of each file taken from it, as it was read."""
    me = pwd.getpwuid(os.getuid()).pw_name
    name = f"{me}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+abc"
    inbound = released(tmp_path, {name: "submitted in time"})
    arrived = (inbound / name).stat().st_ctime_ns
    time.sleep(0.02)
    late = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("written after the due date", id="c")])
    (inbound / name / NB).write_text(nbformat.writes(late))  # into the same file
    assert (inbound / name).stat().st_ctime_ns == arrived and (inbound / name / NB).stat().st_ctime_ns > arrived

    start(tmp_path)
    got = tmp_path / "course" / "submitted" / me / ASSIGNMENT
    written = datetime.datetime.fromtimestamp((inbound / name / NB).stat().st_ctime, datetime.UTC)
    assert cells(got / NB) == ["written after the due date"]
    assert (got / "timestamp.txt").read_text() == f"{written:%Y-%m-%d %H:%M:%S.%f} UTC"


def test_release_feedback_releases_the_class_whatever_secret_a_submission_holds(tmp_path):
    """nbgrader's release_feedback reads the secret beside every student's pages as text and stopped at the first
    student with none (FileNotFoundError, measured: mallory's hand-made folder in the exchange had none), an empty
    one (an assertion) or one that is no text (UnicodeDecodeError): the students after them in its listing got no
    feedback. Such a student's pages get a new secret, which nobody holds (a submission with none gets one as it is
    collected: test_a_folder_whose_name_claims_no_time_stops_no_collect); everyone's pages are released."""
    from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback
    from nbgrader.utils import notebook_hash

    from autograder.grading.intake.exchange import secret_beside_feedback

    held = {"ada": b"5ec7e7" * 20, "mal_empty": b"", "mal_bytes": b"\xff\xfe", "mal_blank": b" \n"}
    root = tmp_path / "course"
    for student, secret in held.items():
        submitted, feedback = (root / kind / student / ASSIGNMENT for kind in ("submitted", "feedback"))
        for folder in (submitted, feedback):
            folder.mkdir(parents=True)
            (folder / "timestamp.txt").write_text("2026-12-01 10:00:00.000000 UTC")
        (submitted / "submission_secret.txt").write_bytes(secret)
        (feedback / "answers.html").write_text(student)
        secret_beside_feedback(root, ASSIGNMENT, student)
        beside = (feedback / "submission_secret.txt").read_bytes()
        assert beside == secret if student == "ada" else len(beside) == 128 and beside.isascii()
    (tmp_path / "exchange" / "course101").mkdir(parents=True)

    start(tmp_path, ExchangeReleaseFeedback)
    pages = tmp_path / "exchange" / "course101" / "feedback"
    assert sorted(page.read_text() for page in pages.iterdir()) == sorted(held)
    assert (pages / f"{notebook_hash(secret=held['ada'].decode(), notebook_id='answers')}.html").read_text() == "ada"


@pytest.mark.parametrize("when", ["after its folder was chosen", "while its files are read"])
def test_a_link_put_in_place_of_a_submission_while_it_is_collected_is_not_read(tmp_path, when):
    """A student may rename their folder in inbound/ (2733) and put a link in its place, to a folder of answers kept
    since before the due date, whose files' times are early: the collect chose the folder (init_src), then read its
    notebooks by path, through the link. It now opens the folder once, never through a link, and reads every name in
    it: a link put there before it is opened is not collected, one put there after changes nothing."""
    me = pwd.getpwuid(os.getuid()).pw_name
    name = f"{me}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+abc"
    inbound = released(tmp_path, {"kept answers": "answers chosen after the due date", name: "submitted in time"})

    def swap():
        (inbound / name).rename(inbound / "moved away")
        (inbound / name).symlink_to(inbound / "kept answers")

    class Swapping(OwnedCollect):
        def init_src(self):
            super().init_src()
            if when == "after its folder was chosen":
                swap()

        def copies(self, *args):
            if when == "while its files are read":
                swap()
            return super().copies(*args)

    collect = start(tmp_path, Swapping)
    got = tmp_path / "course" / "submitted" / me / ASSIGNMENT
    if when == "after its folder was chosen":
        assert collect.collected == [] and not got.exists()
    else:
        assert collect.collected == [me] and cells(got / NB) == ["submitted in time"]


def test_a_students_folders_named_after_others_make_a_few_problems_not_thousands(tmp_path):
    """Measured on a machine set up as docs/jupyterhub.md says: mallory's 5,000 folders in inbound/ named after alice
    were 5,003 not_their_submission problems, a problems.json of 1.1 MB and a class report of 0.8 MB (a million would
    be 200 MB). The first 20 of a student's are named, the rest counted, as a download's stray files are."""
    from autograder.grading.intake.exchange import REFUSED_NAMED, from_exchange

    me = pwd.getpwuid(os.getuid()).pw_name
    inbound = released(
        tmp_path, {f"ghost+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+{i}": "" for i in range(REFUSED_NAMED + 5)}
    )
    (inbound / f"{me}+{ASSIGNMENT}+2026-12-01 10:00:00.000000 UTC+link").symlink_to(tmp_path)  # said for what it is
    root = course_with_the_exchange(tmp_path)
    problems = from_exchange(root, ASSIGNMENT)
    assert {(p.student, p.kind) for p in problems} == {(me, "not_their_submission")}
    assert len(problems) == REFUSED_NAMED + 1 and "(a link?)" in problems[0].detail  # (their own name's first)
    assert problems[-1].detail == f"and 6 more folders in the exchange made by {me}, not named here"

"""What changed since the last ``grade`` run, as digests: who must be regraded, and why.

``submission_key`` covers a student's notebooks and timestamp.txt, ``course_key`` the source notebooks,
nbgrader_config.py and the due date; ``student_key`` joins the two.
"""

import hashlib
import json
from pathlib import Path

from ..results.gradebook import exists
from .collect import MAX_ENTRY_BYTES
from .exchange import MAX_SMALL_BYTES, read_owned

NEW_SUBMISSION = "new submission"
FIRST_GRADING = "first grading"
COURSE_CHANGED = "regrade after a change of the exercises, nbgrader_config.py or the due date"
REQUESTED = "regrade requested (--regrade-all)"
UNFINISHED = "regrade: the last grading did not finish"
FILES_GONE = "regrade: the autograded notebooks of the last grading are gone"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def due_date(gradebook: str, assignment: str):
    """The assignment's due date in the gradebook at URL ``gradebook`` (nbgrader's own), or None."""
    from nbgrader.api import Gradebook, MissingEntry

    if not exists(gradebook):
        return None
    with Gradebook(gradebook) as gb:
        try:
            return gb.find_assignment(assignment).duedate
        except MissingEntry:
            return None


def course_key(root: Path, assignment: str, notebooks: list, gradebook: str) -> str:
    """Changes when an exercise, the grading configuration or the due date changes: everyone is regraded then."""
    parts = [(root / "source" / assignment / f"{n}.ipynb").read_bytes() for n in notebooks]
    parts.append((root / "nbgrader_config.py").read_bytes() if (root / "nbgrader_config.py").is_file() else b"")
    parts.append(str(due_date(gradebook, assignment)).encode())
    return _digest(b"\0".join(parts))


def _submission(root: Path, assignment: str, student: str, notebooks: list) -> tuple:
    """What staging reads of the student's folder (``prepare.stage_student``): regular files, through no link; a
    timestamp.txt that is no UTF-8 (a student's own upload, in a Moodle folder) stopped the class's run."""
    folder = root / "submitted" / student / assignment
    read = lambda name, limit: read_owned(str(folder / name), None, limit)
    files = {n: None if (data := read(f"{n}.ipynb", MAX_ENTRY_BYTES)) is None else _digest(data) for n in notebooks}
    stamp = read("timestamp.txt", MAX_SMALL_BYTES)
    return files, "" if stamp is None else stamp.decode("utf-8", "replace").strip()


def submission_key(root: Path, assignment: str, student: str, notebooks: list) -> str:
    """Changes when the student hands in something new (a notebook or its timestamp)."""
    return _digest(json.dumps(_submission(root, assignment, student, notebooks), sort_keys=True).encode())


def student_key(root: Path, assignment: str, student: str, notebooks: list, course: str) -> str:
    """Changes when either the student's files or the course do: the student is regraded then."""
    files, stamp = _submission(root, assignment, student, notebooks)
    return _digest(json.dumps([course, files, stamp], sort_keys=True).encode())


def files_changed(old: dict, root: Path, assignment: str, students: list, notebooks: list) -> list:
    """The students to regrade whatever the course's digest says: new ones, those whose files changed and those
    whose last grading did not finish; ``old`` maps a student to their ``StudentRecord`` from the last run."""
    return [
        s
        for s in students
        if s not in old
        or not old[s].complete
        or old[s].submission_key != submission_key(root, assignment, s, notebooks)
    ]


def regrade_reason(old, submission: str, course: str, regrade_all: bool) -> str:
    """Why a student is graded in this run; ``old`` is their ``StudentRecord`` from the last run, or None."""
    if old is None:
        return FIRST_GRADING
    if old.submission_key != submission:
        return NEW_SUBMISSION
    if old.course_key != course:
        return COURSE_CHANGED
    if regrade_all:
        return REQUESTED
    return UNFINISHED if not old.complete else FILES_GONE

"""gradebook.db and the workers' copies of it: copy, merge one student back, forget one student.

Each worker grades into its own copy of the gradebook; the parent copies every finished student's
grades into gradebook.db, one student at a time, so no write is ever lost to SQLite's
single-writer lock. Manual scores stay as the instructor left them in gradebook.db.
"""

import shutil
import sqlite3
import warnings
from pathlib import Path


def copy_database(src: Path, dst: Path) -> None:
    """A consistent copy of the SQLite database ``src`` at ``dst`` (replacing it)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(str(dst) + suffix).unlink(missing_ok=True)
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    a.close()
    b.close()


def merge_student(main_db: Path, worker_db: Path, assignment: str, student: str) -> None:
    """Copy one student's submission (scores, comments, timestamp, late penalty) from a worker's gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    with warnings.catch_warnings(), Gradebook(f"sqlite:///{worker_db}") as gw, Gradebook(f"sqlite:///{main_db}") as gm:
        warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy warnings, as in every autograde
        try:
            sw = gw.find_submission(assignment, student)
        except MissingEntry:
            return
        who = gw.find_student(student)
        gm.update_or_create_student(
            student, first_name=who.first_name, last_name=who.last_name, email=who.email, lms_user_id=who.lms_user_id
        )
        gm.update_or_create_submission(assignment, student, timestamp=sw.timestamp, extension=sw.extension)
        for nw in sw.notebooks:
            nm = gm.find_submission_notebook(nw.name, assignment, student)
            nm.flagged, nm.late_submission_penalty = nw.flagged, nw.late_submission_penalty
            grades, comments = {g.name: g for g in nm.grades}, {c.name: c for c in nm.comments}
            for g in nw.grades:  # manual scores stay as the instructor left them in gradebook.db
                grades[g.name].auto_score, grades[g.name].needs_manual_grade = g.auto_score, g.needs_manual_grade
            for c in nw.comments:
                comments[c.name].auto_comment = c.auto_comment
        gm.db.commit()


def forget_student(main_db: Path, root: Path, assignment: str, student: str) -> None:
    """No gradable notebook any more: drop the old grades, autograded notebooks and feedback."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{main_db}") as gb:
        try:
            gb.remove_submission(assignment, student)
        except MissingEntry:
            pass
    for kind in ("autograded", "feedback"):
        shutil.rmtree(root / kind / student / assignment, ignore_errors=True)


def late_penalties(main_db: Path, assignment: str, student: str) -> tuple:
    """(seconds late, the due date, {notebook: points taken off}) of one student's submission in gradebook.db."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{main_db}") as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            return 0, None, {}
        penalties = {nb.name: nb.late_submission_penalty for nb in submission.notebooks if nb.late_submission_penalty}
        return submission.total_seconds_late, submission.duedate, penalties

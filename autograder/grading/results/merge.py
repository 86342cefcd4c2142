"""Merging graded students into the course's gradebook: many in one transaction, in a thread beside the grading.

A new submission gets the rows nbgrader's ``add_submission`` makes, with nbgrader's own defaults; then every
student's automatic scores, comments, late penalties and timestamp are set, and nothing people wrote (manual
scores, comments, flags, extensions) is touched. A batch takes a few statements and one commit, where nbgrader's API
took about a hundred queries and three commits a student (docs/design/class-grading.md#the-gradebook).
"""

import datetime
import queue
import threading
from dataclasses import dataclass
from typing import Callable

from ...common.errors import GradingError
from ...common.problems import Problem
from .gradebook import CELL_KINDS, forget_student

BATCH = 100  # students in one transaction at most
GRADED = ("grade_cells", "task_cells")  # the kinds of cell that get a grade; a comment: SOLVED
SOLVED = ("solution_cells", "task_cells")


@dataclass(frozen=True)
class Lateness:
    """How late a merged submission is, as nbgrader reckons it."""

    seconds: float
    """Seconds after the student's due date; 0 when on time, or without a due date or a timestamp."""
    due: datetime.datetime | None
    """The assignment's due date with the student's extension, UTC."""
    penalties: dict
    """notebook -> points taken off for lateness, for each notebook that lost any."""

    def problems(self, student: str) -> list:
        """A late_submission ``Problem`` for every notebook that lost points to the late penalty."""
        if not self.penalties:
            return []
        when = f"{self.seconds / 3600:.1f} hours after the due date ({self.due:%Y-%m-%d %H:%M} UTC)"
        return [
            Problem(
                student,
                notebook,
                "late_submission",
                f"handed in {when}: {points:g} point{'' if points == 1 else 's'} taken off",
            )
            for notebook, points in sorted(self.penalties.items())
        ]


def write_submissions(db, assignment: str, graded: dict) -> dict:
    """Write students' automatic grades (student -> ``GradedSubmission``) in the open transaction of connection
    ``db``; student -> ``Lateness``."""
    from nbgrader.api import Base

    t = Base.metadata.tables
    sa = t["submitted_assignment"]
    layout = Layout.read(db, t, assignment)
    theirs = (sa.c.assignment_id == layout.id, sa.c.student_id.in_(sorted(graded)))
    submit(db, t, layout, theirs, graded)
    score(db, t, layout, theirs, graded)
    return lateness(db, t, layout, theirs)


@dataclass(frozen=True)
class Layout:
    """An assignment as the gradebook has it."""

    id: str
    duedate: datetime.datetime | None
    notebooks: dict
    """notebook id -> name."""
    cells: dict
    """kind of cell (``CELL_KINDS``) -> [(notebook id, cell name, cell id)]."""

    @classmethod
    def read(cls, db, t: dict, assignment: str) -> "Layout":
        from sqlalchemy import select

        a, nb, cell = t["assignment"], t["notebook"], t["base_cell"]
        found, due = db.execute(select(a.c.id, a.c.duedate).where(a.c.name == assignment)).one()
        notebooks = dict(db.execute(select(nb.c.id, nb.c.name).where(nb.c.assignment_id == found)).all())
        cells = {
            kind: db.execute(
                select(cell.c.notebook_id, cell.c.name, cell.c.id)
                .join(t[kind], t[kind].c.id == cell.c.id)
                .where(cell.c.notebook_id.in_(notebooks))
            ).all()
            for kind in CELL_KINDS
        }
        return cls(found, due, notebooks, cells)

    def cell_ids(self, kinds: tuple) -> dict:
        """(notebook name, cell name) -> cell id, of the cells of these kinds."""
        return {(self.notebooks[nb], name): c for kind in kinds for nb, name, c in self.cells[kind]}


def submit(db, t: dict, layout: Layout, theirs: tuple, graded: dict) -> None:
    """Every student and their submission, with its timestamp: a new one made as nbgrader's add_submission makes
    it (a notebook each, a grade per grade and task cell, a comment per solution and task cell, nbgrader's defaults)."""
    from nbgrader.api import new_uuid
    from nbgrader.utils import parse_utc
    from sqlalchemy import bindparam, insert, select, update

    students, sa = sorted(graded), t["submitted_assignment"]
    known = set(db.scalars(select(t["student"].c.id).where(t["student"].c.id.in_(students))))
    execute(db, insert(t["student"]), [{"id": s} for s in students if s not in known])
    when = {s: graded[s].timestamp for s in students}
    stamps = {s: parse_utc(datetime.datetime.fromisoformat(when[s])) if when[s] else None for s in students}
    old = dict(db.execute(select(sa.c.student_id, sa.c.id).where(*theirs)).all())
    stamp = update(sa).where(sa.c.id == bindparam("b_id")).values(timestamp=bindparam("b_stamp"))
    execute(db, stamp, [{"b_id": old[s], "b_stamp": stamps[s]} for s in students if s in old])
    new = [
        {"id": new_uuid(), "assignment_id": layout.id, "student_id": s, "timestamp": stamps[s]}
        for s in students
        if s not in old
    ]
    notebooks = [
        {"id": new_uuid(), "assignment_id": n["id"], "notebook_id": nb} for n in new for nb in layout.notebooks
    ]
    execute(db, insert(sa), new)
    execute(db, insert(t["submitted_notebook"]), notebooks)
    for table, kinds in (("grade", GRADED), ("comment", SOLVED)):
        cells = {nb: [c for kind in kinds for of, _, c in layout.cells[kind] if of == nb] for nb in layout.notebooks}
        rows = [{"notebook_id": n["id"], "cell_id": c} for n in notebooks for c in cells[n["notebook_id"]]]
        execute(db, insert(t[table]), rows)


def score(db, t: dict, layout: Layout, theirs: tuple, graded: dict) -> None:
    """Each graded notebook's late penalty, automatic scores and comments; nothing else."""
    from sqlalchemy import bindparam, select, update

    sa, sn, g, c = t["submitted_assignment"], t["submitted_notebook"], t["grade"], t["comment"]
    found = db.execute(
        select(sa.c.student_id, sn.c.notebook_id, sn.c.id).join(sa, sa.c.id == sn.c.assignment_id).where(*theirs)
    )
    ids = {(s, layout.notebooks[nb]): i for s, nb, i in found}  # (student, notebook) -> its submitted notebook
    done = [(ids[s, name], name, nb) for s in sorted(graded) for name, nb in graded[s].notebooks.items()]
    penalty = update(sn).where(sn.c.id == bindparam("b_id")).values(late_submission_penalty=bindparam("b_penalty"))
    execute(db, penalty, [{"b_id": i, "b_penalty": nb.late_penalty} for i, _, nb in done])
    grades, comments = layout.cell_ids(GRADED), layout.cell_ids(SOLVED)
    grade = update(g).where(g.c.notebook_id == bindparam("b_nb"), g.c.cell_id == bindparam("b_cell"))
    rows = [
        {"b_nb": i, "b_cell": grades[name, cell], "b_score": points, "b_manual": manual}
        for i, name, nb in done
        for cell, (points, manual) in nb.scores.items()
    ]
    execute(db, grade.values(auto_score=bindparam("b_score"), needs_manual_grade=bindparam("b_manual")), rows)
    comment = update(c).where(c.c.notebook_id == bindparam("b_nb"), c.c.cell_id == bindparam("b_cell"))
    rows = [
        {"b_nb": i, "b_cell": comments[name, cell], "b_text": text}
        for i, name, nb in done
        for cell, text in nb.comments.items()
    ]
    execute(db, comment.values(auto_comment=bindparam("b_text")), rows)


def lateness(db, t: dict, layout: Layout, theirs: tuple) -> dict:
    """student -> ``Lateness`` of their submission (nbgrader's ``duedate`` and ``total_seconds_late``)."""
    from sqlalchemy import select

    sa, sn = t["submitted_assignment"], t["submitted_notebook"]
    penalties = {}
    for student, nb, points in db.execute(
        select(sa.c.student_id, sn.c.notebook_id, sn.c.late_submission_penalty)
        .join(sa, sa.c.id == sn.c.assignment_id)
        .where(*theirs)
    ):
        if points:
            penalties.setdefault(student, {})[layout.notebooks[nb]] = points
    late = {}
    for student, stamp, extension in db.execute(select(sa.c.student_id, sa.c.timestamp, sa.c.extension).where(*theirs)):
        due = layout.duedate + extension if layout.duedate is not None and extension is not None else layout.duedate
        seconds = 0 if stamp is None or due is None else max(0, (stamp - due).total_seconds())
        late[student] = Lateness(seconds, due, penalties.get(student, {}))
    return late


def execute(db, statement, rows: list) -> None:
    """``statement`` once per row, in one executemany (nothing for no rows)."""
    if rows:
        db.execute(statement, rows)


class Merger:
    """The one writer of the course's gradebook while a class is graded.

    ``add`` a student's ``GradedSubmission`` (or None: drop their old grades and files) and go on; a thread writes
    whatever has arrived meanwhile in one transaction, then calls ``merged(student, Lateness or None)`` for each
    student of it. ``close`` (or the end of a ``with``) waits for the last; it, and ``add`` after a failure, raise
    what stopped the merge.
    """

    def __init__(self, url: str, root, assignment: str, merged: Callable):
        self.url, self.root, self.assignment, self.merged = url, root, assignment, merged
        self.jobs, self.failed = queue.Queue(), None
        self.thread = threading.Thread(target=self._run, name="gradebook merge", daemon=True)
        self.thread.start()

    def __enter__(self) -> "Merger":
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def add(self, student: str, graded) -> None:
        if self.failed:
            raise self.failed
        self.jobs.put((student, graded))

    def close(self) -> None:
        self.jobs.put(None)
        self.thread.join()
        if self.failed:
            raise self.failed

    def _run(self) -> None:
        from sqlalchemy import create_engine

        engine = None
        try:
            engine = create_engine(self.url)
            while (batch := self._batch()) is not None:
                graded = {s: g for s, g in batch if g is not None}
                for student in (s for s, g in batch if g is None):
                    forget_student(self.url, self.root, self.assignment, student)
                late = {}
                if graded:
                    with engine.begin() as db:
                        late = write_submissions(db, self.assignment, graded)
                for student, _ in batch:
                    self.merged(student, late.get(student))
        except Exception as error:  # noqa: BLE001 (raised in the grading thread by add() and close())
            cause = getattr(error, "orig", None) or error  # the database's own words, without SQLAlchemy's SQL
            words = (str(cause).strip().splitlines() or [""])[0][:300]
            self.failed = GradingError(
                f"merging grades into the course's gradebook failed: {type(cause).__name__}: {words}"
            )
        finally:
            if engine is not None:
                engine.dispose()

    def _batch(self) -> list | None:
        """What has arrived (waiting for one), at most BATCH students; None once ``close`` was called and all done."""
        batch = [self.jobs.get()]
        while batch[-1] is not None and len(batch) < BATCH:
            try:
                batch.append(self.jobs.get_nowait())
            except queue.Empty:
                break
        if batch[-1] is None:  # close(): the last job
            batch.pop()
            if not batch:
                return None
            self.jobs.put(None)  # for the next call, after this batch
        return batch

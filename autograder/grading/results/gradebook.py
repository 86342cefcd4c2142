"""The course's gradebook and the graders' private ones: the URL, a template to grade into, a student's grades.

Graders never write to the course's gradebook (SQLite or PostgreSQL): each grades into a private copy of the
``template`` and sends back each student's automatic grades (``GradedSubmission``), which the coordinator merges
(``merge.py``), leaving manual ones as they are.
"""

import contextlib
import shutil
import traceback
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ...common.errors import GradingError

CELL_KINDS = ("grade_cells", "solution_cells", "task_cells")  # nbgrader's tables of a cell's kind, keyed by base_cell


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def course_url(root: Path) -> str:
    """The gradebook URL of the course root ``root``, as nbgrader reads it from its nbgrader_config.py."""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    try:
        config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    except Exception as error:  # the course's own Python: anything can go wrong in it
        frames = traceback.extract_tb(error.__traceback__)
        lines = [f.lineno for f in frames if f.filename.endswith("nbgrader_config.py")]
        where = f", line {lines[-1]}" if lines else ""
        raise GradingError(
            f"{root / 'nbgrader_config.py'}{where} fails: {type(error).__name__}: {error}. Nothing was graded."
        ) from None
    return CourseDirectory(config=config, root=str(root)).db_url


def exists(url: str) -> bool:
    """False for a SQLite file that is not there yet (nbgrader would create it); a server's gradebook is."""
    return not url.startswith("sqlite:///") or Path(url.removeprefix("sqlite:///")).is_file()


@contextlib.contextmanager
def opened(url: str):
    """nbgrader's Gradebook at ``url``, without the SQLAlchemy warnings nbgrader itself causes on every write."""
    from nbgrader.api import Gradebook

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Gradebook(url) as gb:
            yield gb


def make_template(url: str, assignment: str, path: Path) -> None:
    """A new SQLite gradebook at ``path``: the assignment as gradebook ``url`` has it (due date, notebooks,
    cells), and an empty submission for each student with an extension (which changes their late penalty)."""
    from nbgrader.api import Base
    from sqlalchemy import MetaData, create_engine, select

    path.unlink(missing_ok=True)
    t = Base.metadata.tables
    source, target = create_engine(url), create_engine(sqlite_url(path))
    try:
        stamp = MetaData()  # nbgrader's schema version, as alembic stamped it: copied, so alembic is not run
        stamp.reflect(source, only=["alembic_version"])
        Base.metadata.create_all(target)
        stamp.create_all(target)
        with source.connect() as read, target.begin() as write:
            rows = lambda name, where: [dict(r._mapping) for r in read.execute(select(t[name]).where(where))]
            (this,) = rows("assignment", t["assignment"].c.name == assignment)
            notebooks = rows("notebook", t["notebook"].c.assignment_id == this["id"])
            in_notebooks = [nb["id"] for nb in notebooks]
            cells = rows("base_cell", t["base_cell"].c.notebook_id.in_(in_notebooks))
            copies = {
                "alembic_version": [dict(r._mapping) for r in read.execute(select(stamp.tables["alembic_version"]))],
                "course": rows("course", t["course"].c.id == this["course_id"]),
                "assignment": [this],
                "notebook": notebooks,
                "base_cell": cells,
                "source_cell": rows("source_cell", t["source_cell"].c.notebook_id.in_(in_notebooks)),
                **{kind: rows(kind, t[kind].c.id.in_([c["id"] for c in cells])) for kind in CELL_KINDS},
            }
            for name, found in copies.items():
                if found:
                    write.execute((stamp.tables[name] if name in stamp.tables else t[name]).insert(), found)
            submissions = t["submitted_assignment"]
            extended = read.execute(
                select(submissions.c.student_id, submissions.c.extension).where(
                    submissions.c.assignment_id == this["id"], submissions.c.extension.is_not(None)
                )
            ).all()
    finally:
        source.dispose()
        target.dispose()
    if extended:
        with opened(sqlite_url(path)) as gb:
            for student, extension in extended:
                gb.add_student(student)
                gb.add_submission(assignment, student, extension=extension)


@dataclass
class GradedNotebook:
    """The automatic part of one graded notebook."""

    scores: dict = field(default_factory=dict)
    """grade cell -> [auto_score, needs_manual_grade]."""
    comments: dict = field(default_factory=dict)
    """cell -> the automatic comment."""
    late_penalty: float | None = None
    """Points taken off for lateness (nbgrader's ``late_submission_penalty``)."""


@dataclass
class GradedSubmission:
    """What grading one student wrote into a grader's gradebook, and all that goes into the course's."""

    timestamp: str | None
    """When it was handed in (timestamp.txt), ISO 8601, UTC; None without one."""
    notebooks: dict
    """notebook -> ``GradedNotebook``."""

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "GradedSubmission":
        notebooks = {name: GradedNotebook(**nb) for name, nb in data["notebooks"].items()}
        return cls(data["timestamp"], notebooks)


def read_submission(url: str, assignment: str, student: str) -> GradedSubmission | None:
    """One student's automatic grades in gradebook ``url`` (None when it has no submission of theirs): a query for its
    notebooks, one for their grades and one for their comments, not nbgrader's lazy loads (a query for each grade's
    and comment's cell, to read its name)."""
    from nbgrader.api import BaseCell, Comment, Grade, MissingEntry, Notebook, SubmittedNotebook

    with opened(url) as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            return None
        query = gb.db.query
        rows = (
            query(SubmittedNotebook.id, Notebook.name, SubmittedNotebook.late_submission_penalty)
            .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
            .filter(SubmittedNotebook.assignment_id == submission.id)
            .all()
        )
        notebooks = {id_: GradedNotebook({}, {}, penalty) for id_, _, penalty in rows}
        names = {id_: name for id_, name, _ in rows}
        cells = lambda table, *columns: (
            query(table.notebook_id, BaseCell.name, *columns)
            .join(BaseCell, table.cell_id == BaseCell.id)
            .filter(table.notebook_id.in_(list(notebooks)))
        )
        for id_, cell, score, manual in cells(Grade, Grade.auto_score, Grade.needs_manual_grade):
            notebooks[id_].scores[cell] = [score, manual]
        for id_, cell, comment in cells(Comment, Comment.auto_comment):
            notebooks[id_].comments[cell] = comment
        stamp = submission.timestamp
        return GradedSubmission(stamp.isoformat() if stamp else None, {names[i]: nb for i, nb in notebooks.items()})


def forget_student(url: str, root: Path, assignment: str, student: str) -> None:
    """No gradable notebook any more: drop the old grades, autograded notebooks and feedback."""
    from nbgrader.api import MissingEntry

    with opened(url) as gb:
        try:
            gb.remove_submission(assignment, student)
        except MissingEntry:
            pass
    for kind in ("autograded", "feedback"):
        shutil.rmtree(root / kind / student / assignment, ignore_errors=True)

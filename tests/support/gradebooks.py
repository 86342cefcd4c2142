"""Gradebooks in the tests and benchmarks: the merge as nbgrader's API did it, a gradebook's rows without their
random ids, and a gradebook copied to another database.

``merge_one_by_one`` is how the coordinator merged a student until the batched merge
(``autograder/grading/results/merge.py``) replaced it: nbgrader's Gradebook API, one student and a few commits at a
time. The tests hold the batched merge to it, row for row; the benchmarks measure both.
"""

import datetime

from autograder.grading.results.gradebook import GradedSubmission, opened
from autograder.grading.results.merge import Lateness


def merge_one_by_one(url: str, assignment: str, student: str, graded: GradedSubmission) -> Lateness:
    """Write one student's automatic grades into gradebook ``url`` through nbgrader's API; how late they are."""
    from nbgrader.api import MissingEntry

    with opened(url) as gb:
        try:
            gb.find_student(student)
        except MissingEntry:
            gb.add_student(student)
        stamp = datetime.datetime.fromisoformat(graded.timestamp) if graded.timestamp else None
        gb.update_or_create_submission(assignment, student, timestamp=stamp)
        for name, notebook in graded.notebooks.items():
            nb = gb.find_submission_notebook(name, assignment, student)
            nb.late_submission_penalty = notebook.late_penalty
            grades, comments = {g.name: g for g in nb.grades}, {c.name: c for c in nb.comments}
            for cell, (score, manual) in notebook.scores.items():
                grades[cell].auto_score, grades[cell].needs_manual_grade = score, manual
            for cell, text in notebook.comments.items():
                comments[cell].auto_comment = text
        gb.db.commit()
    with opened(url) as gb:  # what the coordinator then read for the late_submission problems
        submission = gb.find_submission(assignment, student)
        penalties = {nb.name: nb.late_submission_penalty for nb in submission.notebooks if nb.late_submission_penalty}
        return Lateness(submission.total_seconds_late, submission.duedate, penalties)


# The columns that name a row of each of nbgrader's tables (its unique constraints), in place of its random id.
NAMES = {
    "course": ("id",),
    "student": ("id",),
    "assignment": ("name",),
    "notebook": ("assignment_id", "name"),
    "base_cell": ("notebook_id", "name", "type"),
    "source_cell": ("notebook_id", "name"),
    "submitted_assignment": ("assignment_id", "student_id"),
    "submitted_notebook": ("assignment_id", "notebook_id"),
    "grade": ("notebook_id", "cell_id"),
    "comment": ("notebook_id", "cell_id"),
    "grade_cells": ("id",),
    "solution_cells": ("id",),
    "task_cells": ("id",),
}


def rows(url: str) -> dict:
    """Every row of every nbgrader table of gradebook ``url``, each id (its own and those it refers to) replaced by
    the names of the row it is: table -> sorted rows, comparable between gradebooks."""
    from nbgrader.api import Base
    from sqlalchemy import create_engine, select

    engine = create_engine(url)
    named, found = {}, {}  # table -> {id: the row's names}; table -> rows
    try:
        with engine.connect() as db:
            for table in Base.metadata.sorted_tables:  # a table after those it refers to
                refers = {fk.parent.name: fk.column.table.name for fk in table.foreign_keys}
                named[table.name], found[table.name] = {}, []
                for raw in db.execute(select(table)).mappings():
                    row = {k: named[refers[k]].get(v, v) if k in refers else v for k, v in raw.items()}
                    names = tuple(row[c] for c in NAMES[table.name])
                    named[table.name][raw["id"]] = names
                    found[table.name].append(tuple(sorted({**row, "id": names}.items())))
    finally:
        engine.dispose()
    return {name: sorted(table, key=repr) for name, table in found.items()}


def copy_gradebook(source: str, target: str) -> None:
    """Every nbgrader table of gradebook ``source``, and its alembic stamp, into the empty database ``target``."""
    from nbgrader.api import Base
    from sqlalchemy import MetaData, create_engine, select

    stamp = MetaData()
    read, write = create_engine(source), create_engine(target)
    try:
        stamp.reflect(read, only=["alembic_version"])
        Base.metadata.create_all(write)
        stamp.create_all(write)
        with read.connect() as src, write.begin() as dst:
            for table in [*Base.metadata.sorted_tables, *stamp.sorted_tables]:
                found = [dict(r) for r in src.execute(select(table)).mappings()]
                if found:
                    dst.execute(table.insert(), found)
    finally:
        read.dispose()
        write.dispose()


def graded_at(url: str, assignment: str) -> dict:
    """student -> their ``GradedSubmission`` in gradebook ``url`` (what workers send the coordinator)."""
    from autograder.grading.results.gradebook import read_submission

    with opened(url) as gb:
        students = [s.student.id for s in gb.find_assignment(assignment).submissions]
    return {s: read_submission(url, assignment, s) for s in sorted(students)}

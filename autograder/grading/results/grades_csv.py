"""grades.csv: one row per student, read from the course's gradebook.

Columns: student, total (after any late penalty), max_total, late_penalty, one per notebook and one per graded step
(``<notebook>:<grade_id>``); an empty cell means no grade, and problems.json says why.
"""

import csv
from pathlib import Path

import nbformat

from ...common.shown import from_cell, to_cell

FIXED_COLUMNS = ["student", "total", "max_total", "late_penalty"]
# The CSVs people open (grades.csv, the history, the LMS files): UTF-8 with a byte-order mark, which Excel on Windows
# needs to read UTF-8 (without it, "Иван" showed as "Ð˜Ð²Ð°Ð½"); Canvas's and Moodle's imports take it (Moodle strips
# it, Canvas finds its "Student" column in "\ufeffStudent"), pandas skips it; Python's csv reads it with "utf-8-sig",
# which reads files without one too (those of older versions).
SPREADSHEET_ENCODING = "utf-8-sig"


def step_columns(root: Path, assignment: str, notebooks: list) -> dict:
    """notebook -> graded grade_ids (every test_* cell, and any other cell worth points), in cell order."""
    steps = {}
    for notebook in notebooks:
        nb = nbformat.read(root / "release" / assignment / f"{notebook}.ipynb", as_version=4)
        steps[notebook] = [
            m["grade_id"]
            for m in (c.metadata.get("nbgrader", {}) for c in nb.cells)
            if m.get("grade") and (m.get("grade_id", "").startswith("test_") or m.get("points", 0))
        ]
    return steps


def grade_rows(gradebook: str, assignment: str, notebooks: list, steps: dict, students: list, graded: dict) -> list:
    """One dict per student, numbers or None, keyed by the CSV's columns; ``graded``: student -> notebooks. Read in
    two queries, with nbgrader's own scores (its column properties): one notebook at a time took four queries, 25 ms
    a student, after the last student was graded."""
    from nbgrader.api import Assignment, BaseCell, Grade, Gradebook, Notebook, SubmittedAssignment, SubmittedNotebook

    with Gradebook(gradebook) as gb:
        max_total = gb.find_assignment(assignment).max_score
        of_assignment = lambda query: (
            query.join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
            .filter(Assignment.name == assignment)
        )
        submitted = of_assignment(
            gb.db.query(
                SubmittedAssignment.student_id,
                Notebook.name,
                SubmittedNotebook.id,
                SubmittedNotebook.score,
                SubmittedNotebook.late_submission_penalty,
            )
            .select_from(SubmittedNotebook)
            .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
        ).all()
        scores = {}  # submitted notebook id -> {grade_id: score}
        grades = gb.db.query(Grade.notebook_id, BaseCell.name, Grade.score).join(BaseCell, Grade.cell_id == BaseCell.id)
        for notebook_id, name, score in of_assignment(
            grades.join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
        ):
            scores.setdefault(notebook_id, {})[name] = score
    found = {(student, notebook): rest for student, notebook, *rest in submitted}
    rows = []
    for student in students:
        row = {"student": student, "max_total": max_total}
        total, penalty = None, 0.0
        for notebook in notebooks:
            if notebook not in graded.get(student, ()) or (student, notebook) not in found:
                continue
            notebook_id, score, late_penalty = found[student, notebook]
            row[notebook] = score
            total = (total or 0) + score
            penalty += late_penalty or 0.0
            for step in steps[notebook]:
                row[f"{notebook}:{step}"] = scores.get(notebook_id, {}).get(step)
        row["late_penalty"] = penalty or None
        row["total"] = None if total is None else total - penalty
        rows.append(row)
    return rows


def _fmt(x) -> str:
    return "" if x is None else f"{float(x):g}"


def read_student(text) -> str:
    """A student's id as grades.csv (or the history) holds it (``to_cell``), as it is."""
    return from_cell(text)


def number(text):
    """A cell of grades.csv (or of the history) as a number; None when it is empty or not a number."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def write_grades_csv(path: Path, rows: list, notebooks: list, steps: dict) -> None:
    """Write ``grade_rows`` to ``path``."""
    header = [*FIXED_COLUMNS, *notebooks, *(f"{n}:{s}" for n in notebooks for s in steps[n])]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding=SPREADSHEET_ENCODING) as f:
        writer = csv.DictWriter(f, fieldnames=header, restval="")
        writer.writeheader()
        # a student's id is theirs to choose (a folder's name): a cell that a spreadsheet shows, never runs
        writer.writerows({k: (to_cell(v) if k == "student" else _fmt(v)) for k, v in row.items()} for row in rows)

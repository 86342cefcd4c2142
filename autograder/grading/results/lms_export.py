"""``backprop-ninja export``: the totals of grades.csv in a file an LMS imports (Canvas, Moodle, or plain CSV).

Nobody is dropped: whoever is on the roster without a grade, or graded without being on it, is listed on stderr and
in ``<out>.unmatched.csv`` (docs/instructors.md, "Grades into the LMS").
"""

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from ...common.errors import GradingError
from ...common.shown import to_cell
from .grades_csv import SPREADSHEET_ENCODING, read_student
from .moodle_worksheet import maximum
from .roster import CANVAS_COLUMNS, Roster, match, name_key, read_roster

FORMATS = ("canvas", "moodle", "csv")
NO_SUBMISSION = "on the roster, no submission"
NOT_ON_ROSTER = "submission, not on the roster"
NO_GRADE = "submission, no grade (see problems.json)"


@dataclass
class Export:
    """What ``export`` wrote."""

    out: Path
    rows: int
    """Students (or roster entries) in the file."""
    unmatched: list
    """(what, who, why) for everyone listed in ``unmatched_csv``."""
    unmatched_csv: Path
    warnings: list
    """What the instructor must check before importing (a points mismatch)."""


def read_grades(path: Path) -> dict:
    """student -> its grades.csv row."""
    if not Path(path).is_file():
        raise GradingError(f"no grades: {path} does not exist (run backprop-ninja grade first)")
    with open(path, newline="", encoding=SPREADSHEET_ENCODING) as f:
        reader = csv.DictReader(f)
        if not {"student", "total"} <= set(reader.fieldnames or ()):  # nbgrader export writes grades.csv by default
            raise GradingError(
                f"{path} is not the grades.csv backprop-ninja grade writes (its columns: "
                f"{', '.join((reader.fieldnames or ['none'])[:6])}…; `nbgrader export` writes such a file, by default "
                "under this name): run backprop-ninja grade again, which writes it anew without regrading anyone, and "
                "give nbgrader export a file of its own (nbgrader export --to nbgrader-grades.csv)"
            )
        rows = {read_student(r["student"]): r for r in reader if r.get("student")}
    return rows


def canvas_column(roster: Roster, assignment: str, column: str | None) -> str:
    """The roster's column for the assignment (``Name (id)``): the one named, else the one whose name is the
    assignment's, else a new column named after the assignment."""
    assignments = [c for c in roster.columns if re.search(r"\(\d+\)$", c)]
    if column:
        if column not in roster.columns:
            raise GradingError(f"the roster has no column {column!r}; its assignments: {', '.join(assignments)}")
        return column
    same = [c for c in assignments if name_key(re.sub(r"\s*\(\d+\)$", "", c)) == name_key(assignment)]
    return same[0] if len(same) == 1 else assignment


def write_worksheet(writer, roster: Roster, person_of: dict, total, max_total: str, warnings: list) -> int:
    """Moodle's grading worksheet back, for *Upload grading worksheet*: its columns and rows as read, in the site's
    language (Moodle finds them by their names), the grade of each matched student filled in."""
    sheet = roster.worksheet
    grade_of = {id(p): total(s) for s, p in person_of.items()}
    stated = maximum(roster.people, sheet)
    if stated is not None and max_total and stated != float(max_total):
        warnings.append(
            f"the worksheet's maximum grade is {stated:g}, the totals are out of {max_total}: Moodle skips a grade "
            f"over the maximum. Set the assignment's maximum grade to {max_total} in Moodle and download the worksheet "
            "again"
        )
    writer.writerow(roster.columns)
    for p in roster.people:  # Moodle reads the identifier, the grade, the time and feedback: those as they are
        row = {**p.row, sheet["grade"]: grade_of[id(p)]} if id(p) in grade_of else dict(p.row)
        if sheet["name"]:  # a name as a spreadsheet shows it, never runs it
            row[sheet["name"]] = to_cell(row.get(sheet["name"], ""))
        writer.writerow([row.get(c, "") for c in roster.columns])
    return len(grade_of)


def export_grades(
    fmt: str, grades_csv: Path, out: Path, roster_path: Path | None, assignment: str, column: str | None = None
) -> Export:
    """Write ``out`` in format ``fmt`` from grades.csv and the roster."""
    if fmt not in FORMATS:
        raise GradingError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    if roster_path is None and fmt != "csv":
        raise GradingError(f"--format {fmt} needs --roster (the LMS's own export of its class list)")
    grades = read_grades(grades_csv)
    roster = read_roster(roster_path) if roster_path else None
    matching = match(sorted(grades), roster) if roster else None
    if roster and fmt != roster.lms and fmt != "csv":
        raise GradingError(f"--format {fmt} needs a {fmt} roster; {roster_path} is a {roster.lms} export")
    person_of = matching.matched if matching else {}
    total = lambda student: grades[student]["total"] if student in grades else ""
    max_total = next((r["max_total"] for r in grades.values() if r.get("max_total")), "")

    unmatched = (
        [(NO_SUBMISSION, p.name, "no student of the course is this person") for p in matching.no_submission]
        if matching
        else []
    )
    unmatched += [(NOT_ON_ROSTER, s, why) for s, why in (matching.not_on_roster.items() if matching else [])]
    unmatched += [(NO_GRADE, s, "handed in but not graded") for s in sorted(grades) if grades[s]["total"] == ""]

    warnings = []
    if matching is not None and grades and not person_of:
        warnings.append(
            "nobody in grades.csv matched anyone on the roster, so this file sets no grade: is the roster this "
            "course's, and are the students named as the LMS names them? (the unmatched list above)"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding=SPREADSHEET_ENCODING) as f:
        writer = csv.writer(f)
        if fmt == "canvas":
            heading = canvas_column(roster, assignment, column)
            student_of = {id(p): s for s, p in person_of.items()}
            writer.writerow([*CANVAS_COLUMNS, heading])
            writer.writerow(["    Points Possible", "", "", "", "", max_total])  # as Canvas writes it
            points = roster.points_possible.get(heading, "")
            if points and max_total and float(points) != float(max_total):
                warnings.append(
                    f"{heading} is worth {points} points in Canvas but {max_total} here: the totals are points out "
                    f"of {max_total}; change the assignment's points in Canvas to {max_total} before importing"
                )
            for p in roster.people:  # a name as a spreadsheet shows it (Canvas matches by ID); the ids as they are
                ids = [p.row.get(c, "") for c in CANVAS_COLUMNS[1:]]
                writer.writerow([to_cell(p.row.get("Student", "")), *ids, total(student_of.get(id(p), ""))])
            count = len(roster.people)
        elif fmt == "moodle" and roster.worksheet:  # the worksheet as read, each matched student's grade filled in
            count = write_worksheet(writer, roster, person_of, total, max_total, warnings)
        elif fmt == "moodle":
            people = list(person_of.items())
            key = "Email address" if people and all(p.row.get("Email address") for _, p in people) else "ID number"
            writer.writerow([key, assignment])
            for student, p in people:
                if not p.row.get(key):
                    raise GradingError(f"{p.name} has no {key} on the roster: Moodle cannot match the grade to them")
                writer.writerow([p.row[key], total(student)])
            count = len(people)
        else:
            writer.writerow(["student", "name", "total", "max_total", "late_penalty"])
            for student in sorted(grades):
                row = grades[student]
                name = person_of[student].name if student in person_of else ""
                writer.writerow(
                    [to_cell(student), to_cell(name), row["total"], row["max_total"], row.get("late_penalty", "")]
                )
            count = len(grades)

    unmatched_csv = out.with_name(out.stem + ".unmatched.csv")
    with open(unmatched_csv, "w", newline="", encoding=SPREADSHEET_ENCODING) as f:
        writer = csv.writer(f)
        writer.writerow(["what", "who", "why"])
        writer.writerows((what, to_cell(who), to_cell(why)) for what, who, why in unmatched)
    return Export(out, count, unmatched, unmatched_csv, warnings)

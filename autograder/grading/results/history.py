"""grade_history.csv, beside grades.csv: one row per student each ``grade`` run graded; rows are only ever added.

Columns: time (the run's start, UTC), student, old_total, new_total (empty when there is none) and reason.
"""

import csv
from dataclasses import dataclass
from pathlib import Path

from ...common.shown import to_cell
from .grades_csv import SPREADSHEET_ENCODING, number, read_student

COLUMNS = ["time", "student", "old_total", "new_total", "reason"]


@dataclass(frozen=True)
class Change:
    """One student graded by one run."""

    time: str
    student: str
    old_total: float | None
    new_total: float | None
    reason: str

    @property
    def changed(self) -> bool:
        return self.old_total != self.new_total


def append_history(path: Path, changes: list) -> None:
    new = not path.is_file()
    with open(path, "a", newline="", encoding=SPREADSHEET_ENCODING) as f:  # its mark only when new
        writer = csv.writer(f)
        if new:
            writer.writerow(COLUMNS)
        for c in changes:
            fmt = lambda x: "" if x is None else f"{x:g}"
            writer.writerow([c.time, to_cell(c.student), fmt(c.old_total), fmt(c.new_total), c.reason])


def read_history(path: Path) -> list:
    """Every ``Change`` in the file, oldest first; [] when there is none."""
    if not Path(path).is_file():
        return []
    with open(path, newline="", encoding=SPREADSHEET_ENCODING) as f:
        return [
            Change(r["time"], read_student(r["student"]), number(r["old_total"]), number(r["new_total"]), r["reason"])
            for r in csv.DictReader(f)
            if set(COLUMNS) <= set(r)
        ]

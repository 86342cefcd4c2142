"""What each ``grade`` run changed (grade_history.csv, beside grades.csv): one row per student it graded.

Columns: ``time`` (when the run started, UTC), ``student``, ``old_total`` (before the run; empty
when there was none), ``new_total`` (after it; empty when the student has no grade any more) and
``reason`` (``changes``: a new submission, a regrade after a change of the exercises, the
configuration or the due date, ``--regrade-all``...). Rows are only ever added.
"""

import csv
from dataclasses import dataclass
from pathlib import Path

from .grades_csv import number

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
    with open(path, "a", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(COLUMNS)
        for c in changes:
            fmt = lambda x: "" if x is None else f"{x:g}"
            writer.writerow([c.time, c.student, fmt(c.old_total), fmt(c.new_total), c.reason])


def read_history(path: Path) -> list:
    """Every ``Change`` in the file, oldest first; [] when there is none."""
    if not Path(path).is_file():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return [
            Change(r["time"], r["student"], number(r["old_total"]), number(r["new_total"]), r["reason"])
            for r in csv.DictReader(f)
            if set(COLUMNS) <= set(r)
        ]

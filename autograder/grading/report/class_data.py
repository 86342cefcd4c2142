"""The class as grading left it, read once for the class report.

grades.csv, problems.json, and where present the gradebook, source/, autograded/, feedback/ and grade_history.csv;
a missing or broken input is a note (``ClassData.notes``), never an error (docs/design/class-grading.md).
"""

import csv
import json
from pathlib import Path
from urllib.parse import quote

from ...common.problems import rank, read_problems
from ..results.gradebook import exists, sqlite_url
from ..results.grades_csv import SPREADSHEET_ENCODING, number, read_student
from ..results.history import read_history
from .misconceptions import read_diagnoses

ASSIGNMENT = "backprop_ninja"


class ClassData:
    """The class's files read once (grades, problems, step facts, diagnoses, history); ``notes`` says what was
    missing. Paths default to the files of those names in the course root."""

    def __init__(
        self, course_root, grades_csv=None, problems_json=None, history_csv=None, assignment=ASSIGNMENT, gradebook=None
    ):
        self.root, self.assignment = Path(course_root), assignment
        self.gradebook = gradebook or sqlite_url(self.root / "gradebook.db")
        self.notes, self.rows, self.problems = [], [], []
        self.notebooks, self.steps, self.max_points = [], {}, {}
        self._read_grades(Path(grades_csv) if grades_csv else self.root / "grades.csv")
        self._read_problems(Path(problems_json) if problems_json else self.root / "problems.json")
        self._read_step_facts()
        self.students = list(dict.fromkeys([r["student"] for r in self.rows] + [p.student for p in self.problems]))
        self.graded = [r for r in self.rows if r["total"] is not None]
        self.diagnoses = read_diagnoses(self.root, assignment, [r["student"] for r in self.rows], self.notebooks)
        self.history = read_history(Path(history_csv) if history_csv else self.root / "grade_history.csv")

    def _read_grades(self, path):
        if not path.is_file():
            self.notes.append(f"No grades: {path} does not exist.")
            return
        with open(path, newline="", encoding=SPREADSHEET_ENCODING) as f:
            reader = csv.DictReader(f)
            columns = reader.fieldnames or []
            if "student" not in columns:
                self.notes.append(f"No grades: {path} has no 'student' column.")
                return
            for row in reader:
                self.rows.append({k: (read_student(v) if k == "student" else number(v)) for k, v in row.items() if k})
        for column in columns:
            if column in ("student", "total", "max_total", "late_penalty"):
                continue
            notebook, _, step = column.partition(":")
            if notebook not in self.steps:
                self.notebooks.append(notebook)
                self.steps[notebook] = []
            if step:
                self.steps[notebook].append(step)
        for row in self.rows:
            for column in ("total", "max_total", "late_penalty"):
                row.setdefault(column, None)

    def _read_problems(self, path):
        if not path.is_file():
            self.notes.append(f"No problems list: {path} does not exist.")
            return
        try:
            self.problems = read_problems(path)
        except ValueError as error:
            self.notes.append(f"No problems list: {error}.")

    def _read_step_facts(self):
        """Max points from the gradebook (else column maxima); step order from the source notebook."""
        from_gradebook = {}
        if exists(self.gradebook) and self.notebooks:  # never let Gradebook() create an empty database
            from nbgrader.api import Gradebook, MissingEntry

            try:
                with Gradebook(self.gradebook) as gb:
                    for notebook in self.notebooks:
                        try:
                            cells = gb.find_notebook(notebook, self.assignment).grade_cells
                        except MissingEntry:
                            continue
                        from_gradebook.update({f"{notebook}:{c.name}": c.max_score for c in cells})
            except Exception as error:  # a broken gradebook must not stop the report
                self.notes.append(f"Gradebook unreadable ({error}); max points are the highest scores seen.")
        for notebook in self.notebooks:
            order = self._cell_order(notebook)
            steps = sorted(self.steps[notebook], key=lambda s: order.index(s) if s in order else len(order))
            for step in steps:
                key = f"{notebook}:{step}"
                seen = [r[key] for r in self.rows if r.get(key) is not None]
                self.max_points[key] = from_gradebook.get(key, max(seen, default=None))
            # a 0-point cell (setup, self-checks) is not a graded step
            self.steps[notebook] = [s for s in steps if self.max_points[f"{notebook}:{s}"]]

    def _cell_order(self, notebook):
        path = self.root / "source" / self.assignment / f"{notebook}.ipynb"
        try:
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        except (OSError, ValueError, KeyError):
            return []
        meta = [c.get("metadata", {}).get("nbgrader", {}) for c in cells]
        return [m.get("grade_id") for m in meta if m.get("grade")]

    def step_rates(self, notebook):
        """[(step, passed, graded, max points)] in cell order; a step passes when its score equals its max."""
        rates = []
        for step in self.steps[notebook]:
            key = f"{notebook}:{step}"
            scores = [r[key] for r in self.rows if r.get(key) is not None]
            top = self.max_points[key]
            rates.append((step, sum(s >= top - 1e-9 for s in scores), len(scores), top))
        return rates

    def feedback(self, student, notebook):
        """The link to the student's feedback on the notebook, relative to the course root; None when there is none."""
        path = self.root / "feedback" / student / self.assignment / f"{notebook}.html"
        return f"feedback/{quote(student)}/{quote(self.assignment)}/{quote(notebook)}.html" if path.is_file() else None

    def percents(self):
        return [100 * r["total"] / r["max_total"] for r in self.graded if r["max_total"]]

    def by_kind(self):
        """kind -> its problems, the kinds in ``KINDS`` order."""
        return {k: [p for p in self.problems if p.kind == k] for k in sorted({p.kind for p in self.problems}, key=rank)}

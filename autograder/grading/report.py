"""The instructor's class report: where the class struggles, and who could not be graded.

Inputs, as ``backprop-ninja grade`` leaves them in the course root:
  grades.csv     one row per student: ``student, total, max_total``, one column per notebook
                 (``ex1_atomic_backward``) and one per graded step (``ex1_atomic_backward:test_dlogprobs``);
                 an empty cell means no grade
  problems.json  a list of ``{"student", "notebook" (or null), "problem" (a kind), "detail"}``
  gradebook.db   (optional) the max points of every step; else the highest score seen in its column
  source/backprop_ninja/<notebook>.ipynb  (optional) the order of the steps; else the column order
Output: ``class_report.html`` in the course root, one self-contained page (plots are inline PNGs,
no external CSS or JS). Every string that comes from a student is escaped: it is hostile input.
"""

import base64
import csv
import html
import io
import json
import statistics
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

ASSIGNMENT = "backprop_ninja"
HARDEST = 5
PROBLEM_ORDER = [
    "kernel_died",
    "worker_killed",
    "notebook_time_limit",
    "cell_timeout",
    "memory_limit",
    "no_answer_reported",
    "not_a_notebook",
    "unmatched_file",
    "missing_notebook",
    "metadata_stripped",
    "duplicated_cell",
    "deleted_cell",
]


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


class ClassData:
    """grades.csv, problems.json and the step facts (order, max points) read once; ``notes`` says what was missing."""

    def __init__(self, course_root, grades_csv=None, problems_json=None):
        self.root = Path(course_root)
        self.notes, self.rows, self.problems = [], [], []
        self.notebooks, self.steps, self.max_points = [], {}, {}
        self._read_grades(Path(grades_csv) if grades_csv else self.root / "grades.csv")
        self._read_problems(Path(problems_json) if problems_json else self.root / "problems.json")
        self._read_step_facts()
        self.students = list(dict.fromkeys([r["student"] for r in self.rows] + [p["student"] for p in self.problems]))
        self.graded = [r for r in self.rows if r["total"] is not None]

    def _read_grades(self, path):
        if not path.is_file():
            self.notes.append(f"No grades: {path} does not exist.")
            return
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            columns = reader.fieldnames or []
            if "student" not in columns:
                self.notes.append(f"No grades: {path} has no 'student' column.")
                return
            for row in reader:
                self.rows.append({k: (v if k == "student" else _number(v)) for k, v in row.items() if k})
        for column in columns:
            if column in ("student", "total", "max_total"):
                continue
            notebook, _, step = column.partition(":")
            if notebook not in self.steps:
                self.notebooks.append(notebook)
                self.steps[notebook] = []
            if step:
                self.steps[notebook].append(step)
        for row in self.rows:
            row.setdefault("total", None)
            row.setdefault("max_total", None)

    def _read_problems(self, path):
        if not path.is_file():
            self.notes.append(f"No problems list: {path} does not exist.")
            return
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
            self.notes.append(f"No problems list: {path} is not valid JSON ({error}).")
            return
        for p in found if isinstance(found, list) else []:
            if isinstance(p, dict):
                self.problems.append(
                    {
                        "student": str(p.get("student", "")),
                        "notebook": p.get("notebook"),
                        "problem": str(p.get("problem", "unknown")),
                        "detail": str(p.get("detail", "")),
                    }
                )

    def _read_step_facts(self):
        """Max points from the gradebook (else column maxima); step order from the source notebook."""
        from_gradebook = {}
        db = self.root / "gradebook.db"
        if db.is_file() and self.notebooks:  # never let Gradebook() create an empty database
            from nbgrader.api import Gradebook, MissingEntry

            try:
                with Gradebook(f"sqlite:///{db}") as gb:
                    for notebook in self.notebooks:
                        try:
                            cells = gb.find_notebook(notebook, ASSIGNMENT).grade_cells
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
        path = self.root / "source" / ASSIGNMENT / f"{notebook}.ipynb"
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

    def percents(self):
        return [100 * r["total"] / r["max_total"] for r in self.graded if r["max_total"]]

    def by_kind(self):
        kinds = sorted(
            {p["problem"] for p in self.problems},
            key=lambda k: (PROBLEM_ORDER.index(k) if k in PROBLEM_ORDER else len(PROBLEM_ORDER), k),
        )
        return {k: [p for p in self.problems if p["problem"] == k] for k in kinds}


def _fmt(x, digits=1):
    return "" if x is None else (f"{x:.0f}" if float(x).is_integer() else f"{x:.{digits}f}")


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}">'


def _histogram(percents) -> str:
    fig = Figure(figsize=(7, 2.8))
    ax = fig.add_subplot()
    ax.hist(percents, bins=range(0, 101, 5), color="#4c72b0", edgecolor="white")
    ax.set(xlabel="total, % of max", ylabel="students", xlim=(0, 100))
    ax.yaxis.get_major_locator().set_params(integer=True)
    return _png(fig)


def _rate_chart(rates) -> str:
    fig = Figure(figsize=(7, 0.8 + 0.28 * len(rates)))
    ax = fig.add_subplot()
    values = [100 * p / g if g else 0 for _, p, g, _ in rates]
    colors = ["#c44e52" if v < 50 else "#dd8452" if v < 80 else "#55a868" for v in values]
    ax.barh(range(len(rates)), values, color=colors)
    with matplotlib.rc_context({"text.parse_math": False}):  # a '$' in a step name is text, not math
        ax.set_yticks(range(len(rates)), [step for step, *_ in rates], fontsize=9)
    ax.invert_yaxis()  # the first step of the notebook on top
    for y, (v, (_, p, g, _)) in enumerate(zip(values, rates)):
        ax.text(min(v, 100) + 1, y, f"{v:.0f}% ({p}/{g})" if g else "no grades", va="center", fontsize=8)
    ax.set(xlim=(0, 115), xlabel="students with full points, %")
    return _png(fig)


def _table(headers, rows) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _headline(data) -> list:
    totals = [r["total"] for r in data.graded]
    lines = [f"{len(data.students)} students ({len(data.graded)} graded), {len(data.notebooks)} notebooks"]
    if totals:
        percents = data.percents()
        tops = {r["max_total"] for r in data.graded}
        lines.append(
            f"total{f' (of {_fmt(tops.pop())})' if len(tops) == 1 else ''}: "
            f"mean {_fmt(statistics.mean(totals))}, median {_fmt(statistics.median(totals))}"
            + (f" ({statistics.mean(percents):.1f}% / {statistics.median(percents):.1f}% of max)" if percents else "")
        )
    counts = ", ".join(f"{k} {len(v)}" for k, v in data.by_kind().items())
    lines.append(f"{len(data.problems)} problems" + (f": {counts}" if counts else ""))
    return lines


def summary_lines(course_root, grades_csv=None, problems_json=None) -> list:
    """Lines for the terminal: students graded, mean and median total, problems by kind, what was missing."""
    data = ClassData(course_root, grades_csv, problems_json)
    return _headline(data) + data.notes


def write_report(course_root, grades_csv=None, problems_json=None) -> Path:
    """Write ``class_report.html`` into ``course_root`` and return its path.

    ``grades_csv`` and ``problems_json`` default to the files of those names in the course root.
    Missing or empty inputs give a page that says so, never an exception.
    """
    data = ClassData(course_root, grades_csv, problems_json)
    e = html.escape
    parts = [
        "<h1>Backprop Ninja: class report</h1><ul class='headline'>"
        + "".join(f"<li>{e(line)}</li>" for line in _headline(data))
        + "</ul>"
    ]
    parts += [f"<p class='note'>{e(note)}</p>" for note in data.notes]
    percents = data.percents()
    parts.append(
        "<h2 id='distribution'>Score distribution</h2>"
        + (_histogram(percents) if percents else "<p class='note'>No student has a total yet.</p>")
    )
    parts.append(
        "<h2 id='steps'>Pass rate of every step</h2><p>A step passes when it earns its full points; "
        "red below 50%, orange below 80%.</p>"
    )
    hardest = []
    for notebook in data.notebooks:
        rates = data.step_rates(notebook)
        parts.append(f"<h3>{e(notebook)}</h3>")
        if not any(g for _, _, g, _ in rates):
            parts.append("<p class='note'>No graded student in this notebook.</p>")
            continue
        parts.append(_rate_chart(rates))
        ranked = sorted((r for r in rates if r[2]), key=lambda r: r[1] / r[2])[:HARDEST]
        hardest.append(
            f"<h3>{e(notebook)}</h3>"
            + _table(
                ["step", "pass rate", "passed / graded", "max points"],
                [(s, f"{100 * p / g:.0f}%", f"{p} / {g}", _fmt(m)) for s, p, g, m in ranked],
            )
        )
    if not data.notebooks:
        parts.append("<p class='note'>No notebooks in the grades.</p>")
    parts.append(
        f"<h2 id='hardest'>The {HARDEST} hardest steps of each notebook</h2>"
        + ("".join(hardest) or "<p class='note'>No graded steps.</p>")
    )
    parts.append("<h2 id='problems'>Problems</h2>")
    for kind, found in data.by_kind().items():
        parts.append(
            f"<h3>{e(kind)} ({len(found)})</h3>"
            + _table(
                ["student", "notebook", "detail"], [(p["student"], p["notebook"] or "", p["detail"]) for p in found]
            )
        )
    if not data.problems:
        parts.append("<p>No problems reported.</p>")
    parts.append("<h2 id='students'>Students</h2>")
    per_student = {r["student"]: r for r in data.rows}
    problem_count = {s: sum(p["student"] == s for p in data.problems) for s in data.students}
    parts.append(
        _table(
            ["student", "total", "max total", *data.notebooks, "problems"],
            [
                (
                    s,
                    _fmt(per_student.get(s, {}).get("total")),
                    _fmt(per_student.get(s, {}).get("max_total")),
                    *(_fmt(per_student.get(s, {}).get(n)) for n in data.notebooks),
                    problem_count[s],
                )
                for s in sorted(data.students)
            ],
        )
        if data.students
        else "<p class='note'>No students.</p>"
    )
    page = PAGE.replace("BODY", "\n".join(parts))
    path = data.root / "class_report.html"
    path.write_text(page, encoding="utf-8")
    return path


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Backprop Ninja: class report</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h2 { border-bottom: 1px solid #ccc; margin-top: 2.5rem; }
.headline li { font-size: 1.1rem; margin: .2rem 0; }
.note { color: #8a4b00; background: #fff4e0; padding: .4rem .6rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { border: 1px solid #ddd; padding: .25rem .6rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td { max-width: 36rem; overflow-wrap: anywhere; }
img { max-width: 100%; }
</style></head>
<body>
BODY
</body></html>
"""

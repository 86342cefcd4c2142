"""The instructor's class report (class_report.html): where the class struggles, and who could not be graded.

Reads the class through ``ClassData`` and renders ``templates/class_report.html.j2``: one
self-contained page (plots are inline PNGs, no external CSS or JS). The template is autoescaped:
every string that comes from a student is hostile input, shown as text.
"""

import base64
import io
import statistics
from pathlib import Path

import jinja2
import matplotlib
from matplotlib.figure import Figure

from .class_data import ClassData
from .problems import KINDS

HARDEST = 5
TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("autograder.grading", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,  # a misspelt name in the template fails loudly
)


def _fmt(x, digits=1):
    return "" if x is None else (f"{x:.0f}" if float(x).is_integer() else f"{x:.{digits}f}")


def _png(fig) -> str:
    """The figure as a data: URI, so that the page needs no other file."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return f"data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}"


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


def _notebook_sections(data) -> list:
    """Per notebook: its pass-rate chart (None: nobody graded) and its hardest steps."""
    sections = []
    for notebook in data.notebooks:
        rates = data.step_rates(notebook)
        graded = any(g for _, _, g, _ in rates)
        ranked = sorted((r for r in rates if r[2]), key=lambda r: r[1] / r[2])[:HARDEST]
        sections.append(
            {
                "name": notebook,
                "chart": _rate_chart(rates) if graded else None,
                "hardest": [(s, f"{100 * p / g:.0f}%", f"{p} / {g}", _fmt(m)) for s, p, g, m in ranked],
            }
        )
    return sections


def _student_rows(data) -> list:
    """One row per student: total, max total, each notebook's score, number of problems."""
    per_student = {r["student"]: r for r in data.rows}
    problems = {s: sum(p.student == s for p in data.problems) for s in data.students}
    return [
        (
            s,
            _fmt(per_student.get(s, {}).get("total")),
            _fmt(per_student.get(s, {}).get("max_total")),
            *(_fmt(per_student.get(s, {}).get(n)) for n in data.notebooks),
            problems[s],
        )
        for s in sorted(data.students)
    ]


def write_report(course_root, grades_csv=None, problems_json=None) -> Path:
    """Write ``class_report.html`` into ``course_root`` and return its path.

    ``grades_csv`` and ``problems_json`` default to the files of those names in the course root.
    Missing or empty inputs give a page that says so, never an exception.
    """
    data = ClassData(course_root, grades_csv, problems_json)
    percents = data.percents()
    page = TEMPLATES.get_template("class_report.html.j2").render(
        headline=_headline(data),
        notes=data.notes,
        histogram=_histogram(percents) if percents else None,
        notebooks=_notebook_sections(data),
        notebook_names=data.notebooks,
        hardest=HARDEST,
        problems={k: [(p.student, p.notebook or "", p.detail) for p in v] for k, v in data.by_kind().items()},
        meanings=KINDS,
        students=_student_rows(data),
    )
    path = data.root / "class_report.html"
    path.write_text(page, encoding="utf-8")
    return path

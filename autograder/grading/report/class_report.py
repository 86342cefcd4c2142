"""The instructor's class report (class_report.html): where the class struggles, and who could not be graded.

Reads the class through ``ClassData`` and renders ``templates/class_report.html.j2``: one
self-contained page (plots are inline SVG, no external CSS or JS). The template is autoescaped:
every string that comes from a student is hostile input, shown as text.
"""

import statistics
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from ...common.diagnoses import NOT_ATTEMPTED, label
from ...common.problems import KINDS
from ...common.shown import for_terminal
from ..intake.changes import FIRST_GRADING
from . import charts
from .class_data import ASSIGNMENT, ClassData
from .misconceptions import most_frequent

HARDEST = 5
TOP_DIAGNOSES = 3  # per step
NAMES_SHOWN = 12  # students named per diagnosis, then "and N more"
HISTORY_SHOWN = 100  # changed totals listed, the latest first
# The bars' colours, each at least 3:1 on the white page; the text beside every bar says what its colour does
BLUE, RED, ORANGE, GREEN = "#4c72b0", "#c44e52", "#c0620c", "#3a8a4f"
TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("autograder.grading.report", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,  # a misspelt name in the template fails loudly
    # every string shown as text, and its control characters as ?: a bidi override in an id or a file name
    # reordered the rest of its cell, or the names after it (the charts are Markup, each string escaped there)
    finalize=lambda value: (
        value if isinstance(value, Markup) or not isinstance(value, str) else for_terminal(value, None)
    ),
)


def _fmt(x, digits=1):
    return "" if x is None else (f"{x:.0f}" if float(x).is_integer() else f"{x:.{digits}f}")


def _breakable(name: str) -> Markup:
    """``name``, free to wrap after each underscore (a table of long notebook names fits the page)."""
    return Markup("_<wbr>").join(escape(part) for part in name.split("_"))


def _students(n) -> str:
    return f"{n} student{'s' if n != 1 else ''}"


def _histogram(percents) -> Markup:
    """The totals in 20 bins of 5% from 0 to 100, the last one with 100 (a total outside 0-100 counts in the
    bin at its end of the range)."""
    counts = [0] * 20
    for p in percents:
        counts[min(max(int(p // 5), 0), 19)] += 1
    bins = [f"{5 * i}–{5 * i + 5}%" for i in range(20)]
    titles = [f"{b}: {_students(n)}" for b, n in zip(bins, counts)]
    chart = charts.columns(counts, titles, range(0, 101, 20), "total, % of max", "students", "score distribution", BLUE)
    return chart + charts.numbers(["total, % of max", "students"], zip(bins, map(str, counts)))


def _rate_chart(rates, notebook) -> Markup:
    """One bar per step, the first step of the notebook on top: the % of students with full points."""
    bars = []
    for step, p, g, _ in rates:
        v = 100 * p / g if g else 0
        note = f"{v:.0f}% ({p}/{g})" if g else "no grades"
        color = RED if v < 50 else ORANGE if v < 80 else GREEN
        bars.append((step, v, color, note, f"{step}: {note}"))
    chart = charts.rows(
        bars, "students with full points, %", f"pass rate of every step of {notebook}", 115, range(0, 101, 20)
    )
    table = [(step, f"{p} / {g}", f"{100 * p / g:.0f}%" if g else "no grades") for step, p, g, _ in rates]
    return chart + charts.numbers(["step", "passed / graded", "pass rate"], table)


def _diagnosis_chart(top) -> Markup | None:
    """The class's ten most frequent (step, diagnosis) pairs, as bars of students; a step is named with its
    notebook's first word ("ex4 dC": Exercises 1 and 4 both have a dC)."""
    pairs = sorted(
        ((len(students), nb, step, label(kind)) for (nb, step), kinds in top.items() for kind, students in kinds),
        key=lambda pair: -pair[0],
    )[:10]
    if not pairs:
        return None
    bars = [
        (
            f"{nb.split('_')[0]} {step.removeprefix('test_')}: {text}",
            n,
            RED,
            "",
            f"{nb}, {step}: {text}: {_students(n)}",
        )
        for n, nb, step, text in pairs
    ]
    table = [(nb, step, text, str(n)) for n, nb, step, text in pairs]
    chart = charts.rows(bars, "students", "most frequent diagnoses")
    return chart + charts.numbers(["notebook", "step", "diagnosis", "students"], table)


def _misconceptions(data, top) -> list:
    """Per notebook, per step in cell order: its most frequent diagnoses, their counts and who got them."""
    sections = []
    for notebook in data.notebooks:
        rows = [
            {
                "step": step,
                "label": label(kind),
                "count": len(students),
                "students": [(s, data.feedback(s, notebook)) for s in students[:NAMES_SHOWN]],
                "more": max(0, len(students) - NAMES_SHOWN),
            }
            for step in data.steps[notebook]
            for kind, students in top.get((notebook, step), [])
        ]
        unanswered = {}
        for d in data.diagnoses:
            if d.notebook == notebook and d.kind in NOT_ATTEMPTED:
                unanswered[d.student] = unanswered.get(d.student, 0) + 1
        sections.append(
            {
                "name": notebook,
                "rows": rows,
                "unanswered": [
                    (f"{s} ({n} step{'s' if n != 1 else ''})", data.feedback(s, notebook))
                    for s, n in sorted(unanswered.items())
                ],
            }
        )
    return sections


def _history(data) -> tuple:
    """(a line on the last run, [(run, student, before, after, why)] of the regrades that changed a total, the
    latest first; a first grading is no regrade)."""
    if not data.history:
        return "", []
    last = data.history[-1].time
    graded = [c for c in data.history if c.time == last]
    changed = sum(c.changed for c in graded if c.reason != FIRST_GRADING)
    line = (
        f"The last run that graded anyone ({last}) graded {len(graded)} student{'s' if len(graded) != 1 else ''}: "
        f"{sum(c.reason == FIRST_GRADING for c in graded)} for the first time, {changed} with a changed total."
    )
    changed = [c for c in reversed(data.history) if c.changed and c.reason != FIRST_GRADING][:HISTORY_SHOWN]
    return line, [(c.time, c.student, _fmt(c.old_total), _fmt(c.new_total), c.reason) for c in changed]


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
                "chart": _rate_chart(rates, notebook) if graded else None,
                "hardest": [(s, f"{100 * p / g:.0f}%", f"{p} / {g}", _fmt(m)) for s, p, g, m in ranked],
            }
        )
    return sections


def _student_rows(data) -> list:
    """One row per student: total, max total, late penalty, each notebook's score (linked to its feedback), problems."""
    per_student = {r["student"]: r for r in data.rows}
    rows = []
    for s in sorted(data.students):
        row = per_student.get(s, {})
        links = [data.feedback(s, n) for n in data.notebooks]
        rows.append(
            {
                "name": s,
                "feedback": next((link for link in links if link), None),
                "total": _fmt(row.get("total")),
                "max_total": _fmt(row.get("max_total")),
                "late_penalty": _fmt(row.get("late_penalty")),
                "notebooks": [(_fmt(row.get(n)), link) for n, link in zip(data.notebooks, links)],
                "problems": sum(p.student == s for p in data.problems),
            }
        )
    return rows


def write_report(
    course_root, grades_csv=None, problems_json=None, history_csv=None, assignment=ASSIGNMENT, gradebook=None
) -> Path:
    """Write ``class_report.html`` into ``course_root`` and return its path.

    The inputs default to the files of those names in the course root (``gradebook``: a gradebook URL). Missing
    or empty inputs give a page that says so, never an exception.
    """
    data = ClassData(course_root, grades_csv, problems_json, history_csv, assignment, gradebook)
    percents = data.percents()
    top = most_frequent([d for d in data.diagnoses if d.kind not in NOT_ATTEMPTED], TOP_DIAGNOSES)
    history_summary, history = _history(data)
    page = TEMPLATES.get_template("class_report.html.j2").render(
        diagnosis_chart=_diagnosis_chart(top),
        misconceptions=_misconceptions(data, top),
        history_summary=history_summary,
        history=history,
        headline=_headline(data),
        notes=data.notes,
        histogram=_histogram(percents) if percents else None,
        notebooks=_notebook_sections(data),
        notebook_names=[_breakable(n) for n in data.notebooks],
        hardest=HARDEST,
        problems={k: [(p.student, p.notebook or "", p.detail) for p in v] for k, v in data.by_kind().items()},
        meanings=KINDS,
        students=_student_rows(data),
    )
    path = data.root / "class_report.html"
    path.write_text(page, encoding="utf-8")
    return path

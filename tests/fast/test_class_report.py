"""The class report on a small hand-made class: real files, no nbgrader runs."""

import csv
import html
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest
from nbgrader.api import Gradebook
from support.course import ASSIGNMENT, REPO

from autograder.grading.report import class_report as report
from autograder.grading.report.class_report import ClassData, summary_lines, write_report

EX1, EX2 = "ex1_atomic_backward", "ex2_cross_entropy"
HOSTILE = "<script>alert(1)</script>"
EVIL_DETAIL = '<img src=x onerror="alert(2)">&amp;'
# grade_id -> max points in the gradebook; columns deliberately out of the notebook's cell order
MAX = {"test_dC": 2, "setup_settings": 0, "test_dlogprobs": 1, "test_dcounts_sum_inv": 2, "test_dprobs": 1}
CELL_ORDER = ["test_dlogprobs", "test_dprobs", "test_dcounts_sum_inv", "test_dC"]
CLASS = {  # student -> grade_id -> score (None: no grade); nobody scores 2 on test_dcounts_sum_inv
    "ada": {"test_dC": 2, "setup_settings": 0, "test_dlogprobs": 1, "test_dcounts_sum_inv": 1, "test_dprobs": 1},
    "ben": {"test_dC": 0, "setup_settings": 0, "test_dlogprobs": 1, "test_dcounts_sum_inv": 1, "test_dprobs": 0},
    HOSTILE: {"test_dC": 1, "setup_settings": 0, "test_dlogprobs": 0, "test_dcounts_sum_inv": 0, "test_dprobs": 1},
    "dora": {k: None for k in MAX},  # her kernel died
}
PROBLEMS = [
    {"student": "dora", "notebook": EX1, "problem": "kernel_died", "detail": "os._exit(1) in cell 12"},
    {"student": HOSTILE, "notebook": None, "problem": "unmatched_file", "detail": EVIL_DETAIL},
    {"student": "eve", "notebook": EX2, "problem": "not_a_notebook", "detail": f"ex2.ipynb is {HOSTILE}"},
]


@pytest.fixture(scope="module")
def gradebook_db(new_gradebook, tmp_path_factory):
    """A real gradebook with ex1's grade cells; made once."""
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    shutil.copy(new_gradebook, path)
    with Gradebook(f"sqlite:///{path}") as gb:
        gb.add_assignment(ASSIGNMENT)
        gb.add_notebook(EX1, ASSIGNMENT)
        for name, points in MAX.items():
            gb.add_grade_cell(name, EX1, ASSIGNMENT, max_score=points, cell_type="code")
    return path


def make_class(root, gradebook_db=None):
    columns = ["student", "total", "max_total", EX1, EX2] + [f"{EX1}:{g}" for g in MAX] + [f"{EX2}:test_dlogits"]
    with open(root / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for student, scores in CLASS.items():
            graded = [v for v in scores.values() if v is not None]
            total = sum(graded) if graded else None
            writer.writerow(
                [student, "" if total is None else total, sum(MAX.values()), "" if total is None else total, ""]
                + ["" if scores[g] is None else scores[g] for g in MAX]
                + [""]
            )
    (root / "problems.json").write_text(json.dumps(PROBLEMS))
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(REPO / "source" / ASSIGNMENT / f"{EX1}.ipynb", root / "source" / ASSIGNMENT)
    if gradebook_db:
        shutil.copy(gradebook_db, root / "gradebook.db")


class Page(HTMLParser):
    """Checks that every tag is closed in order; collects section ids, charts and table rows.

    A chart is an ``<svg>``: its attributes, its title and description, its texts and its bars (each ``<rect>``'s
    attributes, its ``<title>`` under "title")."""

    VOID = {"meta", "img", "br", "hr", "link", "input", "wbr"}

    def __init__(self, text):
        super().__init__()
        self.stack, self.ids, self.charts, self.links, self.rows, self.scripts = [], [], [], [], [], 0
        self.feed(text)
        self.close()
        assert self.stack == [], f"unclosed tags: {self.stack}"

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.scripts += tag in ("script", "img", "foreignobject") or any(k.startswith("on") for k in attrs)
        self.links += [v for k, v in attrs.items() if k in ("src", "href", "xlink:href")]
        if tag == "svg":
            self.charts.append({**attrs, "texts": [], "bars": []})
        if tag == "rect" and "svg" in self.stack:
            self.charts[-1]["bars"].append(attrs)
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "tr":
            self.rows.append([])
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data):
        if {"td", "th"} & set(self.stack) and data.strip():
            self.rows[-1].append(data)
        if self.stack[-2:] == ["rect", "title"]:
            self.charts[-1]["bars"][-1]["title"] = data
        elif self.stack[-2:] in (["svg", "title"], ["svg", "desc"]):
            self.charts[-1][self.stack[-1]] = data
        elif self.stack[-1:] == ["text"] and "svg" in self.stack:
            self.charts[-1]["texts"].append(data)


def check_chart(chart):
    """An accessible chart that fits the page (60rem wide: 960px) in the page's font; returns its bars.

    Accessible: an image with a name (its title too) and a description that lists every bar's numbers."""
    assert chart["role"] == "img" and chart["aria-label"] and chart["font-family"] == "inherit"
    assert chart["title"] == chart["aria-label"] and chart["desc"] == "; ".join(bar["title"] for bar in chart["bars"])
    _, _, width, height = map(float, chart["viewbox"].split())
    assert 0 < float(chart["width"]) == min(width, 960) and height > 0
    assert all(bar["title"] for bar in chart["bars"])
    return chart["bars"]


def proportional(bars, values):
    """The bars' sizes (width or height) are their values times one scale, to the 0.1px they are drawn at."""
    scale = max(bars) / max(values)
    return all(abs(bar - value * scale) <= 0.1 for bar, value in zip(bars, values))


def expected_rates(max_points):
    """grade_id -> (passed, graded), computed from CLASS independently of the module."""
    rates = {}
    for g in CELL_ORDER:
        scores = [s[g] for s in CLASS.values() if s[g] is not None]
        rates[g] = (sum(s == max_points[g] for s in scores), len(scores))
    return rates


@pytest.mark.parametrize("gradebook", [True, False], ids=["max-from-gradebook", "max-from-columns"])
def test_report_of_a_small_class(tmp_path, gradebook_db, gradebook):
    make_class(tmp_path, gradebook_db if gradebook else None)
    path = write_report(tmp_path, tmp_path / "grades.csv", tmp_path / "problems.json")
    assert path == tmp_path / "class_report.html" and path.is_file()
    text = path.read_text(encoding="utf-8")
    page = Page(text)
    assert ["distribution", "steps", "misconceptions", "hardest", "problems", "students", "history"] == page.ids
    # self-contained: plots inline; the only files linked are the feedback beside it
    assert all(link.startswith(("#", "feedback/")) for link in page.links)
    # two charts: the histogram and ex1's pass rates (ex2 has nobody graded)
    histogram, rates = page.charts
    assert (
        histogram["aria-label"] == "score distribution" and rates["aria-label"] == f"pass rate of every step of {EX1}"
    )
    # the histogram: totals 5, 2 and 2 of 6 (83%, 33%, 33%), in bins of 5%; heights in proportion
    bars = check_chart(histogram)
    counts = [int(re.fullmatch(r"\d+–\d+%: (\d+) students?", bar["title"])[1]) for bar in bars]
    assert [bar["title"] for bar in bars] == ["30–35%: 2 students", "80–85%: 1 student"]
    assert sum(counts) == 3 and proportional([float(bar["height"]) for bar in bars], counts)
    assert float(bars[0]["x"]) < float(bars[1]["x"])
    assert ["0", "20", "40", "60", "80", "100", "total, % of max", "students"] == histogram["texts"][-8:]
    # every chart's numbers as text too, in a table under it: all 20 bins of the histogram, every step's rate
    assert ["total, % of max", "students"] in page.rows and ["30–35%", "2"] in page.rows and ["0–5%", "0"] in page.rows
    assert re.search(f"<h3>{EX2}</h3>\\s*<p class='note'>No graded student in this notebook.</p>", text)
    # hostile strings are shown as text, never as markup
    assert page.scripts == 0 and HOSTILE not in text and EVIL_DETAIL not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "<img src=x" not in text
    # pass rates: the gradebook says test_dcounts_sum_inv is worth 2 (nobody has it); else the column max is 1
    max_points = dict(MAX) if gradebook else {g: max(s[g] or 0 for s in CLASS.values()) for g in MAX}
    assert (max_points["test_dcounts_sum_inv"] == 2) == gradebook
    for g, (passed, graded) in expected_rates(max_points).items():
        assert [g, f"{100 * passed / graded:.0f}%", f"{passed} / {graded}", f"{max_points[g]}"] in page.rows
    # the pass-rate chart: one bar per step in the notebook's order, the first on top, as wide as its rate
    bars = check_chart(rates)
    expected = {g: 100 * p / n for g, (p, n) in expected_rates(max_points).items()}
    assert [bar["title"] for bar in bars] == [
        f"{g}: {100 * p / n:.0f}% ({p}/{n})" for g, (p, n) in expected_rates(max_points).items()
    ]
    assert [float(bar["y"]) for bar in bars] == sorted(float(bar["y"]) for bar in bars)
    assert proportional([float(bar["width"]) for bar in bars], list(expected.values()))
    colours = {report.RED: range(0, 50), report.ORANGE: range(50, 80), report.GREEN: range(80, 101)}
    assert all(int(v) in colours[bar["fill"]] for bar, v in zip(bars, expected.values()))
    assert [bar["fill"] for bar in bars][:2] + [bars[-1]["fill"]] == [report.ORANGE, report.ORANGE, report.RED]
    assert "students with full points, %" in rates["texts"] and "67% (2/3)" in rates["texts"]
    assert ["test_dprobs", "2 / 3", "67%"] in page.rows
    assert ["setup_settings"] not in [r[:1] for r in page.rows]  # 0-point cells are not steps
    assert ClassData(tmp_path).steps[EX1] == CELL_ORDER  # the notebook's order, not the columns'
    # problems grouped by kind, with student and detail; per-student problem counts
    for kind in ["kernel_died (1)", "not_a_notebook (1)", "unmatched_file (1)"]:
        assert f"<h3>{kind}</h3>" in text
    assert ["dora", EX1, "os._exit(1) in cell 12"] in page.rows
    assert [HOSTILE, EVIL_DETAIL] in page.rows  # notebook null: an empty cell
    assert ["ben", "2", "6", "2", "0"] in page.rows  # ex2: empty
    assert ["dora", "6", "1"] in page.rows  # no grade: empty cells
    assert ["eve", "1"] in page.rows  # only in problems.json
    assert "4 students" not in text and "5 students (3 graded), 2 notebooks" in text


def test_summary_lines(tmp_path):
    make_class(tmp_path)  # no gradebook: the headline does not need max points
    lines = summary_lines(tmp_path)
    assert lines[0] == "5 students (3 graded), 2 notebooks"
    assert lines[1] == "total (of 6): mean 3, median 2 (50.0% / 33.3% of max)"  # totals 5, 2, 2 of 6
    assert lines[2] == "3 problems: kernel_died 1, not_a_notebook 1, unmatched_file 1"


@pytest.mark.parametrize("files", ["none", "empty", "nbgrader-export"])
def test_empty_or_missing_class(tmp_path, files):
    if files == "empty":
        (tmp_path / "grades.csv").write_text("student,total,max_total\n")
        (tmp_path / "problems.json").write_text("[]")
    if files == "nbgrader-export":  # the wrong csv, and a problems file cut short
        (tmp_path / "grades.csv").write_text("assignment,student_id,score\nbackprop_ninja,ada,3\n")
        (tmp_path / "problems.json").write_text('[{"student": "ada"')
    text = write_report(tmp_path).read_text()
    page = Page(text)
    assert page.charts == [] and "0 students (0 graded), 0 notebooks" in text
    assert "No student has a total yet." in text and "No students." in text
    assert not (tmp_path / "gradebook.db").exists()
    expected = {
        "none": "does not exist",
        "empty": "No problems reported.",
        "nbgrader-export": "no 'student' column",
    }
    assert expected[files] in html.unescape(text)
    assert summary_lines(tmp_path)[:2] == ["0 students (0 graded), 0 notebooks", "0 problems"]


def autograded(root, student, verdicts):
    """An autograded ex1 notebook whose graded cells hold these verdicts (grade_id -> (diagnosis kind, text)), as
    JudgeAnswers writes them."""
    cells = [
        {
            "cell_type": "code",
            "metadata": {"nbgrader": {"grade": True, "grade_id": gid, "points": MAX[gid]}},
            "source": "",
            "outputs": [
                {"output_type": "stream", "name": "stdout", "text": text},
                {
                    "output_type": "execute_result",
                    "data": {"text/plain": "0.0"},
                    "metadata": {"backprop_ninja": {"diagnosis": kind}},
                    "execution_count": None,
                },
            ],
        }
        for gid, (kind, text) in verdicts.items()
    ]
    folder = root / "autograded" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / f"{EX1}.ipynb").write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )


def test_misconceptions_feedback_links_and_history(tmp_path):
    make_class(tmp_path)
    axis = "✘ dcounts_sum_inv: 1 of 2 points\n  dcounts_sum_inv has shape (1, 27), but counts_sum_inv has shape (32, 1): it looks summed over dimension 0 instead of dimension 1.\n"  # noqa: E501
    axis = ("wrong_dimension", axis)
    autograded(tmp_path, "ada", {"test_dcounts_sum_inv": axis})
    autograded(
        tmp_path,
        "ben",
        {
            "test_dcounts_sum_inv": axis,
            "test_dprobs": ("wrong_sign", "✘ dprobs: 0 of 1 point\n  dprobs has the right size but the wrong sign\n"),
            "test_dC": (
                "not_accumulated",
                "✘ dC: 0 of 2 points\n  dC is right for characters that appear once in the batch, and wrong"
                " for those that appear several times: `dC[Xb] += demb` does not add up repeated indices.\n",
            ),
        },
    )
    hostile = {"test_dcounts_sum_inv": axis, "test_dlogprobs": ("<script>alert(1)</script>", "✘ dlogprobs: 0 of 1\n")}
    autograded(tmp_path, HOSTILE, hostile)  # a kind that is no kind of the table is "other"
    autograded(tmp_path, "dora", {"test_dprobs": ("not_answered", "✘ dprobs: 0 of 1 point\n  not answered yet\n")})
    for student in ["ada", "ben"]:
        folder = tmp_path / "feedback" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{EX1}.html").write_text("<html>feedback</html>")
    (tmp_path / "grade_history.csv").write_text(
        "time,student,old_total,new_total,reason\n"
        "2026-12-01T10:00:00+00:00,ben,,1,first grading\n"
        "2026-12-01T10:00:00+00:00,ada,,5,first grading\n"
        "2026-12-02T09:00:00+00:00,ben,1,2,new submission\n"
        "2026-12-02T09:00:00+00:00,ada,5,5,regrade after a change of the exercises\n"
    )
    text = write_report(tmp_path).read_text(encoding="utf-8")
    page = Page(text)
    # the most frequent diagnosis of each step, with its count and who, in the notebook's step order
    diagnosed = [r for r in page.rows if r and r[0].startswith("test_d") and "student" in r[1]]
    assert [r[:2] for r in diagnosed] == [
        ["test_dlogprobs", "1 student: other reasons"],
        ["test_dprobs", "1 student: wrong sign"],
        ["test_dcounts_sum_inv", "3 students: summed or normalised over the wrong dimension"],
        ["test_dC", "1 student: repeated indices not accumulated"],
    ]
    assert [name for name in (s.strip(", ") for s in diagnosed[2][2:]) if name] == ["ada", "ben", HOSTILE]
    assert "feedback/ada/backprop_ninja/ex1_atomic_backward.html" in page.links
    assert "not answered" not in text and "dora (1 step)" in text  # an unanswered step is no misconception
    assert not [link for link in page.links if "script" in link]  # nobody links to feedback that is not there
    # three charts: the histogram, ex1's pass rates and the diagnoses, most students first
    assert len(page.charts) == 3
    diagnoses = page.charts[2]
    bars = check_chart(diagnoses)
    assert diagnoses["aria-label"] == "most frequent diagnoses"
    assert bars[0]["title"] == f"{EX1}, test_dcounts_sum_inv: summed or normalised over the wrong dimension: 3 students"
    assert sorted(bar["title"] for bar in bars[1:]) == [
        f"{EX1}, test_dC: repeated indices not accumulated: 1 student",
        f"{EX1}, test_dlogprobs: other reasons: 1 student",
        f"{EX1}, test_dprobs: wrong sign: 1 student",
    ]
    assert proportional([float(bar["width"]) for bar in bars], [3, 1, 1, 1])
    assert "ex1 dcounts_sum_inv: summed or normalised over the wrong dimension" in diagnoses["texts"]
    assert {bar["fill"] for bar in bars} == {"#c44e52"}
    # each student's row links to their feedback
    assert '<td><a href="feedback/ben/backprop_ninja/ex1_atomic_backward.html">ben</a></td>' in text
    assert "<th>ex1_<wbr>atomic_<wbr>backward</th>" in text  # a long notebook name wraps at its underscores
    # regrades: the totals that changed, the latest run first
    assert ["2026-12-02T09:00:00+00:00", "ben", "1", "2", "new submission"] in page.rows
    assert not [r for r in page.rows if r[:2] == ["2026-12-02T09:00:00+00:00", "ada"]]
    assert (
        "The last run that graded anyone (2026-12-02T09:00:00+00:00) graded 2 students: 0 for the first time, 1 with a "
        "changed total." in text
    )
    assert not [r for r in page.rows if "first grading" in r]  # a first grading is no regrade


HOSTILE_STEP = "test_$x$_</text><script>alert(3)</script>&amp;"


def test_hostile_step_names_in_the_charts(tmp_path):
    """A step name from a student's notebook is text in the SVG ('$' included), never markup, and a long one is
    not cut off: the label column widens."""
    long_step = "test_" + "d" * 60
    rates = [(HOSTILE_STEP, 1, 2, 1), (long_step, 0, 0, 1), ("test_ok", 3, 3, 1)]
    text = report._rate_chart(rates, "<b>nb</b>")
    top = {(EX1, HOSTILE_STEP): [("other", ["ada", "ben"])], (EX1, long_step): [("wrong_sign", ["ada"])]}
    text += report._diagnosis_chart(top)
    page = Page(f"<body>{text}</body>")
    assert page.scripts == 0 and "<script>" not in text and "<b>" not in text
    chart, diagnoses = page.charts
    assert chart["aria-label"] == "pass rate of every step of <b>nb</b>"
    assert [b["title"] for b in check_chart(chart)] == [
        f"{HOSTILE_STEP}: 50% (1/2)",
        f"{long_step}: no grades",
        "test_ok: 100% (3/3)",
    ]
    assert [b["fill"] for b in chart["bars"]] == [report.ORANGE, report.RED, report.GREEN]
    assert chart["bars"][1]["width"] == "0"  # no grades: no bar, and the text says so
    labels = [t for t in chart["texts"] if t.startswith("test_")]
    assert labels == [HOSTILE_STEP, long_step, "test_ok"] and "no grades" in chart["texts"]
    # the label column holds the longest label (0.6 of the font size a character), left of the bars
    assert float(chart["bars"][0]["x"]) >= 0.6 * 12 * len(long_step)
    assert [b["title"] for b in check_chart(diagnoses)] == [
        f"{EX1}, {HOSTILE_STEP}: other reasons: 2 students",
        f"{EX1}, {long_step}: wrong sign: 1 student",
    ]
    assert f"ex1 {HOSTILE_STEP.removeprefix('test_')}: other reasons" in diagnoses["texts"]
    assert report._diagnosis_chart({}) is None
    # the same input gives the same bytes
    assert report._rate_chart(rates, "<b>nb</b>") + report._diagnosis_chart(top) == text


def test_the_report_imports_no_matplotlib(tmp_path, gradebook_db):
    """The report draws its charts itself: neither importing it nor writing a class's report loads matplotlib
    or numpy (0.3 s at the end of every grade)."""
    make_class(tmp_path, gradebook_db)
    code = (
        "import sys; import autograder.grading.report.class_report as r; r.write_report(sys.argv[1]); "
        "assert not {'matplotlib', 'numpy'} & set(sys.modules), sorted({'matplotlib', 'numpy'} & set(sys.modules))"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, cwd=REPO)
    assert (tmp_path / "class_report.html").is_file()


def test_the_diagnosis_chart_tells_steps_of_different_notebooks_apart():
    """Exercises 1 and 4 both have a dC step: each bar names its notebook."""
    top = {(EX1, "test_dC"): [("wrong_sign", ["ada", "ben"])], ("ex4_manual_training", "test_dC"): [("other", ["cy"])]}
    page = Page(f"<body>{report._diagnosis_chart(top)}</body>")
    (chart,) = page.charts
    assert [t for t in chart["texts"] if "dC" in t] == ["ex1 dC: wrong sign", "ex4 dC: other reasons"]
    assert [b["title"] for b in chart["bars"]] == [
        f"{EX1}, test_dC: wrong sign: 2 students",
        "ex4_manual_training, test_dC: other reasons: 1 student",
    ]

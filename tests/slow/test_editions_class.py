"""Graded alike, answered in kind: a class that mixes the English, Russian and Chinese editions of Exercise 1, graded
in one run of ``backprop-ninja grade`` into one gradebook (tests/slow/editions_class.py).

* The same answers earn the same points, step by step, in every edition: one set of columns in grades.csv.
* Each student reads their feedback in the language they handed in: the page's lang, the table of steps, every
  diagnosis, the "fix first" line, the notebook's own text; a Russian notebook saved by Colab keeps Russian.
* The instructor's side stays English and counts one diagnosis kind across the editions.
"""

import csv
import json
import re
import shutil

import pytest
from editions_class import CLASS, COLAB, KINDS, NB
from support.course import ASSIGNMENT

from autograder.common.editions import EDITIONS, edition
from autograder.common.words import say, say_n

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

SCRIPT = {"ru": re.compile(r"[\u0400-\u04ff]"), "zh": re.compile(r"[\u4e00-\u9fff]")}


@pytest.fixture(scope="module")
def course(editions_class):
    return editions_class


def grades(course) -> dict:
    with (course.root / "grades.csv").open(newline="", encoding="utf-8-sig") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def steps(row: dict) -> dict:
    return {column: value for column, value in row.items() if column.startswith(f"{NB}:")}


def test_the_same_answers_earn_the_same_points_in_every_edition(course):
    table = grades(course)
    for kind in KINDS:
        english = course.scores(f"{kind}_en", NB)
        for code in EDITIONS:
            assert course.scores(f"{kind}_{code}", NB) == english, (kind, code)
            assert steps(table[f"{kind}_{code}"]) == steps(table[f"{kind}_en"]), (kind, code)
    lost = {gid for gid, points in course.scores("wrong_en", NB).items() if points < course.max_scores(NB)[gid]}
    assert lost == {"test_dprobs", "test_dW2"}
    assert course.scores(COLAB, NB) == course.scores("wrong_ru", NB)
    print({student: table[student][NB] for student in [*CLASS, COLAB]})


def page(course, student: str) -> str:
    return (course.root / "feedback" / student / ASSIGNMENT / f"{NB}.html").read_text()


@pytest.mark.parametrize("code", ["ru", "zh"])
def test_each_student_reads_their_feedback_in_their_language(course, code):
    for student in [f"wrong_{code}", f"right_{code}"] + ([COLAB] if code == "ru" else []):
        html = page(course, student)
        assert f'<html lang="{edition(code).html_lang}"' in html, student
        messages = course.messages(student, NB)
        for gid, text in messages.items():  # every graded cell's verdict, in the edition's words
            lines = [line for line in text.splitlines() if line.strip()]
            assert lines and all(SCRIPT[code].search(line) for line in lines), (student, gid, text)
        headline = say_n(
            "{right} of {count} graded cells right.", "{right} of {count} graded cells right.", 27, right=25
        )
        if student != f"right_{code}":
            assert say("fix first").render(code) in html and headline.render(code) in html, student
            assert "the wrong sign" not in html and "graded cells right" not in html  # no English sentence left
        assert len(SCRIPT[code].findall(html)) > 2000, student  # the notebook's own text too


def test_the_english_page_stays_english(course):
    html = page(course, "wrong_en")
    assert '<html lang="en"' in html and "fix first" in html
    assert not SCRIPT["ru"].search(html) and not SCRIPT["zh"].search(html)


def test_the_instructor_side_is_english_and_counts_one_kind_across_editions(course):
    report = (course.root / "class_report.html").read_text()
    assert '<html lang="en"' in report and not SCRIPT["ru"].search(report) and not SCRIPT["zh"].search(report)
    problems = json.loads((course.root / "problems.json").read_text())
    assert not [p for p in problems if p.get("student") in CLASS], problems
    kinds = {}
    for student in [*CLASS, COLAB]:
        autograded = course.root / "autograded" / student / ASSIGNMENT / f"{NB}.ipynb"
        for cell in json.loads(autograded.read_text())["cells"]:
            for output in cell.get("outputs", []):
                verdict = output.get("metadata", {}).get("backprop_ninja", {})
                if verdict.get("diagnosis"):
                    kinds.setdefault((cell["metadata"]["nbgrader"]["grade_id"], verdict["diagnosis"]), set()).add(
                        student
                    )
    wrong = {f"wrong_{code}" for code in EDITIONS} | {COLAB}
    assert kinds == {("test_dprobs", "wrong_sign"): wrong, ("test_dW2", "transposed"): wrong}, kinds
    row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*wrong sign(?:(?!</tr>).)*</tr>", report, re.S)
    assert row and "4" in re.sub(r"<[^>]+>", " ", row.group(0)), "the report counts the four students of every edition"

"""What grading hands on, through the real commands: the class report with its misconceptions (opened in a
real headless Chromium), grades exported for Canvas, the regrade history, and a late submission.

One small class of Exercise 1 (Canvas-style ids: a perfect student, a late one, three who drop keepdim on
the same step, a sign and a transpose, a blank notebook), due at a date set with nbgrader's own
``nbgrader db assignment add``, graded by ``backprop-ninja grade``; one student then hands in a fix and
the class is graded again.
"""

import csv
import json
import shutil
import subprocess
import sys

import matplotlib.image
import pytest
from browser import Chromium
from support.course import ARTIFACTS, ASSIGNMENT, NEWCOMER_ENV, temporary_course

from autograder.authoring.submissions import solved

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

NB = "ex1_atomic_backward"
DUE = "2026-01-10 12:00:00 UTC"
KEEPDIM = {"answer_dbnbias": "dbnbias = dhpreact.sum(0)"}
SIGN = {"answer_dprobs": "dprobs = -(1.0 / probs) * dlogprobs"}
CLASS = {  # student -> (answer cells changed, or None for the blank release; timestamp.txt or None)
    "lovelaceada": ({}, "2026-01-09 18:00:00 UTC"),
    "hoppergrace": ({}, "2026-01-10 15:00:00 UTC"),  # 3 hours late: one started day, 10% off
    "turingalan": (KEEPDIM, None),
    "noetheremmy": (KEEPDIM, None),
    "curiemarie": (KEEPDIM, None),
    "babbagecharles": (SIGN, None),
    "knuthdonald": ({"answer_dW2": "dW2 = dlogits.T @ h"}, None),  # not on the roster
    "blankbob": (None, None),
}
ROSTER = [  # the course's Canvas gradebook export: everyone but knuthdonald, and Dijkstra, who handed in nothing
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Backprop Ninja (777)"],
    ["    Points Possible", "", "", "", "", "34"],
    ["Lovelace, Ada", "1", "s1", "alovelace", "A", ""],
    ["Hopper, Grace", "2", "s2", "ghopper", "A", ""],
    ["Turing, Alan", "3", "s3", "aturing", "A", ""],
    ["Noether, Emmy", "4", "s4", "enoether", "B", ""],
    ["Curie, Marie", "5", "s5", "mcurie", "B", ""],
    ["Babbage, Charles", "6", "s6", "cbabbage", "B", ""],
    ["Blank, Bob", "7", "s7", "bblank", "B", ""],
    ["Dijkstra, Edsger", "8", "s8", "edijkstra", "B", ""],
]
SECTIONS = ["distribution", "steps", "misconceptions", "hardest", "problems", "students", "history"]


def command(course, *args):
    result = subprocess.run(
        [sys.executable, "-m", "autograder.cli", *args],
        cwd=course.root,
        capture_output=True,
        text=True,
        timeout=3600,
        env=NEWCOMER_ENV,
    )
    assert result.returncode == 0, f"{args} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return result


def grade(course):
    return command(course, "grade", "--workers", "2", "--notebook-timeout", "300", "--quiet")


def hand_in(course, student, changes, stamp):
    release, source = course.notebook("release", NB), course.notebook("source", NB)
    course.submit(student, NB, release if changes is None else solved(release, source, changes))
    if stamp:
        (course.root / "submitted" / student / ASSIGNMENT / "timestamp.txt").write_text(stamp)


def rows(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def graded():
    with temporary_course("results-", only=NB) as course:
        course.nbgrader("db", "assignment", "add", ASSIGNMENT, f"--duedate={DUE}")
        for student, (changes, stamp) in CLASS.items():
            hand_in(course, student, changes, stamp)
        first = grade(course)
        before = {r["student"]: r for r in rows(course.root / "grades.csv")}
        hand_in(course, "babbagecharles", {}, None)  # fixed the sign
        second = grade(course)
        yield course, before, first, second


def test_a_late_submission_loses_the_configured_penalty(graded):
    course, before, *_ = graded
    grades = {r["student"]: r for r in rows(course.root / "grades.csv")}
    assert grades["lovelaceada"]["total"] == "34" and grades["lovelaceada"]["late_penalty"] == ""
    late = grades["hoppergrace"]
    assert (late[NB], late["late_penalty"], late["total"]) == ("34", "3.4", "30.6")  # 10% of 34 for one day
    problems = [p for p in json.loads((course.root / "problems.json").read_text()) if p["student"] == "hoppergrace"]
    assert [(p["notebook"], p["problem"]) for p in problems] == [(NB, "late_submission")]
    assert "3.4 points taken off" in problems[0]["detail"] and "3.0 hours after the due date" in problems[0]["detail"]
    feedback = (course.root / "feedback" / "hoppergrace" / ASSIGNMENT / f"{NB}.html").read_text()
    assert "Late submission: 3.4 points off (the score above is after it)." in feedback  # the summary's note
    assert ": 30.6 of 34 points</h4>" in feedback  # the page's heading, the score after it
    # nbgrader's own export keeps working beside ours, and agrees
    course.nbgrader("export", "--to", str(course.root / "nbgrader_grades.csv"))
    exported = {r["student_id"]: r for r in rows(course.root / "nbgrader_grades.csv")}
    assert float(exported["hoppergrace"]["late_submission_penalty"]) == pytest.approx(3.4)
    assert float(exported["hoppergrace"]["score"]) == pytest.approx(30.6)


def test_each_run_keeps_what_it_changed_and_why(graded):
    course, before, _, second = graded
    history = rows(course.root / "grade_history.csv")
    runs = sorted({r["time"] for r in history})
    assert len(runs) == 2
    first = {r["student"]: r for r in history if r["time"] == runs[0]}
    assert set(first) == set(CLASS) and {r["reason"] for r in first.values()} == {"first grading"}
    assert first["hoppergrace"]["new_total"] == "30.6" and first["hoppergrace"]["old_total"] == ""
    again = [r for r in history if r["time"] == runs[1]]
    assert again == [
        {
            "time": runs[1],
            "student": "babbagecharles",
            "old_total": before["babbagecharles"]["total"],
            "new_total": "34",
            "reason": "new submission",
        }
    ]
    assert " 1 (re)graded" in second.stdout and "history:" in second.stdout


def test_canvas_import_file_matches_grades_csv(graded, tmp_path):
    course = graded[0]
    with open(tmp_path / "roster.csv", "w", newline="") as f:
        csv.writer(f).writerows(ROSTER)
    out = tmp_path / "canvas_import.csv"
    result = command(
        course, "export", "--format", "canvas", "--roster", str(tmp_path / "roster.csv"), "--out", str(out)
    )
    with open(out, newline="", encoding="utf-8-sig") as f:
        written = list(csv.reader(f))
    assert written[0] == ROSTER[0]  # Canvas's import header, the roster's column for the assignment
    assert written[1][0].strip() == "Points Possible" and written[1][-1] == "34"
    grades = {r["student"]: r["total"] for r in rows(course.root / "grades.csv")}
    by_login = {row[3]: row[-1] for row in written[2:]}
    assert by_login == {
        "alovelace": grades["lovelaceada"],
        "ghopper": grades["hoppergrace"],  # after the late penalty
        "aturing": grades["turingalan"],
        "enoether": grades["noetheremmy"],
        "mcurie": grades["curiemarie"],
        "cbabbage": grades["babbagecharles"],
        "bblank": grades["blankbob"],
        "edijkstra": "",  # handed in nothing: listed, left empty
    }
    assert "Dijkstra, Edsger" in result.stderr and "knuthdonald" in result.stderr
    with open(tmp_path / "canvas_import.unmatched.csv", newline="", encoding="utf-8-sig") as f:
        listed = {(r["what"], r["who"]) for r in csv.DictReader(f)}
    assert listed == {
        ("on the roster, no submission", "Dijkstra, Edsger"),
        ("submission, not on the roster", "knuthdonald"),
    }


def test_the_class_report_in_a_browser(graded, tmp_path):
    """The report opened in headless Chromium: every section is there and drawn, the misconceptions name the
    three students who dropped keepdim, and each student's row links to a feedback file that exists."""
    course = graded[0]
    report = course.root / "class_report.html"
    browser = Chromium(tmp_path / "chromium")
    try:
        browser.send("Page.navigate", url=report.as_uri())
        browser.wait_for("document.readyState === 'complete' && document.querySelectorAll('svg').length > 0")
        browser.wait_for(
            "Array.from(document.querySelectorAll('svg')).every(s => s.getBoundingClientRect().width > 0"
            " && s.getBoundingClientRect().height > 0)"
        )
        sections = browser.js("Array.from(document.querySelectorAll('h2[id]')).map(h => h.id)")
        tops = browser.js("Array.from(document.querySelectorAll('h2[id]')).map(h => h.getBoundingClientRect().top)")
        text = browser.js("document.body.innerText")
        links = browser.js("Array.from(document.querySelectorAll('a[href^=\"feedback/\"]')).map(a => a.href)")
        rows = browser.js("Array.from(document.querySelectorAll('table.diagnoses tr')).map(r => r.innerText)")
        shot = browser.screenshot(ARTIFACTS / "class_report.png", full_page=True)
    finally:
        browser.close()
    assert sections == SECTIONS
    keepdim = next(r for r in rows if r.startswith("test_dbnbias"))
    assert "3 students: keepdim dropped or a size-1 dimension added" in keepdim
    assert all(name in keepdim for name in ["curiemarie", "noetheremmy", "turingalan"])
    assert "1 student: wrong sign" not in text  # babbagecharles fixed it: the report shows the class as it is now
    assert "1 student: transposed" in text and "hoppergrace" in text and "late_submission" in text
    assert "blankbob (27 steps)" in text and not [r for r in rows if "not answered" in r]  # no misconception
    assert {link.split("/feedback/")[1].split("/")[0] for link in links} == set(CLASS)
    for link in links:
        assert (course.root / link.split(course.root.as_uri() + "/", 1)[1]).is_file(), link
    # the screenshot: the whole page, each section drawn where the browser laid it out
    image = matplotlib.image.imread(shot)
    height = image.shape[0]
    assert image.shape[1] >= 1000 and height > max(tops)
    for top in tops:
        band = image[int(top) : int(top) + 30, :, :3]
        assert band.min() < 0.3 and band.max() > 0.9, f"section heading at {top}px is blank in the screenshot"
    print(f"screenshot: {shot} ({image.shape[1]}x{height})")

"""Exercise 1 through the real pipeline: generate_assignment, autograde, feedback, export, the Formgrader.

A few representative students of tests/cases_ex1.py (every case is graded in process by the fast tier) in one
``nbgrader autograde`` run, in the sandbox: the solution, a blank notebook, a mistake with its error carried
forward, each of issue 12's mistakes that only the rule probes or the chosen inputs catch, alternative formulas
(fused, exact zeros), the lecture's one-cell layout with its dC loop over n, right values in a keepdim shape, an
aliased gradient, a cheat, a dead kernel and a locked cell edited. Then the autograde log, the feedback pages (one
``generate_feedback`` run, one page opened in headless Chromium) and the Formgrader.
"""

import base64
import csv
import json
import re
import shutil
import time

import pytest
from browser import Chromium
from servers import formgrader
from support.cases_ex1 import CHEATS, MISTAKES, NB, RULE_MISTAKES, submissions
from support.course import ARTIFACTS, ASSIGNMENT

from autograder.authoring.submissions import grade_id
from autograder.common.links import course_url, repository_url
from autograder.engine.backward_rules import SHAPE_ONLY_SHARE, STEP_BY_NAME, STEPS, WRITTEN_WITH

ALL_STEPS = [s.name for s in STEPS]
GRADED = [*ALL_STEPS, "C_index_add"]  # each graded cell, test_d<...>: the 26 steps, then dC with index_add_
STUDENTS = ["solution", "blank", "m_probs_sign", *RULE_MISTAKES, "alt_a", "alt_b", "alt_c", "m_bnmeani_lecture"]
STUDENTS += ["m_alias_dhprebn", "c_copy_grad", "k_dies_midway", "later_loop_n", "m_index_add_one_hot"]


@pytest.fixture(scope="module")
def graded(course):
    class_ = submissions(course.notebook("release", NB), course.notebook("source", NB))
    for student in STUDENTS:
        course.submit(student, NB, class_[student])
    edited = class_["solution"]  # a locked cell changed (a check switched off): graded with the course's
    next(c for c in edited.cells if grade_id(c) == "test_dprobs").source = "pass"
    course.submit("c_edits_locked_cell", NB, edited)
    course.autograde_log = course.nbgrader("autograde", ASSIGNMENT).stderr  # at nbgrader's default level, INFO
    return course


@pytest.fixture(scope="module")
def feedback(graded):
    """Every student's feedback page, from one ``nbgrader generate_feedback`` run."""
    graded.nbgrader("generate_feedback", ASSIGNMENT)
    return graded


def lost_steps(course, student):
    scores, maximum = course.scores(student, NB), course.max_scores(NB)
    return sorted(g.removeprefix("test_d") for g in maximum if g.startswith("test_d") and scores[g] != maximum[g])


def test_points_table(graded):
    maximum = graded.max_scores(NB)
    steps = {f"test_d{s.name}": s.points for s in STEPS} | {f"test_{w.answer}": w.points for w in WRITTEN_WITH}
    assert {g: p for g, p in maximum.items() if g.startswith("test_")} == steps
    assert sum(maximum.values()) == 34


def test_solution_gets_full_marks(graded):
    assert lost_steps(graded, "solution") == []
    assert all(m.startswith("✔") for g, m in graded.messages("solution", NB).items() if g.startswith("test_"))


def test_blank_release_gets_zero_without_crashing(graded):
    assert sum(graded.scores("blank", NB).values()) == 0
    messages = graded.messages("blank", NB)
    for step in GRADED:
        assert "not answered yet" in messages[f"test_d{step}"], messages[f"test_d{step}"]


@pytest.mark.parametrize("student", ["m_probs_sign", *RULE_MISTAKES, "m_index_add_one_hot"])
def test_a_mistake_costs_exactly_its_own_step_with_a_message_that_names_it(graded, student):
    _, step, words = MISTAKES[student]
    assert lost_steps(graded, student) == [step]
    message = graded.messages(student, NB)[f"test_d{step}"]
    assert words in message, message


def test_error_carried_forward_names_the_upstream_gradient(graded):
    messages = graded.messages("m_probs_sign", NB)
    assert "fix dprobs first" in messages["test_dcounts_sum_inv"]
    assert "✔" in messages["test_dcounts_sum_inv"]


@pytest.mark.parametrize("student", ["alt_a", "alt_b", "alt_c"])
def test_other_correct_formulas_get_full_marks(graded, student):
    assert lost_steps(graded, student) == [], graded.messages(student, NB)


def test_the_lectures_one_cell_layout_with_its_dc_loop_over_n_gets_full_marks(graded):
    """Issue 24: every answer in one cell, then ``for n in range(Xb.shape[1])``, which leaves n = 2 for the test
    cells; each probe, in the sandboxed kernel, re-runs its statements on what they read when they ran."""
    assert lost_steps(graded, "later_loop_n") == [], graded.messages("later_loop_n", NB)
    for cell, message in graded.messages("later_loop_n", NB).items():
        notes = [line for line in message.splitlines() if line.strip().startswith("(")]  # a probe that could not judge
        assert message.startswith("✔") and notes == [], (cell, message)


def test_exact_zeros_are_right_where_the_gradient_is_zero(graded):
    messages = graded.messages("alt_c", NB)
    assert "exactly zero, which is right" in messages["test_dlogit_maxes"]
    assert "exactly zero, which is right" in messages["test_db1"]


def test_right_values_in_a_keepdim_shape_earn_a_share(graded):
    assert graded.scores("m_bnmeani_lecture", NB)["test_dbnmeani"] == SHAPE_ONLY_SHARE * STEP_BY_NAME["bnmeani"].points
    assert "dimension 0 of size 1 was dropped" in graded.messages("m_bnmeani_lecture", NB)["test_dbnmeani"]


def test_a_gradient_changed_in_place_after_its_check_is_named(graded):
    assert lost_steps(graded, "m_alias_dhprebn") == []
    message = graded.messages("m_alias_dhprebn", NB)["test_dhprebn"]
    assert "dbndiff changed after its check: it now holds the values of dhprebn" in message, message


def test_answers_from_autograd_earn_nothing(graded):
    _, _, steps, words = CHEATS["c_copy_grad"]
    assert lost_steps(graded, "c_copy_grad") == sorted(steps)
    assert words in graded.messages("c_copy_grad", NB)[f"test_d{steps[0]}"]


def test_a_dead_kernel_keeps_the_points_earned_before_it(graded):
    assert lost_steps(graded, "k_dies_midway") == sorted(GRADED[GRADED.index("h") :])
    assert "kernel died" in graded.messages("k_dies_midway", NB)["test_dW2"]


def test_hidden_tests_are_not_in_the_release(graded):
    text = (graded.root / "release" / ASSIGNMENT / f"{NB}.ipynb").read_text()
    for secret in ["HIDDEN TESTS", "report(", "start_grading", "grading_seed", "BEGIN SOLUTION", "index_add_(0, Xb"]:
        assert secret not in text
    assert "index_add(0, Xb" not in text  # dC_index_add's solution


def test_feedback_shows_scores_and_messages_but_no_hidden_tests(feedback):
    html = feedback.feedback("m_dlogits_no_max_path", NB).text
    assert (
        "the path through logit_maxes is missing" in html
        and "<h4>Exercise 1 · Backpropagation, one tensor at a time: 32 of 34 points</h4>" in html
    )
    pages = sorted((feedback.root / "feedback").glob(f"*/{ASSIGNMENT}/{NB}.html"))
    assert len(pages) == len(list((feedback.root / "submitted").iterdir()))
    for page in pages:  # every student's: hidden code, the reported answers (their MIME type, encoded tensors)
        html = page.read_text()
        for secret in [
            "HIDDEN TESTS",
            "report(",
            "start_grading",
            "grading_seed",
            "x-backprop-ninja",
            "data_dtype",
            "probe=",
        ]:
            assert secret not in html, (page, secret)


@pytest.mark.parametrize("student", ["solution", "blank", "m_probs_sign", "k_dies_midway", "c_copy_grad"])
def test_feedback_opens_with_every_step_and_its_reason(feedback, student):
    page = feedback.feedback(student, NB)
    steps = [f"test_d{s}" for s in GRADED]  # backward order, then dC_index_add; no setup cell
    assert [r.step for r in page.rows] == [f"d{s}" for s in GRADED]
    assert page.table() == feedback.summary_rows(student, NB, steps)
    wrong = [r for r in page.rows if r.mark == "✘"]
    assert page.first_to_fix() == [r.anchor for r in wrong[:1]]  # the most upstream wrong step, and only it
    if wrong:
        assert page.headline.startswith(
            f"{27 - len(wrong)} of 27 graded cells right. Fix first: {wrong[0].step} (0 of "
        )
    else:
        assert page.headline == "All 27 graded cells are right."
    first = {"blank": "dlogprobs", "m_probs_sign": "dprobs", "k_dies_midway": "dh", "c_copy_grad": "dh"}
    assert [r.step for r in wrong[:1]] == ([first[student]] if student in first else [])


@pytest.mark.parametrize("student", ["m_probs_sign", *RULE_MISTAKES])
def test_feedback_marks_the_mistake_as_the_step_to_fix_first(feedback, student):
    _, step, words = MISTAKES[student]
    page = feedback.feedback(student, NB)
    marked = [r for r in page.rows if r.first]
    assert [r.step for r in marked] == [f"d{step}"]
    assert words in " ".join(marked[0].reasons), marked[0]


def test_feedback_links_go_to_cells_on_the_page_and_to_the_course_online(feedback):
    page = feedback.feedback("m_probs_sign", NB)
    assert all(f"test_d{s}" in page.anchors for s in GRADED)
    inside = [link for link in page.links if link.startswith("#")]
    assert inside and all(link[1:] in page.anchors for link in inside), set(inside) - {f"#{a}" for a in page.anchors}
    outside = [link for link in page.links if not link.startswith("#")]
    assert all(re.match(r"https?://", link) for link in outside), outside
    course = [link for link in outside if "/course/" in link]
    assert f"{repository_url()}/blob/main/course/cheatsheet.md" in course
    # a page of the course opens on GitHub, a notebook of the course (the warm-up) in Colab
    assert all(link == course_url(link.split("/course/", 1)[1]) for link in course), course


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium: run tools/install.sh")
def test_feedback_first_screen_in_a_browser(feedback, tmp_path):
    """The student opens the page from a download folder: the whole table is on the first screen, every row's
    link lands on its cell."""
    html = tmp_path / "downloads" / "ex1_feedback.html"  # far from the course: links must not need it
    html.parent.mkdir()
    shutil.copy(feedback.root / "feedback" / "m_probs_sign" / ASSIGNMENT / f"{NB}.html", html)
    browser = Chromium(tmp_path / "chromium")
    try:
        browser.send("Page.navigate", url=html.as_uri())
        browser.wait_for("document.readyState === 'complete' && !!document.querySelector('.steps-table')")
        time.sleep(1)  # fonts and layout settle
        ARTIFACTS.mkdir(exist_ok=True)
        screenshot = ARTIFACTS / "feedback_ex1_first_screen.png"
        screenshot.write_bytes(base64.b64decode(browser.send("Page.captureScreenshot", format="png")["data"]))
        print(f"screenshot: {screenshot}")
        screen = browser.js(
            "JSON.stringify({height: innerHeight, tableBottom: document.querySelector('.steps-table')"
            ".getBoundingClientRect().bottom, toc: !!document.getElementById('toc'), "
            "rows: [...document.querySelectorAll('.steps-row:not(.steps-head)')].map(r => r.innerText), "
            "first: document.querySelector('.step-first .step-name a').getAttribute('href')})"
        )
        landed = {}
        for anchor in [f"test_d{s}" for s in ("probs", "hpreact", "C")]:
            browser.js(f"document.querySelector('.steps-table a[href=\"#{anchor}\"]').click()")
            time.sleep(0.3)
            top = f"document.getElementsByName('{anchor}')[0].getBoundingClientRect().top"
            landed[anchor] = browser.js(f"{top} > -2 && {top} < innerHeight / 2")  # scrolled to the cell's top
    finally:
        browser.close()
    screen = json.loads(screen)
    assert screen["tableBottom"] <= screen["height"], screen  # all 27 rows on the first screen
    assert screen["toc"] is False  # nbgrader's list of "Test cell" links gives way to the table
    assert len(screen["rows"]) == 27 and screen["rows"][1].startswith("✘")
    assert "dprobs" in screen["rows"][1] and "fix first" in screen["rows"][1] and "wrong sign" in screen["rows"][1]
    assert screen["first"] == "#test_dprobs"
    assert landed == {anchor: True for anchor in landed}


ENCODED = re.compile(r"[A-Za-z0-9+/]{80,}")  # a run of base64: an encoded tensor


def test_autograde_log_is_short_and_names_what_matters(graded):
    log = graded.autograde_log
    students = len(list((graded.root / "submitted").iterdir()))
    print(f"autograde log at INFO: {len(log)} bytes for {students} students, {len(log) / students:.0f} a student")
    notebooks = len(list((graded.root / "source" / ASSIGNMENT).glob("*.ipynb")))
    # nbgrader's own lines for the notebook handed in (files, steps), one "No submitted file" line for each other
    # notebook of the assignment; 28 more a student before
    assert len(log.splitlines()) <= (12 + notebooks) * students
    assert max(len(line) for line in log.splitlines()) < 400 and not ENCODED.search(log)
    assert "checksum" not in log  # nbgrader's warning for every hidden test it puts back: one line a notebook instead
    assert (
        log.count(f"{NB}: the hidden tests of 29 locked cells put back (the release leaves them out)") == students - 1
    )
    changed = "GRADING PROBLEM c_edits_locked_cell/ex1_atomic_backward: locked_cell_changed: cell"
    assert [line for line in log.splitlines() if "locked_cell_changed" in line] == [
        next(line for line in log.splitlines() if changed in line)  # that student's alone: no other's was changed
    ]
    assert "(test_dprobs): graded with the course's version of it" in log, log
    assert lost_steps(graded, "c_edits_locked_cell") == []
    # (this course releases all four notebooks; the class hands in Exercise 1 only)
    others = ("locked_cell_changed", "No submitted file")
    problems = [line for line in log.splitlines() if "WARNING" in line and not any(o in line for o in others)]
    assert len(problems) == 1 and "GRADING PROBLEM k_dies_midway/ex1_atomic_backward: kernel_died:" in problems[0]


def test_formgrader_grades_like_the_command_line_with_a_short_log(feedback):
    """The instructor's GUI path: autograde and feedback from the Formgrader's buttons (its HTTP API), last in this
    module since it grades two students again (to the same scores)."""
    students = ["k_dies_midway", "m_probs_sign"]
    before = {s: feedback.scores(s, NB) for s in students}
    with formgrader(feedback.root) as api:
        graded = {s: api.post(f"submission/{ASSIGNMENT}/{s}/autograde") for s in students}
        made = api.post(f"assignment/{ASSIGNMENT}/m_probs_sign/generate_feedback")
    for student, result in graded.items():
        assert result["success"], result.get("error")
        log = result["log"]  # what the Formgrader's dialog shows; nbgrader captures it at DEBUG
        print(f"Formgrader autograde log of {student}: {len(log)} bytes")
        assert len(log) < 10_000 and not ENCODED.search(log) and "checksum" not in log
        assert ("GRADING PROBLEM k_dies_midway" in log) == (student == "k_dies_midway")
        assert feedback.scores(student, NB) == before[student]
    assert made["success"], made.get("error")
    page = feedback.feedback("m_probs_sign", NB)
    assert [r.step for r in page.rows if r.first] == ["dprobs"] and len(page.rows) == 27


def test_export_gives_every_student_a_total(graded):
    graded.nbgrader("export", "--to", str(graded.root / "grades.csv"))
    with open(graded.root / "grades.csv") as f:
        rows = {r["student_id"]: float(r["raw_score"]) for r in csv.DictReader(f) if r["assignment"] == ASSIGNMENT}
    assert rows["solution"] == 34 and rows["blank"] == 0 and rows["m_probs_sign"] == 33

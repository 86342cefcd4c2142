"""Exercise 4 through the real pipeline: every parameter gradient, the training run, the calibration.

A few representative students of tests/cases_ex4.py (every case is graded in process by the fast tier) in one
``nbgrader autograde`` run: the solution training 200,000 steps by default, a blank notebook, a wrong gradient
and a keepdim gradient that each cost only their own cell, alternative code (atomic BatchNorm, exact zeros for
db1), a cheat, a leftover training loop, and a training_step that puts new tensors into the list parameters (the
replay must see it in a real kernel, and leave the notebook's parameters as they were).
"""

import time

import pytest
from support.cases_ex4 import CHEATS, GRADIENTS, MISTAKES, NB, submissions
from support.course import ASSIGNMENT

from autograder.engine.training.reference_runs import POINTS, REACH_LOSS

CORRECT = ["solution", "alt_atomic", "alt_db1_zero", "alt_extra_loop"]
WRONG = ["m_db2_divided_by_n", "m_db2_keepdim", "c_grad_in_backward", "m_update_list_reassigned"]
WRONG += ["c_right_gradients_of_the_replay"]  # the replay's hand-out, in a real kernel


@pytest.fixture(scope="module")
def graded(course):
    class_ = submissions(course.notebook("release", NB), course.notebook("source", NB))
    for student in ["blank", *CORRECT, *WRONG]:
        course.submit(student, NB, class_[student])
    start = time.monotonic()
    course.nbgrader("autograde", ASSIGNMENT)
    course.ex4_seconds = time.monotonic() - start
    return course


def test_points_table(graded):
    maximum = graded.max_scores(NB)
    graded_cells = {g: p for g, p in maximum.items() if p}
    assert graded_cells == {"test_dC": 2, **{g: 1 for g in GRADIENTS[1:]}, "test_training": 4, "test_calibration": 2}
    assert sum(graded_cells.values()) == sum(POINTS.values()) == 14


@pytest.mark.parametrize("student", CORRECT)
def test_correct_submissions_get_full_marks(graded, student):
    got, maximum = graded.scores(student, NB), graded.max_scores(NB)
    assert {g: got[g] for g in maximum if maximum[g]} == {g: p for g, p in maximum.items() if p}, graded.messages(
        student, NB
    )


def test_solution_messages(graded):
    messages = graded.messages("solution", NB)
    assert "with the right gradients, your training_step follows autograd's run" in messages["test_training"]
    assert "your own training run" not in messages["test_training"]  # it followed too
    assert f"goal: below {REACH_LOSS:g}" in messages["test_training"]
    assert "over the training set" in messages["test_calibration"]


def test_graded_run_is_short_whatever_max_steps(graded):
    """The solution's max_steps is 200,000 (about 7 minutes, and a cell times out after 2): it still gets full
    marks above, from a 300-step run; and the whole class takes far less than a minute a notebook."""
    students = 1 + len(CORRECT) + len(WRONG)
    print(f"autograde of {students} Exercise 4 notebooks: {graded.ex4_seconds:.0f} s")
    assert graded.ex4_seconds < 60 * students, graded.ex4_seconds


def test_blank_release_gets_zero_without_crashing(graded):
    assert sum(graded.scores("blank", NB).values()) == 0
    messages = graded.messages("blank", NB)
    for cell in GRADIENTS:
        assert "backward_pass still raises NotImplementedError" in messages[cell], messages[cell]
    assert "stopped after 0 of" in messages["test_training"]
    assert "not calibrated yet" in messages["test_calibration"]


@pytest.mark.parametrize("student", WRONG)
def test_a_mistake_costs_its_own_points(graded, student):
    _, _, keeps, words = {**MISTAKES, **CHEATS}[student]
    got, maximum = graded.scores(student, NB), graded.max_scores(NB)
    lost = {g: got[g] for g in maximum if maximum[g] and got[g] != maximum[g]}
    assert lost == keeps, graded.messages(student, NB)
    messages = graded.messages(student, NB)
    for cell, text in words.items():
        assert text in messages[cell], messages[cell]


@pytest.fixture(scope="module")
def feedback(graded):
    graded.nbgrader("generate_feedback", ASSIGNMENT)
    return graded


def test_feedback_shows_the_verdicts_but_no_hidden_tests(feedback):
    html = feedback.feedback("m_db2_divided_by_n", NB).text
    assert "32 times too small" in html and "db2 is wrong" in html
    # Every student's page: no hidden test's code (a traceback through the grader's limiter, in_kernel's
    # limit_forward.<locals>.forward, is the student's own cell's), no reported answer data.
    hidden = [
        "HIDDEN TESTS",
        "report_backward(",
        "graded_steps(",
        "limit_forward(globals",
        "x-backprop-ninja",
        "data_dtype",
    ]
    for page in (feedback.root / "feedback").glob(f"*/{ASSIGNMENT}/{NB}.html"):
        for secret in hidden:
            assert secret not in page.read_text(), (page, secret)


# The table's order: backward_pass's gradients in backward order (the notebook grades them in the order of
# parameters, C first), then the training run and the calibration.
TABLE = ["test_dW2", "test_db2", "test_dbngain", "test_dbnbias", "test_dW1", "test_db1", "test_dC"]
TABLE += ["test_training", "test_calibration"]


@pytest.mark.parametrize("student", ["solution", "blank", *CORRECT[1:], *WRONG])
def test_feedback_opens_with_every_graded_cell_and_the_first_to_fix(feedback, student):
    page = feedback.feedback(student, NB)
    assert page.table() == feedback.summary_rows(student, NB, TABLE)
    wrong = [anchor for anchor, mark, _, _ in page.table() if mark == "✘"]
    assert page.first_to_fix() == wrong[:1]
    assert [r.step for r in page.rows][-2:] == ["training run", "BatchNorm calibration"]

"""Exercise 1 through the real pipeline: generate_assignment, autograde, feedback, export.

A few representative students of tests/cases_ex1.py (every case is graded in process by the fast tier) in one
``nbgrader autograde`` run, in the sandbox: the solution, a blank notebook, a mistake with its error carried
forward, each of issue 12's mistakes that only the rule probes or the chosen inputs catch, alternative formulas
(fused, exact zeros), right values in a keepdim shape, an aliased gradient, a cheat and a dead kernel.
"""

import csv

import pytest
from cases_ex1 import CHEATS, MISTAKES, NB, RULE_MISTAKES, submissions
from conftest import ASSIGNMENT

from autograder.engine.backward_rules import SHAPE_ONLY_SHARE, STEP_BY_NAME, STEPS

ALL_STEPS = [s.name for s in STEPS]
STUDENTS = ["solution", "blank", "m_probs_sign", *RULE_MISTAKES, "alt_b", "alt_c", "m_bnmeani_lecture"]
STUDENTS += ["m_alias_dhprebn", "c_copy_grad", "k_dies_midway"]


@pytest.fixture(scope="module")
def graded(course):
    class_ = submissions(course.notebook("release", NB), course.notebook("source", NB))
    for student in STUDENTS:
        course.submit(student, NB, class_[student])
    course.nbgrader("autograde", ASSIGNMENT)
    return course


def lost_steps(course, student):
    scores, maximum = course.scores(student, NB), course.max_scores(NB)
    return sorted(g.removeprefix("test_d") for g in maximum if g.startswith("test_d") and scores[g] != maximum[g])


def test_points_table(graded):
    maximum = graded.max_scores(NB)
    assert {g: p for g, p in maximum.items() if g.startswith("test_")} == {f"test_d{s.name}": s.points for s in STEPS}
    assert sum(maximum.values()) == 33


def test_solution_gets_full_marks(graded):
    assert lost_steps(graded, "solution") == []
    assert all(m.startswith("✔") for g, m in graded.messages("solution", NB).items() if g.startswith("test_"))


def test_blank_release_gets_zero_without_crashing(graded):
    assert sum(graded.scores("blank", NB).values()) == 0
    messages = graded.messages("blank", NB)
    for step in ALL_STEPS:
        assert "not answered yet" in messages[f"test_d{step}"], messages[f"test_d{step}"]


@pytest.mark.parametrize("student", ["m_probs_sign", *RULE_MISTAKES])
def test_a_mistake_costs_exactly_its_own_step_with_a_message_that_names_it(graded, student):
    _, step, words = MISTAKES[student]
    assert lost_steps(graded, student) == [step]
    message = graded.messages(student, NB)[f"test_d{step}"]
    assert words in message, message


def test_error_carried_forward_names_the_upstream_gradient(graded):
    messages = graded.messages("m_probs_sign", NB)
    assert "fix dprobs first" in messages["test_dcounts_sum_inv"]
    assert "✔" in messages["test_dcounts_sum_inv"]


@pytest.mark.parametrize("student", ["alt_b", "alt_c"])
def test_other_correct_formulas_get_full_marks(graded, student):
    assert lost_steps(graded, student) == [], graded.messages(student, NB)


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
    assert lost_steps(graded, "k_dies_midway") == sorted(ALL_STEPS[ALL_STEPS.index("h") :])
    assert "kernel died" in graded.messages("k_dies_midway", NB)["test_dW2"]


def test_hidden_tests_are_not_in_the_release(graded):
    text = (graded.root / "release" / ASSIGNMENT / f"{NB}.ipynb").read_text()
    for secret in ["HIDDEN TESTS", "report(", "start_grading", "grading_seed", "BEGIN SOLUTION", "index_add_(0, Xb"]:
        assert secret not in text


def test_feedback_shows_scores_and_messages_but_no_hidden_tests(graded):
    graded.nbgrader("generate_feedback", ASSIGNMENT, "--student", "m_dlogits_no_max_path")
    html = (graded.root / "feedback" / "m_dlogits_no_max_path" / ASSIGNMENT / f"{NB}.html").read_text()
    assert "the path through logit_maxes is missing" in html and "Score: 31.0 / 33.0" in html.replace("  ", " ")
    for secret in ["HIDDEN TESTS", "report(", "start_grading", "grading_seed", "x-backprop-ninja", "probe="]:
        assert secret not in html


def test_export_gives_every_student_a_total(graded):
    graded.nbgrader("export", "--to", str(graded.root / "grades.csv"))
    with open(graded.root / "grades.csv") as f:
        rows = {r["student_id"]: float(r["raw_score"]) for r in csv.DictReader(f) if r["assignment"] == ASSIGNMENT}
    assert rows["solution"] == 33 and rows["blank"] == 0 and rows["m_probs_sign"] == 32

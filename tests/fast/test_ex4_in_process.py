"""Exercise 4, every known case, graded in process (tests/in_process.py): the hidden tests run as at autograde
(the graded training run included), the real JudgeAnswers judges their reports. tests/slow/test_ex4_pipeline.py
runs a few of them through nbgrader."""

import nbformat
import pytest
import torch
from nbconvert.filters.strings import clean_html
from support.cases_ex4 import ALTERNATIVES, CHEATS, GRADIENTS, MISTAKES, NB, submissions
from support.course import REPO, FeedbackPage
from support.in_process import autograde, judge, selected, source_notebook
from support.words import PSEUDO, pseudo_translated, rendered, summary_html, summary_text, untranslated

from autograder.authoring.submissions import grade_id
from autograder.common.editions import ENGLISH
from autograder.common.naming import SETUP_PREFIX
from autograder.engine.reference import run_setup
from autograder.engine.training import network as training
from autograder.engine.training.reference_runs import POINTS, REACH_LOSS


@pytest.fixture(scope="module")
def graded(request):
    release = nbformat.read(REPO / "release" / "backprop_ninja" / f"{NB}.ipynb", as_version=4)
    return autograde(NB, selected(request, submissions(release, source_notebook(NB))))


def lost(graded, student) -> dict:
    got = graded[student]
    return {g: got.points[g] for g in got.lost()}


def test_points_table(graded):
    maximum = {g: p for g, p in graded["solution"].max_points.items() if p}
    assert maximum == {"test_dC": 2, **{g: 1 for g in GRADIENTS[1:]}, "test_training": 4, "test_calibration": 2}
    assert sum(maximum.values()) == sum(POINTS.values()) == 14


@pytest.mark.parametrize("student", ["solution", *ALTERNATIVES, "alt_extra_loop"])
def test_correct_submissions_get_full_marks(graded, student):
    assert lost(graded, student) == {}, graded[student].messages


def test_solution_messages(graded):
    messages = graded["solution"].messages
    assert "with the right gradients, your training_step follows autograd's run" in messages["test_training"]
    assert "your own training run" not in messages["test_training"]  # it followed too
    assert f"goal: below {REACH_LOSS:g}" in messages["test_training"]
    assert "over the training set" in messages["test_calibration"]


def test_blank_release_gets_zero_without_crashing(graded):
    blank = graded["blank"]
    assert sum(blank.points.values()) == 0
    for cell in GRADIENTS:
        assert "backward_pass still raises NotImplementedError" in blank.messages[cell], blank.messages[cell]
    assert "stopped after 0 of" in blank.messages["test_training"]
    assert "not calibrated yet" in blank.messages["test_calibration"]


@pytest.mark.parametrize("student", [*MISTAKES, *CHEATS])
def test_a_mistake_costs_its_own_points(graded, student):
    _, _, keeps, words = {**MISTAKES, **CHEATS}[student]
    assert lost(graded, student) == keeps, graded[student].messages
    for cell, text in words.items():
        assert text in graded[student].messages[cell], graded[student].messages[cell]


@pytest.mark.parametrize(
    "student", ["m_update_rebinds", "m_update_missing", "m_update_sign", "m_update_list_reassigned"]
)
def test_a_wrong_training_step_is_not_blamed_on_right_gradients(graded, student):
    """Every gradient right, training_step wrong: the replay with the right gradients says why the run departs; the
    notebook's own run departs for the same reason, and no line sends the student to their backward_pass."""
    message = graded[student].messages["test_training"]
    assert "with your backward_pass" not in message and "wrong gradients' own cells" not in message, message


def test_a_blank_notebook_is_sent_to_backward_pass_not_to_a_gradient(graded):
    headline = summary_text(rendered(graded["blank"], ENGLISH)[1], ENGLISH).split(" graded cell ")[0]
    assert "Fix first: the one answer that 7 graded cells (8 points) wait for" in headline, headline
    assert "(not answered yet: backward_pass still raises NotImplementedError)" in headline, headline


def test_a_backward_pass_that_raises_is_named_in_the_headline_not_dW2(graded):
    """A real error in backward_pass: the headline names that error (the reason every gradient's cell shares), where
    it used to read "Fix first: dW2", the first row of the table, as if dW2 were the mistake."""
    page = FeedbackPage(clean_html(summary_html(rendered(graded["m_backward_raises"], ENGLISH)[1], ENGLISH)))
    assert page.headline == (
        "2 of 9 graded cells right. Fix first: the one error behind 7 graded cells (8 points), the first of them "
        "marked below: backward_pass raised NameError on the check batch, at `dlogits /= n_rows`: name 'n_rows' is not "
        "defined. Every gradient computed from that line has no value and loses its points; the grader ran the other "
        "lines again and judged their gradients on their own Late submission: 1.5 points off (the score above is after "
        "it)."
    ), page.headline  # (support.words.summary_html's page is late by 1.5 points, for its note's words)
    assert page.first_to_fix() == ["test_dW2"]  # the first row that error left without an answer: marked, not named


def test_an_update_left_out_is_not_called_a_rebinding(graded):
    message = graded["m_update_missing"].messages["test_training"]
    assert (
        "p = p - lr * grad" not in message and graded["m_update_missing"].diagnoses["test_training"] == "not_answered"
    )
    assert graded["m_update_rebinds"].diagnoses["test_training"] == "not_updated_in_place"


def test_new_tensors_in_the_parameters_list_lose_the_follow_points_and_say_how_to_update(graded):
    """parameters[i] = p - lr * grad: the replay's losses follow autograd's (the grader's gradients read the list),
    yet the notebook's C, W1, ... never move. The follow points go, with the reason and the fix; the goal's point,
    the gradients and the calibration (consistent with the parameters the notebook has) keep theirs."""
    got = graded["m_update_list_reassigned"]
    message = got.messages["test_training"]
    assert got.diagnoses["test_training"] == "not_updated_in_place"
    assert "keep their initial values" in message and "p += -lr * grad (or p.data -= lr * grad)" in message, message
    assert "follows autograd's run" not in message and "your own training run" not in message, message
    assert f"goal: below {REACH_LOSS:g}" in message, message


def test_exact_zeros_for_db1_are_right_and_say_why(graded):
    assert (
        "exactly zero, which is right: BatchNorm subtracts the batch mean"
        in graded["alt_db1_zero"].messages["test_db1"]
    )


def test_grader_forward_is_the_notebooks():
    """training.forward (the grader's replay) computes exactly what the notebook's locked forward does."""
    source = source_notebook(NB)
    ns = run_setup(tuple(c.source for c in source.cells if grade_id(c).startswith(SETUP_PREFIX)), 12345)
    Xb, Yb, cache = ns["check_batch"]
    loss, mine = training.forward(ns["initial_parameters"], Xb, Yb)
    assert torch.equal(loss, ns["loss"].detach())
    assert all(torch.equal(mine[k], cache[k]) for k in cache)
    grads = training.manual_backward(ns["initial_parameters"], Xb, Yb, mine)
    scale = max(p.grad.abs().max().item() for p in ns["parameters"])  # db1 is rounding noise around 0
    for name, p, g in zip(training.PARAMETER_NAMES, ns["parameters"], grads):
        assert (g - p.grad).abs().max() <= 1e-6 * scale, name


def test_every_word_a_student_reads_goes_through_the_catalog(graded, monkeypatch):
    """Every student's feedback in a pseudo-translated edition: each line of each verdict and of the table of steps
    comes from a template of the catalog (it is marked), and every reason holds words. JudgeAnswers itself writes it
    so, in the edition it is given."""
    pseudo_translated(monkeypatch)
    assert untranslated(NB, graded) == []
    for student in ("blank", "solution", "m_update_sign"):
        again = judge(NB, student, graded[student].executed, PSEUDO)
        assert again.messages == rendered(graded[student], PSEUDO)[0]
        assert (again.points, again.diagnoses) == (graded[student].points, graded[student].diagnoses)


def test_a_calibration_in_float64_keeps_its_points_and_is_told_to_be_float32(graded):
    message = graded["m_lr_from_the_loops_globals_calibration_float64"].messages["test_calibration"]
    assert "but bnmean is float64: the notebook's evaluation and sampling mix it" in message, message
    assert "but bnvar is float64" in message and "Make it float32 with .float()" in message, message
    assert "float64" not in graded["solution"].messages["test_calibration"]

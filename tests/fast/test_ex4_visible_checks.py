"""Exercise 4's visible check of the training run judges training_step as the grader does.

The autograder runs the student's training_step again with the right gradients in place of their backward_pass,
beside plain gradient descent, and every loss must stay within ``LOSS_TOLERANCE`` (``engine.training``). The
notebook's check does the same on a short run, so a training_step that ignores ``lr`` is ✘ before it is handed in
(its own loss still goes down).
"""

import contextlib
import io

import nbformat
import pytest
from support.course import ASSIGNMENT, REPO

from autograder.authoring import SOURCE_DIR, shared_cell
from autograder.authoring.submissions import grade_id, solved
from autograder.common.naming import SETUP_PREFIX
from autograder.engine.reference import run_setup, strip_hidden

EX4 = "ex4_manual_training"


@pytest.fixture(scope="module")
def ex4():
    """Exercise 4's setup, the cells of the solved notebook by grade_id."""
    nb = nbformat.read(SOURCE_DIR / f"{EX4}.ipynb", as_version=4)
    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{EX4}.ipynb", as_version=4)
    cells = {grade_id(c): c.source for c in solved(release, nb).cells if grade_id(c)}
    setup = dict(run_setup(tuple(c.source for c in nb.cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647))
    return setup, cells


def check_training(ex4, training_step):
    """What the visible check under the graded training cell prints for this training_step (and the course's
    backward_pass), after a run whose loss went down."""
    setup, cells = ex4
    namespace = {**setup}
    for code in (shared_cell("self_check_helpers"), cells["training_checks"], cells["answer_backward_pass"]):
        exec(strip_hidden(code), namespace)
    exec(training_step, namespace)
    namespace.update(max_steps=100, lossi=[3.3 - 0.01 * i for i in range(100)])
    before = [p.detach().clone() for p in namespace["parameters"]]
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        namespace["check_training"]()
    assert all((p == q).all() for p, q in zip(namespace["parameters"], before))  # put back as they were
    return out.getvalue() + err.getvalue()


IGNORES_LR = """
def training_step(Xb, Yb, lr):
    loss, cache = forward(Xb, Yb)
    grads = backward_pass(Xb, Yb, cache)
    for p, grad in zip(parameters, grads):
        p += -0.1 * grad
    return loss
"""

REBINDS = """
def training_step(Xb, Yb, lr):
    loss, cache = forward(Xb, Yb)
    grads = backward_pass(Xb, Yb, cache)
    for p, grad in zip(parameters, grads):
        p = p - lr * grad
    return loss
"""


def test_the_course_training_step_is_a_tick(ex4):
    out = check_training(ex4, ex4[1]["answer_training_step"])
    assert out.startswith("✔ 100 steps"), out


def test_a_training_step_that_ignores_lr_is_not_a_tick(ex4):
    out = check_training(ex4, IGNORES_LR)
    assert out.startswith(
        "✘ training: with the right gradients, your training_step leaves plain gradient descent at "
        "step 12 (learning rate 0.01 since step 11)"
    ), out
    assert "with the lr it is given" in out


def test_a_training_step_that_changes_nothing_is_named_at_its_second_step(ex4):
    out = check_training(ex4, REBINDS)
    assert "leaves plain gradient descent at step 2 " in out, out


def test_a_training_step_not_written_yet_says_so(ex4):
    out = check_training(ex4, "def training_step(Xb, Yb, lr):\n    raise NotImplementedError()\n")
    assert out == "✘ training: training_step is not written yet\n", out

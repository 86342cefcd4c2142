"""Exercise 4's visible checks say what the grader says: a backward_pass right at one batch size only is ✘ under
its gradients' cells and under Step 1's table (the grader calls it on a batch of another size too), and a
calibration after a training run that diverged is no ✔."""

import contextlib
import io
import textwrap

import nbformat
import pytest
from support.course import ASSIGNMENT, REPO

from autograder.authoring import SOURCE_DIR, shared_cell
from autograder.authoring.submissions import grade_id, solved
from autograder.common.naming import SETUP_PREFIX
from autograder.engine.reference import run_setup, strip_hidden
from autograder.engine.training.network import OTHER_BATCH_SIZE

EX4 = "ex4_manual_training"


@pytest.fixture(scope="module")
def ex4():
    """Exercise 4's setup, the cells of the solved notebook by grade_id."""
    nb = nbformat.read(SOURCE_DIR / f"{EX4}.ipynb", as_version=4)
    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{EX4}.ipynb", as_version=4)
    cells = {grade_id(c): c.source for c in solved(release, nb).cells if grade_id(c)}
    setup = dict(run_setup(tuple(c.source for c in nb.cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647))
    return setup, cells


def printed(ex4, backward_pass: str, call: str, **names) -> str:
    """What ``call`` (a check of the notebook) prints after these cells, with ``names`` set in the namespace."""
    setup, cells = ex4
    namespace = {**setup}
    for code in (shared_cell("self_check_helpers"), cells["training_checks"], backward_pass):
        exec(strip_hidden(code), namespace)
    namespace.update(names)
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        exec(call, namespace)
    return out.getvalue() + err.getvalue()


N_LINE = "    n = Xb.shape[0]\n"


def test_a_batch_size_written_in_is_named_under_each_gradient_and_under_step_1(ex4):
    right = ex4[1]["answer_backward_pass"]
    assert N_LINE in right
    written_in = right.replace(N_LINE, "    n = 32\n")
    out = printed(ex4, written_in, 'check_backward("W2")')
    assert out.startswith("✘ dW2 is right on the check batch of 32 examples, but not on a batch of 50: "), out
    assert "It works at one batch size only. Read the size from the batch, n = Xb.shape[0]" in out, out
    out = printed(ex4, written_in, "check_chain()")
    assert out.startswith("✘ dW2 is right on the check batch of 32 examples, but not on a batch of 50"), out
    divided = right.replace("dlogits /= n", "dlogits /= 32")
    assert divided != right
    out = printed(ex4, divided, 'check_backward("b2")')
    assert "it is 50/32 times autograd's, as if divided by 32 where the batch has 50 examples" in out, out


def test_the_lectures_global_n_and_batch_size_are_ticks(ex4):
    """The lecture reads n (the notebook's batch size) from outside backward_pass: the check sets it to the other
    batch's size for its call, as the grader does, and puts it back."""
    right = ex4[1]["answer_backward_pass"]
    for code in (right.replace(N_LINE, ""), right.replace(N_LINE, "    n = batch_size\n")):
        for name in ("C", "W1", "W2", "bnbias"):
            out = printed(ex4, code, f'check_backward("{name}")')
            assert out.startswith(f"✔ d{name}"), out
        assert printed(ex4, code, "check_chain()\nprint(n, batch_size)").endswith("\n32 32\n")


# The grader keeps the calibration's points after a diverged run (it adds a note): the line says so, or a student
# reads the ✘ as 2 points lost.
DIVERGED = (
    "✘ bnmean and bnvar are the statistics of hprebn over Xtr for your parameters: the calibration itself is right, "
    "and earns its points, but your training run "
)


def calibrated(ex4, lossi, parameters=None) -> str:
    """What the check under the calibration cell prints after the course's calibration, for this training run."""
    setup, cells = ex4
    parameters = parameters or [p.detach().clone() for p in setup["parameters"]]
    names = dict(zip(setup["parameter_names"], parameters), parameters=parameters, lossi=lossi)
    calibration = "with torch.no_grad():\n" + textwrap.indent(cells["answer_calibration"], "    ")
    return printed(ex4, calibration, "check_calibration()", **names)


def test_a_calibration_after_a_diverged_run_is_no_tick(ex4):
    out = calibrated(ex4, [3.3 + 10 * i for i in range(100)])
    assert out.startswith(DIVERGED + "diverged: its loss ended at 948.3 (the mean of its last tenth of steps)"), out
    assert "a learning rate too big, or a gradient with the wrong sign or scale" in out, out
    out = calibrated(ex4, [3.3] * 50 + [float("nan")] * 50)
    assert out.startswith(DIVERGED + "diverged: its loss became NaN or inf at step 51"), out
    broken = [p.detach().clone() for p in ex4[0]["parameters"]]
    broken[1][0, 0] = float("inf")
    out = calibrated(ex4, [3.3] * 100, broken)
    assert out.startswith("✘ bnmean and bnvar cannot be checked, but your training run diverged: your parameters"), out


def test_a_calibration_after_a_run_that_went_down_is_a_tick(ex4):
    out = calibrated(ex4, [3.3 - 0.01 * i for i in range(100)])
    assert out.startswith("✔ bnmean and bnvar: the mean and the variance of hprebn over Xtr"), out


def test_the_notebook_says_the_other_batch_size_the_grader_uses():
    """The markdown over the exercise names the size of the second batch: the engine's, which the helper cell's
    OTHER_BATCH_SIZE (generated from it) is too."""
    cells = nbformat.read(SOURCE_DIR / f"{EX4}.ipynb", as_version=4).cells
    assert f"and on a batch of {OTHER_BATCH_SIZE} examples" in cells[0].source
    check_it = next(c.source for c in cells if c.source.startswith("## Check it"))  # what the lines under them check
    assert f"on a batch of {OTHER_BATCH_SIZE} examples as the autograder does" in check_it
    assert f"OTHER_BATCH_SIZE = {OTHER_BATCH_SIZE}  #" in shared_cell("self_check_helpers")

"""Exercise 4's visible check of the training run judges training_step as the grader does.

The autograder runs the student's training_step again with the right gradients in place of their backward_pass,
beside plain gradient descent, for ``GRADED_STEPS`` steps: every loss must stay within ``LOSS_TOLERANCE``, and the
validation loss of the run must end below ``REACH_LOSS`` (``engine.training``). The notebook's check runs the same
replay and prints both, so a training_step that ignores ``lr`` is ✘ before it is handed in (its own loss still goes
down), and a student sees the validation loss that the training run's last point is graded on.
"""

import ast
import contextlib
import functools
import io
import linecache
import re
import textwrap
import zlib

import nbformat
import pytest
import torch
from support.course import ASSIGNMENT, REPO

from autograder.authoring import SOURCE_DIR, shared_cell
from autograder.authoring.submissions import grade_id, solved
from autograder.common.naming import SETUP_PREFIX
from autograder.engine.reference import run_setup, strip_hidden
from autograder.engine.training.network import OTHER_BATCH_SIZE, TRAINING_BATCHES
from autograder.engine.training.reference_runs import REACH_LOSS, reference_run

EX4 = "ex4_manual_training"


@pytest.fixture(scope="module")
def ex4():
    """Exercise 4's setup, the cells of the solved notebook by grade_id."""
    nb = nbformat.read(SOURCE_DIR / f"{EX4}.ipynb", as_version=4)
    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{EX4}.ipynb", as_version=4)
    cells = {grade_id(c): c.source for c in solved(release, nb).cells if grade_id(c)}
    setup = dict(run_setup(tuple(c.source for c in nb.cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647))
    return setup, cells


@functools.cache
def _compiled(source: str):
    """A cell's code without its hidden tests, compiled as exec compiles a string: once per module (the cells of the
    checks run before every check; compiling them, and expanding the helper cell, took 2 s of this module)."""
    return compile(strip_hidden(source), "<string>", "exec")


def with_the_checks(ex4, **names) -> dict:
    """A namespace of the setup (with ``names`` in it) in which the shared helper cell and Exercise 4's cell of checks
    ran."""
    setup, cells = ex4
    namespace = {**setup, **names}
    for code in (_helper_cell(), cells["training_checks"]):
        exec(_compiled(code), namespace)
    namespace["_calibration"] = _remembered(namespace["_calibration"])
    return namespace


_CALIBRATIONS = {}  # (code, split, C, W1, b1 by value) -> (the split, what the check cell's _calibration returned)


def _remembered(calibration):
    """The check cell's own _calibration, computed once a module for the same split (the same tensor, unchanged) and
    the same values of C, W1, b1: the calibration checks called it 28 times for 4 different inputs, most of them
    hprebn's statistics over Xtr for the same parameters (4-5 CPU s of this module). Each caller gets copies."""

    def remembered(X, C, W1, b1):
        tensors = (X, C, W1, b1)
        if not all(isinstance(t, torch.Tensor) for t in tensors):
            return calibration(X, C, W1, b1)
        values = tuple((t.dtype, tuple(t.shape), t.detach().numpy().tobytes()) for t in (C, W1, b1))
        key = (calibration.__code__, id(X), X._version, values)
        if key not in _CALIBRATIONS or _CALIBRATIONS[key][0] is not X:
            _CALIBRATIONS[key] = (X, calibration(X, C, W1, b1))
        return {name: value.clone() for name, value in _CALIBRATIONS[key][1].items()}

    return remembered


@functools.cache
def _helper_cell() -> str:
    return shared_cell("self_check_helpers")


_TRAINING_CHECKED = {}  # training_step -> what the check printed: the same for the same code (it puts back what it ran)


def check_training(ex4, training_step):
    """(Once per training_step: two tests read what it prints for the course's.)"""
    if training_step not in _TRAINING_CHECKED:
        _TRAINING_CHECKED[training_step] = _check_training(ex4, training_step)
    return _TRAINING_CHECKED[training_step]


def _check_training(ex4, training_step):
    """What the visible check under the graded training cell prints for this training_step (and the course's
    backward_pass), after a run whose loss went down."""
    setup, cells = ex4
    namespace = with_the_checks(ex4)
    exec(strip_hidden(cells["answer_backward_pass"]), namespace)
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

REPLACES = """
def training_step(Xb, Yb, lr):
    loss, cache = forward(Xb, Yb)
    grads = backward_pass(Xb, Yb, cache)
    for i, (p, grad) in enumerate(zip(parameters, grads)):
        parameters[i] = p - lr * grad
    return loss
"""


TOO_SLOW = """
def training_step(Xb, Yb, lr):
    loss, cache = forward(Xb, Yb)
    grads = backward_pass(Xb, Yb, cache)
    for p, grad in zip(parameters, grads):
        p += -0.01 * lr * grad
    return loss
"""


def validation_line(out: str) -> str:
    return next(line for line in out.splitlines() if "validation loss" in line)


def test_the_course_training_step_is_a_tick(ex4):
    out = check_training(ex4, ex4[1]["answer_training_step"])
    assert out.splitlines()[0] == (
        "✔ training_step: with the right gradients, it follows plain gradient descent for all 300 steps, as the "
        "autograder checks it"
    ), out
    assert "✔ 100 steps: the mean loss went from" in out, out


def test_the_validation_loss_the_training_run_is_graded_on_is_shown(ex4):
    """The line says the loss that the grader's own measure gives for autograd's run from the same start (which the
    course's training_step follows), and that it is below the graded bound."""
    setup, _ = ex4
    graders = reference_run(dict(setup))["val_loss"]
    line = validation_line(check_training(ex4, ex4[1]["answer_training_step"]))
    assert line.startswith(f"✔ validation loss after these 300 steps: {graders:.3f}"), (line, graders)
    assert f", below {REACH_LOSS:g}, the goal the autograder grades" in line, line


@pytest.mark.parametrize("seed", [2147483647, 1, 2])
def test_the_goal_is_within_reach_of_autograds_run_on_the_notebooks_setup(seed):
    """A right training_step earns the last point only when autograd's run from the same start gets below REACH_LOSS,
    measured with n_hidden = 200 and batch_size = 32. With n_hidden = 2 in setup_settings every right student of
    test_ex4_in_process lost it, shown only as 'assert {'test_training': 3.0} == {}'; here the cause is named."""
    nb = nbformat.read(SOURCE_DIR / f"{EX4}.ipynb", as_version=4)
    setup = dict(run_setup(tuple(c.source for c in nb.cells if grade_id(c).startswith(SETUP_PREFIX)), seed))
    reached = reference_run(setup)["val_loss"]
    assert reached <= REACH_LOSS - 0.05, (
        f"at seed {seed} autograd's own run on Exercise 4's setup (n_hidden = {setup['n_hidden']}, batch_size = "
        f"{setup['batch_size']}) reaches a validation loss of {reached:.3f}, not clearly below REACH_LOSS = "
        f"{REACH_LOSS}: "
        "a right training_step would lose its point. Measure REACH_LOSS and LOSS_TOLERANCE again for the new settings "
        "(autograder/engine/training/reference_runs.py; docs/maintaining.md, 'Changing a notebook's settings')"
    )


def test_the_other_batch_size_is_another_size(ex4):
    """backward_pass is checked again at OTHER_BATCH_SIZE to catch a batch size written in as a number: a setup whose
    batch_size is that size would let `/ 32`-style answers through unseen."""
    assert ex4[0]["batch_size"] != OTHER_BATCH_SIZE, (
        f"Exercise 4's batch_size is OTHER_BATCH_SIZE ({OTHER_BATCH_SIZE}, autograder/engine/training/network.py): "
        "change one of them (docs/maintaining.md, 'Changing a notebook's settings')"
    )


def test_a_validation_loss_above_the_bound_is_not_a_tick(ex4):
    line = validation_line(check_training(ex4, TOO_SLOW))
    shown = float(line.split(": ")[1].split(",")[0])
    assert line.startswith("✘ validation loss after these 300 steps: ") and shown >= REACH_LOSS, line
    assert f"not below {REACH_LOSS:g}, the goal the autograder grades" in line, line


def test_a_training_step_that_ignores_lr_is_not_a_tick(ex4):
    out = check_training(ex4, IGNORES_LR)
    assert (
        "✘ training: with the right gradients, your training_step leaves plain gradient descent at "
        "step 152 (learning rate 0.01 since step 151)"
    ) in out, out
    assert "with the lr it is given" in out
    assert validation_line(out).startswith("✔ validation loss after these 300 steps: "), out  # its own point still


def test_a_training_step_that_changes_nothing_is_named_at_its_second_step(ex4):
    out = check_training(ex4, REBINDS)
    assert "leaves plain gradient descent at step 2 " in out, out


def test_new_tensors_put_into_the_parameters_list_are_not_a_tick(ex4):
    """Its losses follow plain gradient descent (forward reads the list), yet the notebook's C, W1, ... never move:
    the check says so at the first step, as the autograder does, and puts the list's own tensors back."""
    setup, _ = ex4
    named = list(setup["parameters"])
    out = check_training(ex4, REPLACES)
    assert out.startswith(
        "✘ training: with the right gradients, your training_step puts new tensors into the list parameters "
        "(parameters[i] = ..., at step 1)"
    ), out
    assert "p += -lr * grad (or p.data -= lr * grad)" in out and "✔" not in out, out
    assert all(p is q for p, q in zip(setup["parameters"], named))


def test_new_tensors_already_put_into_the_list_by_the_students_own_run_are_named(ex4):
    """In the notebook the training loop runs before the check: a training_step that assigns to parameters[i] has
    already put tensors without gradients into the list, and the replay could not take autograd's gradients of them.
    The check names the mistake instead of autograd's error, and changes nothing."""
    setup, cells = ex4
    namespace = with_the_checks(ex4, parameters=list(setup["parameters"]))
    for code in (cells["answer_backward_pass"], REPLACES):
        exec(strip_hidden(code), namespace)
    with torch.no_grad():
        namespace["training_step"](namespace["Xtr"][:32], namespace["Ytr"][:32], 0.1)  # the student's own run
    namespace.update(max_steps=1, lossi=[3.3])
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        namespace["check_training"]()
    out = out.getvalue() + err.getvalue()
    assert out.startswith(
        "✘ training: your training_step put new tensors into the list parameters (parameters[i] = ...) instead of "
        "changing the tensors themselves: the list no longer holds your C, W1, b1, W2, b2, bngain, bnbias"
    ), out
    assert "does not require grad" not in out and "Restart and Run All" in out and out.count("\n") == 1, out


def test_a_training_step_not_written_yet_says_so(ex4):
    out = check_training(ex4, "def training_step(Xb, Yb, lr):\n    raise NotImplementedError()\n")
    assert out == "✘ training: training_step is not written yet\n", out


def check_calibration(ex4, calibration):
    """What the visible check under the graded calibration cell prints after this calibration, the parameters moved
    away from their initial values as training moves them."""
    setup, cells = ex4
    namespace = with_the_checks(ex4)
    noise = torch.Generator().manual_seed(1)
    trained = [p.detach() + 0.05 * torch.randn(p.shape, generator=noise) for p in setup["parameters"]]
    namespace.update(parameters=trained, **dict(zip(setup["parameter_names"], trained)))
    exec(f"with torch.no_grad():\n    {calibration.replace(chr(10), chr(10) + '    ')}", namespace)
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        namespace["check_calibration"]()
    return out.getvalue() + err.getvalue()


HPREBN = "hprebn_all = C[{X}].view({X}.shape[0], -1) @ W1 + b1\n"


@pytest.mark.parametrize(
    "calibration, printed",
    [
        (
            HPREBN.format(X="Xtr")
            + "bnmean = hprebn_all.mean(0, keepdim=True)\nbnvar = hprebn_all.var(0, keepdim=True)",
            "✔ bnmean and bnvar: the mean and the variance of hprebn over Xtr for your trained parameters",
        ),
        (
            HPREBN.format(X="Xtr")
            + "bnmean = hprebn_all.mean(0, keepdim=True)\nbnvar = hprebn_all.std(0, keepdim=True)",
            "✘ bnvar: this is the standard deviation",
        ),
        (
            HPREBN.format(X="Xdev")
            + "bnmean = hprebn_all.mean(0, keepdim=True)\nbnvar = hprebn_all.var(0, keepdim=True)",
            "✘ bnmean: these are the statistics of the validation set",
        ),
        (
            HPREBN.format(X="Xtr[:32]") + "bnmean = hprebn_all.mean(0, keepdim=True)\nbnvar = torch.ones(1, n_hidden)",
            "✘ bnmean: not the statistic of hprebn over Xtr for your trained parameters: largest difference",
        ),
        (
            "bnmean = torch.zeros(1, n_hidden)\nbnvar = torch.ones(1, n_hidden)",  # what the old check let through
            "✘ bnmean: not the statistic of hprebn over Xtr",
        ),
        ("bnmean = torch.zeros(n_hidden)\nbnvar = torch.ones(n_hidden)", "✘ bnmean: the shape is (200,)"),
        ("pass", "✘ bnmean: not calibrated yet"),
        (  # bnvar_inv stored: named as the grader names it
            HPREBN.format(X="Xtr")
            + "bnmean = hprebn_all.mean(0, keepdim=True)\nbnvar = (hprebn_all.var(0, keepdim=True) + 1e-5) ** -0.5",
            "✘ bnvar: this is (variance + 1e-5) ** -0.5, what forward calls bnvar_inv",
        ),
        (  # right, in float64: the evaluation and the sampling cells would stop on it, so the line says so
            HPREBN.format(X="Xtr").replace("-1) @ W1 + b1", "-1).double() @ W1.double() + b1.double()")
            + "bnmean = hprebn_all.mean(0, keepdim=True)\nbnvar = hprebn_all.var(0, keepdim=True)",
            "✔ bnmean and bnvar: the mean and the variance of hprebn over Xtr for your trained parameters (max "
            "difference",
        ),
    ],
    ids=["right", "std", "validation", "minibatch", "zeros", "shape", "missing", "inverse_std", "float64"],
)
def test_the_calibration_check_compares_the_values(ex4, calibration, printed):
    out = check_calibration(ex4, calibration)
    assert out.startswith(printed), out
    assert ("But bnmean is torch.float64, bnvar is torch.float64" in out) == ("double()" in calibration), out


def test_a_calibration_before_training_says_so(ex4):
    calibration = (
        "C0, W1_0, b1_0 = initial_parameters[:3]\nhprebn_all = C0[Xtr].view(Xtr.shape[0], -1) @ W1_0 + b1_0\n"
        "bnmean = hprebn_all.mean(0, keepdim=True)\nbnvar = hprebn_all.var(0, keepdim=True)"
    )
    out = check_calibration(ex4, calibration)
    assert out.startswith("✘ bnmean: these are the statistics of the parameters before training"), out


def check_backward(ex4, backward_pass, name, **later):
    """What the visible check under d<name>'s graded cell prints for this backward_pass (source), on the check
    batch; ``later``: names that later cells rebound (Step 1 leaves Xb its last minibatch)."""
    return printed(ex4, backward_pass, f"check_backward({name!r})", **later)


INDEX_ADD = "dC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))"


def test_dC_not_added_up_over_repeated_characters_is_named_as_the_grader_names_it(ex4):
    """`dC[Xb] += demb` keeps one occurrence of a repeated character: the line says so, not "add both
    contributions (+=)"; the right backward_pass is a tick."""
    right = ex4[1]["answer_backward_pass"]
    assert INDEX_ADD in right
    assert check_backward(ex4, right, "C").startswith("✔ dC: shape (27, 10) ok"), check_backward(ex4, right, "C")
    out = check_backward(ex4, right.replace(INDEX_ADD, "dC[Xb] += demb"), "C")
    assert out.startswith("✘ dC: values differ from autograd's"), out
    assert "wrong for those that appear several times: writing through a repeated index (`dC[Xb] += demb`" in out, out
    assert "add both contributions" not in out, out
    step_1 = ex4[0]["Xtr"][:32]  # Step 1 ran: Xb is another batch, and the check batch's is the one it reads
    assert check_backward(ex4, right.replace(INDEX_ADD, "dC[Xb] += demb"), "C", Xb=step_1) == out


NO_BESSEL = ("- n / (n - 1) * bnraw", "- bnraw")  # dhprebn without Bessel's n/(n-1): dW1 and dC follow from it


def step_1(ex4, backward_pass):
    """What Step 1 prints (its table of the parameters' gradients, and the line under it) for this backward_pass."""
    namespace = with_the_checks(ex4)
    exec(strip_hidden(backward_pass), namespace)
    nb = nbformat.read(SOURCE_DIR / f"{EX4}.ipynb", as_version=4)
    (cell,) = [c.source for c in nb.cells if "self_check(*parameter_names)" in c.source and not grade_id(c)]
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        exec(cell, namespace)
    return out.getvalue() + err.getvalue()


def test_a_wrong_dhprebn_is_named_under_step_1s_table_and_under_the_graded_cells(ex4):
    """Without Bessel's correction only dW1 and dC fail (db1 is a sum of entries that add up to zero either way):
    the table's Next is dW1, the first wrong parameter in the order of the backward pass, and the lines name dhprebn,
    the first wrong gradient of all."""
    right = ex4[1]["answer_backward_pass"]
    assert NO_BESSEL[0] in right
    wrong = right.replace(*NO_BESSEL)
    out = step_1(ex4, wrong)
    assert "5 of 7 gradients match autograd. Next: dW1." in out, out
    named = "the first wrong gradient on the way back from the loss to {} is your dhprebn: values differ"
    assert "✘ " + named.format("dW1") in out, out
    for parameter in ("C", "W1"):
        assert named.format("d" + parameter) in check_backward(ex4, wrong, parameter)
    assert "the path through the variance, is off (its sign, or its factor n/(n-1)?)" in out, out  # Exercise 3's check
    assert check_backward(ex4, wrong, "W2").startswith("✔ dW2"), check_backward(ex4, wrong, "W2")


def test_step_1_says_when_the_mistake_is_in_the_parameters_own_line(ex4):
    right = ex4[1]["answer_backward_pass"]
    out = step_1(ex4, right)
    assert "All 7 gradients match autograd." in out and "✔ on the check batch too" in out, out
    out = step_1(ex4, right.replace(INDEX_ADD, "dC[Xb] += demb"))
    assert "✘ dC: your dlogits, dh, dhpreact, dhprebn, dembcat, demb on the way back from the loss are right" in out
    unnamed = re.sub(r"\bdemb\b", "d_emb", right.replace(INDEX_ADD, "dC[Xb] += demb"))
    assert "name your intermediate gradients demb as the notebook asks" in step_1(ex4, unnamed)


def test_the_two_cells_of_checks_say_which_is_which():
    """The shared helper cell (the same in every notebook, parts of it for other notebooks) says so, and the
    markdown over Exercise 4's own checks names each check that cell defines: two cells, not two 'the checks'."""
    cells = nbformat.read(SOURCE_DIR / f"{EX4}.ipynb", as_version=4).cells
    at = {grade_id(c): i for i, c in enumerate(cells) if grade_id(c)}
    helpers, own = at["self_check_helpers"], at["training_checks"]
    assert "the same cell in every notebook" in cells[helpers - 1].source
    assert "The same cell in every notebook of the course" in cells[helpers].source.split("\n")[2]
    lines = cells[helpers].source.split("\n")  # Exercise 5's gradient names in it, and why
    at = next(i for i, line in enumerate(lines) if line.startswith("GRADIENTS = "))
    assert "datt" in lines[at] and "every notebook's steps" in lines[at - 1] and lines[at - 1].startswith("#")
    defined = [
        node.name
        for node in ast.parse(strip_hidden(cells[own].source)).body
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
    ]
    assert set(defined) == {"check_backward", "check_chain", "check_training", "check_calibration"}, defined
    assert all(f"`{name}`" in cells[own - 1].source for name in defined), cells[own - 1].source
    assert "defines the checks of this notebook" not in cells[own - 1].source


KEPT_BETWEEN_CALLS = "dC_total = torch.zeros_like(C)\n"  # made once, outside backward_pass, added into at every call


@pytest.mark.parametrize("kept", [False, True], ids=["afresh", "kept-between-calls"])
def test_the_check_under_dC_calls_backward_pass_twice_as_the_grader_does(ex4, kept):
    """A dC made once outside backward_pass and added into is right on the first call only: the grader calls
    backward_pass a second time and gives dC nothing; the check under dC's cell does the same and says why, and the
    cells after it do not blame the other gradients."""
    setup, cells = ex4
    code = cells["answer_backward_pass"]
    if kept:
        assert "    dC = torch.zeros_like(C)\n" in code
        code = KEPT_BETWEEN_CALLS + code.replace("    dC = torch.zeros_like(C)\n", "    dC = dC_total\n")
    namespace = with_the_checks(ex4)
    exec(strip_hidden(code), namespace)
    printed = {}
    for name in ("C", "W1"):
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
            namespace["check_backward"](name)
        printed[name] = out.getvalue() + err.getvalue()
    assert printed["W1"].startswith("✔ dW1"), printed
    if kept:
        assert printed["C"].startswith("✘ dC: backward_pass gave another dC when it was called a second time"), printed
    else:
        assert printed["C"].startswith("✔ dC"), printed


def test_a_wrong_dhprebn_says_which_of_its_paths_is_off(ex4):
    """Exercise 3's two sanity checks name the path: without dhpreact.sum(0) the columns of dhprebn no longer sum to
    zero (the mean); a wrong factor of the whole, bngain left out, keeps both sums at zero and names neither."""
    right = ex4[1]["answer_backward_pass"]
    assert "(n * dhpreact - dhpreact.sum(0) - " in right
    out = step_1(ex4, right.replace("(n * dhpreact - dhpreact.sum(0) - ", "(n * dhpreact - "))
    assert "the part through the mean, with dhpreact.sum(0), is off" in out and "variance" not in out, out
    out = step_1(ex4, right.replace("dhprebn = bngain * bnvar_inv", "dhprebn = bnvar_inv"))
    assert "is your dhprebn: values differ" in out and "must sum to zero" not in out, out


# A backward_pass right at one batch size only is ✘ under its gradients' cells and under Step 1's table (the grader
# calls it on a batch of another size too), and a calibration after a training run that diverged is no ✔.


def as_a_cell(code: str, namespace: dict) -> None:
    """Run ``code`` as IPython runs a cell: its lines kept in linecache, so that a traceback can quote them."""
    name = f"<cell {zlib.crc32(code.encode())}>"
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    exec(compile(code, name, "exec"), namespace)


def printed(ex4, backward_pass: str, call: str, **names) -> str:
    """What ``call`` (a check of the notebook) prints after these cells, with ``names`` set in the namespace."""
    namespace = with_the_checks(ex4)
    as_a_cell(backward_pass, namespace)
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


def test_a_line_that_raises_at_50_costs_its_gradient_and_those_on_its_way_only(ex4):
    """As the grader judges it: the line that raised on the batch of 50 is quoted under its own gradient's cell and
    under those on its way back from the loss; a gradient that does not depend on it is a tick."""
    right = ex4[1]["answer_backward_pass"]
    db2 = right.replace("db2 = dlogits.sum(0)", "db2 = torch.ones(32) @ dlogits")
    assert db2 != right
    out = check_backward(ex4, db2, "b2")
    assert out.startswith(
        "✘ db2 is right on the check batch of 32 examples, but not on a batch of 50: backward_pass "
        "raised RuntimeError there, in db2's own line `db2 = torch.ones(32) @ dlogits`"
    ), out
    for name in ("W2", "bngain", "C"):
        assert check_backward(ex4, db2, name).startswith(f"✔ d{name}"), check_backward(ex4, db2, name)
    tanh = right.replace("(1.0 - h**2) * dh", "(1.0 - h**2) * dh.view(32, -1)")
    assert tanh != right
    out = check_backward(ex4, tanh, "bngain")
    assert "in the line of dhpreact, on dbngain's way back from the loss, `dhpreact = (1.0 - h**2) * dh.view(32" in out
    assert check_backward(ex4, tanh, "W2").startswith("✔ dW2")


def test_a_line_right_on_some_batches_only_is_named_as_the_grader_names_it(ex4):
    """F.one_hot(Yb) without num_classes is as wide as the batch's largest target: right on a batch that holds the
    last character, it raises on the first batch of the training run without it."""
    right = ex4[1]["answer_backward_pass"]
    one_hot = right.replace(
        "dlogits = F.softmax(logits, 1)\n", "dlogits = F.softmax(logits, 1) - F.one_hot(Yb).float()\n"
    ).replace("    dlogits[range(n), Yb] -= 1\n", "")
    assert one_hot.count("one_hot") == 1 and "-= 1" not in one_hot
    out = check_backward(ex4, one_hot, "W2")
    assert out.startswith(
        "✘ dW2 is right on the check batch, but backward_pass raised RuntimeError on the batch of "
    ), out
    assert (
        "in the line of dlogits, on dW2's way back from the loss, `dlogits = F.softmax(logits, 1) - F.one_hot(" in out
    )
    assert "It must work on every batch" in out, out


def test_a_gradient_in_another_shape_on_some_batches_is_named_as_the_grader_names_it(ex4):
    """dC from F.one_hot(Xb) without num_classes raises nothing: right on a check batch whose contexts hold the last
    character, in shape (26, 10) on the first batch of the training run without it, which the check says as the
    grader does."""
    right = ex4[1]["answer_backward_pass"]
    one_hot = right.replace(INDEX_ADD, "dC = F.one_hot(Xb.view(-1)).float().T @ demb.view(-1, n_embd)")
    assert one_hot != right
    setup = ex4[0]
    Xtr, Ytr = setup["Xtr"], setup["Ytr"]
    ix = torch.cat([(Xtr == Xtr.max()).any(1).nonzero()[:1, 0], torch.arange(31)])  # the last character, then 31
    cache = {k: v.detach() for k, v in setup["forward"](Xtr[ix], Ytr[ix])[1].items()}
    out = check_backward(ex4, one_hot, "C", check_batch=(Xtr[ix], Ytr[ix], cache))
    assert out.startswith("✘ dC is right on the check batch, but on the batch of step "), out
    assert "returned it in shape (26, 10), not (27, 10)" in out and "It must work on every batch" in out, out
    out = check_backward(ex4, one_hot, "W2", check_batch=(Xtr[ix], Ytr[ix], cache))
    assert out.startswith("✔ dW2"), out


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
    """The markdown over the exercise names the size of the second batch and how many of the training run's batches
    backward_pass must run on: the engine's, which the helper cell's OTHER_BATCH_SIZE and TRAINING_BATCHES (generated
    from them) are too."""
    cells = [" ".join(c.source.split()) for c in nbformat.read(SOURCE_DIR / f"{EX4}.ipynb", as_version=4).cells]
    run = f"on the training run's first {TRAINING_BATCHES} batches"
    assert f"and on a batch of {OTHER_BATCH_SIZE} examples" in cells[0] and run in cells[0]
    check_it = next(c for c in cells if c.startswith("## Check it"))  # what the lines under them check
    assert f"on a batch of {OTHER_BATCH_SIZE} examples, and runs it {run}, as the autograder does" in check_it
    helpers = shared_cell("self_check_helpers")
    assert f"OTHER_BATCH_SIZE = {OTHER_BATCH_SIZE}  #" in helpers
    assert f"TRAINING_BATCHES = {TRAINING_BATCHES}  #" in helpers


def backward_pass_of(student: str) -> tuple:
    """(the graded cells cases_ex4 says the student keeps, their backward_pass cell)."""
    from support.cases_ex4 import MISTAKES, NB, QUICK_CALIBRATION

    changes, _, keeps, _ = MISTAKES[student]
    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    source = nbformat.read(SOURCE_DIR / f"{NB}.ipynb", as_version=4)
    solved_cells = solved(release, source, {**QUICK_CALIBRATION, **changes}).cells
    return keeps, next(c.source for c in solved_cells if grade_id(c) == "answer_backward_pass")


@pytest.mark.parametrize(
    "student",
    [
        "m_dC_line_raises",
        "m_dh_not_transposed",
        "m_hpreact_not_in_the_cache_it_reads",
        "m_dembcat_not_transposed",
        "m_dembcat_not_transposed_and_n_written_in",
    ],
)
def test_a_line_that_raises_on_the_check_batch_is_named_under_the_gradients_computed_from_it_only(ex4, student):
    """As the grader (cases_ex4's raising students): backward_pass run again line by line, a gradient that does not
    depend on the line that raised is ✔, one that does is ✘ with the line quoted (every cell said "backward_pass
    raised", and the grader took every gradient's points)."""
    keeps, cell = backward_pass_of(student)
    for name in ("C", "W1", "b1", "W2", "b2", "bngain", "bnbias"):
        out = printed(ex4, cell, f'check_backward("{name}")')
        assert out.startswith("✘") == (f"test_d{name}" in keeps), (name, out)
        if not student.endswith("_and_n_written_in"):  # (there the batch of 50 takes the others' points)
            assert ("on the check batch, at `" in out) == (f"test_d{name}" in keeps), (name, out)


@pytest.mark.parametrize(
    "student, names",
    [
        ("m_dlogits_not_over_n_grads_reversed_calibration_subset", ("b1", "b2")),
        ("m_tanh_precedence_last_parameter_only", ("b1",)),
        ("m_db1_left_out_of_the_list", ("C", "W1", "b1", "bnbias")),
    ],
)
def test_the_check_under_a_gradient_says_what_the_grader_says_of_it(ex4, student, names):
    """Where they differed (a check over every case of cases_ex4 that changes backward_pass): db1, about zero, is
    judged against its step's size as the grader judges it (a wrong dlogits or dhpreact upstream made its rounding
    noise larger than 1e-4 of its own size: ✘ "a constant factor", where the grader gave the point); and with six
    gradients returned each is read by its place, as the grader reads it (dC and dW1 were ✘ "must return a list of
    7", where the grader gave their points)."""
    keeps, cell = backward_pass_of(student)
    for name in names:
        out = printed(ex4, cell, f'check_backward("{name}")')
        assert out.startswith("✘") == (f"test_d{name}" in keeps), (name, out)
    if student == "m_db1_left_out_of_the_list":
        out = printed(ex4, cell, 'check_backward("bnbias")')
        assert out.startswith("✘ dbnbias: backward_pass returned 6 gradients; dbnbias is number 7 of the list"), out


def test_a_gradient_changed_in_place_under_another_name_is_named_so(ex4):
    """As the grader (cases_ex4's m_dhpreact_changed_through_dbnraw...): `dbnraw = dhpreact`, then `dbnraw *= bngain`:
    the check under dbngain names the shared tensor, where it sent the student to re-derive tanh's step."""
    from support.cases_ex4 import MISTAKES, NB, QUICK_CALIBRATION

    changes = MISTAKES["m_dhpreact_changed_through_dbnraw_lr_decayed_in_step"][0]
    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    source = nbformat.read(SOURCE_DIR / f"{NB}.ipynb", as_version=4)
    cells = solved(release, source, {**QUICK_CALIBRATION, **changes}).cells
    cell = next(c.source for c in cells if grade_id(c) == "answer_backward_pass")
    out = printed(ex4, cell, 'check_backward("bngain")')
    assert out.startswith("✘ dbngain") and "your dhpreact: it is the very tensor of dbnraw" in out, out
    assert printed(ex4, cell, 'check_backward("W1")').startswith("✔ dW1")


def test_gradients_returned_in_another_order_are_named_as_such(ex4):
    """[dW1, dC, ...] for [dC, dW1, ...]: under dC, not "dimension 0 is 30 but must be 27: summed over the wrong
    dimension?" and "the error is in dC's own line", but the order; a gradient merely of another's shape is not."""
    right = ex4[1]["answer_backward_pass"]
    swapped = right.replace("return [dC, dW1,", "return [dW1, dC,")
    assert swapped != right
    for name, other in (("C", "W1"), ("W1", "C")):
        out = check_backward(ex4, swapped, name)
        assert out == (
            f"✘ d{name}: in d{name}'s place, backward_pass returns d{other}'s gradient: return the gradients in the "
            "order of parameters, [dC, dW1, db1, dW2, db2, dbngain, dbnbias]\n"
        ), out
    out = check_backward(
        ex4,
        right.replace("dbngain = (bnraw * dhpreact).sum(0, keepdim=True)", "dbngain = (bnraw * dhpreact).sum(0)"),
        "bngain",
    )  # (200,): db1's shape
    assert "order of parameters" not in out and "keepdim" in out, out


def test_a_backward_pass_that_raises_says_in_which_line(ex4):
    """The line that raised is named under the gradients computed from it; the others (dW2 here), computed by the
    other lines run again one by one, as the grader runs them, are judged on their own."""
    right = ex4[1]["answer_backward_pass"]
    raises = right.replace("dW1 = embcat.T @ dhprebn", "dW1 = embcat @ dhprebn")
    out = check_backward(ex4, raises, "W1")
    assert out.startswith(
        "✘ dW1: backward_pass raised RuntimeError on the check batch, at `dW1 = embcat @ dhprebn`: mat1"
    ), out
    assert check_backward(ex4, raises, "W2").startswith("✔ dW2"), check_backward(ex4, raises, "W2")


def test_after_step_1_a_right_backward_pass_stays_a_tick(ex4):
    """Step 1 assigns the last step's gradients at the top level (`dC, dW1, ... = grads`) in a cell that calls
    loss.backward(). The checks that read a d<name>'s code in IPython's history (Exercises 1, 3 and 5: its rule, its use
    of autograd) leave them alone here, where the answer is backward_pass: before, once Step 1 had run, a right
    backward_pass read "✘ dW2: your code for dW2 reads autograd ... earns nothing" under the graded cells run again,
    and in Step 1's own table when it ran again."""
    right = ex4[1]["answer_backward_pass"]
    nb = nbformat.read(SOURCE_DIR / f"{EX4}.ipynb", as_version=4)
    (cell,) = [c.source for c in nb.cells if "self_check(*parameter_names)" in c.source and not grade_id(c)]
    history = ["", right, cell]  # IPython's In: the cells run, the one running last
    for name in ("W2", "b1", "C"):
        out = printed(ex4, right, f"check_backward({name!r})", In=[*history, f"check_backward({name!r})"])
        assert out.startswith(f"✔ d{name}: "), out
    assert "All 7 gradients match autograd." in printed(ex4, right, cell, In=[*history, cell])
    before = printed(ex4, right, 'check_backward("W2")', In=[*history, "check"], ANSWERS_IN_CELLS=True)
    assert "reads autograd" in before, before  # as it was


def test_an_epsilon_left_out_is_named_under_the_gradients_that_show_it_and_under_step_1(ex4):
    """At the check batch's variances an epsilon left out of bnvar_inv changes nothing the tolerance sees; the check,
    as the grader, calls backward_pass again with neuron 0's variance made the epsilon, and names it there. A bnvar_inv
    of one's own with the epsilon inside the root is right, and the parameters are put back after the check."""
    right = ex4[1]["answer_backward_pass"]
    recomputed = "    dbngain = "
    assert recomputed in right
    for line, ticked in (
        ("bnvar_inv = cache['bnvar'] ** -0.5", False),
        ("bnvar_inv = cache['bnvar'] ** -0.5 + 1e-5", False),
        ("bnvar_inv = 1 / torch.sqrt(cache['bnvar'] + 1e-5)", True),
    ):
        code = right.replace(recomputed, f"    {line}\n{recomputed}", 1)
        namespace = with_the_checks(ex4)
        before = [p.clone() for p in namespace["parameters"]]
        out = printed(ex4, code, 'check_backward("W1")')
        if ticked:
            assert out.startswith("✔ dW1"), (line, out)
        else:
            assert out.startswith(
                "✘ dW1 is right on the check batch, but not when a neuron's batch variance is as "
                "small as BatchNorm's epsilon (1e-5)"
            ), (line, out)
            assert "inside the power, bnvar_inv = (bnvar + 1e-5)**-0.5" in out, out
            assert printed(ex4, code, 'check_backward("W2")').startswith("✔ dW2"), line
            assert printed(ex4, code, "check_chain()").startswith("✘ dW1 is right on the check batch, but not"), line
        after = with_the_checks(ex4)
        as_a_cell(code, after)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            exec('check_backward("W1")', after)
        assert all(torch.equal(a, b) for a, b in zip(after["parameters"], before)), line

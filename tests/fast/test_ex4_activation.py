"""Further exercises 5 and 6 work as written: in a copy of Exercise 4, one added cell `activation = torch.relu` makes
the network train, be evaluated and sample with ReLU (the locked cells need no edit)."""

import contextlib
import io
import re

import nbformat
import torch
import torch.nn.functional as F
from support.course import REPO

from autograder.authoring import SOURCE_DIR
from autograder.authoring.submissions import grade_id
from autograder.common.naming import SETUP_PREFIX
from autograder.engine.reference import strip_hidden

EX4 = nbformat.read(SOURCE_DIR / "ex4_manual_training.ipynb", as_version=4)
CELLS = {grade_id(c): c.source for c in EX4.cells if grade_id(c)}


def setup():
    """The setup cells run in one namespace, as in the notebook (forward reads `activation` from it)."""
    namespace = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in EX4.cells:
            if grade_id(cell).startswith(SETUP_PREFIX):
                exec(strip_hidden(cell.source), namespace)
    return namespace


def test_no_locked_cell_hard_codes_tanh():
    for cell in EX4.cells:
        code = re.sub(r"#.*", "", strip_hidden(cell.source)) if cell.cell_type == "code" else ""
        code = code.replace("activation = torch.tanh", "")  # the one place that names it
        assert "tanh" not in code or grade_id(cell) in ("answer_backward_pass", "self_check_helpers"), grade_id(cell)
    assert "activation = torch.tanh" in CELLS["setup_model"]


def test_one_added_cell_swaps_the_activation_everywhere():
    namespace = setup()
    exec("activation = torch.relu", namespace)  # the student's added cell
    _, cache = namespace["forward"](*namespace["check_batch"][:2])
    assert torch.equal(cache["h"], torch.relu(cache["hpreact"]))
    with torch.no_grad():
        hprebn = (
            namespace["C"][namespace["Xtr"]].view(namespace["Xtr"].shape[0], -1) @ namespace["W1"] + namespace["b1"]
        )
    # GRADING: the helpers cell's switch (the evaluation is skipped while grading), as in a student's notebook
    namespace.update(bnmean=hprebn.mean(0, keepdim=True), bnvar=hprebn.var(0, keepdim=True), GRADING=False)
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(CELLS["evaluate"], namespace)
        exec(CELLS["sample"], namespace)
    X, Y = namespace["Xdev"], namespace["Ydev"]
    with torch.no_grad():
        n = namespace
        pre = n["C"][X].view(X.shape[0], -1) @ n["W1"] + n["b1"]
        act = torch.relu(n["bngain"] * (pre - n["bnmean"]) * (n["bnvar"] + 1e-5) ** -0.5 + n["bnbias"])
        want = F.cross_entropy(act @ n["W2"] + n["b2"], Y).item()
    assert abs(namespace["split_loss"](X, Y) - want) < 1e-4
    assert f"val   {want:.4f}" in out.getvalue()


def test_further_exercises_say_how():
    text = (REPO / "course" / "further_exercises.md").read_text()
    assert "activation = torch.relu" in text and "activation = F.gelu" in text and "locked" in text


EX5 = nbformat.read(SOURCE_DIR / "ex5_new_operators.ipynb", as_version=4)


def test_exercise_5s_relu_line_trains_exercise_4_as_its_text_says():
    """Exercise 5's Part 6 says: add `activation = torch.relu` under Exercise 4's forward cell, and replace the tanh
    line of backward_pass with your drelu_in line, in backward_pass's names. Done so with the course's answers, the
    gradients are autograd's for the ReLU network, and training brings the loss down."""
    text = "\n".join(c.source for c in EX5.cells if c.cell_type == "markdown")
    assert "with the line `activation = torch.relu`" in text
    assert '`relu_in` is `cache["hpreact"]`, `drelu_out` is `dh`, and the result is `dhpreact`' in text
    relu_line = next(c.source for c in EX5.cells if grade_id(c) == "answer_drelu_in").split("### BEGIN SOLUTION\n")[1]
    relu_line = relu_line.split("\n### END SOLUTION")[0]
    for old, new in [("drelu_in", "dhpreact"), ("relu_in", 'cache["hpreact"]'), ("drelu_out", "dh")]:
        relu_line = re.sub(rf"\b{old}\b", new, relu_line)
    backward = CELLS["answer_backward_pass"].replace("    dhpreact = (1.0 - h**2) * dh", "    " + relu_line)
    assert relu_line in backward and "(1.0 - h**2)" not in backward

    namespace = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in EX4.cells:
            if grade_id(cell).startswith(SETUP_PREFIX):
                exec(strip_hidden(cell.source), namespace)
            if grade_id(cell) == "setup_model":
                exec("activation = torch.relu", namespace)  # the added cell, right under the forward cell
    exec(strip_hidden(backward), namespace)
    Xb, Yb, cache = namespace["check_batch"]
    assert torch.equal(cache["h"], torch.relu(cache["hpreact"]))  # autograd's gradients are the ReLU network's
    with torch.no_grad():
        grads = namespace["backward_pass"](Xb, Yb, cache)
    for p, grad in zip(namespace["parameters"], grads):  # db1 is rounding noise around 0: BatchNorm cancels b1
        assert (grad - p.grad).abs().max() <= 1e-4 * p.grad.abs().max() + 1e-7

    losses = []
    batches = namespace["restart_training"]()
    with torch.no_grad():
        for _ in range(300):
            ix = torch.randint(0, namespace["Xtr"].shape[0], (32,), generator=batches)
            Xb, Yb = namespace["Xtr"][ix], namespace["Ytr"][ix]
            loss, cache = namespace["forward"](Xb, Yb)
            for p, grad in zip(namespace["parameters"], namespace["backward_pass"](Xb, Yb, cache)):
                p += -0.1 * grad
            losses.append(loss.item())
    assert sum(losses[-50:]) / 50 < sum(losses[:50]) / 50 - 0.3

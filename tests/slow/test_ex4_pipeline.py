"""Exercise 4 through the real pipeline: every parameter gradient, the training run, the calibration.

One class of submissions is graded in a single ``nbgrader autograde`` run; the tests read the
gradebook cell by cell and the grader's messages. The grader-side reference (the forward pass
and the autograd run) is also checked against the notebook's own setup here.
"""

import time

import pytest
import torch
from conftest import ASSIGNMENT

from autograder.authoring.submissions import grade_id, solved
from autograder.engine import training
from autograder.engine.reference import SETUP_PREFIX, run_setup
from autograder.engine.training_checks import POINTS, REACH_LOSS

NB = "ex4_manual_training"
GRADIENTS = [f"test_d{name}" for name in training.PARAMETER_NAMES]

BACKWARD = {  # lines of the course's backward_pass, so that a mistake replaces exactly one of them
    "dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1\ndlogits /= n",
    "layer2": "dh = dlogits @ W2.T\ndW2 = h.T @ dlogits\ndb2 = dlogits.sum(0)",
    "tanh": "dhpreact = (1.0 - h**2) * dh",
    "batchnorm": (
        "dbngain = (bnraw * dhpreact).sum(0, keepdim=True)\ndbnbias = dhpreact.sum(0, keepdim=True)\n"
        "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
        "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
    ),
    "layer1": "dembcat = dhprebn @ W1.T\ndW1 = embcat.T @ dhprebn\ndb1 = dhprebn.sum(0)",
    "embedding": "demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\n"
    "dC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))",
}


def backward(**changes):
    return "\n".join(changes.get(part, code) for part, code in BACKWARD.items())


def training_step(update):
    return f"grads = backward_pass(Xb, Yb, cache)\nfor p, grad in zip(parameters, grads):\n    {update}"


CALIBRATION = (
    "hprebn_all = C[{X}].view({X}.shape[0], -1) @ W1 + b1\nbnmean = hprebn_all.mean(0, keepdim=True)\n"
    "bnvar = hprebn_all.var(0, keepdim=True)"
)

# student -> (answer cells changed, extra cells, {graded cell: points it must keep},
#             {graded cell: words of its message})
# Graded cells not named keep all their points.
MISTAKES = {
    "m_dC_overwrites": (
        {
            "answer_backward_pass": backward(
                embedding="demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\ndC[Xb] += demb"
            )
        },
        [],
        {"test_dC": 0},
        {"test_dC": "does not add up", "test_training": "your dC is wrong (see its cell)"},
    ),
    "m_db2_divided_by_n": (
        {"answer_backward_pass": backward(layer2="dh = dlogits @ W2.T\ndW2 = h.T @ dlogits\ndb2 = dlogits.sum(0) / n")},
        [],
        {"test_db2": 0},
        {"test_db2": "32 times too small", "test_training": "db2 is wrong"},
    ),
    # One mistake costs one cell: the training run grades training_step, with the right gradients.
    "m_dW1_doubled": (
        {
            "answer_backward_pass": backward(
                layer1="dembcat = dhprebn @ W1.T\ndW1 = 2 * embcat.T @ dhprebn\ndb1 = dhprebn.sum(0)"
            )
        },
        [],
        {"test_dW1": 0},
        {
            "test_dW1": "twice the right value",
            "test_training": "your own training run, with your backward_pass, leaves autograd's at step 2: your dW1 "
            "is wrong (see its cell)",
        },
    ),
    "m_db2_keepdim": (  # right values, shape (1, 27): half of db2; the own run stops at its first update
        {
            "answer_backward_pass": backward(
                layer2="dh = dlogits @ W2.T\ndW2 = h.T @ dlogits\ndb2 = dlogits.sum(0, keepdim=True)"
            )
        },
        [],
        {"test_db2": 0.5},
        {
            "test_db2": "dimension 0 of size 1 is one too many",
            "test_training": "your own training run stopped after 0 of 300 steps: your db2 is wrong (see its cell)",
        },
    ),
    "m_batchnorm_bessel": (
        {"answer_backward_pass": backward(batchnorm=BACKWARD["batchnorm"].replace("n / (n - 1) * bnraw", "bnraw"))},
        [],
        {"test_dW1": 0, "test_dC": 0},
        {
            "test_dW1": "your dhprebn: dhprebn is missing the factor n/(n-1)",
            "test_dC": "your dhprebn",
            "test_training": "your dC, dW1 are wrong (see their cells)",
        },
    ),
    "m_grad_in_update": (
        {"answer_training_step": training_step("p.data += -lr * p.grad")},
        [],
        {"test_training": 0},
        {"test_training": "training_step uses autograd"},
    ),
    "m_backward_left_in": (
        {
            "answer_training_step": "for p in parameters:\n    p.grad = None\nloss.backward()\n"
            + training_step("p += -lr * grad")
        },
        [],
        {"test_training": 0},
        {"test_training": "training_step uses autograd"},
    ),
    "m_update_rebinds": (
        {"answer_training_step": training_step("p = p - lr * grad")},
        [],
        {"test_training": 0},
        {"test_training": "the parameters never changed"},
    ),
    "m_update_sign": (
        {"answer_training_step": training_step("p += lr * grad")},
        [],
        {"test_training": 0},
        {"test_training": "the loss goes up"},
    ),
    "m_swapped_batchnorm_grads": (
        {"answer_backward_pass": backward() + "\nreturn [dC, dW1, db1, dW2, db2, dbnbias, dbngain]"},
        [],
        {"test_dbngain": 0, "test_dbnbias": 0},
        {"test_dbngain": "it is dbnbias: backward_pass must return the gradients in the order of parameters"},
    ),
    "m_no_calibration": (
        {"answer_calibration": "pass"},
        [],
        {"test_calibration": 0},
        {"test_calibration": "not calibrated yet"},
    ),
    "m_calibration_one_batch": (
        {"answer_calibration": CALIBRATION.format(X="Xb")},
        [],
        {"test_calibration": 0},
        {"test_calibration": "over one minibatch"},
    ),
}

ALTERNATIVES = {  # other correct code: full marks
    "alt_lecture": {  # the lecture's own forms: one-hot-free indexing, the Python double loop for dC, p.data
        "answer_backward_pass": backward(
            embedding=(
                "demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\nfor k in range(Xb.shape[0]):\n"
                "    for j in range(Xb.shape[1]):\n        ix = Xb[k, j]\n        dC[ix] += demb[k, j]"
            )
        ),
        "answer_training_step": training_step("p.data += -lr * grad"),
        "answer_calibration": CALIBRATION.format(X="Xtr").replace(
            "var(0, keepdim=True)", "var(0, keepdim=True, unbiased=False)"
        ),
    },
    "alt_atomic": {  # BatchNorm backpropagated step by step, dlogits and dC by one-hot products
        "answer_backward_pass": backward(
            dlogits="dlogits = (F.softmax(logits, 1) - F.one_hot(Yb, logits.shape[1]).float()) / n",
            batchnorm=(
                "dbngain = (bnraw * dhpreact).sum(0, keepdim=True)\ndbnbias = dhpreact.sum(0, keepdim=True)\n"
                "hprebn = cache['hprebn']\nbndiff = hprebn - hprebn.mean(0, keepdim=True)\n"
                "dbnraw = bngain * dhpreact\ndbndiff = bnvar_inv * dbnraw\n"
                "dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)\n"
                "dbnvar = -0.5 * bnvar_inv**3 * dbnvar_inv\n"
                "dbndiff += 2 * bndiff * dbnvar / (n - 1)\n"
                "dhprebn = dbndiff - dbndiff.sum(0, keepdim=True) / n"
            ),
            embedding=(
                "demb = dembcat.view(emb.shape)\n"
                "dC = F.one_hot(Xb.view(-1), C.shape[0]).float().T @ demb.view(-1, n_embd)"
            ),
        ),
        "answer_training_step": "grads = backward_pass(Xb, Yb, cache)\nfor p, grad in zip(parameters, grads):\n"
        "    p.sub_(lr * grad)",
    },
}

# student -> (changes, extra cells, {graded cell: points it must keep}, {graded cell: words})
CHEATS = {
    "c_grad_in_backward": (
        {"answer_backward_pass": "dC, dW1, db1, dW2, db2, dbngain, dbnbias = [p.grad for p in parameters]"},
        [],
        {**{g: 0 for g in GRADIENTS}, "test_training": 0},
        {"test_dW1": "backward_pass uses autograd", "test_training": "backward_pass uses autograd"},
    ),
    "c_hidden_grad": (  # .grad read in a way the static analysis cannot see: while grading .grad is None
        {"answer_training_step": training_step("p += -lr * operator.attrgetter('gr' + 'ad'[0:2])(p)")},
        [("answer_backward_pass", "import operator")],
        {"test_training": 0},
        {"test_training": "stopped after 0 of"},
    ),
}


@pytest.fixture(scope="module")
def graded(course):
    release, source = course.notebook("release", NB), course.notebook("source", NB)
    # The solution trains 200,000 steps by default: autograde must still run only the graded steps.
    full_run = solved(release, source)
    for cell in full_run.cells:
        if cell.source.startswith("max_steps ="):
            cell.source = "max_steps = 200_000"
    course.submit("solution", NB, full_run)
    course.submit("blank", NB, release)
    for student, (changes, extra, _, _) in {**MISTAKES, **CHEATS}.items():
        course.submit(student, NB, solved(release, source, changes, extra))
    for student, changes in ALTERNATIVES.items():
        course.submit(student, NB, solved(release, source, changes))
    # A leftover training loop of the student's own, before the graded run: stopped early, costs nothing.
    course.submit(
        "alt_extra_loop",
        NB,
        solved(
            release,
            source,
            extra_cells=[
                (
                    "answer_training_step",
                    "with torch.no_grad():\n    for i in range(200_000):\n        training_step(*check_batch[:2], 0.1)",
                )
            ],
        ),
    )
    start = time.monotonic()
    course.nbgrader("autograde", ASSIGNMENT)
    course.ex4_seconds = time.monotonic() - start
    return course


def scores(course, student):
    return course.scores(student, NB)


def test_points_table(graded):
    maximum = graded.max_scores(NB)
    graded_cells = {g: p for g, p in maximum.items() if p}
    assert graded_cells == {"test_dC": 2, **{g: 1 for g in GRADIENTS[1:]}, "test_training": 4, "test_calibration": 2}
    assert sum(graded_cells.values()) == sum(POINTS.values()) == 14


@pytest.mark.parametrize("student", ["solution", *ALTERNATIVES, "alt_extra_loop"])
def test_correct_submissions_get_full_marks(graded, student):
    got, maximum = scores(graded, student), graded.max_scores(NB)
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
    students = 3 + len(MISTAKES) + len(CHEATS) + len(ALTERNATIVES)
    print(f"autograde of {students} Exercise 4 notebooks: {graded.ex4_seconds:.0f} s")
    assert graded.ex4_seconds < 60 * students, graded.ex4_seconds


def test_blank_release_gets_zero_without_crashing(graded):
    got = scores(graded, "blank")
    assert sum(got.values()) == 0
    messages = graded.messages("blank", NB)
    for cell in GRADIENTS:
        assert "backward_pass still raises NotImplementedError" in messages[cell], messages[cell]
    assert "stopped after 0 of" in messages["test_training"]
    assert "not calibrated yet" in messages["test_calibration"]


@pytest.mark.parametrize("student", [*MISTAKES, *CHEATS])
def test_a_mistake_costs_its_own_points(graded, student):
    _, _, keeps, words = {**MISTAKES, **CHEATS}[student]
    got, maximum = scores(graded, student), graded.max_scores(NB)
    lost = {g: got[g] for g in maximum if maximum[g] and got[g] != maximum[g]}
    assert lost == keeps, graded.messages(student, NB)
    messages = graded.messages(student, NB)
    for cell, text in words.items():
        assert text in messages[cell], messages[cell]


def test_grader_forward_is_the_notebooks(graded):
    """training.forward (the grader's replay) computes exactly what the notebook's locked forward does."""
    source = graded.notebook("source", NB)
    ns = run_setup(tuple(c.source for c in source.cells if grade_id(c).startswith(SETUP_PREFIX)), 12345)
    Xb, Yb, cache = ns["check_batch"]
    loss, mine = training.forward(ns["initial_parameters"], Xb, Yb)
    assert torch.equal(loss, ns["loss"].detach())
    assert all(torch.equal(mine[k], cache[k]) for k in cache)
    grads = training.manual_backward(ns["initial_parameters"], Xb, Yb, mine)
    scale = max(p.grad.abs().max().item() for p in ns["parameters"])  # db1 is rounding noise around 0
    for name, p, g in zip(training.PARAMETER_NAMES, ns["parameters"], grads):
        assert (g - p.grad).abs().max() <= 1e-6 * scale, name


def test_feedback_shows_the_verdicts_but_no_hidden_tests(graded):
    graded.nbgrader("generate_feedback", ASSIGNMENT, "--student", "m_db2_divided_by_n")
    html = (graded.root / "feedback" / "m_db2_divided_by_n" / ASSIGNMENT / f"{NB}.html").read_text()
    assert "32 times too small" in html and "db2 is wrong" in html
    for secret in ["HIDDEN TESTS", "report_backward", "graded_steps", "limit_forward", "x-backprop-ninja"]:
        assert secret not in html, secret

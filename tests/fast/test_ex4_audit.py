"""Exercise 4's audit, graded in process: a backward_pass that works at one batch size only, the lecture's ways of
reading the batch size (which keep every point), realistic mistakes of training_step and of the calibration, dC's
ways of not adding up a repeated character, and a run that diverged before the calibration."""

import re
import textwrap

import pytest
from support.audit import release
from support.cases_ex4 import BACKWARD, CALIBRATION, GRADIENTS, NB, QUICK_CALIBRATION, backward, training_step
from support.in_process import autograde, source_notebook

from autograder.authoring.submissions import solved

NAMES = ("emb", "embcat", "bnvar_inv", "bnraw", "h", "logits")
UNPACK = f"{', '.join(NAMES)} = (cache[k] for k in {NAMES!r})"
INDEX_ADD, INDEX_PUT = "dC.index_add_(0, ", "dC.index_put_((Xb.view(-1),), demb.view(-1, n_embd))\n# "
STEP = "grads = backward_pass(Xb, Yb, cache)\n"
EACH = STEP + "for i, (p, grad) in enumerate(zip(parameters, grads)):\n"
ALL_BUT_DB1 = {g: 0 for g in GRADIENTS if g != "test_db1"}  # (db1 is zero: a factor leaves it zero)


def whole_backward_pass(body: str) -> str:
    """A cell of the student's own that defines backward_pass again, without the release's n = Xb.shape[0]."""
    code = f"{UNPACK}\n{body}\nreturn [dC, dW1, db1, dW2, db2, dbngain, dbnbias]"
    return "def backward_pass(Xb, Yb, cache):\n" + textwrap.indent(code, "    ")


SHAPES_FROM_TENSORS = backward(
    dlogits="m = logits.shape[0]\ndlogits = F.softmax(logits, 1)\ndlogits[torch.arange(m), Yb] -= 1\ndlogits /= m",
    batchnorm=re.sub(r"\bn\b", "h.shape[0]", BACKWARD["batchnorm"]).replace(".sum(0)", ".sum(0, keepdim=True)"),
)
ONES_32 = BACKWARD["batchnorm"].replace("dhpreact.sum(0) ", "torch.ones(32, 1) @ dhpreact.sum(0, keepdim=True) ")
BNGAIN_BY_DBNBIAS = (
    STEP + "C, W1, b1, W2, b2, bngain, bnbias = parameters\ndC, dW1, db1, dW2, db2, dbngain, dbnbias = grads\n"
    "for p, grad in ((C, dC), (W1, dW1), (b1, db1), (W2, dW2), (b2, db2), (bngain, dbnbias), (bnbias, dbnbias)):\n"
    "    p += -lr * grad"
)
ON_VALIDATION = (
    "ix = torch.randint(0, Xdev.shape[0], (Xb.shape[0],))\nloss, cache = forward(Xdev[ix], Ydev[ix])\n"
    "grads = backward_pass(Xdev[ix], Ydev[ix], cache)\nfor p, grad in zip(parameters, grads):\n    p += -lr * grad"
)
BEFORE = CALIBRATION.format(X="Xtr").replace("C[", "C0[").replace("@ W1 + b1", "@ W1_0 + b1_0")
AT_50 = "is right on the check batch of 32 examples, but not on a batch of 50: "

# student -> (answer cells changed, extra cells, {graded cell: points it keeps}, {graded cell: words of its message});
# graded cells not named keep all their points
CASES = {
    # the lecture's ways of reading the batch size: n or batch_size from the notebook, or the tensors' shapes
    "alt_global_n": ({}, [("answer_backward_pass", whole_backward_pass(backward()))], {}, {}),
    "alt_batch_size": ({"answer_backward_pass": re.sub(r"\bn\b", "batch_size", backward())}, [], {}, {}),
    "alt_shapes_from_tensors": ({"answer_backward_pass": SHAPES_FROM_TENSORS}, [], {}, {}),
    "alt_dimensions_written_in": (  # the network's own sizes: this notebook's network has no other
        {"answer_backward_pass": backward(embedding=BACKWARD["embedding"].replace("n_embd", "10"))},
        [],
        {},
        {},
    ),
    "alt_dC_buffer_zeroed_at_each_call": (  # one tensor for every call: the second call's read before the third's
        {
            "answer_backward_pass": backward(
                embedding=BACKWARD["embedding"].replace("torch.zeros_like(C)", "dC_.zero_()")
            )
        },
        [("answer_backward_pass", "dC_ = torch.zeros_like(C)")],
        {},
        {},
    ),
    # a batch size written in: right at 32 only
    "m_n_written_in": (
        {"answer_backward_pass": "n = 32\n" + backward()},
        [],
        {g: 0 for g in GRADIENTS},
        {"test_dW2": "dW2 " + AT_50 + "backward_pass raised IndexError there"},
    ),
    "m_divided_by_32": (
        {"answer_backward_pass": backward(dlogits=BACKWARD["dlogits"].replace("/= n", "/= 32"))},
        [],
        ALL_BUT_DB1,
        {"test_db2": "db2 " + AT_50 + "it is 50/32 times autograd's, as if divided by 32 where the batch has 50"},
    ),
    "m_ones_32": (  # raises at 50 in dhprebn's line: the gradients computed before it keep their points
        {"answer_backward_pass": backward(batchnorm=ONES_32)},
        [],
        {"test_dC": 0, "test_dW1": 0, "test_db1": 0},
        {"test_dW1": "dW1 " + AT_50 + "backward_pass raised RuntimeError there: The size of tensor a (50) must"},
    ),
    "m_view_32": (
        {"answer_backward_pass": backward(embedding=BACKWARD["embedding"].replace("(emb.shape)", "(32, 3, n_embd)"))},
        [],
        {"test_dC": 0},
        {"test_dC": "It works at one batch size only. Read the size from the batch, n = Xb.shape[0]"},
    ),
    # dC's ways of keeping one contribution of a repeated character
    "m_dC_index_put_overwrites": (
        {"answer_backward_pass": backward(embedding=BACKWARD["embedding"].replace(INDEX_ADD, INDEX_PUT))},
        [],
        {"test_dC": 0},
        {"test_dC": "index_put_ without accumulate=True) keeps only one of its contributions. Add up every occurrence"},
    ),
    "m_dC_index_add_result_dropped": (
        {"answer_backward_pass": backward(embedding=BACKWARD["embedding"].replace("index_add_", "index_add"))},
        [],
        {"test_dC": 0},
        {"test_dC": "index_add and index_put without the final _ return a new tensor"},
    ),
    # training_step
    "m_sign_of_one_parameter": (
        {"answer_training_step": EACH + "    p += (lr if i == 5 else -lr) * grad"},
        [],
        {"test_training": 1},
        {"test_training": "; bngain moved the opposite way to autograd's run, while every other parameter followed it"},
    ),
    "m_gradients_summed_over_steps": (  # a sum never reset: the replay after the student's own run starts from it
        {"answer_training_step": EACH + "    total[i] += grad\n    p += -lr * total[i]"},
        [("answer_training_step", "total = [torch.zeros_like(p) for p in parameters]")],
        {"test_training": 0},
        {"test_training": "gradients added up over earlier steps"},
    ),
    "m_bngain_moved_by_dbnbias": (
        {"answer_training_step": BNGAIN_BY_DBNBIAS},
        [],
        {"test_training": 1},
        {"test_training": "; bngain moved elsewhere than in autograd's run, while every other parameter followed it"},
    ),
    "m_lr_of_its_own": (
        {"answer_training_step": training_step("p += -0.1 * grad")},
        [],
        {"test_training": 1},
        {"test_training": "the run departs when the learning rate drops to 0.01: training_step must use the lr"},
    ),
    "m_update_skips_batchnorm": (
        {"answer_training_step": STEP + "for p, grad in zip(parameters[:5], grads[:5]):\n    p += -lr * grad"},
        [],
        {"test_training": 1},
        {"test_training": "training_step never changed bngain, bnbias: it must move every parameter"},
    ),
    "m_trains_on_the_validation_split": (
        {"answer_training_step": ON_VALIDATION},
        [],
        {"test_training": 1},
        {"test_training": "the very first loss differs: training_step must return the loss of forward(Xb, Yb)"},
    ),
    "c_grad_by_getattr": (
        {"answer_training_step": training_step("p += -lr * getattr(p, 'gr' + 'ad')")},
        [],
        {"test_training": 0},
        {"test_training": "training_step uses autograd"},
    ),
    # the calibration
    "m_calibration_on_the_validation_split": (
        {"answer_calibration": CALIBRATION.format(X="Xdev")},
        [],
        {"test_calibration": 0},
        {"test_calibration": "bnmean is the mean of hprebn over the validation set"},
    ),
    "m_calibration_on_the_test_split": (
        {"answer_calibration": CALIBRATION.format(X="Xte")},
        [],
        {"test_calibration": 0},
        {"test_calibration": "bnvar is the variance of hprebn over the test set: calibrate on the training set, Xtr"},
    ),
    "m_calibration_before_training": (
        {"answer_calibration": "C0, W1_0, b1_0 = initial_parameters[:3]\n" + BEFORE},
        [],
        {"test_calibration": 0},
        {"test_calibration": "over the initial parameters, before training"},
    ),
    # a run that diverged: the calibration of its parameters keeps its points (the training run lost its own), and
    # says that those statistics mean nothing
    "m_diverged": (
        {"answer_training_step": training_step("p += -100 * lr * grad")},
        [],
        {"test_training": 0},
        {"test_calibration": "But the training run that reached these parameters diverged (their validation loss is"},
    ),
}


@pytest.fixture(scope="module")
def graded():
    nb, source = release(NB), source_notebook(NB)
    students = {"solution": solved(nb, source, QUICK_CALIBRATION)}
    for student, (changes, extra, _, _) in CASES.items():
        students[student] = solved(nb, source, {**QUICK_CALIBRATION, **changes}, extra)
    return autograde(NB, students)


@pytest.mark.parametrize("student", CASES)
def test_each_case_loses_exactly_its_own_points_and_says_why(graded, student):
    _, _, keeps, words = CASES[student]
    got = graded[student]
    assert {g: got.points[g] for g in got.lost()} == keeps, got.messages
    for cell, text in words.items():
        assert text in got.messages[cell], got.messages[cell]


def test_a_run_that_did_not_diverge_says_nothing_of_it(graded):
    for student in ("solution", "m_lr_of_its_own", "m_calibration_on_the_validation_split"):
        assert "diverged" not in graded[student].messages["test_calibration"], student

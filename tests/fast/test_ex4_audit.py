"""Exercise 4's audit, graded in process: a backward_pass that works at one batch size only, the lecture's ways of
reading the batch size (which keep every point), realistic mistakes of training_step and of the calibration, dC's
ways of not adding up a repeated character, and a run that diverged before the calibration."""

import re
import textwrap

import pytest
from support.audit import release
from support.cases_ex4 import BACKWARD, CALIBRATION, GRADIENTS, NB, QUICK_CALIBRATION, backward, training_step
from support.in_process import autograde, selected, source_notebook

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
        {
            "test_dW1": "dW1 " + AT_50 + "backward_pass raised RuntimeError there, in the line of dhprebn, on dW1's "
            "way back from the loss, `dhprebn = bngain * bnvar_inv / n * (n * dhpreact - torch.ones(32, 1) @ "
        },
    ),
    # raises at 50 in a line that only db2 depends on: db2 loses its point, in words that quote the line; the
    # gradients after it, right on the check batch, keep theirs, with a note that they could not be checked at 50
    "m_db2_ones_32": (
        {
            "answer_backward_pass": backward(
                layer2=BACKWARD["layer2"].replace("dlogits.sum(0)", "torch.ones(32) @ dlogits")
            )
        },
        [],
        {"test_db2": 0},
        {
            "test_db2": "db2 " + AT_50 + "backward_pass raised RuntimeError there, in db2's own line `db2 = "
            "torch.ones(32) @ dlogits`",
            "test_dbngain": "(dbngain could not be checked on a batch of 50 examples: backward_pass raised "
            "RuntimeError there before it computed dbngain, in a line dbngain does not depend on, `db2 = ",
        },
    ),
    "m_tanh_view_32": (  # raises at 50 in dhpreact's line: every gradient on its way loses, the line named
        {"answer_backward_pass": backward(tanh="dhpreact = (1.0 - h**2) * dh.view(32, -1)")},
        [],
        {g: 0 for g in ("test_dC", "test_dW1", "test_db1", "test_dbngain", "test_dbnbias")},
        {
            "test_dbngain": "dbngain " + AT_50 + "backward_pass raised RuntimeError there, in the line of dhpreact, "
            "on dbngain's way back from the loss, `dhpreact = (1.0 - h**2) * dh.view(32, -1)`"
        },
    ),
    "m_dembcat_view_32": (  # raises at 50 on dC's way only: dW1 and db1, after it in the code, keep their points
        {
            "answer_backward_pass": backward(
                layer1=BACKWARD["layer1"].replace("dW1 =", "dembcat = dembcat.view(32, -1)\ndW1 =")
            )
        },
        [],
        {"test_dC": 0},
        {"test_dC": "in the line of dembcat, on dC's way back from the loss, `dembcat = dembcat.view(32, -1)`"},
    ),
    # right on some batches only: F.one_hot(Yb) without num_classes is as wide as the batch's largest target, and
    # the first batch of the graded run without the last character makes it raise (here the check batch has one: it
    # earned every point, its own training run stopped at step 1, and its note blamed gradients that lost nothing)
    "m_one_hot_without_num_classes": (
        {"answer_backward_pass": backward(dlogits="dlogits = (F.softmax(logits, 1) - F.one_hot(Yb).float()) / n")},
        [],
        {g: 0 for g in GRADIENTS},
        {
            "test_dW2": "dW2 is right on the check batch, but backward_pass raised RuntimeError on the batch of step 1 "
            "of the graded training run, in the line of dlogits, on dW2's way back from the loss, `dlogits = "
            "(F.softmax(logits, 1) - F.one_hot(Yb).float()) / n`",
        },
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
    # one parameter's sign flipped: named from the first update, even when the others then leave autograd's run too
    # (W2's flip makes the loss climb: the comparison of whole runs could not single it out)
    "m_sign_of_W2": (
        {"answer_training_step": EACH + "    p += (lr if i == 3 else -lr) * grad"},
        [],
        {"test_training": 0},
        {"test_training": "; W2 moved the opposite way to autograd's run, while every other parameter followed it"},
    ),
    "m_sign_of_bnbias": (
        {"answer_training_step": EACH + "    p += (lr if i == 6 else -lr) * grad"},
        [],
        {"test_training": 1},
        {"test_training": "; bnbias moved the opposite way to autograd's run"},
    ),
    "m_loss_after_the_update": (
        {"answer_training_step": training_step("p += -lr * grad") + "\nloss, cache = forward(Xb, Yb)"},
        [],
        {"test_training": 1},
        {"test_training": "the very first loss differs: training_step must return the loss of forward(Xb, Yb)"},
    ),
    "alt_sub_in_place_by_index": (
        {
            "answer_training_step": STEP
            + "for i in range(len(parameters)):\n    parameters[i].data.add_(grads[i], alpha=-lr)"
        },
        [],
        {},
        {},
    ),
    "c_tanh_backward_kernel": (  # torch's own backward of tanh, which autograd calls
        {"answer_backward_pass": backward(tanh="dhpreact = torch.ops.aten.tanh_backward(dh, h)")},
        [],
        {**{g: 0 for g in GRADIENTS}, "test_training": 0},
        {"test_dbngain": "backward_pass uses autograd", "test_training": "backward_pass uses autograd"},
    ),
    "c_grad_by_getattr": (
        {"answer_training_step": training_step("p += -lr * getattr(p, 'gr' + 'ad')")},
        [],
        {"test_training": 0},
        {"test_training": "training_step uses autograd"},
    ),
    # backward_pass's own slips
    "m_sigmoid_derivative": (  # every gradient on the way back through tanh loses, sent to dhpreact
        {"answer_backward_pass": backward(tanh="dhpreact = h * (1.0 - h) * dh")},
        [],
        {g: 0 for g in ("test_dC", "test_dW1", "test_dbngain", "test_dbnbias")},
        {"test_dbngain": "the first wrong gradient on the way back from the loss is your dhpreact"},
    ),
    "m_bnraw_from_the_biased_variance": (  # bnraw and bnvar_inv recomputed with unbiased=False, n/(n-1) kept
        {
            "answer_backward_pass": backward(
                batchnorm="s = (cache['hprebn'].var(0, keepdim=True, unbiased=False) + 1e-5) ** -0.5\n"
                "bnraw, bnvar_inv = (cache['hprebn'] - cache['bnmeani']) * s, s\n" + BACKWARD["batchnorm"]
            )
        },
        [],
        {"test_dC": 0, "test_dW1": 0, "test_dbngain": 0},
        {
            "test_dW1": "your dhprebn: dhprebn reads a bnvar_inv and a bnraw recomputed with the biased variance",
            "test_dbngain": "dbngain is sqrt(n/(n-1)) times too large",
        },
    ),
    "m_dbngain_keepdim_dropped": (
        {"answer_backward_pass": backward(batchnorm=BACKWARD["batchnorm"].replace("(0, keepdim=True)", "(0)", 1))},
        [],
        {"test_dbngain": 0.5},
        {"test_dbngain": "the values are right, so this step earns 0.5 of its 1"},
    ),
    "m_dW2_transposed": (
        {"answer_backward_pass": backward(layer2=BACKWARD["layer2"].replace("h.T @ dlogits", "dlogits.T @ h"))},
        [],
        {"test_dW2": 0},
        {"test_dW2": "it looks transposed"},
    ),
    "alt_other_forms": (  # a tuple returned, einsum, [None], tanh from hpreact, index_put_ that accumulates
        {
            "answer_backward_pass": backward(
                tanh="dhpreact = (1 - torch.tanh(cache['hpreact']) ** 2) * dh",
                batchnorm=BACKWARD["batchnorm"]
                .replace("(bnraw * dhpreact).sum(0, keepdim=True)", "torch.einsum('ij,ij->j', bnraw, dhpreact)[None]")
                .replace("dhpreact.sum(0, keepdim=True)", "dhpreact.sum(0).unsqueeze(0)"),
                embedding="demb = dembcat.view(emb.shape)\n"
                "dC = torch.zeros_like(C).index_put_((Xb,), demb, accumulate=True)",
            )
            + "\nreturn (dC, dW1, db1, dW2, db2, dbngain, dbnbias)"
        },
        [],
        {},
        {},
    ),
    # the calibration
    "alt_calibration_from_forward": (  # the notebook's own forward over the training set: its cache's statistics
        {
            "answer_calibration": "_, cache_all = forward(Xtr, Ytr)\nbnmean = cache_all['bnmeani']\n"
            "bnvar = cache_all['bnvar']"
        },
        [],
        {},
        {},
    ),
    "m_calibration_keepdim_dropped": (  # right values: half of each statistic's point, as any step's shape
        {"answer_calibration": CALIBRATION.format(X="Xtr").replace(", keepdim=True", "")},
        [],
        {"test_calibration": 1},
        {"test_calibration": "bnvar has shape (200,), but it must be (1, 200)"},
    ),
    "m_calibration_std": (
        {"answer_calibration": CALIBRATION.format(X="Xtr").replace(".var(", ".std(")},
        [],
        {"test_calibration": 1},
        {"test_calibration": "bnvar is the standard deviation: it must be the variance"},
    ),
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
def graded(request):
    nb, source = release(NB), source_notebook(NB)
    students = {"solution": solved(nb, source, QUICK_CALIBRATION)}
    for student, (changes, extra, _, _) in CASES.items():
        students[student] = solved(nb, source, {**QUICK_CALIBRATION, **changes}, extra)
    return autograde(NB, selected(request, students))


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


def test_the_words_of_a_line_that_raised_at_50_and_of_the_first_update_go_through_the_catalog(graded, monkeypatch):
    """The line that raised on the batch of 50 (its own gradient's, one on the way, one off the way) and the
    parameter that the first update moved the wrong way: every line a student reads is the catalog's."""
    from support.words import pseudo_translated, untranslated

    pseudo_translated(monkeypatch)
    students = ("m_db2_ones_32", "m_tanh_view_32", "m_sign_of_W2", "m_calibration_keepdim_dropped")
    students += ("m_one_hot_without_num_classes",)
    assert untranslated(NB, {s: graded[s] for s in students}) == []


def test_a_raise_on_a_batch_of_the_run_costs_the_gradients_on_the_lines_way_only():
    """The words and kinds for a line that raised on a batch of the graded run, by where the line is: the gradient's
    own, on its way back from the loss, on no way of it (a note: it keeps its points), or not known."""
    from autograder.engine.training.batch_size_checks import _on_a_training_batch

    status = {"kind": "raised", "type": "RuntimeError", "message": "no.", "step": 3}
    own = _on_a_training_batch("b2", {**status, "line": "db2 = F.one_hot(Yb).sum(0) @ dlogits"})
    assert own.kind == "raised_error" and "in db2's own line `db2 = F.one_hot(Yb)" in own, own
    on_the_way = _on_a_training_batch("W1", {**status, "line": "dhpreact = dh * mask[Yb]"})
    assert (
        on_the_way.kind == "raised_error" and "in the line of dhpreact, on dW1's way back from the loss" in on_the_way
    )
    elsewhere = _on_a_training_batch("bngain", {**status, "line": "db2 = F.one_hot(Yb).sum(0) @ dlogits"})
    assert elsewhere.kind == "note" and "that line's gradient loses its points, not dbngain" in elsewhere, elsewhere
    unknown = _on_a_training_batch("C", {**status, "line": "tmp = helper(Yb)"})
    assert unknown.kind == "raised_error" and "before it computed dC: no. It must work on every batch" in unknown

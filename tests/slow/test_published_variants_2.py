"""More of the ways students of the lecture wrote their answers in the notebooks they published (makemore part 4, read
in December 2026), beyond tests/slow/test_published_variants.py and the audits it names: element by element loops with
the sizes written as numbers, helper functions, gradients taken past a step (dcounts_sum from dprobs), a clone written
in the cell before (the lecture's order), Exercise 4's lecture calibration; and published slips, among them a typo in
the line that adds the max's path to dlogits. Each case says in our own names and code what one published form does.

Every right variant must keep every point; every mistake must lose exactly its own graded cells, its downstream steps
keeping theirs. Graded in process (tests/support/in_process.py), with the slow tier.
"""

import pytest
from support.audit import cell_of, graded_by_notebook, params
from support.cases_ex4 import NB as NB4
from support.cases_ex4 import QUICK_CALIBRATION, backward, training_step

NB1, NB2, NB3 = "ex1_atomic_backward", "ex2_cross_entropy_backward", "ex3_batchnorm_backward"
ONE_HOT_MAX = "F.one_hot(logits.max(1).indices, num_classes=logits.shape[1])"

# ---------------------------------------------------------------------------------------------------- Exercise 1
# Each student changes several answer cells, at most one variant per cell, so that a lost point names its cell.
EX1_VARIANTS = {
    "pub2_loops_with_sizes": {  # element by element, the tensors made with the sizes as numbers
        "answer_dhprebn": "dhprebn = torch.zeros((32, 64))\nfor r in range(dhprebn.shape[0]):\n"
        "    for c in range(dhprebn.shape[1]):\n        dhprebn[r][c] = dbndiff[r][c] + dbnmeani[0][c] / n",
        "answer_dembcat": "dembcat = torch.zeros((32, 30))\nfor r in range(dhprebn.shape[0]):\n"
        "    for c in range(W1.shape[0]):\n        for k in range(W1.shape[1]):\n"
        "            dembcat[r][c] += dhprebn[r][k] * W1[c][k]",
        "answer_dW1": "dW1 = torch.zeros((30, 64))\nfor a in range(embcat.shape[1]):\n"
        "    for b in range(dhprebn.shape[1]):\n        for r in range(embcat.shape[0]):\n"
        "            dW1[a][b] += embcat[r][a] * dhprebn[r][b]",
        "answer_db1": "db1 = torch.zeros(64)\nfor r in range(dhprebn.shape[0]):\n"
        "    for c in range(dhprebn.shape[1]):\n        db1[c] += dhprebn[r][c]",
        "answer_dC": "dC = torch.zeros_like(C)\nfor r in range(Xb.shape[0]):\n    for p in range(Xb.shape[1]):\n"
        "        row = Xb[r][p]\n        for e in range(demb.shape[2]):\n            dC[row][e] += demb[r][p][e]",
    },
    "pub2_helpers": {  # a function per step, called on the notebook's tensors
        "answer_dcounts_sum_inv": "def back_counts_sum_inv(counts, dprobs):\n"
        "    return (counts * dprobs).sum(1, keepdim=True)\n\n\ndcounts_sum_inv = back_counts_sum_inv(counts, dprobs)",
        "answer_dbndiff2": "def back_bndiff2(bndiff2, m, dbnvar):\n    out = None\n"
        "    out = torch.ones_like(bndiff2) * (1 / (m - 1) * dbnvar)\n    return out\n\n\n"
        "dbndiff2 = back_bndiff2(bndiff2, n, dbnvar)",
        "answer_demb": "def back_emb(dembcat, emb):\n    return dembcat.view(emb.shape)\n\n\n"
        "demb = back_emb(dembcat, emb)",
    },
    "pub2_spellings_a": {
        "answer_dlogprobs": "dlogprobs = torch.zeros_like(logprobs)\n"
        "dlogprobs[torch.arange(batch_size), Yb] = -1.0 / batch_size",
        "answer_dcounts_sum_inv": "dcounts_sum_inv = (counts * dprobs).sum(1, keepdims=True)",
        "answer_dcounts_sum": "dcounts_sum = -counts_sum**-2.0 * dcounts_sum_inv",
        "answer_dcounts": "dcounts = dprobs * counts_sum_inv\ndcounts += dcounts_sum.broadcast_to(counts.shape)",
        "answer_dnorm_logits": "dnorm_logits = dcounts * norm_logits.exp()",
        "answer_dlogit_maxes": "dlogit_maxes = (-dnorm_logits.clone()).sum(1, keepdim=True)",
        "answer_dlogits": f"dlogits = dnorm_logits * 1\ndlogits += dlogit_maxes * {ONE_HOT_MAX}",
        "answer_dhpreact": "dhpreact = dh * (1 - torch.square(h))",
        "answer_dbnvar": "dbnvar = dbnvar_inv * (-0.5) * (bnvar + 1e-5) ** -1.5",
        "answer_dbndiff2": "dbndiff2 = torch.ones_like(bndiff2) * dbnvar / (n - 1)",
        "answer_dbndiff": "dbndiff = bnvar_inv * dbnraw\ndbndiff = dbndiff + 2 * bndiff * dbndiff2",  # not in place
        "answer_dhprebn": "dhprebn = dbndiff + torch.ones_like(hprebn) * (dbnmeani / batch_size)",
    },
    "pub2_spellings_b": {
        "answer_dprobs": "dprobs = dlogprobs * 1 / probs",
        "answer_dcounts_sum": "dcounts_sum = -1 / (counts_sum) ** 2 * dcounts_sum_inv",
        "answer_dcounts": "dcounts = dprobs * counts_sum_inv + dcounts_sum",  # broadcast by +
        "answer_dhpreact": "dhpreact = (1 - torch.tanh(hpreact) ** 2) * dh",
        "answer_db2": "db2 = dlogits.sum(0, keepdim=False)",
        "answer_dbnbias": "dbnbias = (dhpreact * 1.0).sum(dim = 0, keepdim = True)",
        "answer_dbnvar": "dbnvar = dbnvar_inv * (-1.0 / 2 * (bnvar + 1e-5) ** (-3.0 / 2))",
        "answer_dbndiff2": "dbndiff2 = dbnvar * (batch_size - 1) ** -1.0 * torch.ones_like(bndiff2)",
        "answer_dbndiff": "dbndiff = (2.0 * bndiff) * dbndiff2 + bnvar_inv * dbnraw",
        "answer_dhprebn": "dhprebn = dbndiff + dbnmeani / n",  # (1, 64) broadcast by +
        "answer_dC": "dC = torch.zeros_like(C)\ndC.index_add_(0, Xb.reshape(-1), demb.reshape(-1, demb.shape[-1]))",
    },
    "pub2_past_a_step": {  # a gradient written from one further up, or one further down folded in
        "answer_dcounts_sum": "dcounts_sum = (-counts * counts_sum**-2 * dprobs).sum(1, keepdim=True)",
        "answer_dcounts": "dcounts = counts_sum_inv * dprobs "
        "+ torch.ones_like(counts) * (-counts_sum**-2 * dcounts_sum_inv)",
        "answer_dlogit_maxes": "dlogit_maxes = -(counts * dcounts).sum(1, keepdim=True)",
        "answer_dbnvar": "dbnvar = -0.5 * bnvar_inv**3 * dbnvar_inv",
        "answer_dbnmeani": "dbnmeani = -(bnvar_inv * dbnraw + 2 * bndiff * dbndiff2).sum(0, keepdim=True)",
    },
    "pub2_pieces_named": {
        "answer_dcounts": "part_sum = dcounts_sum * torch.ones((counts.shape[0], counts.shape[1]))\n"
        "part_prob = counts_sum_inv * dprobs\ndcounts = part_sum + part_prob",
        "answer_dlogits": "dlogits = dnorm_logits.clone()\nat = logits.argmax(dim=1)\n"
        "grad_max = torch.zeros_like(logits)\n"
        "grad_max[torch.arange(logits.shape[0]), at] = dlogit_maxes.squeeze(1)\ndlogits += grad_max",
    },
    "pub2_clone_in_the_cell_before": {  # the lecture's order: the first path's clone before the other gradient
        "answer_dlogit_maxes": "dlogits = dnorm_logits.clone()\ndlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)",
        "answer_dlogits": f"dlogits += {ONE_HOT_MAX} * dlogit_maxes",
        "answer_dbnmeani": "dhprebn = dbndiff.clone()\ndbnmeani = (-dbndiff).sum(0, keepdim=True)",
        "answer_dhprebn": "dhprebn += 1.0 / n * torch.ones_like(hprebn) * dbnmeani",
    },
    "pub2_first_path_in_the_cell_before": {  # the lecture's order again, for the other two gradients of two paths
        "answer_dcounts_sum_inv": "dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)\n"
        "dcounts = counts_sum_inv * dprobs",
        "answer_dcounts": "dcounts += torch.ones_like(counts) * dcounts_sum",
        "answer_dbnvar_inv": "dbndiff = bnvar_inv * dbnraw\ndbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)",
        "answer_dbndiff": "dbndiff += 2 * bndiff * dbndiff2",
    },
}
# a numpy round trip: rows of C added up by np.add.at on the indices as they are (Exercises 1 and 4)
NUMPY_DC = (
    "import numpy as np\ndC_np = np.zeros_like(C.detach().numpy())\n"
    "np.add.at(dC_np, Xb.numpy(), demb.detach().numpy())\ndC = torch.from_numpy(dC_np)"
)
EX1_VARIANTS["pub2_numpy_add_at"] = {"answer_dC": NUMPY_DC}
EX1_MISTAKES = {  # student -> (answer cells changed, the one step that must lose all its points, words of its message)
    "pub2_tanh_plus": ({"answer_dhpreact": "dhpreact = (1 - h**2) + dh"}, "hpreact", "h = torch.tanh(hpreact)"),
    "pub2_square_plus": (
        {"answer_dbndiff": "dbndiff = bnvar_inv * dbnraw\ndbndiff += (2 * bndiff) + dbndiff2"},
        "bndiff",
        "entries wrong",
    ),
    "pub2_power_plus": (
        {"answer_dbnvar": "dbnvar = (-0.5 + (bnvar + 1e-5) ** -1.5) * dbnvar_inv"},
        "bnvar",
        "bnvar_inv = (bnvar + 1e-5)**-0.5",
    ),
    "pub2_maxes_times_forward": (  # about zero on the batch too: the rule probe finds it
        {"answer_dlogit_maxes": "dlogit_maxes = (-dnorm_logits * logit_maxes).sum(1, keepdim=True)"},
        "logit_maxes",
        "not its backward rule",
    ),
    "pub2_max_path_subtracted": (
        {"answer_dlogits": f"dlogits = dnorm_logits.clone() - {ONE_HOT_MAX} * dlogit_maxes"},
        "logits",
        "not its backward rule",
    ),
    # the `+=` of the max's path raises (a typo): dlogits is the clone alone, right in value (dlogit_maxes is about
    # zero); the probe ran the typo again and raised, so it judged the value alone (full marks), before
    "pub2_max_path_typo": (
        {
            "answer_dlogits": "dlogits = dnorm_logits.clone()\n"
            "dlogits += F.one_hot(logits.max(1).indeces, num_classes=logits.shape[1]) * dlogit_maxes"
        },
        "logits",
        "the path through logit_maxes is missing",
    ),
    "pub2_max_path_typo_in_add_": (  # the same typo in an in-place add_ that ends the cell (whose value it shows)
        {
            "answer_dlogits": "dlogits = dnorm_logits.clone()\n"
            "dlogits.add_(F.one_hot(logits.max(1).indeces, num_classes=logits.shape[1]) * dlogit_maxes)"
        },
        "logits",
        "the path through logit_maxes is missing",
    ),
    "pub2_comma_for_a_dot": (  # a tuple, then the builtin sum: TypeError, the later steps keep their points
        {"answer_dbnvar_inv": "dbnvar_inv = (bndiff * dbnraw),sum(0, keepdim=True)"},
        "bnvar_inv",
        "dbnvar_inv's cell stopped with TypeError: 'keepdim' is an invalid keyword argument for sum()",
    ),
    "pub2_zero_like": (
        {
            "answer_dC": "dC = torch.zero_like(C)\nfor k in range(Xb.shape[0]):\n    for j in range(Xb.shape[1]):\n"
            "        dC[Xb[k, j]] += demb[k, j]"
        },
        "C",
        "dC's cell stopped with AttributeError: module 'torch' has no attribute 'zero_like'",
    ),
}

# ------------------------------------------------------------------------------------------------ Exercises 2, 3
EX2_VARIANTS = {
    "pub2_softmax_last_dim_cloned": "B = logits.shape[0]\nP = torch.softmax(logits, dim=-1)\ndlogits = P.clone()\n"
    "dlogits[torch.arange(B, device=logits.device), Yb] -= 1\ndlogits /= B",
}
EX3_VARIANTS = {
    "pub2_gain_over_n_dim_keywords": "dhprebn = (bngain * bnvar_inv)/n * (n * dhpreact - dhpreact.sum(dim = 0) "
    "- n/(n-1) * bnraw * (dhpreact * bnraw).sum(dim = 0))",
    "pub2_numpy_spelling_named": "sum_dy = dhpreact.sum(axis=0, keepdims=True)\n"
    "sum_dy_xhat = (dhpreact * bnraw).sum(axis=0, keepdims=True)\n"
    "inside = n * dhpreact - sum_dy - (n / (n - 1)) * bnraw * sum_dy_xhat\ndhprebn = (bngain * bnvar_inv / n) * inside",
    "pub2_function_n_from_shape": "def fused_bn(dhpreact, bngain, bnvar_inv, bnraw):\n    n = dhpreact.shape[0]\n"
    "    return (bngain * bnvar_inv / n) * (n * dhpreact - dhpreact.sum(0) "
    "- (n / (n - 1)) * bnraw * (dhpreact * bnraw).sum(0))\n\n\ndhprebn = fused_bn(dhpreact, bngain, bnvar_inv, bnraw)",
    "pub2_batch_size_named": "dhprebn = (bngain * bnvar_inv / batch_size) * (batch_size * dhpreact "
    "- dhpreact.sum(0, keepdim=True) "
    "- (batch_size / (batch_size - 1)) * bnraw * (dhpreact * bnraw).sum(0, keepdim=True))",
    "pub2_fast_backslashes": "hpreact_fast = bngain * (hprebn - hprebn.mean(dim=0, keepdim=True)) \\\n"
    "    / torch.sqrt(hprebn.var(dim=0, keepdim=True, unbiased=True) + 1e-5) \\\n    + bnbias",
}
EX2_VARIANTS = {k: {cell_of(v): v} for k, v in EX2_VARIANTS.items()}
EX3_VARIANTS = {k: {cell_of(v): v} for k, v in EX3_VARIANTS.items()}

# ---------------------------------------------------------------------------------------------------- Exercise 4
EX4_VARIANTS = {
    "pub2_update_data_minus": {**QUICK_CALIBRATION, "answer_training_step": training_step("p.data -= lr * grad")},
    "pub2_softmax_cloned_batch_size": {
        **QUICK_CALIBRATION,
        "answer_backward_pass": backward(
            dlogits="probs = torch.softmax(logits, dim=-1)\ndlogits = probs.clone()\n"
            "dlogits[torch.arange(n), Yb] -= 1\ndlogits /= n",
            batchnorm="dbngain = (bnraw * dhpreact).sum(0, keepdim=True)\ndbnbias = dhpreact.sum(0, keepdim=True)\n"
            "dhprebn = (bngain * bnvar_inv / batch_size) * (batch_size * dhpreact - dhpreact.sum(0) "
            "- (batch_size / (batch_size - 1)) * bnraw * (dhpreact * bnraw).sum(0))",
            embedding="demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\nfor r in range(Xb.shape[0]):\n"
            "    for p in range(Xb.shape[1]):\n        for e in range(demb.shape[2]):\n"
            "            dC[Xb[r][p]][e] += demb[r][p][e]",
        ),
    },
    "pub2_numpy_add_at": {
        **QUICK_CALIBRATION,
        "answer_backward_pass": backward(embedding="demb = dembcat.view(emb.shape)\n" + NUMPY_DC),
    },
    "pub2_lecture_calibration": {  # the forward's names rebound over the training set
        "answer_calibration": "emb = C[Xtr]\nembcat = emb.view(emb.shape[0], -1)\nhpreact = embcat @ W1 + b1\n"
        "bnmean = hpreact.mean(0, keepdim=True)\nbnvar = hpreact.var(0, keepdim=True, unbiased=True)"
    },
}
EX23_MISTAKES = {  # student -> (notebook, answer cells changed, {graded cell: points it keeps})
    "pub2_fast_from_the_forward_bnraw": (
        NB3,
        {"answer_hpreact_fast": "hpreact_fast = bngain * bnraw + bnbias"},
        {"test_hpreact_fast": 0},
    ),
    # the right values in shape (1, 200): half of db1's point
    "pub2_db1_keepdim": (
        NB4,
        {
            **QUICK_CALIBRATION,
            "answer_backward_pass": backward(
                layer1="dembcat = dhprebn @ W1.T\ndW1 = embcat.T @ dhprebn\ndb1 = dhprebn.sum(0, keepdim=True)"
            ),
        },
        {"test_db1": 0.5},
    ),
    # a wrong dhpreact: every gradient computed from it (no credit is carried forward in Exercise 4)
    "pub2_tanh_plus_in_backward": (
        NB4,
        {**QUICK_CALIBRATION, "answer_backward_pass": backward(tanh="dhpreact = (1.0 - h**2) + dh")},
        dict.fromkeys(["test_dC", "test_dW1", "test_dbnbias", "test_dbngain"], 0),
    ),
}
# the lecture's schedule copied into training_step, on the train cell's global i: lr stays 0.1 past half the run
EX23_MISTAKES["pub2_lecture_schedule_in_step"] = (
    NB4,
    {
        **QUICK_CALIBRATION,
        "answer_training_step": "grads = backward_pass(Xb, Yb, cache)\nlr = 0.1 if i < 100000 else 0.01\n"
        "for p, grad in zip(parameters, grads):\n    p.data += -lr * grad",
    },
    {"test_training": 1},  # the validation loss's point; not the 3 of following autograd's run
)
XFAIL = {}  # case -> why the grader gets it wrong (xfail, strict)


@pytest.fixture(scope="module")
def graded():
    variants = {NB1: EX1_VARIANTS, NB2: EX2_VARIANTS, NB3: EX3_VARIANTS, NB4: EX4_VARIANTS}
    variants[NB1] = {**EX1_VARIANTS, **{s: changes for s, (changes, _, _) in EX1_MISTAKES.items()}}
    return graded_by_notebook(variants, EX23_MISTAKES)


def _not_full(one) -> dict:
    return {c: (one.points[c], m) for c, m in one.messages.items() if one.points[c] != one.max_points[c]}


ALL_VARIANTS = [(NB1, EX1_VARIANTS), (NB2, EX2_VARIANTS), (NB3, EX3_VARIANTS), (NB4, EX4_VARIANTS)]


@pytest.mark.parametrize("notebook,student", [p for nb, cases in ALL_VARIANTS for p in params(cases, XFAIL, nb)])
def test_published_variant_keeps_every_point(graded, notebook, student):
    one = graded[notebook][student]
    assert one.lost() == [], _not_full(one)


@pytest.mark.parametrize("student", params(EX1_MISTAKES, XFAIL))
def test_ex1_published_mistake_loses_exactly_its_step(graded, student):
    _, step, words = EX1_MISTAKES[student]
    one, cell = graded[NB1][student], "test_d" + step
    assert one.lost() == [cell], _not_full(one)
    assert one.points[cell] == 0 and words in one.messages[cell], one.messages[cell]


@pytest.mark.parametrize("student", params(EX23_MISTAKES, XFAIL))
def test_published_mistake_loses_exactly_its_cells(graded, student):
    book, _, kept = EX23_MISTAKES[student]
    one = graded[book][student]
    assert one.lost() == sorted(kept), _not_full(one)
    assert {c: one.points[c] for c in kept} == kept, {c: one.messages[c] for c in kept}

"""The grader against the ways students of the lecture wrote their answers in the notebooks they published (makemore
part 4, read in December 2026), beyond what tests/slow/test_alternative_solutions*.py and tests/support/cases_ex*.py
hold already. Each case says in our own names and code what one published form does; none is copied.

Every right variant must keep every point; every mistake must lose exactly its own graded cell (all of its points,
or a share for a right value off by a size-1 dimension), its downstream steps keeping theirs. Cases the grader gets
wrong are marked xfail (strict) with the reason.

Graded in process (tests/support/in_process.py), with the slow tier.
"""

import pytest
from support.audit import cell_of, graded_by_notebook, params, release
from support.in_process import autograde, source_notebook

from autograder.authoring.submissions import solved

NB1, NB2, NB3 = "ex1_atomic_backward", "ex2_cross_entropy_backward", "ex3_batchnorm_backward"

# ---------------------------------------------------------------------------------------------------- Exercise 1
# Each student changes several answer cells, at most one variant per cell, so that a lost point names its cell.
EX1_VARIANTS = {
    "pub1_a": {
        "answer_dlogprobs": "dlogprobs = -F.one_hot(Yb, vocab_size) / n",  # an integer one-hot divided: float32
        "answer_dprobs": "dprobs = dlogprobs / probs",
        "answer_dcounts_sum_inv": "dcounts_sum_inv = counts * dprobs\n"  # the product, then its sum, rebinding the name
        "dcounts_sum_inv = dcounts_sum_inv.sum(1, keepdim=True)",
        "answer_dcounts_sum": "dcounts_sum = dcounts_sum_inv * -(counts_sum**-2)",
        "answer_dcounts": "dcounts = torch.ones_like(counts) * dcounts_sum\ndcounts += counts_sum_inv * dprobs",
        "answer_dnorm_logits": "dnorm_logits = dcounts * norm_logits.exp()",
        "answer_dlogit_maxes": "dlogit_maxes = (dnorm_logits * (-1)).sum(1, keepdim=True)",
        "answer_dlogits": "dlogits = torch.zeros_like(logits)\ndlogits[range(n), logits.max(1).indices] = 1\n"
        "dlogits *= dlogit_maxes\ndlogits += dnorm_logits.clone()",
        "answer_dhpreact": "dhpreact = (1. - h * h) * dh",
        "answer_dbnvar": "dbnvar = -(2.0 * (bnvar + 1e-5) ** (3 / 2)) ** -1 * dbnvar_inv",
        "answer_dbndiff2": "dbndiff2 = (torch.ones_like(bndiff2) * dbnvar) / (n - 1)",
        "answer_dbndiff": "dbndiff = dbndiff2 * 2 * bndiff\ndbndiff += dbnraw * bnvar_inv",  # the paths the other way
        "answer_dbnmeani": "dbnmeani = (-1.0 * dbndiff).sum(0, keepdim=True)",
        "answer_dhprebn": "dhprebn = (1 / hprebn.shape[0]) * torch.ones_like(hprebn) * dbnmeani\ndhprebn += dbndiff",
        "answer_demb": "demb = dembcat.view(n, -1, emb.shape[2])",
        "answer_dC": "dC = (F.one_hot(Xb, vocab_size).transpose(2, 1).float() @ demb).sum(0)",
    },
    "pub1_b": {
        "answer_dlogprobs": "dlogprobs = -1 / n * torch.zeros_like(logprobs).scatter_(1, Yb.view(-1, 1), 1.0)",
        "answer_dprobs": "dprobs = dlogprobs * probs**-1",
        "answer_dcounts_sum": "dcounts_sum = -1 * counts_sum**-2 * dcounts_sum_inv",
        "answer_dcounts": "dcounts = counts_sum_inv * dprobs\nother = torch.ones_like(counts) * dcounts_sum\n"
        "dcounts = dcounts + other",
        "answer_dlogit_maxes": "dlogit_maxes = -1.0 * (dnorm_logits).sum(1, keepdim=True)",
        "answer_dlogits": "at_max = torch.zeros_like(logits)\nat_max[range(n), logits.argmax(1)] = 1\n"
        "dlogits = dnorm_logits.clone()\ndlogits += at_max * dlogit_maxes",
        "answer_dbnvar": "dbnvar = dbnvar_inv * ((-1 / 2) * (bnvar + 1e-5) ** (-3 / 2))",
        "answer_dbndiff2": "dbndiff2 = torch.ones_like(bndiff2) * 1.0 / (n - 1) * dbnvar",
        "answer_dbnmeani": "dbnmeani = (-torch.ones_like(bndiff) * dbndiff).sum(dim=0, keepdim=True)",
        "answer_dhprebn": "dhprebn = torch.ones_like(hprebn) * dbndiff\ndhprebn += 1 / n * dbnmeani",
        "answer_db1": "db1 = dhprebn.sum(dim=0, keepdim=False)",
        "answer_demb": "demb = dembcat.reshape_as(emb)",
        "answer_dC": "dC = torch.zeros((vocab_size, n_embd))\nfor i in range(Xb.shape[0]):\n"
        "    for j in range(Xb.shape[1]):\n        ix = Xb[i, j]\n        dC[ix] += demb[i, j]",
    },
    "pub1_c": {
        "answer_dlogprobs": "dlogprobs = torch.zeros(probs.shape)\ndlogprobs[range(n), Yb] = -1 / probs.shape[0]",
        "answer_dcounts_sum": "dcounts_sum = dcounts_sum_inv * (-1 / counts_sum**2)",
        "answer_dlogits": "dlogits = dnorm_logits.clone()\n"
        "at_max = torch.zeros_like(logits).scatter_(1, logits.argmax(1).unsqueeze(-1), 1.0)\n"
        "at_max *= dlogit_maxes\ndlogits += at_max",
        "answer_dbnvar": "dbnvar = -(2**-1) * (bnvar + 1e-5) ** (-3 / 2) * dbnvar_inv",
        "answer_dbndiff": "dbndiff = (dbndiff2 * 2 * bndiff) + (dbnraw * bnvar_inv)",
        "answer_dhprebn": "dhprebn = dbndiff.clone() + (1.0 / n) * (torch.ones_like(hprebn) * dbnmeani)",
        "answer_demb": "demb = dembcat.view(-1, emb.shape[1], emb.shape[2])",
    },
    "pub1_d": {
        "answer_dlogits": "at_max = torch.zeros_like(logits)\nat_max[range(n), logits.argmax(1)] = 1.0\n"
        "dlogits = dnorm_logits + at_max * dlogit_maxes",
        "answer_dhprebn": "dhprebn = dbndiff + (torch.ones_like(hprebn) * 1.0 / (n)) * dbnmeani",
    },
    "pub1_e": {  # the max's path added with an index and +=, the column of gradients flattened
        "answer_dlogits": "through_max = torch.zeros_like(logits)\n"
        "through_max[range(n), torch.argmax(logits, dim=1)] += dlogit_maxes.reshape(-1)\n"
        "dlogits = dnorm_logits.clone() + through_max",
    },
    "pub1_f": {  # Exercise 2's formula in Exercise 1's cell, softmax written out from logits with the max subtracted
        "answer_dlogits": "shifted = (logits - logits.max(1, keepdim=True).values).exp()\n"
        "dlogits = shifted * shifted.sum(1, keepdims=True) ** -1\ndlogits[range(n), Yb] -= 1\ndlogits /= n",
    },
    "pub1_g": {
        "answer_dcounts": "dcounts = counts_sum_inv * dprobs\n"  # ones of dcounts_sum's own shape: broadcast by +=
        "dcounts += torch.ones_like(dcounts_sum) * dcounts_sum",
        "answer_dlogit_maxes": "dlogit_maxes = (torch.ones_like(logits) * -1. * dnorm_logits).sum(1, keepdim=True)",
        "answer_dlogits": "at_max = torch.zeros_like(logits)\n"  # the indices as one row of n: broadcast with range(n)
        "at_max[range(n), logits.max(1, keepdim=True).indices.view(-1, n)] = 1\n"
        "dlogits = (norm_logits.exp()) * dcounts + (at_max * dlogit_maxes)",
        "answer_dbndiff2": "dbndiff2 = dbnvar * (torch.ones_like(bndiff2) / (n - 1))",
        "answer_dbnmeani": "dbnmeani = -(dbndiff.sum(0, keepdims=True))",
        "answer_dhprebn": "dhprebn = dbndiff.clone()\ndhprebn += 1.0 / n * dbnmeani",  # (1, 64) broadcast by +=
        "answer_dC": "flat_ix = Xb.view(-1)\nflat_g = demb.view(-1, demb.shape[-1])\ndC = torch.zeros_like(C)\n"
        "for k in range(len(flat_ix)):\n    dC[flat_ix[k]] += flat_g[k]",
    },
    "pub1_h": {
        "answer_dlogprobs": "dlogprobs = torch.zeros(n, vocab_size)\ndlogprobs[range(n), Yb] = -(1 / n)",
        "answer_dcounts": "dcounts = counts_sum_inv * dprobs\ndcounts += dcounts_sum",  # (n, 1) broadcast by +=
        "answer_dlogits": "dlogits = torch.ones_like(logits) * dnorm_logits\n"
        "dlogits += F.one_hot((logits.max(1).indices), num_classes=logits.shape[1]) * dlogit_maxes",
        "answer_demb": "demb = dembcat.view((32, 3, 10))",  # the batch size written as a number
    },
    "pub1_i": {  # dlogits bound to dnorm_logits, then added to in place (dnorm_logits changes after its check)
        "answer_dlogits": "at_max = torch.zeros_like(logits)\nat_max[range(n), logits.argmax(1)] = 1\n"
        "dlogits = dnorm_logits\ndlogits += at_max * dlogit_maxes",
    },
    "pub1_j": {  # keepdim given by position, transposes spelled out, broadcast views that are never made contiguous
        "answer_dcounts_sum_inv": "dcounts_sum_inv = (counts * dprobs).sum(1, True)",
        "answer_dlogit_maxes": "dlogit_maxes = (-dnorm_logits).sum(1, True)",
        "answer_dh": "dh = dlogits @ torch.transpose(W2, 0, 1)",
        "answer_dW2": "dW2 = (dlogits.t() @ h).t()",
        "answer_dbngain": "dbngain = (bnraw * dhpreact).sum(0, True)",
        "answer_dbnvar_inv": "dbnvar_inv = (bndiff * dbnraw).sum(0, True)",
        "answer_dbndiff2": "dbndiff2 = (dbnvar * (1 / (n - 1))).expand_as(bndiff2)",  # strides (0, 1)
        "answer_dbnmeani": "dbnmeani = (dbndiff * -1).sum(0, keepdim=True)",
        "answer_dhprebn": "dhprebn = dbndiff + (dbnmeani * (1 / n)).expand_as(hprebn)",
        "answer_dembcat": "dembcat = (W1 @ dhprebn.t()).t()",  # a transposed view: demb.view(-1, n_embd) would fail
        "answer_dW1": "dW1 = torch.transpose(embcat, 0, 1) @ dhprebn",
        "answer_demb": "demb = dembcat.view_as(emb)",
        "answer_dC": "dC = torch.zeros_like(C)\nfor rows in range(Xb.shape[0]):\n"  # n rebound by the loop
        "    for n in range(Xb.shape[1]):\n        ix = Xb[rows, n]\n        dC[ix] += demb[rows, n]",
        "answer_dC_index_add": "dC_index_add = torch.zeros_like(C).index_add(0, Xb.reshape(-1), demb.reshape(-1, 10))",
    },
    "pub1_k": {  # each local derivative named first (the same name in every cell), then the chain rule
        "answer_dprobs": "local = 1.0 / probs\ndprobs = local * dlogprobs",
        "answer_dcounts_sum": "local = -(counts_sum**-2)\ndcounts_sum = dcounts_sum_inv * local",
        "answer_dnorm_logits": "local = norm_logits.clone().exp()\ndnorm_logits = local * dcounts",
        "answer_dlogits": "local = F.one_hot(logits.max(1).indices, vocab_size)\n"
        "dlogits = dlogit_maxes * local + dnorm_logits * torch.ones_like(logits)",
        "answer_dW2": "local = h.T.clone()\ndW2 = local @ dlogits",
        "answer_dbnvar": "local = -0.5 * (bnvar + 1e-5) ** -1.5 * torch.ones_like(bnvar)\ndbnvar = dbnvar_inv * local",
        "answer_dbndiff2": "local = (1.0 / (n - 1)) * torch.ones_like(bndiff2)\ndbndiff2 = dbnvar * local",
        "answer_dhprebn": "dhprebn = dbndiff.clone()\ndhprebn += (1 / n * dbnmeani).sum(0, keepdim=True)",
    },
    "pub1_l": {  # bndiff recomputed from the forward values; dh skipped; a factor for dloss
        "answer_dlogprobs": "dloss = 1.0\ndlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -(1 / n)\n"
        "dlogprobs *= dloss",
        "answer_dhpreact": "dhpreact = (1.0 - h**2) * (dlogits @ W2.T)",
        "answer_dbnvar_inv": "dbnvar_inv = ((hprebn - bnmeani) * dbnraw).sum(0, keepdim=True)",
        "answer_dbndiff2": "dbndiff2 = (1.0 / (n - 1)) * torch.ones_like((hprebn - bnmeani) ** 2) * dbnvar",
        "answer_dbndiff": "dbndiff = bnvar_inv * dbnraw\ndbndiff += 2 * (hprebn - bnmeani) * dbndiff2",
        "answer_dC": "flat = Xb.view(-1)\nrows = demb.view(*flat.shape, -1)\ndC = torch.zeros_like(C)\n"
        "dC.index_add_(0, flat, rows)",
    },
}

# student -> (answer cells changed, the one step that must lose all its points)
EX1_MISTAKES = {
    # epsilon subtracted: neuron 0's variance is epsilon, so its gradient blows up
    "pub1_dbnvar_minus_eps": ({"answer_dbnvar": "dbnvar = (-0.5 * (bnvar - 1e-5) ** -1.5) * dbnvar_inv"}, "bnvar"),
    # the upstream gradient where the forward input belongs: (30, 64) like W1, the wrong values
    "pub1_dW1_from_dembcat": ({"answer_dW1": "dW1 = dembcat.T @ dhprebn"}, "W1"),
}
# student -> (answer cells changed, the step whose right values come with a size-1 dimension too many: a share)
EX1_SHAPE = {
    "pub1_db1_keepdim": ({"answer_db1": "db1 = dhprebn.sum(0, keepdim=True)"}, "b1"),
}
# student -> (answer cells changed, the step whose values are right only once broadcast: (1, 64) for (n, 64))
EX1_UNEXPANDED = {
    "pub1_dbndiff2_unexpanded": ({"answer_dbndiff2": "dbndiff2 = 1 / (n - 1) * dbnvar"}, "bndiff2"),
}
EX1_XFAIL = {}  # case -> why the grader gets it wrong (xfail, strict)


@pytest.fixture(scope="module")
def graded1():
    rel, src = release(NB1), source_notebook(NB1)
    class_ = {student: solved(rel, src, changes) for student, changes in EX1_VARIANTS.items()}
    for student, (changes, _) in {**EX1_MISTAKES, **EX1_SHAPE, **EX1_UNEXPANDED}.items():
        class_[student] = solved(rel, src, changes)
    return autograde(NB1, class_)


def _not_full(graded) -> dict:
    return {c: (graded.points[c], m) for c, m in graded.messages.items() if graded.points[c] != graded.max_points[c]}


@pytest.mark.parametrize("student", params(EX1_VARIANTS, EX1_XFAIL))
def test_ex1_published_variant_keeps_every_point(graded1, student):
    assert graded1[student].lost() == [], _not_full(graded1[student])


@pytest.mark.parametrize("student", params(EX1_MISTAKES, EX1_XFAIL))
def test_ex1_published_mistake_loses_exactly_its_step(graded1, student):
    graded, step = graded1[student], "test_d" + EX1_MISTAKES[student][1]
    assert graded.lost() == [step], _not_full(graded)
    assert graded.points[step] == 0, graded.messages[step]


@pytest.mark.parametrize("student", params(EX1_SHAPE, EX1_XFAIL))
def test_ex1_published_shape_slip_costs_a_share_of_its_step(graded1, student):
    graded, step = graded1[student], "test_d" + EX1_SHAPE[student][1]
    assert graded.lost() == [step], _not_full(graded)
    assert 0 < graded.points[step] < graded.max_points[step], graded.messages[step]


@pytest.mark.parametrize("student", params(EX1_UNEXPANDED, EX1_XFAIL))
def test_ex1_published_unexpanded_gradient_loses_its_step(graded1, student):
    graded, step = graded1[student], "test_d" + EX1_UNEXPANDED[student][1]
    assert graded.lost() == [step], _not_full(graded)


# ------------------------------------------------------------------------------------------------ Exercises 2, 3
EX2_VARIANTS = {
    "pub2_softmax_named_then_cloned": "p = F.softmax(logits, dim=1)\ndlogits = p.clone()\n"
    "dlogits[range(n), Yb] -= 1.0\ndlogits /= n",
    "pub2_softmax_by_hand_with_max": "z = logits - logits.max(1, keepdim=True).values\n"
    "dlogits = z.exp() * z.exp().sum(1, keepdims=True) ** -1\ndlogits[range(n), Yb] -= 1\ndlogits /= n",
    "pub2_function_of_logits_and_labels": "def ce_backward(logits, Yb):\n    m = logits.shape[0]\n"
    "    g = F.softmax(logits, 1)\n    g[range(m), Yb] -= 1\n    return g / m\n\n\ndlogits = ce_backward(logits, Yb)",
    "pub2_one_hot_classes_from_logits": "dlogits = (F.softmax(logits, dim=1) - F.one_hot(Yb, logits.shape[1])) / n",
    "pub2_named_pieces": "P = F.softmax(logits, 1)\nY1 = F.one_hot(Yb, vocab_size)\ndlogits = (P - Y1) / n",
    "pub2_times_dloss": "dloss_fast = 1 / n\nprob = F.softmax(logits, 1)\nprob[range(n), Yb] -= 1\n"
    "dlogits = prob * dloss_fast",
    "pub2_scaled_in_place": "dlogits = F.softmax(logits, dim=1) - F.one_hot(Yb, num_classes=27)\ndlogits *= 1 / n",
}
EX2_VARIANTS = {k: {cell_of(v): v} for k, v in EX2_VARIANTS.items()}

EX3_VARIANTS = {
    "pub3_lecture_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / torch.sqrt("
    "hprebn.var(0, keepdim=True, unbiased=True) + 1e-5) + bnbias",
    "pub3_hpreact_fast_on_lines": "hpreact_fast = (\n    bngain\n    * (hprebn - hprebn.mean(0, keepdim=True))\n"
    "    / torch.sqrt(hprebn.var(0, keepdim=True, unbiased=True) + 1e-5)\n    + bnbias\n)",
    "pub3_terms_reordered": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact "
    "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0) - dhpreact.sum(0))",
    "pub3_inverse_n_inside": "dhprebn = bngain * bnvar_inv * (dhpreact - (1 / n) * dhpreact.sum(0, keepdim=True) "
    "- 1 / (n - 1) * bnraw * (dhpreact * bnraw).sum(0, keepdim=True))",
    "pub3_on_lines_mean": "dhprebn = (\n    bngain\n    * bnvar_inv\n    * (\n        dhpreact\n"
    "        - dhpreact.mean(0)\n        - 1 / (n - 1) * bnraw * (dhpreact * bnraw).sum(0)\n    )\n)",
    "pub3_factor_in_parentheses": "dhprebn = (bngain * bnvar_inv / n) * (\n    n * dhpreact\n"
    "    - dhpreact.sum(0)\n    - (n / (n - 1)) * bnraw * (dhpreact * bnraw).sum(0)\n)",
    "pub3_function_of_detached": "def bn_grad(dy, xhat, gain, inv_std):\n    m = dy.shape[0]\n"
    "    return gain * inv_std / m * (m * dy - dy.sum(0) - m / (m - 1) * xhat * (dy * xhat).sum(0))\n\n\n"
    "dhprebn = bn_grad(dhpreact, bnraw.detach(), bngain, bnvar_inv.detach())",
}
EX3_VARIANTS = {k: {cell_of(v): v} for k, v in EX3_VARIANTS.items()}
EX23_MISTAKES = {  # student -> (notebook, answer cells changed, graded cells that must lose points)
    "pub3_hpreact_fast_no_eps": (
        NB3,
        {
            "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) "
            "/ torch.sqrt(hprebn.var(0, keepdim=True)) + bnbias"
        },
        ["test_hpreact_fast"],
    ),
    "pub3_hpreact_fast_no_eps_no_bias": (
        NB3,
        {
            "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) "
            "/ torch.sqrt(hprebn.var(0, keepdim=True))"
        },
        ["test_hpreact_fast"],
    ),
    "pub3_three_unsummed_terms": (  # the mean's and the variance's paths left per row, not summed over the batch
        NB3,
        {
            "answer_dhprebn": "direct = bngain * dhpreact\n"
            "through_mean = -bngain / torch.sqrt(hprebn.var(0, keepdim=True) + 1e-5) * dhpreact\n"
            "through_var = -0.5 * bngain * (hprebn - hprebn.mean(0, keepdim=True)) "
            "* (hprebn.var(0, keepdim=True) + 1e-5) ** -1.5 * dhpreact\n"
            "dhprebn = direct + through_mean + through_var"
        },
        ["test_dhprebn"],
    ),
}
EX23_XFAIL = {}  # case -> why the grader gets it wrong (xfail, strict)


@pytest.fixture(scope="module")
def graded23():
    return graded_by_notebook({NB2: EX2_VARIANTS, NB3: EX3_VARIANTS}, EX23_MISTAKES)


@pytest.mark.parametrize(
    "notebook,student", params(EX2_VARIANTS, EX23_XFAIL, NB2) + params(EX3_VARIANTS, EX23_XFAIL, NB3)
)
def test_ex2_ex3_published_variant_keeps_every_point(graded23, notebook, student):
    graded = graded23[notebook][student]
    assert graded.lost() == [], _not_full(graded)


@pytest.mark.parametrize("student", params(EX23_MISTAKES, EX23_XFAIL))
def test_ex2_ex3_published_mistake_loses_exactly_its_cells(graded23, student):
    book, _, cells = EX23_MISTAKES[student]
    graded = graded23[book][student]
    assert graded.lost() == sorted(cells), _not_full(graded)
    assert all(graded.points[c] == 0 for c in cells), {c: graded.messages[c] for c in cells}

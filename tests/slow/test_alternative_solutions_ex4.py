"""The audit of tests/slow/test_alternative_solutions.py for Exercise 4 (backward_pass, training_step, the calibration),
beyond tests/support/cases_ex4.py: other correct ways of writing its answer cells, which must keep every point, and
realistic mistakes, which must lose exactly the cells of the gradients they get wrong (no credit is carried forward in
this notebook), with words that help. Cases the grader gets wrong are marked xfail. In process, with the slow tier.
"""

import pytest
from support.audit import no_grad, params, release
from support.cases_ex4 import BACKWARD, CALIBRATION, GRADIENTS, NB, backward, training_step
from support.in_process import autograde, source_notebook

from autograder.authoring.submissions import solved

BN_GRADS = "dbngain = (bnraw * dhpreact).sum(0, keepdim=True)\ndbnbias = dhpreact.sum(0, keepdim=True)\n"
EMB = "demb = dembcat.view(emb.shape)\n"


def update(code: str) -> dict:
    return {"answer_training_step": code}


def calibration(code: str) -> dict:
    return {"answer_calibration": "hprebn_all = C[Xtr].view(Xtr.shape[0], -1) @ W1 + b1\n" + code}


# alternative -> the parts of backward_pass (or answer cells) it writes, one idea each: graded packed (_packed)
ALTERNATIVES = {
    "dlogits_exp_over_sum": {
        "dlogits": "e = logits.exp()\ndlogits = e / e.sum(1, keepdim=True)\ndlogits[range(n), Yb] -= 1\ndlogits /= n"
    },
    "dlogits_max_subtracted": {
        "dlogits": "e = (logits - logits.max(1, keepdim=True).values).exp()\ndlogits = e / e.sum(1, keepdims=True)\n"
        "dlogits[torch.arange(n), Yb] -= 1.0\ndlogits = dlogits / n"
    },
    "dlogits_softmax_minus_one_hot": {
        "dlogits": "dlogits = (torch.softmax(logits, -1) - F.one_hot(Yb, vocab_size)) / Xb.shape[0]"
    },
    "dlogits_logsumexp": {
        "dlogits": "dlogits = (logits - logits.logsumexp(1, keepdim=True)).exp()\n"
        "dlogits[range(n), Yb] -= 1\ndlogits *= 1 / n"
    },
    "dlogits_in_place_on_the_cache": {  # the cache's logits changed in place: backward_pass's own
        "dlogits": "dlogits = logits.sub_(logits.max(1, keepdim=True).values).exp_()\n"
        "dlogits /= dlogits.sum(1, keepdim=True)\ndlogits[range(n), Yb] -= 1\ndlogits /= n"
    },
    "dlogits_scatter_add": {
        "dlogits": "dlogits = F.softmax(logits, dim=1).scatter_add(1, Yb.unsqueeze(1), -torch.ones(n, 1)) / n"
    },
    "layer2_t_methods": {"layer2": "dh = dlogits @ W2.t()\ndW2 = h.t() @ dlogits\ndb2 = dlogits.sum(dim=0)"},
    "layer2_einsum": {
        "layer2": "dh = torch.einsum('nk,hk->nh', dlogits, W2)\n"
        "dW2 = torch.einsum('nh,nk->hk', h, dlogits)\ndb2 = torch.einsum('nk->k', dlogits)"
    },
    "layer2_mm_mT_ones": {
        "layer2": "dh = torch.matmul(dlogits, W2.mT)\ndW2 = torch.mm(h.transpose(0, 1), dlogits)\n"
        "db2 = torch.ones(n) @ dlogits"
    },
    "tanh_recomputed": {"tanh": "dhpreact = (1 - torch.tanh(cache['hpreact']) ** 2) * dh"},
    "tanh_in_place": {"tanh": "dhpreact = dh.clone()\ndhpreact *= 1 - h * h"},
    # BatchNorm, in its published forms
    "bn_means": {
        "batchnorm": BN_GRADS + "dhprebn = bngain * bnvar_inv * (dhpreact - dhpreact.mean(0, keepdim=True) "
        "- n / (n - 1) * bnraw * (dhpreact * bnraw).mean(0, keepdim=True))"
    },
    "bn_one_over_n_keepdim": {
        "batchnorm": BN_GRADS + "dhprebn = bngain * bnvar_inv * (1 / n) * (n * dhpreact "
        "- dhpreact.sum(0, keepdim=True) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0, keepdim=True))"
    },
    "bn_n_minus_1_from_its_grads": {
        "batchnorm": BN_GRADS + "dhprebn = bngain * bnvar_inv * (dhpreact - dbnbias / n - bnraw * dbngain / (n - 1))"
    },
    "bn_three_paths_bndiff": {
        "batchnorm": BN_GRADS + "bndiff = cache['hprebn'] - cache['bnmeani']\ndxhat = bngain * dhpreact\n"
        "dvar = (dxhat * bndiff).sum(0, keepdim=True) * -0.5 * bnvar_inv**3\ndmu = -(dxhat * bnvar_inv).sum(0)\n"
        "dhprebn = dxhat * bnvar_inv + dvar * 2 * bndiff / (n - 1) + dmu / n"
    },
    "bn_rsqrt_of_bnvar": {
        "batchnorm": BN_GRADS + "s = torch.rsqrt(cache['bnvar'] + 1e-5)\n"
        "xhat = (cache['hprebn'] - cache['hprebn'].mean(0)) * s\ndy = bngain * dhpreact\n"
        "dhprebn = s / n * (n * dy - dy.sum(0) - n / (n - 1) * xhat * (dy * xhat).sum(0))"
    },
    "layer1_transposed_product": {
        "layer1": "dembcat = torch.mm(dhprebn, W1.t())\ndW1 = (dhprebn.T @ embcat).T\n"
        "db1 = dhprebn.sum(0, keepdim=False)"
    },
    "db1_zeros_by_shape": {"layer1": BACKWARD["layer1"].replace("dhprebn.sum(0)", "torch.zeros(n_hidden)")},
    # the embedding: dC accumulated in every way that adds up repeated characters
    "dC_index_add_out_of_place": {
        "embedding": EMB + "dC = torch.zeros_like(C).index_add(0, Xb.flatten(), demb.reshape(-1, n_embd))"
    },
    "dC_index_put_accumulate": {
        "embedding": EMB + "dC = torch.zeros_like(C)\n"
        "dC.index_put_((Xb.view(-1),), demb.view(-1, n_embd), accumulate=True)"
    },
    "dC_scatter_add": {
        "embedding": EMB + "dC = torch.zeros_like(C).scatter_add_(0, Xb.view(-1, 1).expand(-1, n_embd), "
        "demb.view(-1, n_embd))"
    },
    "dC_one_hot_einsum": {
        "embedding": EMB + "dC = torch.einsum('nbv,nbe->ve', F.one_hot(Xb, vocab_size).float(), demb)"
    },
    "dC_masked_sums": {"embedding": EMB + "dC = torch.stack([demb[Xb == i].sum(0) for i in range(vocab_size)])"},
    "dC_flat_loop": {
        "embedding": EMB + "dC = torch.zeros_like(C)\n"
        "for i, row in zip(Xb.view(-1).tolist(), demb.view(-1, n_embd)):\n    dC[i] += row"
    },
    "dC_buffer_zeroed_each_call": {  # made once (EXTRA_CELLS), zeroed at every call
        "embedding": EMB + "dC = dC_total.zero_()\ndC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))"
    },
    "dC_from_reshaped_dembcat": {
        "embedding": "demb = dembcat.reshape(n, block_size, n_embd)\ndC = torch.zeros(vocab_size, n_embd)\n"
        "for j in range(block_size):\n    dC.index_add_(0, Xb[:, j], demb[:, j])"
    },
}
ALTERNATIVES["backward_in_no_grad_returns_tuple"] = {
    "answer_backward_pass": no_grad(backward() + "\nreturn dC, dW1, db1, dW2, db2, dbngain, dbnbias")
}
OTHER_CELLS = {  # the update
    "update_sub_alpha": update(training_step("p.sub_(grad, alpha=lr)")),
    "update_add_negative": update(training_step("p.add_(-lr * grad)")),
    "update_named_parameters": update(
        "grads = backward_pass(Xb, Yb, cache)\n"
        "for p, grad in zip([C, W1, b1, W2, b2, bngain, bnbias], grads):\n    p -= lr * grad"
    ),
    "update_no_grad_enumerate": update(
        no_grad(
            "grads = backward_pass(Xb, Yb, cache)\nfor i, grad in enumerate(grads):\n"
            "    parameters[i].data.add_(grad, alpha=-lr)"
        )
    ),
    "update_step_size_named": update(  # the schedule's lr taken as given, under another name, as a float
        "step_size = float(lr)\ngrads = backward_pass(Xb, Yb, cache)\n"
        "for p, grad in zip(parameters, grads):\n    p.data = p.data - step_size * grad"
    ),
    "update_torch_optim": update(  # its own gradients handed to torch.optim: no autograd (torch._dynamo is loaded)
        "grads = backward_pass(Xb, Yb, cache)\noptimizer = torch.optim.SGD(parameters, lr=lr)\noptimizer.zero_grad()\n"
        "for p, grad in zip(parameters, grads):\n    p.grad = grad\noptimizer.step()"
    ),
    # the calibration
    "calibration_var_mean": calibration("bnvar, bnmean = torch.var_mean(hprebn_all, 0, keepdim=True)"),
    "calibration_by_hand": calibration(
        "m = hprebn_all.shape[0]\nbnmean = hprebn_all.sum(0, keepdim=True) / m\n"
        "bnvar = ((hprebn_all - bnmean) ** 2).sum(0, keepdim=True) / (m - 1)"
    ),
    # 1/182,625 of the variance: below the calibration's tolerance, as the course accepts (alt_lecture)
    "calibration_biased_correction_0": calibration(
        "bnmean = hprebn_all.mean(0, keepdim=True)\nbnvar = hprebn_all.var(0, keepdim=True, correction=0)"
    ),
    "calibration_std_squared": calibration(
        "bnmean = hprebn_all.mean(0, keepdim=True)\nbnvar = hprebn_all.std(0, keepdim=True) ** 2"
    ),
    "calibration_in_chunks": {
        "answer_calibration": "hprebn_all = torch.cat([C[Xtr[i : i + 10_000]].view(-1, block_size * n_embd) @ W1 "
        "+ b1 for i in range(0, len(Xtr), 10_000)])\nbnmean = hprebn_all.mean(0, keepdim=True)\n"
        "bnvar = hprebn_all.var(0, keepdim=True, unbiased=True)"
    },
    "calibration_named_steps": {
        "answer_calibration": "emb = C[Xtr]\nembcat = emb.view(emb.shape[0], -1)\nhpre = embcat @ W1 + b1\n"
        "bnmean = hpre.mean(dim=0, keepdim=True)\nbnvar = hpre.var(dim=0, keepdim=True)"
    },
}
ALTERNATIVES.update(OTHER_CELLS)

# student -> (answer cells or parts of backward_pass changed, {graded cell: (its points, words of its message)});
# every graded cell not named keeps all its points
DHPREBN = (0, "your dhprebn")
TANH = dict.fromkeys(["test_dbngain", "test_dbnbias", "test_dW1", "test_dC"], (0, "your dhpreact"))
NOT_DB1 = {g: (0, "") for g in GRADIENTS if g != "test_db1"}  # db1 is zero whatever reaches it: BatchNorm cancels b1
MISTAKES = {
    "bessel_forgotten": (
        {"batchnorm": BACKWARD["batchnorm"].replace("n / (n - 1) * bnraw", "bnraw")},
        {"test_dW1": (0, "your dhprebn: dhprebn is missing the factor n/(n-1)"), "test_dC": DHPREBN},
    ),
    "bngain_missing": (
        {"batchnorm": BACKWARD["batchnorm"].replace("bngain * bnvar_inv", "bnvar_inv")},
        {"test_dW1": (0, "your dhprebn: dhprebn is missing bngain"), "test_dC": DHPREBN},
    ),
    "dC_index_put_overwrites": (
        {"embedding": EMB + "dC = torch.zeros_like(C)\ndC.index_put_((Xb.view(-1),), demb.view(-1, n_embd))"},
        {"test_dC": (0, "index_put_ without accumulate=True")},
    ),
    "dW2_transposed": (
        {"layer2": BACKWARD["layer2"].replace("h.T @ dlogits", "dlogits.T @ h")},
        {"test_dW2": (0, "dW2 has shape (27, 200), but W2 has shape (200, 27): it looks transposed")},
    ),
    "dW1_from_dhpreact": (
        {"layer1": BACKWARD["layer1"].replace("dW1 = embcat.T @ dhprebn", "dW1 = embcat.T @ dhpreact")},
        {"test_dW1": (0, "the mistake is in dW1's own line")},
    ),
    "dbngain_no_keepdim": (  # right values, a dimension of size one dropped: half of the cell
        {"batchnorm": BACKWARD["batchnorm"].replace("dhpreact).sum(0, keepdim=True)", "dhpreact).sum(0)", 1)},
        {"test_dbngain": (0.5, "dimension 0 of size 1 was dropped")},
    ),
    "bn_mean_path_by_n_minus_1": (  # Bessel's n-1 on both paths; db1 is no longer zero either
        {"batchnorm": BACKWARD["batchnorm"].replace("- dhpreact.sum(0)", "- n / (n - 1) * dhpreact.sum(0)")},
        {"test_dW1": (0, "divides the path through the mean by n-1"), "test_dC": DHPREBN, "test_db1": DHPREBN},
    ),
    "dlogits_not_divided_by_n": (
        {"dlogits": "dlogits = F.softmax(logits, 1) - F.one_hot(Yb, vocab_size)"},
        {**NOT_DB1, "test_dW2": (0, "your dlogits: dlogits is n = 32 times too large")},
    ),
    "dlogits_column_index": (
        {"dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[:, Yb] -= 1\ndlogits /= n"},
        {**NOT_DB1, "test_dbngain": (0, "your dlogits: dlogits has the target's term at every example's target")},
    ),
    "tanh_of_hpreact": ({"tanh": "dhpreact = (1.0 - cache['hpreact'] ** 2) * dh"}, TANH),
    "tanh_not_squared": ({"tanh": "dhpreact = (1.0 - h) * dh"}, TANH),
    "db2_mean": (
        {"layer2": BACKWARD["layer2"].replace(".sum(0)", ".mean(0)")},
        {"test_db2": (0, "32 times too small")},
    ),
    "dbngain_from_hpreact": (
        {"batchnorm": BACKWARD["batchnorm"].replace("(bnraw * dhpreact)", "(cache['hpreact'] * dhpreact)")},
        {"test_dbngain": (0, "the mistake is in dbngain's own line")},
    ),
    "demb_wrong_layout": (
        {
            "embedding": "demb = dembcat.view(n, n_embd, block_size).transpose(1, 2).contiguous()\n"
            + BACKWARD["embedding"].split("\n", 1)[1]
        },
        {"test_dC": (0, "the first wrong gradient on the way back from the loss is your demb")},
    ),
    "dC_buffer_never_zeroed": (  # a buffer made once (EXTRA_CELLS) and added into at every call
        {"embedding": EMB + "dC = dC_total\ndC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))"},
        {"test_dC": (0, "backward_pass gave another dC when it was called a second time on the same batch")},
    ),
    "autograd_for_dlogits": (  # autograd for one step: backward_pass and its training earn nothing
        {
            "dlogits": "lg = logits.detach().requires_grad_()\nwith torch.enable_grad():\n"
            "    F.cross_entropy(lg, Yb).backward()\ndlogits = lg.grad"
        },
        {**{g: (0, "backward_pass uses autograd") for g in GRADIENTS}, "test_training": (0, "backward_pass uses")},
    ),
    "autograd_in_training_step": (
        update(
            "with torch.enable_grad():\n    loss, _ = forward(Xb, Yb)\n"
            "    grads = torch.autograd.grad(loss, parameters)\nfor p, g in zip(parameters, grads):\n    p -= lr * g"
        ),
        {"test_training": (0, "training_step uses autograd")},
    ),
    "update_sign_data": (update(training_step("p.data -= -lr * grad")), {"test_training": (0, "the loss goes up")}),
    "update_fixed_lr": (
        update(training_step("p += -0.1 * grad")),
        {"test_training": (1, "the run departs when the learning rate drops to 0.01")},
    ),
    "update_skips_batchnorm": (
        update(training_step("p += -lr * grad").replace("zip(parameters, grads)", "zip(parameters[:5], grads)")),
        {"test_training": (1, "training_step never changed bngain, bnbias")},
    ),
    "calibration_std": (
        calibration("bnmean = hprebn_all.mean(0, keepdim=True)\nbnvar = hprebn_all.std(0, keepdim=True)"),
        {"test_calibration": (1, "bnvar is the standard deviation")},
    ),
    "calibration_without_b1": (
        {"answer_calibration": CALIBRATION.format(X="Xtr").replace(" + b1", "")},
        {"test_calibration": (1, "bnmean is the mean of C[Xtr] viewed as rows, times W1, without b1")},
    ),
    "calibration_validation_set": (
        {"answer_calibration": CALIBRATION.format(X="Xdev")},
        {"test_calibration": (0, "over the validation set")},
    ),
    "calibration_no_keepdim": (  # right values: half of each statistic's point, as any step's shape
        calibration("bnmean = hprebn_all.mean(0)\nbnvar = hprebn_all.var(0)"),
        {"test_calibration": (1, "keep dimension 0 (keepdim=True)")},
    ),
}
BUFFER = [("answer_backward_pass", "dC_total = torch.zeros_like(C)")]  # a cell of the student's
EXTRA_CELLS = {"dC_buffer_never_zeroed": BUFFER, "dC_buffer_zeroed_each_call": BUFFER}
XFAIL = {}  # case -> why the grader gets it wrong (xfail, strict)


def _cells(changes: dict) -> dict:
    parts = {k: v for k, v in changes.items() if k in BACKWARD}
    cells = {k: v for k, v in changes.items() if k not in BACKWARD}
    return {"answer_backward_pass": backward(**parts), **cells} if parts else cells


def _parts(changes: dict) -> set:
    """The parts of backward_pass (all of them for the whole cell) and other answer cells that ``changes`` writes."""
    return {p for k in changes for p in (BACKWARD if k == "answer_backward_pass" else (k,))}


def _packed(alternatives: dict) -> dict:
    """student -> the alternatives graded together in their notebook: alternatives of different parts share a student
    (9 students instead of 40, each a training run of its own), so a point lost still names the part, and with it
    the alternative."""
    packs = []  # (the parts written, {alternative: changes})
    for name, changes in alternatives.items():
        parts = _parts(changes)
        written, pack = next(((w, p) for w, p in packs if not parts & w), (set(), {}))
        if not pack:
            packs.append((written, pack))
        written |= parts
        pack[name] = changes
    return {f"alternatives_{i}": pack for i, (_, pack) in enumerate(packs, 1)}


PACKED = _packed(ALTERNATIVES)
PACK_OF = {name: student for student, pack in PACKED.items() for name in pack}


@pytest.fixture(scope="module")
def graded4():
    rel, src = release(NB), source_notebook(NB)
    class_ = {"solution": solved(rel, src)}
    for student, pack in PACKED.items():
        changes = {k: v for name in pack for k, v in pack[name].items()}
        extra = dict.fromkeys(cell for name in pack for cell in EXTRA_CELLS.get(name, ()))
        class_[student] = solved(rel, src, _cells(changes), list(extra))
    short = class_["short_max_steps"] = solved(rel, src)  # the grader trains its own run whatever max_steps says
    next(c for c in short.cells if c.source.startswith("max_steps =")).source = "max_steps = 20_000"
    for student, (changes, _) in MISTAKES.items():
        class_[student] = solved(rel, src, _cells(changes), EXTRA_CELLS.get(student, ()))
    return autograde(NB, class_)


@pytest.mark.parametrize("alternative", params(["solution", *ALTERNATIVES, "short_max_steps"], XFAIL))
def test_ex4_alternative_keeps_every_point(graded4, alternative):
    student = PACK_OF.get(alternative, alternative)
    graded = graded4[student]
    lost = {c: m for c, m in graded.messages.items() if not m.startswith("✔")}
    assert graded.lost() == [], (student, list(PACKED.get(student, ())), lost)


@pytest.mark.parametrize("student", params(MISTAKES, XFAIL))
def test_ex4_mistake_loses_exactly_its_cells(graded4, student):
    _, cells = MISTAKES[student]
    graded = graded4[student]
    assert {g: graded.points[g] for g in graded.lost()} == {c: p for c, (p, _) in cells.items()}, graded.messages
    for cell, (_, text) in cells.items():
        assert text in graded.messages[cell], graded.messages[cell]

"""An audit of the grader against more correct solutions and realistic mistakes, as students of the lecture write
them (published notebooks, common PyTorch idioms), beyond the known cases of tests/support/cases_ex*.py.

Every alternative must keep every point; every mistake must lose exactly its own graded cell (its downstream steps,
right for the student's own upstream gradients, keep theirs). Cases the grader gets wrong are marked xfail with
the reason.

It grades in process (tests/support/in_process.py), without kernels, but takes 15-30 s (Exercise 4's training runs):
it runs with the slow tier, to keep the fast one within its minute. The cases of tests/support/cases_ex*.py, which
the fast tier grades, hold one of each kind found here that the grader once got wrong.
"""

import nbformat
import pytest
from support.cases_ex4 import backward, training_step
from support.course import REPO
from support.in_process import autograde, source_notebook

from autograder.authoring.submissions import solved

NB1 = "ex1_atomic_backward"
NB2, NB3 = "ex2_cross_entropy_backward", "ex3_batchnorm_backward"
NB4 = "ex4_manual_training"


def release(name):
    return nbformat.read(REPO / "release" / "backprop_ninja" / f"{name}.ipynb", as_version=4)


# ---------------------------------------------------------------------------------------------------- Exercise 1
# Each student changes several answer cells, at most one alternative per cell: a lost point names its cell.
LOOP_DC = (
    "dC = torch.zeros_like(C)\nfor k in range(Xb.shape[0]):\n    for j in range(Xb.shape[1]):\n"
    "        ix = Xb[k, j]\n        dC[ix] += demb[k, j]"
)
EX1_ALTERNATIVES = {
    "alt1_a": {
        "answer_dlogprobs": "dlogprobs = torch.zeros((n, vocab_size))\ndlogprobs[torch.arange(n), Yb] = -1 / n",
        "answer_dprobs": "dprobs = probs**-1 * dlogprobs",
        "answer_dcounts_sum_inv": "dcounts_sum_inv = torch.sum(counts * dprobs, dim=1, keepdim=True)",
        "answer_dcounts_sum": "dcounts_sum = -1 / counts_sum**2 * dcounts_sum_inv",
        "answer_dcounts": "dcounts = counts_sum_inv * dprobs + dcounts_sum",
        "answer_dnorm_logits": "dnorm_logits = torch.exp(norm_logits) * dcounts",
        "answer_dlogit_maxes": "dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)",
        "answer_dlogits": "dlogits = dnorm_logits + F.one_hot(logits.argmax(1), num_classes=vocab_size) * dlogit_maxes",
        "answer_dh": "dh = torch.matmul(dlogits, W2.t())",
        "answer_dW2": "dW2 = torch.einsum('ni,nj->ij', h, dlogits)",
        "answer_db2": "db2 = dlogits.sum(0, keepdim=False)",
        "answer_dhpreact": "dhpreact = dh * (1 - torch.tanh(hpreact) ** 2)",
        "answer_dbngain": "dbngain = torch.einsum('ij,ij->j', bnraw, dhpreact).unsqueeze(0)",
        "answer_dbnbias": "dbnbias = dhpreact.sum(0).reshape(bnbias.shape)",
        "answer_dbnraw": "dbnraw = dhpreact * bngain",
        "answer_dbnvar_inv": "dbnvar_inv = torch.sum(bndiff * dbnraw, 0, keepdim=True)",
        "answer_dbnvar": "dbnvar = (-0.5 * (bnvar + 1e-5) ** -1.5) * dbnvar_inv",
        "answer_dbndiff2": "dbndiff2 = 1 / (n - 1) * torch.ones_like(bndiff2) * dbnvar",
        "answer_dbndiff": "dbndiff = 2 * bndiff * dbndiff2 + dbnraw * bnvar_inv",
        "answer_dbnmeani": "dbnmeani = -torch.sum(dbndiff, 0, keepdim=True)",
        "answer_dhprebn": "dhprebn = dbndiff + dbnmeani / n",
        "answer_dembcat": "dembcat = torch.einsum('nh,ih->ni', dhprebn, W1)",
        "answer_dW1": "dW1 = torch.einsum('ni,nh->ih', embcat, dhprebn)",
        "answer_db1": "db1 = torch.sum(dhprebn, dim=0)",
        "answer_demb": "demb = dembcat.view(n, block_size, n_embd)",
        "answer_dC": LOOP_DC,
        "answer_dC_index_add": "dC_index_add = torch.zeros_like(C)\n"
        "dC_index_add.index_add_(0, Xb.reshape(-1), demb.reshape(-1, n_embd))",
    },
    "alt1_b": {
        "answer_dlogprobs": "dlogprobs = torch.zeros_like(logprobs).scatter_(1, Yb.unsqueeze(1), -1.0 / n)",
        "answer_dprobs": "dprobs = dlogprobs\ndprobs /= probs",  # in place on dlogprobs, after its check
        "answer_dcounts_sum_inv": "dcounts_sum_inv = (dprobs * counts).sum(1).unsqueeze(1)",
        "answer_dcounts_sum": "dcounts_sum = -(counts_sum_inv**2) * dcounts_sum_inv",
        "answer_dcounts": "dcounts = dprobs * counts_sum_inv\ndcounts += dcounts_sum.expand_as(counts)",
        "answer_dlogit_maxes": "dlogit_maxes = -torch.sum(dnorm_logits, 1, keepdim=True)",
        "answer_dlogits": "dlogits = dnorm_logits.clone()\n"
        "dlogits.scatter_add_(1, logits.argmax(1, keepdim=True), dlogit_maxes)",
        "answer_dh": "dh = dlogits.mm(W2.transpose(0, 1))",
        "answer_dW2": "dW2 = h.t().mm(dlogits)",
        "answer_db2": "db2 = torch.sum(dlogits, 0)",
        "answer_dhpreact": "dhpreact = dh\ndhpreact *= 1 - h**2",  # in place on dh, after its check
        "answer_dbngain": "dbngain = (dhpreact * bnraw).sum(0).view(bngain.shape)",
        "answer_dbnvar": "dbnvar = -0.5 * bnvar_inv / (bnvar + 1e-5) * dbnvar_inv",
        "answer_dbndiff2": "dbndiff2 = dbnvar.expand_as(bndiff2) / (n - 1)",
        "answer_dbndiff": "dbndiff = (2 * bndiff) * dbndiff2 + bnvar_inv * dbnraw",
        "answer_dbnmeani": "dbnmeani = (-dbndiff).sum(0, keepdim=True)",
        "answer_dhprebn": "dhprebn = dbndiff + dbnmeani.expand_as(hprebn) / n",
        "answer_dW1": "dW1 = embcat.t() @ dhprebn",
        "answer_db1": "db1 = dhprebn.sum(0, keepdim=True).squeeze()",
        "answer_demb": "demb = dembcat.unflatten(1, (block_size, n_embd))",
        "answer_dC": "dC = torch.einsum('nbv,nbe->ve', F.one_hot(Xb, num_classes=vocab_size).float(), demb)",
        "answer_dC_index_add": "dC_index_add = torch.zeros(vocab_size, n_embd).index_add_(0, Xb.flatten(), "
        "demb.view(-1, n_embd))",
    },
    "alt1_c": {
        "answer_dlogprobs": "dlogprobs = torch.zeros_like(logprobs)\n"
        "dlogprobs[range(n), Yb] = -1.0 / logprobs.shape[0]",
        "answer_dcounts_sum_inv": "dcounts_sum_inv = (counts * dprobs).sum(1).view(-1, 1)",
        "answer_dlogits": "dlogits = torch.zeros_like(logits)\ndlogits[range(n), logits.max(1).indices] = 1\n"
        "dlogits = dlogits * dlogit_maxes + dnorm_logits",
        "answer_dh": "dh = torch.einsum('ij,kj->ik', dlogits, W2)",
        "answer_db2": "db2 = dlogits.sum(0, keepdim=True).view(-1)",
        "answer_dhpreact": "dhpreact = (1.0 - h.pow(2)) * dh",
        "answer_dbnvar": "dbnvar = -0.5 * torch.pow(bnvar + 1e-5, -1.5) * dbnvar_inv",
        "answer_dbndiff2": "dbndiff2 = torch.ones_like(bndiff2) * dbnvar / (n - 1)",
        "answer_dhprebn": (  # fused, bnvar_inv recomputed from bnvar, sums with keepdim
            "dhprebn = bngain * (bnvar + 1e-5) ** -0.5 / n * (n * dhpreact - dhpreact.sum(0, keepdim=True) "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0, keepdim=True))"
        ),
        "answer_demb": "demb = dembcat.reshape(emb.shape)",
        "answer_dC": "dC = (F.one_hot(Xb, num_classes=vocab_size).float().view(-1, vocab_size).T "
        "@ demb.view(-1, n_embd))",
    },
    "alt1_d": {
        "answer_dlogits": "dlogits = dnorm_logits.clone() + F.one_hot(logits.max(1).indices, logits.shape[1]) "
        "* dlogit_maxes",
        "answer_dbnvar": "dbnvar = -dbnvar_inv / (2 * (bnvar + 1e-5) ** 1.5)",
        "answer_dhprebn": (  # fused with means, n/(n-1) in front of the mean of the projection
            "dhprebn = bngain * bnvar_inv * (dhpreact - dhpreact.mean(0) "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).mean(0))"
        ),
        "answer_demb": "demb = dembcat.view(-1, 3, 10)",
        "answer_dC": "dC = torch.zeros_like(C)\ndC.index_put_((Xb,), demb, accumulate=True)",
    },
    "alt1_e": {
        "answer_dbnvar": "dbnvar = -0.5 * (bnvar + 1e-5).rsqrt() ** 3 * dbnvar_inv",
        "answer_dhprebn": (  # fused from the student's own dbngain and dbnbias (the lecture's Exercise 4 line)
            "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dbnbias - n / (n - 1) * bnraw * dbngain)"
        ),
        "answer_dC": "dC = torch.zeros((vocab_size, n_embd)).scatter_add_(0, "
        "Xb.view(-1, 1).expand(-1, n_embd), demb.view(-1, n_embd))",
    },
    "alt1_f": {
        "answer_dC": "dC = torch.zeros_like(C)\nfor i in range(n):\n    for j in range(block_size):\n"
        "        dC[Xb[i, j]] += demb[i, j]",
    },
    # Exercise 2's fused dlogits written in Exercise 1's dlogits cell (from logits, not from dnorm_logits)
    "alt1_fused_dlogits": {
        "answer_dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1\ndlogits /= n",
    },
    # float32 kept, dtype and device named
    "alt1_dtype_device": {
        "answer_dlogprobs": "dlogprobs = torch.zeros(n, vocab_size, dtype=torch.float32, device=logprobs.device)\n"
        "dlogprobs[range(n), Yb] = -1.0 / n",
        "answer_db1": "db1 = dhprebn.sum(0).to(torch.float32)",
        "answer_dW2": "dW2 = (h.T @ dlogits).float()",
    },
}

CMP = (  # the lecture's own checking helper, pasted into the first answer cell and called after every answer
    "def cmp(s, dt, t):\n    ex = torch.all(dt == t.grad).item()\n    app = torch.allclose(dt, t.grad)\n"
    "    maxdiff = (dt - t.grad).abs().max().item()\n"
    "    print(f'{s:15s} | exact: {str(ex):5s} | approximate: {str(app):5s} | maxdiff: {maxdiff}')\n\n\n"
)
EX1_ALTERNATIVES.update(
    {
        "alt1_cmp_helper": {
            "answer_dlogprobs": CMP + "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0 / n\n"
            "cmp('logprobs', dlogprobs, logprobs)",
            "answer_dprobs": "dprobs = (1.0 / probs) * dlogprobs\ncmp('probs', dprobs, probs)",
            "answer_dW2": "dW2 = h.T @ dlogits\ncmp('W2', dW2, W2)",
            "answer_dC": "dC = torch.zeros_like(C)\n"
            "dC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))\ncmp('C', dC, C)",
        },
        "alt1_no_grad_data_detach": {
            "answer_dlogprobs": "with torch.no_grad():\n    dlogprobs = torch.zeros_like(logprobs)\n"
            "    dlogprobs[range(n), Yb] = -1.0 / n",
            "answer_dprobs": "dprobs = (1.0 / probs.data) * dlogprobs",
            "answer_dh": "with torch.no_grad():\n    dh = dlogits @ W2.T",
            "answer_dW2": "dW2 = h.detach().T @ dlogits",
            "answer_dhpreact": "dhpreact = (1.0 - h.data**2) * dh",
            "answer_dbngain": "dbngain = (bnraw.detach() * dhpreact).sum(0, keepdim=True)",
            "answer_dembcat": "dembcat = dhprebn @ W1.data.T",
            "answer_dW1": "dW1 = embcat.detach().T @ dhprebn",
        },
        "alt1_loops_and_aliases": {
            "answer_dlogprobs": "dlogprobs = torch.zeros_like(logprobs)\nfor i in range(n):\n"
            "    dlogprobs[i, Yb[i]] = -1.0 / n",
            "answer_dcounts_sum_inv": "dcounts_sum_inv = (counts * dprobs).sum(1, keepdims=True)",
            "answer_dbnvar_inv": "dbnvar_inv = (bndiff * dbnraw).sum(axis=0, keepdims=True)",
            "answer_dlogits": "dlogits = dnorm_logits + torch.where(logits == logit_maxes, dlogit_maxes, 0.0)",
            "answer_demb": "demb = dembcat.view(*emb.shape)",
            "answer_dC": "dC = torch.zeros(C.shape)\nfor i, row in enumerate(Xb):\n    for j, ix in enumerate(row):\n"
            "        dC[ix] += demb[i, j]",
        },
        "alt1_numpy_float32": {
            "answer_dh": "import numpy as np\ndh = torch.from_numpy(dlogits.detach().numpy() @ W2.detach().numpy().T)",
            "answer_db2": "db2 = torch.tensor(dlogits.detach().numpy().sum(0))",
        },
        "alt1_reused_names": {  # a constant of one cell reused in later cells
            "answer_dbndiff2": "bessel = 1.0 / (n - 1)\ndbndiff2 = bessel * torch.ones_like(bndiff2) * dbnvar",
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
            "- n * bessel * bnraw * (dhpreact * bnraw).sum(0))",
            "answer_db1": "ones = torch.ones(n)\ndb1 = ones @ dhprebn",
            "answer_demb": "demb = dembcat.view(n, block_size, -1)",
        },
        # steps written out past their upstream gradient, from further up the graph (right values)
        "alt1_skip_dcounts_sum": {
            "answer_dcounts": "dcounts = counts_sum_inv * dprobs "
            "- counts_sum_inv**2 * (counts * dprobs).sum(1, keepdim=True)",
        },
        "alt1_skip_dlogit_maxes": {
            "answer_dlogits": "dlogits = dnorm_logits - F.one_hot(logits.argmax(1), vocab_size) "
            "* dnorm_logits.sum(1, keepdim=True)",
        },
        "alt1_softmax_jacobian": {
            "answer_dnorm_logits": "dnorm_logits = probs * (dprobs - (probs * dprobs).sum(1, keepdim=True))",
        },
        "alt1_skip_dbndiff2": {
            "answer_dbndiff": "dbndiff = bnvar_inv * dbnraw - bnvar_inv**3 * bndiff "
            "* (bndiff * dbnraw).sum(0, keepdim=True) / (n - 1)",
        },
        "alt1_torch_tensor_copy": {  # torch.tensor(a tensor): right, with PyTorch's UserWarning on stderr
            "answer_dbnbias": "dbnbias = torch.tensor(dhpreact.sum(0, keepdim=True))",
        },
    }
)

# student -> (answer cells changed, the one step that must lose its points)
EX1_MISTAKES = {
    "m1_dlogits_assign_at_max": (
        {
            "answer_dlogits": "dlogits = dnorm_logits.clone()\n"
            "dlogits[range(n), logits.max(1).indices] = dlogit_maxes.view(-1)"
        },
        "logits",
    ),
    "m1_dlogits_max_values": (  # the forward value of the max instead of its gradient
        {
            "answer_dlogits": "dlogits = dnorm_logits.clone()\n"
            "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * logits.max(1).values[:, None]"
        },
        "logits",
    ),
    "m1_fused_dlogits_no_n": (
        {"answer_dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1"},
        "logits",
    ),
    "m1_bnraw_from_dh": ({"answer_dbnraw": "dbnraw = bngain * dh"}, "bnraw"),
    "m1_dC_sum": ({"answer_dC": "dC = demb.sum((0, 1))"}, "C"),
    "m1_dC_flat_assign": (
        {"answer_dC": "dC = torch.zeros_like(C)\ndC[Xb.view(-1)] = demb.view(-1, n_embd)"},
        "C",
    ),
    "m1_dC_loop_assign": (
        {
            "answer_dC": "dC = torch.zeros_like(C)\nfor k in range(Xb.shape[0]):\n    for j in range(Xb.shape[1]):\n"
            "        ix = Xb[k, j]\n        dC[ix] = demb[k, j]"
        },
        "C",
    ),
    "m1_fused_no_bessel": (
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
            "- bnraw * (dhpreact * bnraw).sum(0))"
        },
        "hprebn",
    ),
    "m1_bnvar_power": ({"answer_dbnvar": "dbnvar = -0.5 * bnvar_inv**1.5 * dbnvar_inv"}, "bnvar"),
    "m1_dembcat_transposed": ({"answer_dembcat": "dembcat = W1 @ dhprebn.T"}, "embcat"),
    "m1_dW1_raises": ({"answer_dW1": "dW1 = embcat @ dhprebn"}, "W1"),  # a shape error: its cell stops before dW1
    "m1_db1_wrong_axis": ({"answer_db1": "db1 = dhprebn.sum(1)"}, "b1"),
    "m1_dprobs_log": ({"answer_dprobs": "dprobs = probs.log() * dlogprobs"}, "probs"),
    "m1_dcounts_sum_inv_no_sum": ({"answer_dcounts_sum_inv": "dcounts_sum_inv = counts * dprobs"}, "counts_sum_inv"),
}


def no_grad(code: str) -> str:
    return "with torch.no_grad():\n" + "\n".join("    " + line for line in code.split("\n"))


# Rule mistakes (right values on every batch, wrong rule) that the probe catches when written plainly
# (tests/support/cases_ex1.py RULE_MISTAKES), here inside a `with torch.no_grad():` block, as students wrap manual
# gradient code, or an `if`, which the probe re-runs whole.
EX1_MISTAKES.update(
    {
        "m1_nograd_dlogits_no_max_path": ({"answer_dlogits": no_grad("dlogits = dnorm_logits.clone()")}, "logits"),
        "m1_nograd_logit_maxes_sign": (
            {"answer_dlogit_maxes": no_grad("dlogit_maxes = dnorm_logits.sum(1, keepdim=True)")},
            "logit_maxes",
        ),
        "m1_nograd_db1_mean": ({"answer_db1": no_grad("db1 = dhprebn.mean(0)")}, "b1"),
        "m1_if_dlogits_no_max_path": ({"answer_dlogits": "if True:\n    dlogits = dnorm_logits.clone()"}, "logits"),
    }
)
EX1_XFAIL = {}  # student -> why the grader gets it wrong (strict xfail): none


@pytest.fixture(scope="module")
def graded1():
    rel, src = release(NB1), source_notebook(NB1)
    class_ = {"solution": solved(rel, src)}
    for student, changes in EX1_ALTERNATIVES.items():
        class_[student] = solved(rel, src, changes)
    for student, (changes, _) in EX1_MISTAKES.items():
        class_[student] = solved(rel, src, changes)
    return autograde(NB1, class_)


def lost_steps(graded, student) -> list:
    return [g.removeprefix("test_d") for g in graded[student].lost()]


def _params(cases, xfail):
    return [pytest.param(s, marks=pytest.mark.xfail(reason=xfail[s], strict=True)) if s in xfail else s for s in cases]


@pytest.mark.parametrize("student", _params(["solution", *EX1_ALTERNATIVES], EX1_XFAIL))
def test_ex1_alternative_keeps_every_point(graded1, student):
    assert lost_steps(graded1, student) == [], {
        c: m for c, m in graded1[student].messages.items() if not m.startswith("✔")
    }


@pytest.mark.parametrize("student", _params(EX1_MISTAKES, EX1_XFAIL))
def test_ex1_mistake_loses_exactly_its_step(graded1, student):
    _, step = EX1_MISTAKES[student]
    assert lost_steps(graded1, student) == [step], {
        c: (graded1[student].points[c], m) for c, m in graded1[student].messages.items() if not m.startswith("✔")
    }
    assert graded1[student].points[f"test_d{step}"] == 0, graded1[student].messages[f"test_d{step}"]


# ------------------------------------------------------------------------------------------------ Exercises 2, 3
EX23_ALTERNATIVES = {
    "alt23_a": {
        NB2: {
            "answer_loss_fast": "loss_fast = F.cross_entropy(logits, Yb, reduction='mean')",
            "answer_dlogits": "dlogits = F.softmax(logits, dim=-1) - F.one_hot(Yb, num_classes=vocab_size)\n"
            "dlogits = dlogits / n",
        },
        NB3: {
            "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) "
            "* (hprebn.var(0, keepdim=True) + 1e-5) ** -0.5 + bnbias",
            "answer_dbngain": "dbngain = torch.sum(bnraw * dhpreact, 0, keepdim=True)",
            "answer_dbnbias": "dbnbias = dhpreact.sum(0, keepdim=True)",
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0, keepdim=True) "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0, keepdim=True))",
        },
    },
    "alt23_b": {
        NB2: {
            "answer_loss_fast": "loss_fast = (torch.logsumexp(logits, 1) - logits[range(n), Yb]).mean()",
            "answer_dlogits": "dlogits = F.softmax(logits, 1).clone()\ndlogits[torch.arange(n), Yb] -= 1.0\n"
            "dlogits *= 1 / n",
        },
        NB3: {
            "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0)) * torch.rsqrt("
            "hprebn.var(0, unbiased=True) + 1e-5) + bnbias",
            "answer_dhprebn": (  # bnvar_inv recomputed, then the mean form with n-1 in the projection
                "dhprebn = bngain * (bnvar + 1e-5) ** -0.5 * (dhpreact - dhpreact.mean(0, keepdim=True) "
                "- bnraw * (dhpreact * bnraw).sum(0, keepdim=True) / (n - 1))"
            ),
            "answer_dhprebn_biased": "dhprebn_biased = bngain * bnvar_inv_biased / n * (n * dhpreact_biased "
            "- dhpreact_biased.sum(0, keepdim=True) - bnraw_biased * (dhpreact_biased * bnraw_biased)"
            ".sum(0, keepdim=True))",
        },
    },
    "alt23_c": {
        NB2: {
            "answer_loss_fast": "loss_fast = -F.log_softmax(logits, 1).gather(1, Yb.unsqueeze(1)).mean()",
            "answer_dlogits": "dlogits = torch.exp(F.log_softmax(logits, 1))\n"
            "dlogits.scatter_add_(1, Yb.view(-1, 1), -torch.ones(n, 1))\ndlogits /= n",
        },
        NB3: {
            "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) "
            "/ hprebn.var(0, keepdim=True, correction=1).add(1e-5).sqrt() + bnbias",
            "answer_dhprebn": (  # the three-term form of the lecture's derivation, with the loss's mean
                "dxhat = bngain * dhpreact\n"
                "dhprebn = bnvar_inv / n * (n * dxhat - dxhat.sum(0) - n / (n - 1) * bnraw * (dxhat * bnraw).sum(0))"
            ),
            "answer_dhprebn_biased": "dhprebn_biased = bngain * bnvar_inv_biased * (dhpreact_biased "
            "- dhpreact_biased.mean(0, keepdim=True) - bnraw_biased * (dhpreact_biased * bnraw_biased)"
            ".mean(0, keepdim=True))",
        },
    },
    "alt23_d": {
        NB2: {"answer_loss_fast": "loss_fast = torch.nn.CrossEntropyLoss()(logits, Yb)"},
        NB3: {
            "answer_dhprebn": no_grad(
                "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
                "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
            )
        },
    },
}

# student -> (notebook, answer cells changed, graded cells that must lose every point)
EX23_MISTAKES = {
    "m23_divide_before_subtract": (
        NB2,
        {"answer_dlogits": "dlogits = F.softmax(logits, 1) / n\ndlogits[range(n), Yb] -= 1"},
        ["test_dlogits", "test_dlogits_rows"],
    ),
    "m23_dhprebn_no_gain_nograd": (
        NB3,
        {
            "answer_dhprebn": no_grad(
                "dhprebn = bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
                "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
            )
        },
        ["test_dhprebn"],
    ),
    "m23_dhprebn_no_bessel_mean": (
        NB3,
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv * (dhpreact - dhpreact.mean(0) "
            "- bnraw * (dhpreact * bnraw).sum(0) / n)"
        },
        ["test_dhprebn"],
    ),
}


@pytest.fixture(scope="module")
def graded23():
    out = {}
    for name in (NB2, NB3):
        rel, src = release(name), source_notebook(name)
        class_ = {"solution": solved(rel, src)}
        for student, changes in EX23_ALTERNATIVES.items():
            class_[student] = solved(rel, src, changes.get(name, {}))
        for student, (book, changes, _) in EX23_MISTAKES.items():
            if book == name:
                class_[student] = solved(rel, src, changes)
        out[name] = autograde(name, class_)
    return out


@pytest.mark.parametrize("notebook", [NB2, NB3])
@pytest.mark.parametrize("student", ["solution", *EX23_ALTERNATIVES])
def test_ex2_ex3_alternative_keeps_every_point(graded23, notebook, student):
    graded = graded23[notebook][student]
    assert graded.lost() == [], {c: m for c, m in graded.messages.items() if not m.startswith("✔")}


@pytest.mark.parametrize("student", EX23_MISTAKES)
def test_ex2_ex3_mistake_loses_exactly_its_cells(graded23, student):
    book, _, cells = EX23_MISTAKES[student]
    graded = graded23[book][student]
    assert graded.lost() == sorted(cells), graded.messages
    assert all(graded.points[c] == 0 for c in cells), {c: graded.messages[c] for c in cells}


# -------------------------------------------------------------------------------------------------- Exercise 4
EX4_ALTERNATIVES = {
    "alt4_tuple_and_variants": {
        "answer_backward_pass": (
            "dlogits = (F.softmax(logits, 1) - F.one_hot(Yb, num_classes=vocab_size)) / n\n"
            "dh = torch.matmul(dlogits, W2.T)\ndW2 = torch.einsum('ni,nj->ij', h, dlogits)\n"
            "db2 = dlogits.sum(0, keepdim=False)\ndhpreact = (1 - h * h) * dh\n"
            "dbngain = (bnraw * dhpreact).sum(0, keepdim=True)\ndbnbias = dhpreact.sum(0, keepdim=True)\n"
            "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dbnbias - n / (n - 1) * bnraw * dbngain)\n"
            "dembcat = dhprebn @ W1.T\ndW1 = torch.einsum('ni,nh->ih', embcat, dhprebn)\ndb1 = dhprebn.sum(0)\n"
            "demb = dembcat.view(-1, block_size, n_embd)\ndC = torch.zeros_like(C)\n"
            "for k in range(Xb.shape[0]):\n    for j in range(Xb.shape[1]):\n        dC[Xb[k, j]] += demb[k, j]\n"
            "return (dC, dW1, db1, dW2, db2, dbngain, dbnbias)"
        ),
        "answer_training_step": training_step("p.data -= lr * grad"),
    },
    "alt4_nograd_update": {
        "answer_training_step": "grads = backward_pass(Xb, Yb, cache)\nwith torch.no_grad():\n"
        "    for p, grad in zip(parameters, grads):\n        p -= lr * grad",
    },
    "alt4_copy_update": {"answer_training_step": training_step("p.copy_(p - lr * grad)")},
    "alt4_data_rebinding": {"answer_training_step": training_step("p.data = p.data - lr * grad")},
    "alt4_indexed_update": {
        "answer_training_step": "grads = backward_pass(Xb, Yb, cache)\nfor i in range(len(parameters)):\n"
        "    parameters[i].data += -lr * grads[i]",
    },
    "alt4_onehot_dC_full_backward_nograd": {
        "answer_backward_pass": no_grad(
            backward(
                embedding="demb = dembcat.view(emb.shape)\n"
                "dC = F.one_hot(Xb, vocab_size).float().view(-1, vocab_size).T @ demb.view(-1, n_embd)"
            )
        ),
    },
}

# New tensors put into the parameters list: forward reads `parameters`, so training runs, but the notebook's C, W1,
# ... keep their initial values (the calibration cell reads them).
EX4_REASSIGNED = {
    "answer_training_step": "grads = backward_pass(Xb, Yb, cache)\n"
    "for i, (p, grad) in enumerate(zip(parameters, grads)):\n"
    "    parameters[i] = p - lr * grad",
}

EX4_MISTAKES = {  # student -> (changes, graded cells that must lose points)
    "m4_update_without_lr": ({"answer_training_step": training_step("p -= grad")}, ["test_training"]),
    "m4_dC_assign": (
        {
            "answer_backward_pass": backward(
                embedding="demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\n"
                "dC[Xb.view(-1)] = demb.view(-1, n_embd)"
            )
        },
        ["test_dC"],
    ),
    "m4_dlogits_no_n": (
        {"answer_backward_pass": backward(dlogits="dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1")},
        ["test_dC", "test_dW1", "test_dW2", "test_db2", "test_dbngain", "test_dbnbias"],
    ),
}


@pytest.fixture(scope="module")
def graded4():
    rel, src = release(NB4), source_notebook(NB4)
    class_ = {"solution": solved(rel, src), "alt4_reassigned": solved(rel, src, EX4_REASSIGNED)}
    for student, changes in EX4_ALTERNATIVES.items():
        class_[student] = solved(rel, src, changes)
    for student, (changes, _) in EX4_MISTAKES.items():
        class_[student] = solved(rel, src, changes)
    return autograde(NB4, class_)


@pytest.mark.parametrize("student", ["solution", *EX4_ALTERNATIVES])
def test_ex4_alternative_keeps_every_point(graded4, student):
    graded = graded4[student]
    assert graded.lost() == [], {c: m for c, m in graded.messages.items() if not m.startswith("✔")}


@pytest.mark.parametrize("student", EX4_MISTAKES)
def test_ex4_mistake_loses_its_cells(graded4, student):
    _, cells = EX4_MISTAKES[student]
    assert graded4[student].lost() == sorted(cells), graded4[student].messages


def test_ex4_new_tensors_in_the_parameters_list_cost_the_training_run(graded4):
    """The notebook's C, W1, ... stay as they were (backward_pass reads them): the training run loses its follow
    points, and nothing else (the calibration matches the parameters the notebook holds)."""
    graded = graded4["alt4_reassigned"]
    assert graded.lost() == ["test_training"], graded.messages["test_training"]

"""Exercises 2 and 3's known students: mistakes, alternative correct formulas, cheats.

One table of cases, graded two ways: every case in process (tests/fast/test_ex2_ex3_in_process.py), and a
few representative ones through the real nbgrader pipeline (tests/slow/test_ex2_ex3_pipeline.py).
"""

from autograder.authoring.submissions import grade_id, solved
from autograder.common.naming import SETUP_PREFIX
from autograder.engine.reference import run_setup
from support.read_grad import grad_through_sgd

NB2, NB3 = "ex2_cross_entropy_backward", "ex3_batchnorm_backward"
POINTS = {
    NB2: {"test_loss_fast": 1, "test_dlogits": 4, "test_dlogits_rows": 1},
    NB3: {"test_hpreact_fast": 2, "test_dbngain": 1, "test_dbnbias": 1, "test_dhprebn": 4, "test_dhprebn_biased": 2},
}

# mistake -> (notebook, answer cells changed, {graded cell that must lose its points: words its message must contain})
ROWS = "not to zero"
MISTAKES = {
    # Exercise 2: the fast loss
    "loss_sum": (
        NB2,
        {"answer_loss_fast": "loss_fast = F.cross_entropy(logits, Yb, reduction='sum')"},
        {"test_loss_fast": "32 times too large"},
    ),
    "loss_from_probs": (
        NB2,
        {"answer_loss_fast": "loss_fast = F.cross_entropy(probs, Yb)"},
        {"test_loss_fast": "from probabilities"},
    ),
    "loss_nll_of_logits": (
        NB2,
        {"answer_loss_fast": "loss_fast = F.nll_loss(logits, Yb)"},
        {"test_loss_fast": "log-probabilities"},
    ),
    "loss_shape": (
        NB2,
        {"answer_loss_fast": "loss_fast = F.cross_entropy(logits, Yb).view(1)"},
        {"test_loss_fast": "shape ()"},
    ),
    "loss_per_example": (  # one loss per example: the advice names reduction='none', not a .view
        NB2,
        {"answer_loss_fast": "loss_fast = F.cross_entropy(logits, Yb, reduction='none')"},
        {"test_loss_fast": "the mean over the batch, a tensor of shape () (no reduction='none'"},
    ),
    "loss_column_index": (  # one number off: no "constant factor" (any two numbers differ by one)
        NB2,
        {"answer_loss_fast": "loss_fast = -torch.log(F.softmax(logits, 1)[:, Yb]).mean()"},
        {"test_loss_fast": "loss_fast is not equal to loss: 1 of 1 entries differ"},
    ),
    # Exercise 2: dlogits
    "dlogits_no_n": (
        NB2,
        {"answer_dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1"},
        {"test_dlogits": "n = 32 times too large"},
    ),
    "dlogits_times_n": (  # multiplied by n where it divides: n² off
        NB2,
        {"answer_dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1\ndlogits *= n"},
        {"test_dlogits": "n² = 1024 times too large"},
    ),
    "dlogits_softmax_dim0": (
        NB2,
        {"answer_dlogits": "dlogits = (F.softmax(logits, 0) - F.one_hot(Yb, 27)) / n"},
        {"test_dlogits": "softmax over the wrong dimension", "test_dlogits_rows": ROWS},
    ),
    "dlogits_one_everywhere": (
        NB2,
        {"answer_dlogits": "dlogits = (F.softmax(logits, 1) - 1) / n"},
        {"test_dlogits": "in every entry of every row", "test_dlogits_rows": ROWS},
    ),
    "dlogits_sign": (
        NB2,
        {"answer_dlogits": "dlogits = (F.one_hot(Yb, 27) - F.softmax(logits, 1)) / n"},
        {"test_dlogits": "wrong sign"},
    ),
    "dlogits_every_target": (
        NB2,
        {"answer_dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[:, Yb] -= 1\ndlogits /= n"},
        {"test_dlogits": "at every example's target", "test_dlogits_rows": ROWS},
    ),
    "dlogits_no_target": (
        NB2,
        {"answer_dlogits": "dlogits = F.softmax(logits, 1) / n"},
        {"test_dlogits": "no term for the target", "test_dlogits_rows": ROWS},
    ),
    "dlogits_one_hot_alone_by_n": (  # parentheses left out: every row sums to 1 - 1/n, said once, not as a range
        NB2,
        {"answer_dlogits": "dlogits = F.softmax(logits, 1) - F.one_hot(Yb, 27) / n"},
        {"test_dlogits": "entries wrong", "test_dlogits_rows": "the rows of dlogits sum to 0.969 each, not to zero"},
    ),
    "dlogits_log_softmax": (
        NB2,
        {"answer_dlogits": "dlogits = (F.log_softmax(logits, 1) - F.one_hot(Yb, 27)) / n"},
        {"test_dlogits": "log-probabilities", "test_dlogits_rows": ROWS},
    ),
    # Exercise 3: the BatchNorm forward in one expression
    "bn_biased_forward": (
        NB3,
        {
            "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) "
            "/ torch.sqrt(hprebn.var(0, keepdim=True, unbiased=False) + 1e-5) + bnbias"
        },
        {"test_hpreact_fast": "biased variance"},
    ),
    "bn_forward_wrong_dim": (
        NB3,
        {
            "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(1, keepdim=True)) "
            "/ torch.sqrt(hprebn.var(1, keepdim=True) + 1e-5) + bnbias"
        },
        {"test_hpreact_fast": "over its neurons (dimension 1)"},
    ),
    "bn_forward_no_bias": (
        NB3,
        {
            "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) "
            "/ torch.sqrt(hprebn.var(0, keepdim=True) + 1e-5)"
        },
        {"test_hpreact_fast": "missing bnbias"},
    ),
    "bn_forward_by_variance": (
        NB3,
        {"answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0)) / (hprebn.var(0) + 1e-5) + bnbias"},
        {"test_hpreact_fast": "standard deviation"},
    ),
    # Exercise 3: dbngain, dbnbias
    "dbngain_wrong_axis": (
        NB3,
        {"answer_dbngain": "dbngain = (bnraw * dhpreact).sum(1, keepdim=True)"},
        {"test_dbngain": "summed over dimension 1 instead of dimension 0"},
    ),
    "dbngain_transposed": (  # a sum, no matrix product: the advice is the shape of bngain
        NB3,
        {"answer_dbngain": "dbngain = (bnraw * dhpreact).sum(0, keepdim=True).T"},
        {"test_dbngain": "it looks transposed. Give it bngain's shape (no .T, and sum with keepdim=True)."},
    ),
    "dbnbias_keepdim": (NB3, {"answer_dbnbias": "dbnbias = dhpreact.sum(0)"}, {"test_dbnbias": "keepdim=True"}),
    # Exercise 3: dhprebn
    "dhprebn_no_bessel": (
        NB3,
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
            "- bnraw * (dhpreact * bnraw).sum(0))"
        },
        {"test_dhprebn": "missing the factor n/(n-1)"},
    ),
    "dhprebn_n_for_n_minus_1": (
        NB3,
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv * (dhpreact - dhpreact.mean(0) "
            "- bnraw * (dhpreact * bnraw).mean(0))"
        },
        {"test_dhprebn": "divides by n where n-1 belongs"},
    ),
    "dhprebn_n_minus_1_on_both_paths": (  # Bessel's n-1 put on the path through the mean too
        NB3,
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv * (dhpreact - dhpreact.sum(0) / (n - 1) "
            "- bnraw * (dhpreact * bnraw).sum(0) / (n - 1))"
        },
        {"test_dhprebn": "divides the path through the mean by n-1"},
    ),
    "dhprebn_biased_recomputed": (
        NB3,
        {
            "answer_dhprebn": (
                "s = (((hprebn - hprebn.mean(0)) ** 2).mean(0) + 1e-5) ** -0.5\nxb = (hprebn - hprebn.mean(0)) * s\n"
                "dhprebn = bngain * s / n * (n * dhpreact - dhpreact.sum(0) - xb * (dhpreact * xb).sum(0))"
            )
        },
        {"test_dhprebn": "biased variance"},
    ),
    "dhprebn_no_mean_term": (
        NB3,
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
        },
        {"test_dhprebn": "path through the mean"},
    ),
    "dhprebn_no_projection": (
        NB3,
        {"answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0))"},
        {"test_dhprebn": "path through the variance"},
    ),
    "dhprebn_variance_sign": (  # a plus where the path through the variance is subtracted
        NB3,
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
            "+ n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
        },
        {"test_dhprebn": "adds the path through the variance where it is subtracted"},
    ),
    "dhprebn_mean_sign": (
        NB3,
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact + dhpreact.sum(0) "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
        },
        {"test_dhprebn": "adds the path through the mean where it is subtracted"},
    ),
    "dhprebn_no_gain": (
        NB3,
        {
            "answer_dhprebn": "dhprebn = bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
        },
        {"test_dhprebn": "missing bngain"},
    ),
    "dhprebn_wrong_axis": (
        NB3,
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact "
            "- dhpreact.sum(1, keepdim=True) "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(1, keepdim=True))"
        },
        {"test_dhprebn": "sums over the wrong dimension"},
    ),
}

# Exercise 3, Part 4: dhprebn for the forward pass whose variance divides by n (setup_biased). mistake -> the kind of
# its diagnosis, beside the words of MISTAKES.
BIASED = "(dhpreact_biased * bnraw_biased).sum(0)"
MISTAKES.update(
    {
        "dhprebn_biased_keeps_bessel": (
            NB3,
            {
                "answer_dhprebn_biased": "dhprebn_biased = bngain * bnvar_inv_biased / n * (n * dhpreact_biased "
                f"- dhpreact_biased.sum(0) - n / (n - 1) * bnraw_biased * {BIASED})"
            },
            {"test_dhprebn_biased": "n-1 where this forward pass divides by n"},
        ),
        "dhprebn_biased_upside_down": (
            NB3,
            {
                "answer_dhprebn_biased": "dhprebn_biased = bngain * bnvar_inv_biased / n * (n * dhpreact_biased "
                f"- dhpreact_biased.sum(0) - (n - 1) / n * bnraw_biased * {BIASED})"
            },
            {"test_dhprebn_biased": "a factor (n-1)/n on the path through the variance"},
        ),
        "dhprebn_biased_copied": (
            NB3,
            {"answer_dhprebn_biased": "dhprebn_biased = dhprebn.clone()"},
            {"test_dhprebn_biased": "computed from the tensors of the first forward pass"},
        ),
        "dhprebn_biased_first_tensors": (  # the right constant, with the first forward pass's tensors
            NB3,
            {
                "answer_dhprebn_biased": "dhprebn_biased = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
                "- bnraw * (dhpreact * bnraw).sum(0))"
            },
            {"test_dhprebn_biased": "computed from the tensors of the first forward pass"},
        ),
        "dhprebn_biased_no_mean_term": (
            NB3,
            {
                "answer_dhprebn_biased": "dhprebn_biased = bngain * bnvar_inv_biased / n * (n * dhpreact_biased "
                f"- bnraw_biased * {BIASED})"
            },
            {"test_dhprebn_biased": "dhprebn_biased is missing the path through the mean"},
        ),
        "dhprebn_biased_no_epsilon": (
            NB3,
            {
                "answer_dhprebn_biased": "s = bnvar_biased**-0.5\n"
                "dhprebn_biased = bngain * s / n * (n * dhpreact_biased - dhpreact_biased.sum(0) "
                f"- bnraw_biased * {BIASED})"
            },
            {"test_dhprebn_biased": "dhprebn_biased is missing BatchNorm's epsilon"},
        ),
    }
)
KINDS = {
    "dhprebn_biased_keeps_bessel": "bessel",
    "dhprebn_biased_upside_down": "bessel",
    "dhprebn_biased_copied": "other_forward_pass",
    "dhprebn_biased_first_tensors": "other_forward_pass",
    "dhprebn_biased_no_mean_term": "missing_path",
    "dhprebn_biased_no_epsilon": "epsilon",
}

# student -> {notebook: answer cells changed}; every graded cell must keep its points
ALTERNATIVES = {
    "alt_a": {
        NB2: {
            "answer_loss_fast": "loss_fast = F.nll_loss(F.log_softmax(logits, 1), Yb)",
            "answer_dlogits": "dlogits = (F.softmax(logits, 1) - F.one_hot(Yb, 27)) / n",
        },
        NB3: {
            "answer_hpreact_fast": "hpreact_fast = (hprebn - hprebn.mean(0)) * torch.rsqrt(hprebn.var(0, correction=1) "
            "+ 1e-5) * bngain + bnbias",
            "answer_dbngain": "dbngain = torch.einsum('ij,ij->j', bnraw, dhpreact)[None]",
            "answer_dbnbias": "dbnbias = dhpreact.sum(0).view(1, -1)",
            # written with means instead of sums
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv * (dhpreact - dhpreact.mean(0, keepdim=True) "
            "- bnraw * (dhpreact * bnraw).sum(0, keepdim=True) / (n - 1))",
            "answer_dhprebn_biased": "dhprebn_biased = bngain * bnvar_inv_biased * (dhpreact_biased "
            "- dhpreact_biased.mean(0) - bnraw_biased * (dhpreact_biased * bnraw_biased).mean(0))",
        },
    },
    "alt_b": {
        NB2: {
            "answer_loss_fast": "loss_fast = F.cross_entropy(logits, Yb, reduction='none').mean()",
            "answer_dlogits": (
                "e = (logits - logits.max(1, keepdim=True).values).exp()\n"
                "dlogits = e / e.sum(1, keepdim=True)\n"
                "dlogits[range(n), Yb] -= 1\ndlogits = dlogits / n"
            ),
        },
        NB3: {
            "answer_hpreact_fast": (
                "xc = hprebn - hprebn.mean(0, keepdim=True)\n"
                "hpreact_fast = bngain * xc / ((xc**2).sum(0, keepdim=True) / (n - 1) + 1e-5)**0.5 "
                "+ bnbias"
            ),
            # from hprebn alone, without the forward pass's bnraw and bnvar_inv
            "answer_dhprebn": (
                "xc = hprebn - hprebn.mean(0, keepdim=True)\n"
                "s = ((xc**2).sum(0, keepdim=True) / (n - 1) + 1e-5) ** -0.5\nxhat = xc * s\n"
                "dhprebn = bngain * s / n * (n * dhpreact - dhpreact.sum(0, keepdim=True) "
                "- n / (n - 1) * xhat * (dhpreact * xhat).sum(0, keepdim=True))"
            ),
            # from hprebn_biased alone, its variance by torch.var
            "answer_dhprebn_biased": (
                "s = torch.rsqrt(hprebn_biased.var(0, keepdim=True, unbiased=False) + 1e-5)\n"
                "xhat = (hprebn_biased - hprebn_biased.mean(0, keepdim=True)) * s\n"
                "dy = dhpreact_biased\ndhprebn_biased = bngain * s * (dy - dy.mean(0) - xhat * (dy * xhat).mean(0))"
            ),
        },
    },
    "alt_c": {
        NB2: {"answer_dlogits": "dlogits = (logits.softmax(-1) - torch.eye(27)[Yb]) / n"},
        NB3: {
            "answer_dhprebn": (  # the atomic chain of Exercise 1, in one cell
                "dbnraw = bngain * dhpreact\ndbndiff = bnvar_inv * dbnraw\n"
                "dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)\n"
                "dbnvar = -0.5 * (bnvar + 1e-5) ** -1.5 * dbnvar_inv\n"
                "dbndiff += 2 * bndiff * torch.ones_like(bndiff2) / (n - 1) * dbnvar\n"
                "dhprebn = dbndiff.clone()\ndhprebn += -dbndiff.sum(0, keepdim=True) / n"
            ),
            "answer_dhprebn_biased": (  # the same chain through the biased forward pass: 1/n in dbndiff2
                "dbnraw = bngain * dhpreact_biased\ndbndiff = bnvar_inv_biased * dbnraw\n"
                "dbnvar_inv = (bndiff_biased * dbnraw).sum(0, keepdim=True)\n"
                "dbnvar = -0.5 * (bnvar_biased + 1e-5) ** -1.5 * dbnvar_inv\n"
                "dbndiff2 = torch.ones_like(bndiff2_biased) / n * dbnvar\n"
                "dbndiff += 2 * bndiff_biased * dbndiff2\n"
                "dbnmeani = -dbndiff.sum(0, keepdim=True)\n"
                "dhprebn_biased = dbndiff + torch.ones_like(hprebn_biased) / n * dbnmeani"
            ),
        },
    },
}

# student -> ({notebook: answer cells changed}, {notebook: {graded cell that must earn nothing: words}})
CHEATS = {
    "c_copy_grad": (
        {
            NB2: {"answer_dlogits": "dlogits = logits.grad.clone()"},
            NB3: {
                "answer_dbngain": "dbngain = bngain.grad",
                "answer_dhprebn": "dhprebn = hprebn.grad * 1.0",
                "answer_dhprebn_biased": "dhprebn_biased = hprebn_biased.grad.clone()",
            },
        },
        {
            NB2: {"test_dlogits": "autograd", "test_dlogits_rows": "autograd"},
            NB3: {"test_dbngain": "autograd", "test_dhprebn": "autograd", "test_dhprebn_biased": "autograd"},
        },
    ),
    "c_hidden_grad": (
        {
            NB2: {"answer_dlogits": grad_through_sgd("logits", "dlogits")},
            NB3: {"answer_dhprebn": grad_through_sgd("hprebn", "dhprebn")},
        },
        {
            NB2: {"test_dlogits": "logits.grad", "test_dlogits_rows": "logits.grad"},
            NB3: {"test_dhprebn": "hprebn.grad"},
        },
    ),
    # the given upstream gradient zeroed: every answer is then zero, and must earn nothing
    "c_zero_upstream": (
        {
            NB3: {
                "answer_dbngain": "dhpreact = torch.zeros_like(dhpreact)\n"
                "dbngain = (bnraw * dhpreact).sum(0, keepdim=True)"
            }
        },
        {NB3: {"test_dbngain": "all zeros", "test_dbnbias": "all zeros", "test_dhprebn": "all zeros"}},
    ),
}

# Issue 12: answers right on the notebook's own batch that copy the chunked forward pass or drop the epsilon.
RULE_MISTAKES = {
    "loss_copied": (
        NB2,
        {"answer_loss_fast": "loss_fast = loss.clone()"},
        {"test_loss_fast": "does not follow logits"},
    ),
    "hpreact_copied": (
        NB3,
        {"answer_hpreact_fast": "hpreact_fast = bngain * bnraw + bnbias"},
        {"test_hpreact_fast": "does not follow hprebn: it reads bnraw"},
    ),
    # the copy inside a comprehension whose variable an earlier cell bound (setup_biased's `for t in`): the probe
    # reads what the statement reads, not the comprehension's own t
    "hpreact_copied_by_columns": (
        NB3,
        {"answer_hpreact_fast": "hpreact_fast = bngain * torch.stack([t for t in bnraw.T], 1) + bnbias"},
        {"test_hpreact_fast": "does not follow hprebn: it reads bnraw"},
    ),
    "hpreact_no_epsilon": (
        NB3,
        {"answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0)) / hprebn.std(0) + bnbias"},
        {"test_hpreact_fast": "hpreact_fast is missing BatchNorm's epsilon"},
    ),
    "dhprebn_no_epsilon": (
        NB3,
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar**-0.5 / n * (n * dhpreact - dhpreact.sum(0) "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
        },
        {"test_dhprebn": "dhprebn is missing BatchNorm's epsilon"},
    ),
    "dhprebn_no_epsilon_recomputed": (
        NB3,
        {
            "answer_dhprebn": "s = hprebn.var(0, keepdim=True) ** -0.5\nxhat = (hprebn - hprebn.mean(0)) * s\n"
            "dhprebn = bngain * s / n * (n * dhpreact - dhpreact.sum(0) "
            "- n / (n - 1) * xhat * (dhpreact * xhat).sum(0))"
        },
        {"test_dhprebn": "dhprebn is missing BatchNorm's epsilon"},
    ),
}
MISTAKES.update(RULE_MISTAKES)

# logits detached in an answer cell, as students do to keep autograd out: the rows' locked cell must not read
# logits.grad (a crash there loses the point before the grader hears of the answer)
ALTERNATIVES["alt_detached_logits"] = {
    NB2: {"answer_loss_fast": "logits = logits.detach()\nloss_fast = F.cross_entropy(logits, Yb)"}
}

ALTERNATIVES["alt_gain_folded_into_dhpreact"] = {  # the answer changes its given upstream gradient by its own name
    NB3: {
        "answer_dhprebn": "dhpreact *= bngain\n"
        "dhprebn = bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
    }
}

ALTERNATIVES["alt_d"] = {
    NB2: {"answer_loss_fast": "loss_fast = -F.log_softmax(logits, 1)[range(n), Yb].mean()"},
    NB3: {  # from the student's own dbngain and dbnbias, as the lecture's Exercise 4 line does
        "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dbnbias - n / (n - 1) * bnraw * dbngain)"
    },
}

# Issue 24: lines after an answer that rebind what it read (bnbias zeroed, the lecture's loop variable n): each probe
# runs on what its statements read when they ran, so both answers keep their points.
ALTERNATIVES["alt_later_lines"] = {
    NB3: {
        "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / torch.sqrt("
        "hprebn.var(0, keepdim=True, unbiased=True) + 1e-5) + bnbias\nbnbias = torch.zeros_like(bnbias)",
        "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * "
        "(dhpreact * bnraw).sum(0))\nfor n in range(3):\n    pass",
        # n is 2 from here on: Part 4's answer, written after it, must do without n
        "answer_dhprebn_biased": "dhprebn_biased = bngain * bnvar_inv_biased * (dhpreact_biased "
        "- dhpreact_biased.mean(0) - bnraw_biased * (dhpreact_biased * bnraw_biased).mean(0))",
    }
}


def submissions(notebook: str, release, source) -> dict:
    """student -> notebook, every case above one student of its own (cheats and alternatives may change both)."""
    class_ = {"solution": solved(release, source), "blank": release}
    for mistake, (book, changes, _) in MISTAKES.items():
        if book == notebook:
            class_[mistake] = solved(release, source, changes)
    for student, changes in ALTERNATIVES.items():
        class_[student] = solved(release, source, changes.get(notebook, {}))
    for student, (changes, _) in CHEATS.items():
        if notebook in changes:
            class_[student] = solved(release, source, changes[notebook])
    visible = run_setup(tuple(c.source for c in source.cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647)
    pasted = (
        {"answer_dlogits": f"dlogits = torch.tensor({visible['logits'].grad.tolist()})"}
        if notebook == NB2
        else {"answer_dbnbias": f"dbnbias = torch.tensor({visible['bnbias'].grad.tolist()})"}
    )
    class_["c_pasted_values"] = solved(release, source, pasted)
    return class_

"""Exercises 2 and 3's known students: mistakes, alternative correct formulas, cheats.

One table of cases, graded two ways: every case in process (tests/fast/test_ex2_ex3_in_process.py), and a
few representative ones through the real nbgrader pipeline (tests/slow/test_ex2_ex3_pipeline.py).
"""

import base64

from autograder.authoring.submissions import grade_id, solved
from autograder.common.naming import ANSWER_MIME, SETUP_PREFIX
from autograder.engine.reference import run_setup
from support.read_grad import above_the_start, grad_through_sgd, read_above_the_start, start_moved_down

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
    # F.one_hot(Yb) without num_classes: 26 columns on every grading batch (no target is the last character), so the
    # cell stops; right on 3 of 12 grading seeds before, those whose targets held one
    "dlogits_one_hot_no_classes": (
        NB2,
        {"answer_dlogits": "dlogits = (F.softmax(logits, 1) - F.one_hot(Yb)) / n"},
        {"test_dlogits": "must match the size of tensor b (26)", "test_dlogits_rows": "RuntimeError"},
    ),
    "dlogits_one_hot_alone_by_n": (  # parentheses left out: every row sums to 1 - 1/n, said once, not as a range
        NB2,
        {"answer_dlogits": "dlogits = F.softmax(logits, 1) - F.one_hot(Yb, 27) / n"},
        {
            "test_dlogits": "dlogits divides only the one-hot by n",  # "entries wrong" before (h-mist3)
            "test_dlogits_rows": "the rows of dlogits sum to 0.969 each, not to zero",
        },
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

# A sixth round (December 2026, h-mist2): three slips whose words were the generic "entries wrong" / "not equal to loss"
_FUSED = (
    "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * "
    "(dhpreact * bnraw).sum(0))"
)
_BN_FAST = "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / ({root} + 1e-5) + bnbias"
MISTAKES.update(
    {
        "loss_fast_softmax_over_the_batch": (
            NB2,
            {"answer_loss_fast": "loss_fast = -F.log_softmax(logits, 0)[range(n), Yb].mean()"},
            {"test_loss_fast": "loss_fast takes the softmax (or the log-sum-exp) over the wrong dimension"},
        ),
        "loss_fast_logsumexp_over_the_batch": (
            NB2,
            {"answer_loss_fast": "loss_fast = (logits.logsumexp(0)[Yb] - logits[range(n), Yb]).mean()"},
            {"test_loss_fast": "over the wrong dimension"},
        ),
        "dhprebn_bessel_without_brackets": (  # - n / n - 1 * bnraw * ...: 1 subtracted, the factor n/(n-1) gone
            NB3,
            {"answer_dhprebn": _FUSED.replace("n / (n - 1)", "n / n - 1")},
            {"test_dhprebn": "`n / n - 1 * x` is (n / n) - (1 * x)"},
        ),
        "dhprebn_one_over_without_brackets": (
            NB3,
            {"answer_dhprebn": _FUSED.replace("n / (n - 1)", "1 / n - 1")},
            {"test_dhprebn": "Python divides and multiplies before it subtracts"},
        ),
        "dhprebn_epsilon_outside_the_root": (
            NB3,
            {"answer_dhprebn": _FUSED.replace("bngain * bnvar_inv", "bngain / (bnvar.sqrt() + 1e-5)")},
            {"test_dhprebn": "dhprebn adds BatchNorm's epsilon after the square root"},
        ),
        "dhprebn_direct_path_without_n": (
            NB3,
            {"answer_dhprebn": _FUSED.replace("(n * dhpreact -", "(dhpreact -")},
            {"test_dhprebn": "dhprebn is missing the n of the direct path"},
        ),
        "bn_forward_std_plus_epsilon": (
            NB3,
            {"answer_hpreact_fast": _BN_FAST.format(root="hprebn.std(0, keepdim=True)")},
            {"test_hpreact_fast": "hpreact_fast adds BatchNorm's epsilon after the square root"},
        ),
    }
)

# An eighth round (h-mist4): slips whose words were generic ("N of M entries wrong"), now named: the target's entry of
# dlogits wrong in four ways (fused_rules), bnraw left out of one place of the path through the variance, bndiff in
# one place, bnvar_inv left out in front (fused_batchnorm.batchnorm_mistakes)
_SOFTMAX = "dlogits = F.softmax(logits, 1)\n"
MISTAKES.update(
    {
        "dlogits_adds_one_at_the_target": (
            NB2,
            {"answer_dlogits": _SOFTMAX + "dlogits[range(n), Yb] += 1\ndlogits /= n"},
            {"test_dlogits": "dlogits adds 1 at each example's target where it subtracts", "test_dlogits_rows": ROWS},
        ),
        "dlogits_one_minus_p_at_the_target": (
            NB2,
            {"answer_dlogits": _SOFTMAX + "dlogits[range(n), Yb] = 1 - dlogits[range(n), Yb]\ndlogits /= n"},
            {"test_dlogits": "dlogits has 1 - p at each example's target", "test_dlogits_rows": ROWS},
        ),
        "dlogits_target_zeroed": (
            NB2,
            {"answer_dlogits": _SOFTMAX + "dlogits[range(n), Yb] -= dlogits[range(n), Yb]\ndlogits /= n"},
            {"test_dlogits": "dlogits is zero at each example's target", "test_dlogits_rows": ROWS},
        ),
        "dlogits_sigmoids_derivative_at_the_target": (
            NB2,
            {
                "answer_dlogits": "p = F.softmax(logits, 1)\ndlogits = p.clone()\n"
                "dlogits[range(n), Yb] = p[range(n), Yb] * (1 - p[range(n), Yb])\ndlogits /= n"
            },
            {"test_dlogits": "dlogits has p * (1 - p) at each example's target", "test_dlogits_rows": ROWS},
        ),
        "dhprebn_bnraw_left_out_in_front": (
            NB3,
            {"answer_dhprebn": _FUSED.replace("n / (n - 1) * bnraw * (", "n / (n - 1) * (")},
            {"test_dhprebn": "dhprebn is missing bnraw in one of the two places the path through the variance has it"},
        ),
        "dhprebn_bnraw_left_out_of_the_sum": (
            NB3,
            {"answer_dhprebn": _FUSED.replace("(dhpreact * bnraw).sum(0)", "dhpreact.sum(0)")},
            {"test_dhprebn": "dhprebn is missing bnraw in one of the two places"},
        ),
        "dhprebn_bndiff_in_front": (
            NB3,
            {"answer_dhprebn": _FUSED.replace("* bnraw *", "* bndiff *")},
            {"test_dhprebn": "dhprebn reads bndiff in the path through the variance where the normalised value"},
        ),
        "loss_fast_sign_flipped": (  # "the wrong sign: check the sign of each factor in the local derivative" before
            NB2,
            {"answer_loss_fast": "loss_fast = F.log_softmax(logits, 1)[range(n), Yb].mean()"},
            {"test_loss_fast": "loss_fast has the wrong sign: the loss is minus the mean log-probability"},
        ),
        "loss_fast_probabilities_not_their_logs": (  # "loss_fast is not equal to loss: 1 of 1 entries differ" before
            NB2,
            {"answer_loss_fast": "loss_fast = -F.softmax(logits, 1)[range(n), Yb].mean()"},
            {"test_loss_fast": "loss_fast averages the targets' probabilities"},
        ),
        "bn_forward_gain_and_bias_swapped": (  # "2048 of 2048 entries differ" before
            NB3,
            {
                "answer_hpreact_fast": "hpreact_fast = bnbias * (hprebn - hprebn.mean(0, keepdim=True)) "
                "/ torch.sqrt(hprebn.var(0, keepdim=True) + 1e-5) + bngain"
            },
            {"test_hpreact_fast": "hpreact_fast swaps bngain and bnbias"},
        ),
        "dhprebn_mean_path_not_summed": (
            NB3,
            {"answer_dhprebn": _FUSED.replace("- dhpreact.sum(0) -", "- dhpreact -")},
            {"test_dhprebn": "dhprebn leaves out the sum over the batch in the path through the mean"},
        ),
        "dhprebn_variance_path_not_summed": (
            NB3,
            {"answer_dhprebn": _FUSED.replace("(dhpreact * bnraw).sum(0)", "(dhpreact * bnraw)")},
            {"test_dhprebn": "dhprebn leaves out the sum over the batch in the path through the variance"},
        ),
        "dhprebn_bnraw_taken_into_the_sum": (
            NB3,
            {"answer_dhprebn": _FUSED.replace("bnraw * (dhpreact * bnraw).sum(0)", "(dhpreact * bnraw**2).sum(0)")},
            {"test_dhprebn": "dhprebn takes bnraw into the sum over the batch in the path through the variance"},
        ),
        "dhprebn_without_bnvar_inv": (
            NB3,
            {"answer_dhprebn": _FUSED.replace("bngain * bnvar_inv / n", "bngain / n")},
            {"test_dhprebn": "dhprebn is missing bnvar_inv in front of the bracket"},
        ),
    }
)

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
        # the first forward pass's upstream gradient with the second pass's tensors: Part 4's rule fed dhpreact
        "dhprebn_biased_from_dhpreact": (
            NB3,
            {
                "answer_dhprebn_biased": "dhprebn_biased = bngain * bnvar_inv_biased / n * (n * dhpreact "
                "- dhpreact.sum(0) - bnraw_biased * (dhpreact * bnraw_biased).sum(0))"
            },
            {"test_dhprebn_biased": "it is what dhprebn_biased would be if dhpreact were its upstream gradient"},
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
    "dhprebn_biased_from_dhpreact": "wrong_upstream",
    "dhprebn_biased_no_epsilon": "epsilon",
}

# A round of students' slips (December 2026), several to a student where their steps differ. Before: `//` and a
# mean over the batch had the generic "entries wrong", and dlogits of shape (27,) stopped the visible line of
# test_dlogits_rows (`dlogits.sum(1)`) before its report: "no answer reached the grader".
_FUSED = (
    "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
    "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
)
MISTAKES.update(
    {
        "loss_float64_dlogits_floor_division": (
            NB2,
            {
                "answer_loss_fast": "loss_fast = F.cross_entropy(logits.double(), Yb)",
                "answer_dlogits": "dlogits = (F.softmax(logits, 1) - F.one_hot(Yb, 27)) // n",
            },
            {
                "test_loss_fast": "dtype float64",
                "test_dlogits": "every entry of dlogits is a whole number",
                "test_dlogits_rows": "sum to -1 each",
            },
        ),
        "dlogits_averaged_over_the_batch": (
            NB2,
            {"answer_dlogits": "dlogits = (F.softmax(logits, 1) - F.one_hot(Yb, 27)).mean(0)"},
            {"test_dlogits": "dlogits has shape (27,)", "test_dlogits_rows": "dlogits has shape (27,), but logits"},
        ),
        "std_without_epsilon_keepdim_mean_and_floor_bessel": (
            NB3,
            {
                "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) "
                "/ hprebn.std(0, keepdim=True) + bnbias",
                "answer_dbngain": "dbngain = (bnraw * dhpreact).sum(0)",
                "answer_dbnbias": "dbnbias = dhpreact.mean(0, keepdim=True)",
                "answer_dhprebn": _FUSED.replace("n / (n - 1)", "n // (n - 1)"),  # an integer 1
            },
            {
                "test_hpreact_fast": "missing BatchNorm's epsilon",
                "test_dbngain": "(keepdim=True)",
                "test_dbnbias": "n = 32 times too small",
                "test_dhprebn": "missing the factor n/(n-1)",
            },
        ),
        # dhpreact rebound in dbngain's cell: dbngain's own slip (its probe runs the line); dbnbias and dhprebn, right
        # for the changed dhpreact, keep theirs (GIVEN_CHANGED's words). Before: all three lost, 6 points
        "given_rebound_in_the_cell_of_dbngain": (
            NB3,
            {"answer_dbngain": "dhpreact = dhpreact * bngain\ndbngain = (bnraw * dhpreact).sum(0, keepdim=True)"},
            {"test_dbngain": "dbngain has a factor bngain too many"},  # "entries wrong" before h-mist5
        ),
        # a tensor of the other BatchNorm block in each: "entries wrong" before
        "tensors_of_the_other_block": (
            NB3,
            {
                "answer_dhprebn": _FUSED.replace("bnraw", "bnraw_biased"),
                "answer_dhprebn_biased": "dhprebn_biased = bngain * bnvar_inv / n * (n * dhpreact_biased "
                "- dhpreact_biased.sum(0) - bnraw_biased * (dhpreact_biased * bnraw_biased).sum(0))",
            },
            {
                "test_dhprebn": "dhprebn reads bnraw_biased, a tensor of the other BatchNorm block",
                "test_dhprebn_biased": "dhprebn_biased reads bnvar_inv, a tensor of the other BatchNorm block",
            },
        ),
    }
)

# A seventh round (December 2026, h-mist3): the target's term divided by n too little or twice ("N of M entries wrong"
# before), n-1 for n in dlogits, and in Exercise 3 an n-1 for the n in front, dbnbias over the wrong dimension, bnvar
# for bnvar_inv
MISTAKES.update(
    {
        "dlogits_target_not_divided_by_n": (
            NB2,
            {"answer_dlogits": "dlogits = F.softmax(logits, 1) / n\ndlogits[range(n), Yb] -= 1"},
            {
                "test_dlogits": "dlogits divides the softmax by n but not the 1 subtracted at each target",
                "test_dlogits_rows": "the rows of dlogits sum to -0.969 each, not to zero",
            },
        ),
        "dlogits_target_divided_by_n_twice": (
            NB2,
            {"answer_dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1 / n\ndlogits /= n"},
            {
                "test_dlogits": "dlogits divides the 1 subtracted at each target by n twice",
                "test_dlogits_rows": "the rows of dlogits sum to 0.0303 each, not to zero",
            },
        ),
        "dlogits_over_n_minus_1": (
            NB2,
            {"answer_dlogits": "dlogits = (F.softmax(logits, 1) - F.one_hot(Yb, 27)) / (n - 1)"},
            {"test_dlogits": "dlogits is n/(n-1) = 32/31 times too large"},
        ),
        "dhprebn_n_minus_1_in_front": (
            NB3,
            {"answer_dhprebn": _FUSED.replace("bnvar_inv / n *", "bnvar_inv / (n - 1) *")},
            {"test_dhprebn": "dhprebn is n/(n-1) = 32/31 times too large"},
        ),
        "dbnbias_summed_over_rows": (
            NB3,
            {"answer_dbnbias": "dbnbias = dhpreact.sum(1, keepdim=True)"},
            {"test_dbnbias": "it looks summed over dimension 1 instead of dimension 0"},
        ),
        "dhprebn_variance_for_its_inverse": (
            NB3,
            {"answer_dhprebn": _FUSED.replace("bngain * bnvar_inv", "bngain * bnvar")},
            {"test_dhprebn": "dhprebn reads bnvar where"},
        ),
    }
)

# student -> (answer cells changed, {graded cell: words of its message}): a cell changes dhpreact or dhpreact_biased,
# which the notebook gives, in place through another name (no .clone()); every later step whose code is right for the
# changed values, and follows its rule on random ones, keeps its points and says so. Before: dbngain, dbnbias and
# dhprebn lost 6 points, dhprebn's words "bngain twice" for a formula with one.
GIVEN_CHANGED = {
    "given_changed_through_an_alias": (
        {
            "answer_dbngain": "dbnraw = dhpreact\ndbnraw *= bngain\ndbngain = (bnraw * dhpreact).sum(0, keepdim=True)",
            "answer_dhprebn": "dbnraw_biased = dhpreact_biased\ndbnraw_biased *= bngain\n" + _FUSED,
        },
        {
            cell: f"your {given}, which the notebook gives you, no longer holds the values its setup cell gave it"
            for cell, given in [
                ("test_dbngain", "dhpreact"),
                ("test_dbnbias", "dhpreact"),
                ("test_dhprebn", "dhpreact"),
                ("test_dhprebn_biased", "dhpreact_biased"),
            ]
        },
    ),
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
        # (dbnbias and dhprebn, written right, keep theirs: a gradient of zeros is pinned at random, and their code
        # follows the rule; the cell that zeroed the given dhpreact loses its own)
        {NB3: {"test_dbngain": "all zeros"}},
    ),
}

# Found in an attacker's review: code in a file the student's cell wrote while grading, run by a plain `import` of it
# (the grader only marked the module's name, not what its code put into the notebook's namespace; a module named as one
# of the standard library's that Linux does not have, winsound, was not even marked) or by the `import` lines of a .pth
# file that site.addsitedir reads: dhprebn computed by the grader's own rules earned its 4 points. The kernel imports no
# module written while grading (in_kernel.switches), and site marks every answer from its cell on, as exec does.
_WRITTEN_MODULE = (  # what the file holds: no word the static reading would see, were it in the cell
    "import importlib\nimport __main__ as m\n\n"
    "r = importlib.import_module('autograder.engine.backward_rules')\n"
    "f = importlib.import_module('autograder.engine.fused_rules')\nfw = {}\n"
    "for k, v in list(vars(m).items()):\n    if isinstance(v, m.torch.Tensor):\n        fw[k] = v.detach()\n"
    "m.dhprebn = r.local_gradient(f.FUSED_STEP_BY_NAME['hprebn'], fw, {'hpreact': m.dhpreact}).float()\n"
)
_WRITTEN_AS = (
    "import base64\nimport sys\nimport tempfile\n\nd = tempfile.mkdtemp()\nwith open(d + '/{file}', 'w') as f:\n"
    "    f.write({text})\n{then}\n"
)
_ENCODED = f"base64.b64decode('{base64.b64encode(_WRITTEN_MODULE.encode()).decode()}').decode()"


def _written_as(file: str, then: str, text: str = _ENCODED) -> str:
    return _WRITTEN_AS.format(file=file, text=text, then=then)


CHEATS.update(
    {
        "c_module_written_while_grading": (
            {NB3: {"answer_dhprebn": _written_as("qqmodule.py", "sys.path.insert(0, d)\nimport qqmodule")}},
            {NB3: {"test_dhprebn": "not answered yet"}},
        ),
        "c_standard_name_written_while_grading": (  # in sys.stdlib_module_names, yet Linux has no winsound
            {NB3: {"answer_dhprebn": _written_as("winsound.py", "sys.path.insert(0, d)\nimport winsound")}},
            {NB3: {"test_dhprebn": "not answered yet"}},
        ),
        "c_pth_file_run_by_site": (
            {
                NB3: {
                    "answer_dhprebn": _written_as(
                        "a.pth",
                        "import site\n\nsite.addsitedir(d)",
                        "'import base64; exec(' + repr(" + _ENCODED + ") + ')\\n'",
                    )
                }
            },
            {NB3: {"test_dhprebn": "autograd", "test_dhprebn_biased": "autograd"}},
        ),
    }
)

# what a graded cell's report becomes on its way out of the kernel: ``change`` made to each of its dicts
OUTGOING = (
    "from IPython.core.interactiveshell import InteractiveShell\n\npub = InteractiveShell.instance().display_pub\n"
    "sent = pub.publish\n\n\ndef publish(data, *args, **kwargs):\n    for v in data.values():\n"
    "        if isinstance(v, dict):\n            {change}\n    return sent(data, *args, **kwargs)\n\n\n"
    "pub.publish = publish\n"
)

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
    # Found in an attacker's review: a copy that also reads a name the course's cells bound before grading started
    # (the helper cell's GRADIENTS, setup_biased's loop variable t, a def's lambda reading its own argument t) made
    # the probe re-run those cells, which took no snapshots: it could not judge, and the copy earned its points by
    # value. The course's cells before the start now stay as they ran (rerun.answer_code's ``since``).
    "loss_copied_beside_a_helper_name": (
        NB2,
        {"answer_loss_fast": "loss_fast = loss.detach().clone() + 0 * len(GRADIENTS)"},
        {"test_loss_fast": "does not follow logits: it reads loss"},
    ),
    "hpreact_copied_beside_a_setup_name": (
        NB3,
        {"answer_hpreact_fast": "hpreact_fast = hpreact.detach().clone() + 0 * t.detach().sum()"},
        {"test_hpreact_fast": "does not follow hprebn: it reads hpreact"},
    ),
    "hpreact_copied_by_a_closure": (
        NB3,
        {
            "answer_hpreact_fast": "def make(t):\n    return lambda: t.detach().clone()\n\n\n"
            "get = make(hpreact)\nhpreact_fast = get()"
        },
        {"test_hpreact_fast": "does not follow hprebn: it reads hpreact"},
    ),
    # and a copy through a container, whose append or update the probes did not see change it: the re-run read an
    # empty list (IndexError), could not judge, and the copy kept its points by value
    "loss_copied_through_a_list": (
        NB2,
        {"answer_loss_fast": "keep = []\nkeep.append(loss)\nloss_fast = keep[0].detach().clone()"},
        {"test_loss_fast": "does not follow logits: it reads loss"},
    ),
    "hpreact_copied_through_a_dict": (
        NB3,
        {"answer_hpreact_fast": "keep = {}\nkeep.update(v=hpreact)\nhpreact_fast = keep['v'].detach().clone()"},
        {"test_hpreact_fast": "does not follow hprebn: it reads hpreact"},
    ),
    # and a copy whose re-run the submission took out of the report, or marked as not run, on its way out of the
    # kernel: the grader now reads what the answer's code reads in the notebook it holds
    "loss_copied_probe_taken_out": (
        NB2,
        {"answer_loss_fast": OUTGOING.format(change='v.pop("(pro" + "be)", None)') + "loss_fast = loss.detach() * 1"},
        {"test_loss_fast": "does not follow logits: it reads loss"},
    ),
    "hpreact_copied_probe_not_run": (
        NB3,
        {
            "answer_hpreact_fast": OUTGOING.format(change='v.get("(pro" + "be)", {})["status"] = "no"')
            + "hpreact_fast = hpreact.detach() * 1"
        },
        {"test_hpreact_fast": "does not follow hprebn: it reads hpreact"},
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

ALTERNATIVES["alt_terms_in_a_list"] = {  # checked by its rule: the probe sees the appends change terms
    NB3: {
        "answer_dhprebn": "terms = []\nterms.append(n * dhpreact)\nterms.append(-dhpreact.sum(0))\n"
        "terms.append(-n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))\ndhprebn = bngain * bnvar_inv / n * sum(terms)"
    }
}

ALTERNATIVES["alt_d"] = {
    NB2: {"answer_loss_fast": "loss_fast = -F.log_softmax(logits, 1)[range(n), Yb].mean()"},
    NB3: {  # from the student's own dbngain and dbnbias, as the lecture's Exercise 4 line does
        "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dbnbias - n / (n - 1) * bnraw * dbngain)"
    },
}

# the input rebound in the value's own cell, shifted by its row maxima (exact zeros there): the value probe's pin keeps
# those zeros on both sides, as the kernel drew it (the grader trusts them here: a value probe only takes points)
ALTERNATIVES["alt_logits_shifted_in_place_of_their_name"] = {
    NB2: {
        "answer_loss_fast": "logits = logits - logits.max(1, keepdim=True).values\n"
        "loss_fast = F.cross_entropy(logits, Yb)"
    }
}

# temporaries named as forward tensors (bnvar_inv in hpreact_fast's cell, bnraw in dbngain's), which dhprebn's right
# code then reads: it keeps its points, its words name each line and the cell it is in
ALTERNATIVES["alt_temporaries_named_as_forward_tensors"] = {
    NB3: {
        "answer_hpreact_fast": "bnvar_inv = (hprebn.var(0, keepdim=True) + 1e-5) ** 0.5\n"
        "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / bnvar_inv + bnbias",
        "answer_dbngain": "bnraw = bnraw * dhpreact\ndbngain = bnraw.sum(0, keepdim=True)",
    }
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


# More correct forms, one per answer cell per student: softmax written out (without the max, through log_softmax, by
# rows in a loop, in numpy), one-hots by scatter_ or torch.where, float64 cast back, probs or counts of the forward
# pass, n as logits.shape[0] or batch_size; BatchNorm's variance by var_mean, std or with Bessel's factor by hand, the
# backward pass in the paper's form (dxhat, dvar, dmu), from a helper, column by column, in numpy with ddof=1.
SOFTMAX_HELPER = (
    "def softmax(x):\n    e = (x - x.max(1, keepdim=True).values).exp()\n    return e / e.sum(1, keepdim=True)\n\n\n"
)
PAPER = (  # the BatchNorm paper's three steps, with this forward pass's n-1 in the variance
    "dxhat = dhpreact * bngain\n"
    "dvar = (dxhat * bndiff * -0.5 * (bnvar + 1e-5) ** -1.5).sum(0, keepdim=True)\n"
    "dmu = (-dxhat * bnvar_inv).sum(0, keepdim=True) + dvar * (-2 * bndiff).sum(0, keepdim=True) / (n - 1)\n"
    "dhprebn = dxhat * bnvar_inv + dvar * 2 * bndiff / (n - 1) + dmu / n"
)
PAPER_BIASED = (
    "dxhat = dhpreact_biased * bngain\n"
    "dvar = (dxhat * bndiff_biased * -0.5 * (bnvar_biased + 1e-5) ** -1.5).sum(0, keepdim=True)\n"
    "dmu = (-dxhat * bnvar_inv_biased).sum(0, keepdim=True) + dvar * (-2 * bndiff_biased).mean(0, keepdim=True)\n"
    "dhprebn_biased = dxhat * bnvar_inv_biased + dvar * 2 * bndiff_biased / n + dmu / n"
)
MORE_FORMS = {
    NB2: {
        "answer_loss_fast": [
            "loss_fast = F.cross_entropy(input=logits, target=Yb)",
            "loss_fast = -(logits.log_softmax(1) * F.one_hot(Yb, 27)).sum(1).mean()",
            "loss_fast = F.nll_loss(torch.log(F.softmax(logits, 1)), Yb)",
            "loss_fast = (logits.logsumexp(1) - logits.gather(1, Yb[:, None]).squeeze(1)).mean()",
            "loss_fast = F.cross_entropy(logits.double(), Yb).float()",
        ],
        "answer_dlogits": [
            "dlogits = (torch.exp(logits) / torch.exp(logits).sum(1, keepdim=True) - F.one_hot(Yb, vocab_size)) / n",
            "dlogits = F.softmax(logits, dim=1)\ndlogits[torch.arange(logits.shape[0]), Yb] -= 1\n"
            "dlogits /= logits.shape[0]",
            "dlogits = (probs - F.one_hot(Yb, vocab_size)) / n",
            "sm = F.softmax(logits, 1)\ndlogits = torch.where(F.one_hot(Yb, vocab_size).bool(), sm - 1, sm) / n",
            "dlogits = torch.zeros_like(logits)\nfor i in range(n):\n    p = logits[i].exp() / logits[i].exp().sum()\n"
            "    p[Yb[i]] -= 1\n    dlogits[i] = p / n",
            "dlogits = ((F.softmax(logits.double(), 1) - F.one_hot(Yb, 27)) / n).float()",
            "dlogits = (F.softmax(logits, 1) - F.one_hot(Yb, vocab_size)) * (1.0 / batch_size)",
            "dlogits = (F.softmax(logits, 1) - torch.zeros_like(logits).scatter_(1, Yb[:, None], 1)) / n",
            "dlogits = F.softmax(logits, 1) / n\ndlogits[range(n), Yb] -= 1 / n",
            "dlogits = counts / counts_sum\ndlogits[range(n), Yb] -= 1\ndlogits /= n",
            "with torch.no_grad():\n    dlogits = F.softmax(logits, 1)\n    dlogits[range(n), Yb] -= 1\n"
            "    dlogits /= n",
            SOFTMAX_HELPER + "dlogits = (softmax(logits) - F.one_hot(Yb, vocab_size).float()) / n",
            "dlogits = probs\ndlogits[range(n), Yb] -= 1\ndlogits /= n",  # the forward pass's probs, changed in place
            "import numpy as np\nl = logits.detach().numpy()\ne = np.exp(l - l.max(1, keepdims=True))\n"
            "p = e / e.sum(1, keepdims=True)\np[np.arange(n), Yb.numpy()] -= 1\ndlogits = torch.from_numpy(p / n)",
        ],
    },
    NB3: {
        "answer_hpreact_fast": [
            "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) "
            "/ (hprebn.var(0, keepdim=True) + 1e-5).sqrt() + bnbias",
            "var, mean = torch.var_mean(hprebn, 0, keepdim=True)\n"
            "hpreact_fast = bngain * (hprebn - mean) / torch.sqrt(var + 1e-5) + bnbias",
            "hpreact_fast = torch.addcmul(bnbias, bngain, (hprebn - hprebn.mean(0)) "
            "/ torch.sqrt(hprebn.var(0, unbiased=True) + 1e-5))",
            "hpreact_fast = bngain * (hprebn - hprebn.mean(0)) / (hprebn.std(0) ** 2 + 1e-5) ** 0.5 + bnbias",
            "hpreact_fast = bngain * (hprebn - hprebn.mean(0)) "
            "/ torch.sqrt(hprebn.var(0, unbiased=False) * n / (n - 1) + 1e-5) + bnbias",
            "m = hprebn.mean(0, keepdim=True)\nvar = ((hprebn**2).mean(0, keepdim=True) - m**2) * n / (n - 1)\n"
            "hpreact_fast = bngain * (hprebn - m) / torch.sqrt(var + 1e-5) + bnbias",
        ],
        "answer_dbngain": [
            "dbngain = (bnraw * dhpreact).sum(0)[None]",
            "dbngain = torch.ones(1, n) @ (bnraw * dhpreact)",
        ],
        "answer_dbnbias": [
            "dbnbias = torch.sum(dhpreact, dim=0, keepdim=True)",
            "dbnbias = dhpreact.sum(0).unsqueeze(0)",
        ],
        "answer_dhprebn": [
            PAPER,
            "m = hprebn.mean(0, keepdim=True)\n"
            "s = (((hprebn**2).mean(0, keepdim=True) - m**2) * n / (n - 1) + 1e-5) ** -0.5\n"
            "xhat = (hprebn - m) * s\ndhprebn = bngain * s / n * (n * dhpreact - dhpreact.sum(0) "
            "- n / (n - 1) * xhat * (dhpreact * xhat).sum(0))",
            "dhprebn = bngain * bnvar_inv * (1 / n) * (n * dhpreact - dhpreact.sum(0) "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))",
            "b = batch_size\ndhprebn = bngain * bnvar_inv / b * (b * dhpreact - dhpreact.sum(0) "
            "- b / (b - 1) * bnraw * (dhpreact * bnraw).sum(0))",
            "m = hprebn.shape[0]\ndhprebn = bngain * bnvar_inv / m * (m * dhpreact - dhpreact.sum(0) "
            "- m / (m - 1) * bnraw * (dhpreact * bnraw).sum(0))",
            "g, s, x, dy = bngain.double(), bnvar_inv.double(), bnraw.double(), dhpreact.double()\n"
            "dhprebn = (g * s / n * (n * dy - dy.sum(0) - n / (n - 1) * x * (dy * x).sum(0))).float()",
            "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - torch.einsum('nh->h', dhpreact) "
            "- n / (n - 1) * bnraw * torch.einsum('nh,nh->h', dhpreact, bnraw))",
            "std = torch.sqrt(bnvar + 1e-5)\ndhprebn = bngain / std * (dhpreact - dhpreact.mean(0, keepdim=True) "
            "- bndiff * (dhpreact * bndiff).sum(0, keepdim=True) / ((n - 1) * std**2))",
            "def bn_back(dout, xhat, inv_std, gamma):\n    m = dout.shape[0]\n"
            "    return gamma * inv_std / m * (m * dout - dout.sum(0) "
            "- m / (m - 1) * xhat * (dout * xhat).sum(0))\n\n\n"
            "dhprebn = bn_back(dhpreact, bnraw, bnvar_inv, bngain)",
            "dhprebn = torch.zeros_like(hprebn)\nfor j in range(hprebn.shape[1]):\n"
            "    dy, x = dhpreact[:, j], bnraw[:, j]\n    dhprebn[:, j] = bngain[0, j] * bnvar_inv[0, j] / n * (n * dy "
            "- dy.sum() - n / (n - 1) * x * (dy * x).sum())",
            "with torch.no_grad():\n    dout = dhpreact.clone()\n    dhprebn = bngain * bnvar_inv / n * (n * dout "
            "- dout.sum(0) - n / (n - 1) * bnraw * (dout * bnraw).sum(0))",
            "mu = hprebn.mean(0, keepdim=True)\nvar = hprebn.var(0, keepdim=True)\ninv = (var + 1e-5).rsqrt()\n"
            "xhat = (hprebn - mu) * inv\n"
            "dhprebn = bngain * inv * (dhpreact - dhpreact.mean(0) - xhat * (dhpreact * xhat).sum(0) / (n - 1))",
            "dxhat = bngain * dhpreact\ndhprebn = bnvar_inv * (dxhat - dxhat.mean(0, keepdim=True) "
            "- n / (n - 1) * bnraw * (dxhat * bnraw).mean(0, keepdim=True))",
            "import numpy as np\nx = hprebn.detach().numpy()\ndy = dhpreact.numpy()\nN = x.shape[0]\n"
            "mu = np.mean(x, axis=0, keepdims=True)\nvar = np.var(x, axis=0, ddof=1, keepdims=True)\n"
            "inv = 1 / np.sqrt(var + 1e-5)\nxh = (x - mu) * inv\n"
            "dhprebn = torch.tensor(bngain.detach().numpy() * inv / N * (N * dy - np.sum(dy, axis=0, keepdims=True) "
            "- N / (N - 1) * xh * np.sum(dy * xh, axis=0, keepdims=True)))",
        ],
        "answer_dhprebn_biased": [
            PAPER_BIASED,
            "m = hprebn_biased.shape[0]\ndhprebn_biased = bngain * bnvar_inv_biased / m * (m * dhpreact_biased "
            "- dhpreact_biased.sum(0) - bnraw_biased * (dhpreact_biased * bnraw_biased).sum(0))",
            "dhprebn_biased = bngain * bnvar_inv_biased / n * (n * dhpreact_biased - torch.einsum('nh->h', "
            "dhpreact_biased) - bnraw_biased * torch.einsum('nh,nh->h', dhpreact_biased, bnraw_biased))",
            "dy, x = dhpreact_biased.double(), bnraw_biased.double()\n"
            "dhprebn_biased = (bngain.double() * bnvar_inv_biased.double() * (dy - dy.mean(0) - x * (dy * x).mean(0)))"
            ".float()",
        ],
    },
}


# Forms read in a third round of the notebooks students of the lecture published (December 2026), in our own names
# and code: the target's -1/n put in a one-hot of its own and probs/n added; softmax without the max; a fused BatchNorm
# whose n/(n-1) and 1/n are folded into 1/(n-1) and 1/n
MORE_FORMS[NB2]["answer_loss_fast"] += [
    "loss_fast = -(logits - logits.logsumexp(1, keepdim=True))[range(n), Yb].mean()",
]
MORE_FORMS[NB2]["answer_dlogits"] += [
    "dlogprobs = torch.zeros_like(logits)\ndlogprobs[range(n), Yb] = -1 / n\ndlogits = dlogprobs + probs / n",
    "e = logits.exp()\ndlogits = e / e.sum(1, keepdim=True)\ndlogits[torch.arange(n), Yb] -= 1\ndlogits = dlogits / n",
]
MORE_FORMS[NB3]["answer_dhprebn"] += [
    "dhprebn = bngain * bnvar_inv * (dhpreact - (1 / n) * dhpreact.sum(0, keepdim=True) "
    "- 1 / (n - 1) * bnraw * (dhpreact * bnraw).sum(0, keepdim=True))",
]

# a fourth round: 1/n and 1/(n-1) inside the bracket, bnvar_inv first; the lecture's formula laid out one factor a line
MORE_FORMS[NB3]["answer_dhprebn"] += [
    "dhprebn = bnvar_inv * bngain * (dhpreact - 1 / n * dhpreact.sum(0) "
    "- 1 / (n - 1) * bnraw * (bnraw * dhpreact).sum(0))",
    "dhprebn = (\n    bngain\n    / n\n    * bnvar_inv\n    * (\n        n * dhpreact\n        - dhpreact.sum(0)\n"
    "        - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0)\n    )\n)",
    "dhprebn = ((bngain * (bnvar + 1e-5) ** -0.5) / n) * (n * dhpreact - dhpreact.sum(0) "  # bnvar_inv written out
    "- (n / (n - 1)) * bnraw * (dhpreact * bnraw).sum(0))",
]
MORE_FORMS[NB2]["answer_dlogits"] += [  # the forward pass's probs, scaled first; the one-hot as wide as C is long
    "dlogits = probs.clone() * 1 / n\ndlogits[range(n), Yb] -= 1 / n",
    "dlogits = (probs - F.one_hot(Yb, num_classes=C.shape[0])) / n",
    # the max's path kept, times the rows' sums of softmax minus the one-hot (zero up to rounding)
    "Ymat = F.one_hot(Yb, num_classes=logits.shape[1])\npsoftmax = F.softmax(logits, dim=1)\n"
    "dlogits = 1 / n * ((-Ymat + psoftmax) - (-Ymat + psoftmax).sum(1, keepdim=True) "
    "* F.one_hot(logits.max(1).indices, logits.shape[1]))",
    "dlogits = torch.log_softmax(logits, dim=1).exp()\ndlogits[range(n), Yb] -= 1\ndlogits /= n",
    # each entry written out from counts and counts_sum, the target's in a loop
    "dlogits = torch.ones_like(logits) * (-1 / counts_sum) * 1 / n\nfor i, ix in enumerate(Yb):\n"
    "    dlogits[i, ix] = (counts_sum[i] - counts[i, ix]) / (counts_sum[i] * counts[i, ix]) * 1 / n\n"
    "dlogits = counts * dlogits * -1",
]
MORE_FORMS[NB3]["answer_dhprebn"] += [
    "dhprebn = (dhpreact * bngain - (dhpreact * bngain).sum(0, keepdim=True) / n "  # bngain inside the bracket
    "- bnraw / (n - 1) * (dhpreact * bngain * bnraw).sum(0, keepdim=True)) * bnvar_inv",
    "dhprebn = (bngain * bnvar_inv / n) * (n * dhpreact - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0) "
    "- dhpreact.sum(0))",
    "dhprebn = (bngain * bnvar_inv) * (dhpreact - dhpreact.sum(0) / n - (bnraw * (dhpreact * bnraw).sum(0)) / (n - 1))",
]
MISTAKES["dhprebn_forward_hpreact_for_its_gradient"] = (  # hpreact where dhpreact belongs, in the last sum (published)
    NB3,
    {
        "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
        "- n / (n - 1) * bnraw * (bnraw * hpreact).sum(0))"
    },
    {"test_dhprebn": "entries wrong"},
)
# the same loop with exp(logits) where counts (exp of logits minus their max) belongs: each row off by exp(its max)
MISTAKES["dlogits_exp_of_logits_for_counts"] = (
    NB2,
    {
        "answer_dlogits": "dlogits = torch.ones_like(logits) * (-1 / counts_sum) * 1 / n\nfor i, ix in enumerate(Yb):\n"
        "    dlogits[i, ix] = (counts_sum[i] - counts[i, ix]) / (counts_sum[i] * counts[i, ix]) * 1 / n\n"
        "dlogits = logits.exp() * dlogits * -1"
    },
    {"test_dlogits": "entries wrong"},
)
# and its slips: the BatchNorm paper's formula fed dbnraw (bngain already in it) under bngain again, with and without
# n/(n-1) (published so, in study notes); the three terms of the paper without their sums over the batch
DBNRAW = "dbnraw = bngain * dhpreact\n"
MISTAKES.update(
    {
        "dhprebn_gain_twice": (
            NB3,
            {
                "answer_dhprebn": DBNRAW + "dhprebn = (bngain * bnvar_inv / n) * (n * dbnraw - dbnraw.sum(0) "
                "- n / (n - 1) * bnraw * (dbnraw * bnraw).sum(0))"
            },
            {"test_dhprebn": "dhprebn has bngain twice: once in front of the bracket and once inside it"},
        ),
        "dhprebn_gain_twice_no_bessel": (
            NB3,
            {
                "answer_dhprebn": DBNRAW + "dhprebn = (bngain * bnvar_inv / n) * (n * dbnraw - dbnraw.sum(0) "
                "- bnraw * (dbnraw * bnraw).sum(0))"
            },
            {"test_dhprebn": "and it is missing the factor n/(n-1) on the path through the variance"},
        ),
        "dhprebn_biased_gain_twice": (
            NB3,
            {
                "answer_dhprebn_biased": "g = bngain * dhpreact_biased\ndhprebn_biased = bngain * bnvar_inv_biased / n "
                "* (n * g - g.sum(0) - bnraw_biased * (g * bnraw_biased).sum(0))"
            },
            {"test_dhprebn_biased": "dhprebn_biased has bngain twice"},
        ),
        "dhprebn_paper_terms_without_sums": (
            NB3,
            {
                "answer_dhprebn": "sd = torch.sqrt(hprebn.var(0, keepdim=True, unbiased=True) + 1e-5)\n"
                "x_hat = bngain * dhpreact\ndmean = -bngain / sd * dhpreact\n"
                "dvar = -0.5 * bngain * (hprebn - hprebn.mean(0, keepdim=True)) * sd**-3 * dhpreact\n"
                "dhprebn = x_hat + dmean + dvar"
            },
            {"test_dhprebn": "entries wrong"},
        ),
    }
)
KINDS["dhprebn_biased_gain_twice"] = "factor_twice"

# A judge's round (December 2026): softmax without its dimension (torch picks dimension 1 for a matrix and warns: the
# warning must cost nothing), the target's -1 added by scatter_add_; Bessel's n/(n-1) written as 1/(1 - 1/n) and as
# n * (n-1)**-1, the unbiased variance as the biased one times n/(n-1), torch.var's arguments by position
MORE_FORMS[NB2]["answer_loss_fast"] += ["loss_fast = F.nll_loss(F.log_softmax(logits), Yb)"]
MORE_FORMS[NB2]["answer_dlogits"] += [
    "dlogits = F.softmax(logits)\ndlogits[range(n), Yb] -= 1\ndlogits /= n",
    "dlogits = F.softmax(logits, 1).clone()\ndlogits.scatter_add_(1, Yb[:, None], -torch.ones(n, 1))\ndlogits /= n",
]
MORE_FORMS[NB3]["answer_hpreact_fast"] += [
    "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / torch.sqrt(hprebn.var(0, keepdim=True, "
    "correction=0) * n / (n - 1) + 1e-5) + bnbias",
    "hpreact_fast = bngain * (hprebn - hprebn.mean(0, True)) / torch.sqrt(torch.var(hprebn, 0, True, True) + 1e-5) "
    "+ bnbias",
]
MORE_FORMS[NB3]["answer_dbngain"] += ["dbngain = torch.sum(bnraw * dhpreact, 0, True)"]
MORE_FORMS[NB3]["answer_dhprebn"] += [
    "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
    "- 1 / (1 - 1 / n) * bnraw * (dhpreact * bnraw).sum(0))",
    "bessel = n * (n - 1) ** -1\ndhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
    "- bessel * bnraw * (dhpreact * bnraw).sum(0))",
]
# and its slips: rows indexed by the targets, n taken from the wrong dimension; the division by n in front left out,
# the epsilon added outside the square root
MISTAKES.update(
    {
        "dlogits_rows_indexed_by_targets": (
            NB2,
            {"answer_dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[Yb] -= 1\ndlogits /= n"},
            # "N of M entries wrong" before h-mist4
            {"test_dlogits": "`[Yb]` alone picks rows, not entries", "test_dlogits_rows": ROWS},
        ),
        "dlogits_divided_by_the_classes": (
            NB2,
            {
                "answer_dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1\n"
                "dlogits /= logits.shape[1]"
            },  # "off by a constant factor: 1.185 times the right value" before h-mist4 (diagnosis/divisors)
            {"test_dlogits": "is it divided by vocab_size = 27 where the batch size n = 32 belongs?"},
        ),
        "dhprebn_no_division_by_n": (
            NB3,
            {
                "answer_dhprebn": "dhprebn = bngain * bnvar_inv * (n * dhpreact - dhpreact.sum(0) "
                "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
            },
            {"test_dhprebn": "n = 32 times too large"},
        ),
        "hpreact_fast_epsilon_outside_the_root": (
            NB3,
            {
                "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) "
                "/ (torch.sqrt(hprebn.var(0, keepdim=True)) + 1e-5) + bnbias"
            },
            {"test_hpreact_fast": "hpreact_fast adds BatchNorm's epsilon after the square root"},
        ),
    }
)

# A fifth round of published forms (December 2026): the softmax's sign flipped and flipped back (the target's +1 added
# to minus the softmax, then times -1/n); the atomic chain of Exercise 1 composed into one expression, each upstream
# gradient written out from dhpreact (badaozhiwei-cmyk/zero-to-herp)
DBNRAW_INLINE, DBNVAR_INLINE = "(bngain * dhpreact)", "(-0.5 * (bnvar + 1e-5) ** -1.5)"
DBNDIFF_INLINE = (
    f"(bnvar_inv * {DBNRAW_INLINE} + 2 * bndiff * (1.0 / (n - 1)) * {DBNVAR_INLINE} "
    f"* (bndiff * {DBNRAW_INLINE}).sum(0, keepdim=True))"
)
MORE_FORMS[NB2]["answer_dlogits"] += [
    "dlogits = -F.softmax(logits, 1)\ndlogits[range(n), Yb] += 1\ndlogits = (-1.0 / n) * dlogits"
]
MORE_FORMS[NB3]["answer_dhprebn"] += [f"dhprebn = {DBNDIFF_INLINE} + 1.0 / n * (-{DBNDIFF_INLINE}).sum(0)"]


def dealt(forms: dict, prefix: str) -> dict:
    """student -> {notebook: answer cells changed}: each cell's forms, one per student in turn, in each notebook."""
    students = {}
    for notebook, cells in forms.items():
        for cell, codes in cells.items():
            for i, code in enumerate(codes, 1):
                students.setdefault(f"{prefix}{i}", {}).setdefault(notebook, {})[cell] = code
    return students


ALTERNATIVES.update(dealt(MORE_FORMS, "alt_more_forms_"))

# Slips beside those forms, several in one submission where they are in different cells: each costs its own cells
DVAR = "dxhat = dhpreact * bngain\ndvar = (dxhat * bndiff * -0.5 * (bnvar + 1e-5) ** -1.5).sum(0, keepdim=True)\n"
MISTAKES.update(
    {
        "dlogits_where_plus_one": (
            NB2,
            {
                "answer_dlogits": "sm = F.softmax(logits, 1)\n"
                "dlogits = torch.where(F.one_hot(Yb, vocab_size).bool(), sm + 1, sm) / n"
            },
            {  # "32 of 864 entries wrong" before h-mist4
                "test_dlogits": "dlogits adds 1 at each example's target where it subtracts",
                "test_dlogits_rows": "sum to 0.0625 each, not to zero",
            },
        ),
        "loop_and_loss_without_n": (
            NB2,
            {
                "answer_loss_fast": "loss_fast = -(logits.log_softmax(1) * F.one_hot(Yb, 27)).sum()",
                "answer_dlogits": "dlogits = torch.zeros_like(logits)\nfor i in range(n):\n"
                "    p = logits[i].exp() / logits[i].exp().sum()\n    p[Yb[i]] -= 1\n    dlogits[i] = p",
            },
            {"test_loss_fast": "n = 32 times too large", "test_dlogits": "n = 32 times too large"},
        ),
        "dlogits_helper_over_the_batch": (
            NB2,
            {
                "answer_dlogits": SOFTMAX_HELPER.replace("(1,", "(0,")
                + "dlogits = (softmax(logits) - F.one_hot(Yb, 27)) / n"
            },
            {"test_dlogits": "softmax over the wrong dimension", "test_dlogits_rows": ROWS},
        ),
        "paper_form_biased_and_two_more": (
            NB3,
            {
                "answer_hpreact_fast": "var, mean = torch.var_mean(hprebn, 0, keepdim=True, unbiased=False)\n"
                "hpreact_fast = bngain * (hprebn - mean) / torch.sqrt(var + 1e-5) + bnbias",
                "answer_dbngain": "dbngain = torch.ones(1, n) @ dhpreact",
                "answer_dhprebn": DVAR + "dmu = (-dxhat * bnvar_inv).sum(0, keepdim=True)\n"
                "dhprebn = dxhat * bnvar_inv + dvar * 2 * bndiff / n + dmu / n",
            },
            {
                "test_hpreact_fast": "uses the biased variance",
                "test_dbngain": "dbngain leaves bnraw out of the local derivative",  # "64 of 64 entries wrong" before
                "test_dhprebn": "missing the factor n/(n-1) on the path through the variance",
            },
        ),
        "paper_form_without_the_mean": (
            NB3,
            {"answer_dhprebn": DVAR + "dhprebn = dxhat * bnvar_inv + dvar * 2 * bndiff / (n - 1)"},
            {"test_dhprebn": "missing the path through the mean"},
        ),
        "helper_without_bessel": (
            NB3,
            {
                "answer_dhprebn": "def bn_back(dout, xhat, inv_std, gamma):\n    m = dout.shape[0]\n"
                "    return gamma * inv_std / m * (m * dout - dout.sum(0) - xhat * (dout * xhat).sum(0))\n\n\n"
                "dhprebn = bn_back(dhpreact, bnraw, bnvar_inv, bngain)"
            },
            {"test_dhprebn": "missing the factor n/(n-1)"},
        ),
        "columns_without_the_mean": (
            NB3,
            {
                "answer_dhprebn": "dhprebn = torch.zeros_like(hprebn)\nfor j in range(hprebn.shape[1]):\n"
                "    dy, x = dhpreact[:, j], bnraw[:, j]\n"
                "    dhprebn[:, j] = bngain[0, j] * bnvar_inv[0, j] / n * (n * dy - n / (n - 1) * x * (dy * x).sum())"
            },
            {"test_dhprebn": "missing the path through the mean"},
        ),
        "paper_form_biased_keeps_bessel_and_std_without_var": (
            NB3,
            {
                "answer_dhprebn": "std = torch.sqrt(bnvar + 1e-5)\ndhprebn = bngain / std * (dhpreact "
                "- dhpreact.mean(0, keepdim=True) - bndiff * (dhpreact * bndiff).sum(0, keepdim=True) / (n - 1))",
                "answer_dhprebn_biased": PAPER_BIASED.replace(
                    " + dvar * (-2 * bndiff_biased).mean(0, keepdim=True)", ""
                ).replace("2 * bndiff_biased / n", "2 * bndiff_biased / (n - 1)"),
            },
            {
                "test_dhprebn": "dhprebn reads bndiff where",  # (the generic "entries wrong" before)
                "test_dhprebn_biased": "uses n-1 where this forward pass divides by n",
            },
        ),
    }
)


# Found in an attacker's review: a cell of the student's above the cell that starts grading, or that cell moved below
# the answers, ran while every .grad held autograd's own gradient and autograd worked; torch.optim read them out of
# the static reading's sight, and the answers copied from them earned every point (Exercise 2: 6 of 6, Exercise 3: 10
# of 10).
# Autograde runs the setup cells and the start cell first now (common.setup_cells.execution_order): they read decoys.
# student -> ({notebook: (answer cells changed, what the student did to the notebook)}, {notebook: {cell: words}})
LAID_OUT = {
    "c_read_above_the_start": (
        {
            NB2: (
                {"answer_dlogits": "dlogits = logits_read.clone()"},
                lambda nb: above_the_start(nb, read_above_the_start(["logits"])),
            ),
            NB3: (
                {
                    "answer_dbngain": "dbngain = bngain_read",
                    "answer_dhprebn": "dhprebn = hprebn_read * 1.0",
                    "answer_dhprebn_biased": "dhprebn_biased = hprebn_biased_read.clone()",
                },
                lambda nb: above_the_start(nb, read_above_the_start(["bngain", "hprebn", "hprebn_biased"])),
            ),
        },
        {
            NB2: {"test_dlogits": "logits.grad", "test_dlogits_rows": "logits.grad"},
            NB3: {
                "test_dbngain": "bngain.grad",
                "test_dhprebn": "hprebn.grad",
                "test_dhprebn_biased": "hprebn_biased.grad",
            },
        },
    ),
    "c_start_moved_down": (
        {
            NB2: ({"answer_dlogits": grad_through_sgd("logits", "dlogits")}, start_moved_down),
            NB3: ({"answer_dhprebn": grad_through_sgd("hprebn", "dhprebn")}, start_moved_down),
        },
        {
            NB2: {"test_dlogits": "logits.grad", "test_dlogits_rows": "logits.grad"},
            NB3: {"test_dhprebn": "hprebn.grad"},
        },
    ),
    # an honest student's cells above the setup and above the start cell: a module and a helper the answers use
    "alt_cells_above_the_start": (
        {
            notebook: (
                {
                    "answer_dlogits": "dlogits = torch.from_numpy(np.asarray(rows_softmax(logits.detach()) "
                    "- F.one_hot(Yb, 27))) / n"
                }
                if notebook == NB2
                else {
                    "answer_dbnbias": "dbnbias = np.sum("
                    "dhpreact.numpy(), 0, keepdims=True)\ndbnbias = torch.from_numpy(dbnbias)"
                },
                lambda nb: above_the_start(
                    above_the_start(nb, "def rows_softmax(x):\n    return x.softmax(1)\n"),
                    "import numpy as np",
                    top=True,
                ),
            )
            for notebook in (NB2, NB3)
        },
        {NB2: {}, NB3: {}},
    ),
}


# Found in an attacker's review: nbclient updates every output shown under a display id, in any cell. A submission
# sent its graded cells' reports under ids (its own display publisher), then, in a cell after every graded cell,
# replaced them with reports whose answers and rule probes the grader's own rules computed: the static reading of the
# cells before a graded cell never saw that cell, and Exercise 3's four gradients earned 8 points with none written
# (through nbgrader too). A report is final now as its cell sends it (``output_budget.a_report``).
# student -> (answer cells changed, cells added after a graded cell's id, {graded cell that must earn nothing: words})
_PUBLISHED_UNDER_IDS = OUTGOING.replace(
    "    for v in data.values():\n        if isinstance(v, dict):\n            {change}\n",
    "    for v in data.values():\n        if isinstance(v, dict):\n            {change}\n"
    '            kwargs["transient"] = {{"display_id": "r_" + next(iter(v))}}\n',
)
_REPLACED_LATER = (
    "import os\n\nimport torch\nfrom IPython.display import update_display\n\n"
    "from autograder.engine import wire\nfrom autograder.engine.backward_rules import STEP_BY_NAME, local_gradient\n"
    "from autograder.engine.fused_rules import FUSED_STEP_BY_NAME\n"
    "from autograder.engine.probes.rerun import pin_value\n"
    "\npub.publish = sent  # (the display publisher as it was)\nseed = int(os.environ['BACKPROP_NINJA_SEED'])\n"
    "fw = {k: v.detach() for k, v in dict(globals()).items() if isinstance(v, torch.Tensor)}\n"
    "for answer, step in [('dbngain', STEP_BY_NAME['bngain']), ('dbnbias', STEP_BY_NAME['bnbias']), "
    "('dhprebn', FUSED_STEP_BY_NAME['hprebn'])]:\n"
    "    pins = {'hpreact': pin_value(seed, answer, 'dhpreact', tuple(fw['hpreact'].shape))}\n"
    "    payload = {answer: wire.encode(local_gradient(step, fw, {'hpreact': dhpreact}).float()), "
    "'dhpreact': wire.encode(dhpreact)}\n"
    "    payload['(pro' + 'be)'] = {'answer': answer, 'pins': {'dhpreact': {'zero': False}}, 'status': 'ran', "
    "'pins_read': ['dhpreact'], 'result': wire.encode(local_gradient(step, fw, pins).float())}\n"
    "    update_display({'{mime}': payload, 'text/plain': '.'}, raw=True, display_id='r_' + answer)\n"
)
_UNANSWERED = {g: "pass" for g in ("answer_dbngain", "answer_dbnbias", "answer_dhprebn")}
REPLACED_LATER = {
    "c_reports_replaced_by_a_later_cell": (
        _UNANSWERED,
        [
            ("answer_hpreact_fast", _PUBLISHED_UNDER_IDS.format(change="pass")),
            ("test_dhprebn_biased", _REPLACED_LATER.replace("{mime}", ANSWER_MIME)),
        ],
        dict.fromkeys(("test_dbngain", "test_dbnbias", "test_dhprebn"), "not answered yet"),
    ),
    "c_placeholders_replaced_by_a_later_cell": (  # the report itself held back: a display to update in its place
        _UNANSWERED,
        [
            (
                "answer_hpreact_fast",
                _PUBLISHED_UNDER_IDS.format(
                    change="data = {'text/plain': '.'} if next(iter(v)) in ('dbngain', 'dbnbias', 'dhprebn') else data"
                ).replace("for v in data.values():", "for v in list(data.values()):"),
            ),
            ("test_dhprebn_biased", _REPLACED_LATER.replace("{mime}", ANSWER_MIME)),
        ],
        dict.fromkeys(("test_dbngain", "test_dbnbias", "test_dhprebn"), "reported nothing"),
    ),
}


def submissions(notebook: str, release, source) -> dict:
    """student -> notebook, every case above one student of its own (cheats and alternatives may change both)."""
    class_ = {"solution": solved(release, source), "blank": release}
    for mistake, (book, changes, _) in MISTAKES.items():
        if book == notebook:
            class_[mistake] = solved(release, source, changes)
    for student, changes in ALTERNATIVES.items():
        class_[student] = solved(release, source, changes.get(notebook, {}))
    if notebook == NB3:
        for student, (changes, _) in GIVEN_CHANGED.items():
            class_[student] = solved(release, source, changes)
        for student, (changes, added, _) in REPLACED_LATER.items():
            class_[student] = solved(release, source, changes, added)
    for student, (changes, _) in CHEATS.items():
        if notebook in changes:
            class_[student] = solved(release, source, changes[notebook])
    for student, (laid_out, _) in LAID_OUT.items():
        if notebook in laid_out:
            changes, lay_out = laid_out[notebook]
            class_[student] = lay_out(solved(release, source, changes))
    visible = run_setup(tuple(c.source for c in source.cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647)
    pasted = (
        {"answer_dlogits": f"dlogits = torch.tensor({visible['logits'].grad.tolist()})"}
        if notebook == NB2
        else {"answer_dbnbias": f"dbnbias = torch.tensor({visible['bnbias'].grad.tolist()})"}
    )
    class_["c_pasted_values"] = solved(release, source, pasted)
    return class_


# h-alts2's round (December 2026): more forms students write, each keeping every point: the log-softmax picked by
# torch.arange, a sum over n, softmax's target entry lowered by scatter_add_ or set from the softmax, * (1 / n),
# division by len(Yb) or logits.size(0) in place; torch.rsqrt of the variance recomputed in the fused dhprebn, (n - 1)
# taken out of its bracket, dbnraw first under keepdims=, the formula distributed over its terms; prints, asserts, cmp
ALTERNATIVES.update(
    {
        "alt_h_alts2_a": {
            NB2: {
                "answer_loss_fast": "loss_fast = -F.log_softmax(logits, dim=1)[torch.arange(n), Yb].mean()",
                "answer_dlogits": (
                    "dlogits = F.softmax(logits, dim=1)\ndlogits[range(n), Yb] -= 1\ndlogits = dlogits * (1 / n)"
                ),
            },
            NB3: {
                "answer_hpreact_fast": (
                    "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) * torch.rsqrt(hprebn.var(0,"
                    " keepdim=True, unbiased=True) + 1e-5) + bnbias"
                ),
                "answer_dbngain": "dbngain = torch.sum(bnraw * dhpreact, dim=0, keepdims=True)",
                "answer_dbnbias": "dbnbias = dhpreact.sum(dim=0, keepdims=True)",
                "answer_dhprebn": (
                    "dhprebn = bngain * torch.rsqrt(hprebn.var(0, keepdim=True, unbiased=True) + 1e-5) / n * (n"
                    " * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
                ),
                "answer_dhprebn_biased": (
                    "dhprebn_biased = bngain * bnvar_inv_biased / n * (n * dhpreact_biased -"
                    " dhpreact_biased.sum(0, keepdims=True) - bnraw_biased * (dhpreact_biased *"
                    " bnraw_biased).sum(0, keepdims=True))"
                ),
            },
        },
        "alt_h_alts2_b": {
            NB2: {
                "answer_loss_fast": "loss_fast = F.cross_entropy(logits, Yb, reduction='sum') / n",
                "answer_dlogits": (
                    "dlogits = F.softmax(logits, 1).clone()\ndlogits[range(batch_size), Yb] += -1.0\n"
                    "dlogits /= batch_size"
                ),
            },
            NB3: {
                "answer_hpreact_fast": (
                    "hpreact_fast = bngain * (hprebn - hprebn.mean(dim=0, keepdims=True)) / (hprebn.var(dim=0,"
                    " keepdims=True) + 1e-5) ** 0.5 + bnbias"
                ),
                "answer_dhprebn": (
                    "dhprebn = (bngain * bnvar_inv / (n - 1)) * ((n - 1) * dhpreact - (n - 1) / n *"
                    " dhpreact.sum(0, keepdim=True) - bnraw * (dhpreact * bnraw).sum(0, keepdim=True))"
                ),
                "answer_dhprebn_biased": (
                    "inv = torch.rsqrt(hprebn_biased.var(0, keepdim=True, unbiased=False) + 1e-5)\n"
                    "dhprebn_biased = bngain * inv / n * (n * dhpreact_biased - dhpreact_biased.sum(0) -"
                    " bnraw_biased * (dhpreact_biased * bnraw_biased).sum(0))"
                ),
            },
        },
        "alt_h_alts2_c": {
            NB2: {
                "answer_loss_fast": "loss_fast = F.nll_loss(logits.log_softmax(-1), Yb, reduction='mean')",
                "answer_dlogits": (
                    "dlogits = torch.softmax(logits.detach(), -1)\ndlogits[torch.arange(len(Yb)), Yb] -= 1\n"
                    "dlogits.div_(len(Yb))"
                ),
            },
            NB3: {
                "answer_dhprebn": (
                    "dbnraw = bngain * dhpreact\n"
                    "dhprebn = bnvar_inv / n * (n * dbnraw - dbnraw.sum(0, keepdims=True) - n / (n - 1) * bnraw"
                    " * (dbnraw * bnraw).sum(0, keepdims=True))"
                ),
            },
        },
        "alt_h_alts2_d": {
            NB2: {
                "answer_dlogits": (
                    "dlogits = (F.softmax(logits, 1) - F.one_hot(Yb, vocab_size).float()) / logits.size(0)\n"
                    "print(dlogits.shape)\ncmp('logits', dlogits, logits)"
                ),
            },
            NB3: {
                "answer_dhprebn": (
                    "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw *"
                    " (dhpreact * bnraw).sum(0))\n"
                    "assert dhprebn.shape == hprebn.shape\nprint(dhprebn.dtype)"
                ),
            },
        },
        "alt_h_alts2_e": {
            NB2: {
                "answer_dlogits": (
                    "dlogits = F.softmax(logits, 1)\ndlogits.scatter_add_(1, Yb.unsqueeze(1), -torch.ones(n, 1))\n"
                    "dlogits /= n"
                ),
            },
            NB3: {
                "answer_dhprebn": (
                    "dhprebn = bngain * bnvar_inv * (dhpreact - dhpreact.mean(0)) - bngain * bnvar_inv * bnraw *"
                    " (dhpreact * bnraw).sum(0) / (n - 1)"
                ),
            },
        },
        "alt_h_alts2_f": {
            NB2: {
                "answer_dlogits": (
                    "ps = logits.exp()\nps = ps / ps.sum(1, keepdims=True)\ndlogits = ps.clone()\n"
                    "dlogits[range(n), Yb] = ps[range(n), Yb] - 1\ndlogits = dlogits / n"
                ),
            },
        },
    }
)

# ... and the lecture's own lines kept beside the answers: its prints of a row of dlogits and the plot of dlogits
# (Exercise 2), its max diff of hpreact_fast and its comments and cmp around dhprebn, without spaces (Exercise 3)
ALTERNATIVES["alt_h_alts2_g"] = {
    NB2: {
        "answer_dlogits": (
            "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1\ndlogits /= n\n"
            "print(F.softmax(logits, 1)[0])\nprint(dlogits[0] * n)\nprint(dlogits[0].sum())\n"
            "import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 4))\n"
            "plt.imshow(dlogits.detach(), cmap='gray')"
        ),
        "answer_loss_fast": (
            "loss_fast = F.cross_entropy(logits, Yb)\nprint(loss_fast.item(), 'diff:', (loss_fast - loss).item())"
        ),
    },
    NB3: {
        "answer_hpreact_fast": (
            "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / torch.sqrt(hprebn.var(0,"
            " keepdim=True, unbiased=True) + 1e-5) + bnbias\n"
            "print('max diff:', (hpreact_fast - hpreact).abs().max())"
        ),
        "answer_dhprebn": (
            "# before we had:\n# dbnraw = bngain * dhpreact\n# ...\n# calculate dhprebn given dhpreact\n"
            "dhprebn = bngain*bnvar_inv/n * (n*dhpreact - dhpreact.sum(0) -"
            " n/(n-1)*bnraw*(dhpreact*bnraw).sum(0))\n"
            "cmp('hprebn', dhprebn, hprebn)"
        ),
    },
}


# h-alts4: hpreact_fast by nn.BatchNorm1d in eval mode, its running statistics those of this batch (set by a call in
# training mode with momentum 1, or assigned), then bn.eval(): the probe re-ran only the lines that assign, so the
# module stayed in training mode (the biased variance) and hpreact_fast lost its 2 points with "biased variance". A
# call that may change an object the answer's code made is re-run now (probes.statements._may_change).
ALTERNATIVES["alt_h_alts4_batchnorm_module_eval"] = {
    NB3: {
        "answer_hpreact_fast": "bn = torch.nn.BatchNorm1d(n_hidden, momentum=1.0)\nbn.train()\nbn(hprebn.detach())\n"
        "bn.eval()\nwith torch.no_grad():\n    bn.weight.copy_(bngain.view(-1))\n    bn.bias.copy_(bnbias.view(-1))\n"
        "hpreact_fast = bn(hprebn)"
    }
}
ALTERNATIVES["alt_h_alts4_batchnorm_module_running_stats"] = {
    NB3: {
        "answer_hpreact_fast": "bn = torch.nn.BatchNorm1d(n_hidden, eps=1e-5, affine=False)\n"
        "bn.running_mean = hprebn.mean(0).detach()\nbn.running_var = hprebn.var(0).detach()\nbn.eval()\n"
        "hpreact_fast = bngain * bn(hprebn) + bnbias"
    }
}
# ... and the module left in training mode normalises with the biased variance: still that mistake
MISTAKES["bn_module_in_training_mode"] = (
    NB3,
    {
        "answer_hpreact_fast": "bn = torch.nn.BatchNorm1d(n_hidden, affine=False)\n"
        "hpreact_fast = bngain * bn(hprebn) + bnbias"
    },
    {"test_hpreact_fast": "biased variance"},
)

"""Exercises 2 and 3 through the real pipeline: generate_assignment, then ONE autograde run for a whole class.

Every student of the class hands in both notebooks. A student carries one or more independent mistakes
(each in its own graded cell), so that each mistake is checked on its own cells while the class stays
small; the tests then read the gradebook and the grader's messages cell by cell.
"""

import nbformat
import pytest

from autograder.authoring import SOURCE_DIR
from autograder.authoring.submissions import grade_id
from autograder.engine.backward_rules import FUSED_STEPS, local_gradient
from autograder.engine.diagnose import diagnose
from autograder.engine.reference import SETUP_PREFIX, autograd_gradients, forward_values, run_setup
from autograder.engine.tolerance import close, step_scale
from autograder.engine.value_checks import FAST_FORWARDS

NB2, NB3 = "ex2_cross_entropy_backward", "ex3_batchnorm_backward"


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
    # Exercise 2: dlogits
    "dlogits_no_n": (
        NB2,
        {"answer_dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1"},
        {"test_dlogits": "n = 32 times too large"},
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

STUDENTS = {
    "m_a": ["loss_sum", "dlogits_no_n", "bn_biased_forward", "dbngain_wrong_axis", "dhprebn_no_bessel"],
    "m_b": [
        "loss_from_probs",
        "dlogits_softmax_dim0",
        "bn_forward_wrong_dim",
        "dbnbias_keepdim",
        "dhprebn_n_for_n_minus_1",
    ],
    "m_c": ["loss_nll_of_logits", "dlogits_one_everywhere", "bn_forward_no_bias", "dhprebn_biased_recomputed"],
    "m_d": ["loss_shape", "dlogits_sign", "bn_forward_by_variance", "dhprebn_no_mean_term"],
    "m_e": ["dlogits_every_target", "dhprebn_no_projection"],
    "m_f": ["dlogits_no_target", "dhprebn_no_gain"],
    "m_g": ["dlogits_log_softmax", "dhprebn_wrong_axis"],
}


SETUP3 = tuple(
    c.source
    for c in nbformat.read(SOURCE_DIR / f"{NB3}.ipynb", as_version=4).cells
    if grade_id(c).startswith(SETUP_PREFIX)
)


def test_every_mistake_is_graded_once():
    assert sorted(m for ms in STUDENTS.values() for m in ms) == sorted(MISTAKES)
    for notebook in (NB2, NB3):
        assert len([m for m in MISTAKES if MISTAKES[m][0] == notebook]) >= 6


@pytest.mark.parametrize("seed", [1, 42, 99991])
def test_fused_rules_agree_with_autograd_and_each_known_mistake_gets_its_own_message(seed):
    namespace = run_setup(SETUP3, seed)
    forward, grads = forward_values(namespace), autograd_gradients(namespace)
    for step in FUSED_STEPS:
        upstream = {c: grads[c] for c in step.upstream}
        scale = step_scale(step, forward, upstream)
        assert close(local_gradient(step, forward, upstream), grads[step.name], scale), step.name
        for message, variants in step.mistakes.items():
            for variant in variants if isinstance(variants, tuple) else (variants,):
                wrong = variant(forward, upstream).float()
                assert not close(wrong, grads[step.name], 10 * scale), message  # far outside the tolerance
                assert diagnose(wrong.double(), grads[step.name].double(), step, forward, upstream) == message
    for value in FAST_FORWARDS:
        reference = forward[value.reference]
        for message, variant in value.mistakes.items():
            assert not close(variant(forward), reference, 3 * reference.abs().max().item()), message

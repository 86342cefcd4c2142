"""The fused steps of Exercises 2 and 3: a whole block of the forward pass differentiated at once (cross-entropy's
dlogits, BatchNorm's dhprebn; and dhprebn_biased, for Exercise 3's second forward pass, whose variance divides by n).
They are ``Step``s like the atomic ones, so the judge, the tolerance and the diagnoses treat them the same way; their
``mistakes`` name the wrong formulas students typically write."""

import torch
import torch.nn.functional as F

from ..common.diagnoses import Reason
from ..common.words import say
from .backward_rules import Step, batch_size
from .fused_batchnorm import (
    BESSEL,
    BIASED,
    batchnorm_mistakes,
    dhprebn_biased,
    dhprebn_fused,
    precedence_mistakes,
    unbiased,
)


def _one_hot(f):
    return F.one_hot(f["Yb"], num_classes=f["logits"].shape[1]).to(f["logits"].dtype)


def _dlogits_fused(f, d, probs=None, target=None):
    """(softmax - one-hot) / n, or the same with a wrong softmax or a wrong target term (the variants)."""
    probs = F.softmax(f["logits"], 1) if probs is None else probs
    target = _one_hot(f) if target is None else target
    return (probs - target) / batch_size(f)


def _at_target(f, value):
    """dlogits with ``value(p)`` at each example's target, p the softmax there, and the softmax elsewhere (over n)."""
    p = F.softmax(f["logits"], 1)
    return _dlogits_fused(f, None, probs=p, target=(p - value(p)) * _one_hot(f))


def _every_target_in_every_row(f):
    """What `dlogits[:, Yb] -= 1` subtracts: 1 in each row at every column that is some example's target."""
    mask = torch.zeros_like(f["logits"])
    mask[:, f["Yb"]] = 1.0
    return mask


def _rows_of_the_targets(f):
    """What `dlogits[Yb] -= 1` subtracts: 1 in every entry of the rows that Yb's values number (each once)."""
    mask = torch.zeros_like(f["logits"])
    mask[f["Yb"]] = 1.0
    return mask


def _target_but_one(f, row: int):
    """The one-hot of the targets without the one of example ``row``: a loop over range(n - 1) or range(1, n)."""
    target = _one_hot(f).clone()
    target[row] = 0.0
    return target


FUSED_STEPS = [
    Step(
        "logits",
        "loss = F.cross_entropy(logits, Yb)",
        {"loss": _dlogits_fused},
        4,
        mistakes={
            Reason(
                "wrong_dimension",
                say(
                    "dlogits takes the softmax over the wrong dimension: an example's probabilities are spread over "
                    "its own 27 characters (its row), not over the batch (a column)"
                ),
            ): lambda f, d: _dlogits_fused(f, d, probs=F.softmax(f["logits"], 0)),
            Reason(
                "target_term",
                say(
                    "dlogits has the target's term in every entry of every row: the loss of an example reads only the "
                    "probability of its own target, so that term belongs to one entry per row"
                ),
            ): lambda f, d: _dlogits_fused(f, d, target=torch.ones_like(f["logits"])),
            Reason(
                "off_by_one",
                say(
                    "dlogits has no target's term in the last example's row: a loop over range(n - 1) stops one short. "
                    "range(n) runs over every example of the batch"
                ),
            ): lambda f, d: _dlogits_fused(f, d, target=_target_but_one(f, -1)),
            Reason(
                "off_by_one",
                say(
                    "dlogits has no target's term in the first example's row: a loop over range(1, n) starts one late. "
                    "range(n) runs over every example of the batch, from 0"
                ),
            ): lambda f, d: _dlogits_fused(f, d, target=_target_but_one(f, 0)),
            Reason(
                "target_term",
                say(
                    "dlogits has the target's term at every example's target in every row: each row gets it at its own "
                    "target only (index rows and columns together)"
                ),
            ): lambda f, d: _dlogits_fused(f, d, target=_every_target_in_every_row(f)),
            Reason(
                "target_term",
                say(
                    "dlogits has the target's term in whole rows, those that the targets' values number: `[Yb]` alone "
                    "picks rows, not entries. Index rows and columns together, [range(n), Yb], so that each row gets "
                    "it at its own target only"
                ),
            ): lambda f, d: _dlogits_fused(f, d, target=_rows_of_the_targets(f)),
            Reason(
                "target_term",
                say(
                    "dlogits has no term for the target: differentiate the -log of the target's probability again and "
                    "look at what the target's own logit gets"
                ),
            ): lambda f, d: _dlogits_fused(f, d, target=torch.zeros_like(f["logits"])),
            Reason(
                "target_term",
                say(
                    "dlogits uses log-probabilities where the derivative gives probabilities: what is the derivative "
                    "of log(sum of exponentials) with respect to one logit?"
                ),
            ): lambda f, d: _dlogits_fused(f, d, probs=F.log_softmax(f["logits"], 1)),
            Reason(
                "target_term",
                say(
                    "dlogits uses exponentials that are not normalised: probabilities are exponentials divided by "
                    "their row's sum"
                ),
            ): lambda f, d: _dlogits_fused(f, d, probs=f["logits"].exp()),
            Reason(
                "target_term",
                say(
                    "dlogits divides the softmax by n but not the 1 subtracted at each target (`-= 1` after the "
                    "division): the whole of softmax - one-hot is divided by n, the 1/n of the loss's mean"
                ),
            ): lambda f, d: _dlogits_fused(f, d, target=_one_hot(f) * batch_size(f)),
            Reason(
                "target_term",
                say(
                    "dlogits divides the 1 subtracted at each target by n twice (`-= 1 / n`, then `/= n`): the whole "
                    "of softmax - one-hot is divided by n, once"
                ),
            ): lambda f, d: _dlogits_fused(f, d, target=_one_hot(f) / batch_size(f)),
            Reason(
                "precedence",
                say(
                    "dlogits divides only the one-hot by n: `softmax - one_hot / n` is softmax - (one_hot / n), "
                    "because Python divides before it subtracts. Bracket the difference, (softmax - one_hot) / n"
                ),
            ): lambda f, d: F.softmax(f["logits"], 1) - _one_hot(f) / batch_size(f),
            Reason(
                "wrong_sign",
                say(
                    "dlogits adds 1 at each example's target where it subtracts it: the loss is -log of the target's "
                    "probability, so the target's own logit gets its probability minus 1"
                ),
            ): lambda f, d: _at_target(f, lambda p: p + 1.0),
            Reason(
                "wrong_sign",
                say(
                    "dlogits has 1 - p at each example's target, where its probability p minus 1 belongs: the sign of "
                    "the target's entry is flipped (every other entry of the row is positive, and the target's "
                    "balances them)"
                ),
            ): lambda f, d: _at_target(f, lambda p: 1.0 - p),
            Reason(
                "target_term",
                say(
                    "dlogits is zero at each example's target: the target's own logit gets its probability minus 1, "
                    "so subtract 1 there, not the probability itself"
                ),
            ): lambda f, d: _at_target(f, lambda p: 0.0 * p),
            Reason(
                "target_term",
                say(
                    "dlogits has p * (1 - p) at each example's target, the derivative of a probability with respect "
                    "to its own logit: the loss is -log p, and the chain rule through the log gives p - 1 there"
                ),
            ): lambda f, d: _at_target(f, lambda p: p * (1.0 - p)),
        },
    ),
    Step(
        "hprebn",
        # code, not words: it reaches the student in every edition (diagnose's `{forward}`)
        "hpreact = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / torch.sqrt(hprebn.var(0, keepdim=True) + 1e-5)"
        " + bnbias",
        {"hpreact": dhprebn_fused},
        4,
        mistakes={
            Reason(
                "bessel",
                say(
                    "dhprebn is missing the factor n/(n-1) on the path through the variance (or divides by n where "
                    "n-1 belongs): {why}",
                    why=BESSEL,
                ),
            ): lambda f, d: dhprebn_fused(f, d, bessel=1.0),
            Reason(
                "bessel",
                say(
                    "dhprebn has the factor between the variance path and the mean path upside down: {why}", why=BESSEL
                ),
            ): lambda f, d: dhprebn_fused(f, d, bessel=(batch_size(f) - 1) / batch_size(f)),
            Reason(
                "bessel",
                say(
                    "dhprebn is the gradient of BatchNorm with the biased variance (divided by n), as in the BatchNorm "
                    "paper; this notebook's variance divides by n-1 (Bessel's correction), like bnvar"
                ),
            ): dhprebn_biased,
            Reason(
                "bessel",
                say(
                    "dhprebn reads a bnvar_inv and a bnraw recomputed with the biased variance (divided by n, "
                    "unbiased=False): this forward pass's divide by n-1, like bnvar; use its own bnvar_inv and bnraw"
                ),
            ): lambda f, d: dhprebn_biased(f, d, bessel=None),
            Reason(
                "bessel",
                say("dhprebn divides the path through the mean by n-1, where the mean divides by n: {why}", why=BESSEL),
            ): lambda f, d: dhprebn_fused(f, d, mean_term=batch_size(f) / (batch_size(f) - 1)),
            Reason(  # the BatchNorm paper's formula, fed dbnraw, under a bngain of its own (published so)
                "bessel",
                say(
                    "dhprebn has bngain twice (in front of the bracket, and in dbnraw = bngain * dhpreact inside it), "
                    "and it is missing the factor n/(n-1) on the path through the variance: {why}",
                    why=BESSEL,
                ),
            ): lambda f, d: dhprebn_fused(f, d, bessel=1.0, gain=2),
            **batchnorm_mistakes("dhprebn"),
            **precedence_mistakes(),
        },
    ),
    Step(  # Exercise 3, Part 4: the same layer when the variance divides by n (setup_biased computes it)
        "hprebn" + BIASED,
        "hpreact_biased = bngain * (hprebn_biased - hprebn_biased.mean(0, keepdim=True)) / "
        "torch.sqrt(hprebn_biased.var(0, keepdim=True, unbiased=False) + 1e-5) + bnbias",
        {"hpreact" + BIASED: lambda f, d: dhprebn_fused(f, d, bessel=1.0, of=BIASED)},
        2,
        mistakes={
            Reason(
                "bessel",
                say(
                    "dhprebn_biased uses n-1 where this forward pass divides by n: the factor n/(n-1) on the path "
                    "through the variance comes from Bessel's correction, and this variance divides by n, like the mean"
                ),
            ): lambda f, d: dhprebn_fused(f, d, of=BIASED),
            Reason(
                "bessel",
                say(
                    "dhprebn_biased has a factor (n-1)/n on the path through the variance: this forward pass divides "
                    "the variance by n, like the mean, so the two paths need no factor between them"
                ),
            ): lambda f, d: dhprebn_fused(f, d, bessel=(batch_size(f) - 1) / batch_size(f), of=BIASED),
            Reason(
                "other_forward_pass",
                say(
                    "dhprebn_biased is computed from the tensors of the first forward pass, whose variance divides by "
                    "n-1: use this one's, bnraw_biased, bnvar_inv_biased and dhpreact_biased"
                ),
            ): (unbiased, lambda f, d: unbiased(f, d, bessel=1.0)),
            **batchnorm_mistakes("dhprebn_biased", of=BIASED, bessel=1.0),
        },
    ),
]

FUSED_STEP_BY_NAME = {step.name: step for step in FUSED_STEPS}

"""The fused steps of Exercises 2 and 3: a whole block of the forward pass differentiated at once (cross-entropy's
dlogits, BatchNorm's dhprebn; and dhprebn_biased, for Exercise 3's second forward pass, whose variance divides by n).
They are ``Step``s like the atomic ones, so the judge, the tolerance and the diagnoses treat them the same way; their
``mistakes`` name the wrong formulas students typically write."""

import torch
import torch.nn.functional as F

from ..common.diagnoses import Reason
from ..common.words import say
from .backward_rules import EPSILON_WORDS, Step, batch_size


def _one_hot(f):
    return F.one_hot(f["Yb"], num_classes=f["logits"].shape[1]).to(f["logits"].dtype)


def _dlogits_fused(f, d, probs=None, target=None):
    """(softmax - one-hot) / n, or the same with a wrong softmax or a wrong target term (the variants)."""
    probs = F.softmax(f["logits"], 1) if probs is None else probs
    target = _one_hot(f) if target is None else target
    return (probs - target) / batch_size(f)


def _every_target_in_every_row(f):
    """What `dlogits[:, Yb] -= 1` subtracts: 1 in each row at every column that is some example's target."""
    mask = torch.zeros_like(f["logits"])
    mask[:, f["Yb"]] = 1.0
    return mask


def _dhprebn_fused(
    f, d, bessel=None, mean_term=1.0, variance_term=1.0, gain=1, dim=0, bnvar_inv=None, bnraw=None, of=""
):
    """The BatchNorm backward pass in one expression; the keywords make its known wrong variants. ``of``: the suffix
    of the forward pass's tensors (``_biased``: the one whose variance divides by n, where ``bessel`` is 1)."""
    n = batch_size(f)
    bessel = n / (n - 1) if bessel is None else bessel
    s = f["bnvar_inv" + of] if bnvar_inv is None else bnvar_inv
    xhat = f["bnraw" + of] if bnraw is None else bnraw
    dy = d["hpreact" + of]
    scale = f["bngain"] ** gain * s / n  # gain: how often bngain is in the formula (0: missing, 2: twice)
    return scale * (
        n * dy
        - mean_term * dy.sum(dim, keepdim=True)
        - variance_term * bessel * xhat * (dy * xhat).sum(dim, keepdim=True)
    )


def _dhprebn_biased(f, d, bessel=1.0):
    """The whole formula redone with the biased variance (divided by n), as the BatchNorm paper has it; ``bessel``
    None: the course's formula, n/(n-1) kept, fed bnvar_inv and bnraw recomputed with that variance."""
    bndiff = f["hprebn"] - f["hprebn"].mean(0, keepdim=True)
    s = ((bndiff**2).mean(0, keepdim=True) + 1e-5) ** -0.5
    return _dhprebn_fused(f, d, bessel=bessel, bnvar_inv=s, bnraw=bndiff * s)


def _unbiased(f, d, bessel=None):
    """Exercise 3's first dhprebn, from the forward pass whose variance divides by n-1, for the biased one's answer."""
    return _dhprebn_fused(f, {"hpreact": f["dhpreact"]}, bessel=bessel)


_BESSEL = say(
    "the forward pass divides the variance by n-1 (Bessel's correction) but the mean by n, and the two paths of your "
    "derivation must keep that difference"
)
_BIASED = "_biased"


def _batchnorm_mistakes(answer: str, of: str = "", bessel=None) -> dict:
    """The mistakes both BatchNorm steps share: a path, bngain or the epsilon missing, sums over the wrong dimension.
    ``of`` and ``bessel``: the forward pass's suffix and its factor between the paths (n/(n-1), or 1)."""
    fused = lambda **wrong: lambda f, d: _dhprebn_fused(f, d, bessel=bessel, of=of, **wrong)
    raw_inv, other = lambda f: f["bnvar" + of] ** -0.5, "" if of else _BIASED
    return {
        Reason(
            "missing_path",
            say(
                "{answer} is missing the path through the mean: every input moves its neuron's batch mean, and the "
                "mean is subtracted from every example",
                answer=answer,
            ),
        ): fused(mean_term=0.0),
        Reason(
            "missing_path",
            say(
                "{answer} is missing the path through the variance: every input moves its neuron's batch variance, "
                "which scales every example",
                answer=answer,
            ),
        ): fused(variance_term=0.0),
        Reason(
            "missing_path",
            say(
                "{answer} has only the direct path through the normalised value: the mean and the variance are "
                "computed from every example of the batch, so each adds a path of its own",
                answer=answer,
            ),
        ): fused(mean_term=0.0, variance_term=0.0),
        Reason(
            "wrong_sign",
            say(
                "{answer} adds the path through the variance where it is subtracted: a larger input spreads its "
                "neuron's batch wider, and that shrinks every normalised value (the derivative of 1/sqrt(var + 1e-5) "
                "is negative)",
                answer=answer,
            ),
        ): fused(variance_term=-1.0),
        Reason(
            "wrong_sign",
            say(
                "{answer} adds the path through the mean where it is subtracted: the batch mean is subtracted from "
                "every example, so each input's share of it comes back with a minus sign",
                answer=answer,
            ),
        ): fused(mean_term=-1.0),
        Reason(
            "missing_factor",
            say(
                "{answer} is missing bngain: the normalised value is multiplied by bngain before it becomes hpreact",
                answer=answer,
            ),
        ): fused(gain=0),
        Reason(
            "factor_twice",
            say(
                "{answer} has bngain twice: once in front of the bracket and once inside it, in the upstream gradient "
                "scaled by bngain (dbnraw = bngain * dhpreact). The formula with bngain in front takes the upstream "
                "gradient of hpreact as it is",
                answer=answer,
            ),
        ): fused(gain=2),
        Reason("epsilon", say("{answer} is missing BatchNorm's epsilon: {why}", answer=answer, why=EPSILON_WORDS)): (
            lambda f, d: _dhprebn_fused(f, d, bessel=bessel, of=of, bnvar_inv=raw_inv(f)),
            lambda f, d: _dhprebn_fused(
                f, d, bessel=bessel, of=of, bnvar_inv=raw_inv(f), bnraw=f["bndiff" + of] * raw_inv(f)
            ),
        ),
        Reason(
            "wrong_dimension",
            say(
                "{answer} sums over the wrong dimension: a neuron's mean and variance are taken over the batch "
                "(dimension 0), so the sums in its gradient run over the batch too",
                answer=answer,
            ),
        ): fused(dim=1),
        **{  # a tensor of the other BatchNorm block (bnraw for bnraw_biased, or back): the variances' n and n-1 mixed
            Reason(
                "bessel",
                say(
                    "{answer} reads {wrong}, a tensor of the other BatchNorm block, where this forward pass's {right} "
                    "belongs",
                    answer=answer,
                    wrong=name + other,
                    right=name + of,
                ),
            ): (lambda f, d, t=name: _dhprebn_fused(f, d, bessel=bessel, of=of, **{t: f[t + other]}))
            for name in ("bnvar_inv", "bnraw")
        },
    }


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
                "target_term",
                say(
                    "dlogits has the target's term at every example's target in every row: each row gets it at its own "
                    "target only (index rows and columns together)"
                ),
            ): lambda f, d: _dlogits_fused(f, d, target=_every_target_in_every_row(f)),
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
        },
    ),
    Step(
        "hprebn",
        # code, not words: it reaches the student in every edition (diagnose's `{forward}`)
        "hpreact = bngain * (hprebn - hprebn.mean(0, keepdim=True)) / torch.sqrt(hprebn.var(0, keepdim=True) + 1e-5)"
        " + bnbias",
        {"hpreact": _dhprebn_fused},
        4,
        mistakes={
            Reason(
                "bessel",
                say(
                    "dhprebn is missing the factor n/(n-1) on the path through the variance (or divides by n where "
                    "n-1 belongs): {why}",
                    why=_BESSEL,
                ),
            ): lambda f, d: _dhprebn_fused(f, d, bessel=1.0),
            Reason(
                "bessel",
                say(
                    "dhprebn has the factor between the variance path and the mean path upside down: {why}", why=_BESSEL
                ),
            ): lambda f, d: _dhprebn_fused(f, d, bessel=(batch_size(f) - 1) / batch_size(f)),
            Reason(
                "bessel",
                say(
                    "dhprebn is the gradient of BatchNorm with the biased variance (divided by n), as in the BatchNorm "
                    "paper; this notebook's variance divides by n-1 (Bessel's correction), like bnvar"
                ),
            ): _dhprebn_biased,
            Reason(
                "bessel",
                say(
                    "dhprebn reads a bnvar_inv and a bnraw recomputed with the biased variance (divided by n, "
                    "unbiased=False): this forward pass's divide by n-1, like bnvar; use its own bnvar_inv and bnraw"
                ),
            ): lambda f, d: _dhprebn_biased(f, d, bessel=None),
            Reason(
                "bessel",
                say(
                    "dhprebn divides the path through the mean by n-1, where the mean divides by n: {why}", why=_BESSEL
                ),
            ): lambda f, d: _dhprebn_fused(f, d, mean_term=batch_size(f) / (batch_size(f) - 1)),
            Reason(  # the BatchNorm paper's formula, fed dbnraw, under a bngain of its own (published so)
                "bessel",
                say(
                    "dhprebn has bngain twice (in front of the bracket, and in dbnraw = bngain * dhpreact inside it), "
                    "and it is missing the factor n/(n-1) on the path through the variance: {why}",
                    why=_BESSEL,
                ),
            ): lambda f, d: _dhprebn_fused(f, d, bessel=1.0, gain=2),
            **_batchnorm_mistakes("dhprebn"),
        },
    ),
    Step(  # Exercise 3, Part 4: the same layer when the variance divides by n (setup_biased computes it)
        "hprebn" + _BIASED,
        "hpreact_biased = bngain * (hprebn_biased - hprebn_biased.mean(0, keepdim=True)) / "
        "torch.sqrt(hprebn_biased.var(0, keepdim=True, unbiased=False) + 1e-5) + bnbias",
        {"hpreact" + _BIASED: lambda f, d: _dhprebn_fused(f, d, bessel=1.0, of=_BIASED)},
        2,
        mistakes={
            Reason(
                "bessel",
                say(
                    "dhprebn_biased uses n-1 where this forward pass divides by n: the factor n/(n-1) on the path "
                    "through the variance comes from Bessel's correction, and this variance divides by n, like the mean"
                ),
            ): lambda f, d: _dhprebn_fused(f, d, of=_BIASED),
            Reason(
                "bessel",
                say(
                    "dhprebn_biased has a factor (n-1)/n on the path through the variance: this forward pass divides "
                    "the variance by n, like the mean, so the two paths need no factor between them"
                ),
            ): lambda f, d: _dhprebn_fused(f, d, bessel=(batch_size(f) - 1) / batch_size(f), of=_BIASED),
            Reason(
                "other_forward_pass",
                say(
                    "dhprebn_biased is computed from the tensors of the first forward pass, whose variance divides by "
                    "n-1: use this one's, bnraw_biased, bnvar_inv_biased and dhpreact_biased"
                ),
            ): (_unbiased, lambda f, d: _unbiased(f, d, bessel=1.0)),
            **_batchnorm_mistakes("dhprebn_biased", of=_BIASED, bessel=1.0),
        },
    ),
]

FUSED_STEP_BY_NAME = {step.name: step for step in FUSED_STEPS}

"""The blocks of the forward pass a student writes in one expression (``loss_fast``, ``hpreact_fast``): what each must
equal, the input it must follow, and its known wrong variants, each with its message."""

from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F

from ..common.diagnoses import Reason
from ..common.words import say

Variant = Callable[[dict], torch.Tensor]  # f (the forward values) -> a known wrong value


@dataclass(frozen=True)
class Value:
    name: str  # the student's variable, e.g. "loss_fast"
    reference: str  # the setup's tensor it must equal, e.g. "loss"
    forward: str  # what the student writes, as a message can quote it
    points: int
    compute: Variant  # the block of the forward pass in one go: what the answer is for any input
    input: str  # the tensor the block starts from: the rule probe re-runs the student's code with another one
    chunked: tuple  # the chunked forward pass's tensors computed from the input: reading them copies the chunk
    mistakes: dict = field(default_factory=dict)  # message (a Reason) -> variant(f)


def _batchnorm(f, mean_dim=0, correction=1, root=True, gain=True, bias=True, centre=True, epsilon=1e-5, outside=0.0):
    """The BatchNorm forward in one expression; the keywords make its known wrong variants (``outside``: an epsilon
    added after the square root, as `x.std(0) + 1e-5` does, with ``epsilon`` 0)."""
    x = f["hprebn"]
    centred = x - x.mean(mean_dim, keepdim=True) if centre else x
    var = x.var(mean_dim, keepdim=True, correction=correction) + epsilon
    out = centred / (var.sqrt() + outside if root else var)
    return (f["bngain"] if gain else 1.0) * out + (f["bnbias"] if bias else 0.0)


FAST_FORWARDS = [
    Value(
        "loss_fast",
        "loss",
        "loss_fast = F.cross_entropy(logits, Yb)",
        1,
        lambda f: F.cross_entropy(f["logits"], f["Yb"]),
        "logits",
        ("logit_maxes", "norm_logits", "counts", "counts_sum", "counts_sum_inv", "probs", "logprobs", "loss"),
        mistakes={
            Reason(
                "not_raw_logits",
                say(
                    "loss_fast was computed from probabilities: F.cross_entropy takes the raw logits and does the "
                    "softmax itself"
                ),
            ): lambda f: F.cross_entropy(f["probs"], f["Yb"]),
            Reason(
                "not_raw_logits",
                say(
                    "loss_fast reads the logits as if they were log-probabilities (that is what F.nll_loss expects): "
                    "F.cross_entropy takes the raw logits"
                ),
            ): lambda f: F.nll_loss(f["logits"], f["Yb"]),
            Reason(
                "wrong_dimension",
                say(
                    "loss_fast takes the softmax (or the log-sum-exp) over the wrong dimension: an example's "
                    "probabilities are spread over its own row of logits (dim=1), not over a column of the batch"
                ),
            ): lambda f: -F.log_softmax(f["logits"], 0)[range(f["logits"].shape[0]), f["Yb"]].mean(),
            Reason(
                "wrong_sign",
                say(
                    "loss_fast has the wrong sign: the loss is minus the mean log-probability of the targets (a "
                    "log-probability is negative, a loss positive)"
                ),
            ): lambda f: -F.cross_entropy(f["logits"], f["Yb"]),
            Reason(
                "target_term",
                say(
                    "loss_fast averages the targets' probabilities: the loss averages minus their logarithms, "
                    "-log(p), so that a probability near 0 costs far more than one near 1"
                ),
            ): lambda f: -F.softmax(f["logits"], 1)[range(f["logits"].shape[0]), f["Yb"]].mean(),
        },
    ),
    Value(
        "hpreact_fast",
        "hpreact",
        "hpreact_fast = bngain * (hprebn - mean) / sqrt(var + 1e-5) + bnbias",
        2,
        _batchnorm,
        "hprebn",
        ("bnmeani", "bndiff", "bndiff2", "bnvar", "bnvar_inv", "bnraw", "hpreact"),
        mistakes={
            Reason(
                "bessel",
                say(
                    "hpreact_fast uses the biased variance (divided by n): this notebook's BatchNorm divides by n-1 "
                    "(Bessel's correction), like bnvar"
                ),
            ): lambda f: _batchnorm(f, correction=0),
            Reason(
                "wrong_dimension",
                say(
                    "hpreact_fast normalises each example over its neurons (dimension 1): BatchNorm normalises each "
                    "neuron over the batch (dimension 0)"
                ),
            ): lambda f: _batchnorm(f, mean_dim=1),
            Reason(
                "variance_for_std",
                say(
                    "hpreact_fast divides by the variance: normalising divides by the standard deviation, the square "
                    "root of (variance + 1e-5)"
                ),
            ): lambda f: _batchnorm(f, root=False),
            Reason("missing_term", say("hpreact_fast does not subtract the batch mean before dividing")): lambda f: (
                _batchnorm(f, centre=False)
            ),
            Reason(
                "epsilon",
                say(
                    "hpreact_fast is missing BatchNorm's epsilon: normalising divides by the square root of (variance "
                    "+ 1e-5), and the 1e-5 matters where a neuron's batch variance is small, as neuron 0's is here"
                ),
            ): lambda f: _batchnorm(f, epsilon=0.0),
            Reason(
                "epsilon",
                say(
                    "hpreact_fast adds BatchNorm's epsilon after the square root (as std() + 1e-5 does): normalising "
                    "divides by the square root of (variance + 1e-5), the 1e-5 inside the root, and that matters where "
                    "a neuron's batch variance is small, as neuron 0's is here"
                ),
            ): lambda f: _batchnorm(f, epsilon=0.0, outside=1e-5),
            Reason(
                "missing_factor", say("hpreact_fast is missing bngain: the normalised value is scaled by bngain")
            ): lambda f: _batchnorm(f, gain=False),
            Reason(
                "missing_term", say("hpreact_fast is missing bnbias: the normalised value is shifted by bnbias")
            ): lambda f: _batchnorm(f, bias=False),
            Reason(
                "missing_factor",
                say(
                    "hpreact_fast swaps bngain and bnbias: the normalised value is multiplied by bngain, then bnbias "
                    "is added"
                ),
            ): lambda f: f["bnbias"] * _batchnorm(f, gain=False, bias=False) + f["bngain"],
        },
    ),
]

FAST_FORWARD_BY_NAME = {value.name: value for value in FAST_FORWARDS}

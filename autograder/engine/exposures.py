"""Which of the grader's inputs exposes which known mistake, and by how much (``margins``).

Some mistakes give autograd's values, or nearly, on an ordinary batch; the grader's inputs are drawn so that they
show. tests/fast/test_margins.py asserts the margins, benchmarks/bench_margins.py prints them (docs/design/engine.md).
"""

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

from .backward_rules import STEP_BY_NAME, Step, batch_size, local_gradient
from .fast_forwards import FAST_FORWARD_BY_NAME
from .fused_rules import FUSED_STEP_BY_NAME
from .probes.judge_rule import consistent_pins
from .probes.rerun import pin_value
from .tolerance import RTOL, magnitude, max_difference, step_scale

EPSILON_NEURON = "neuron 0's batch variance is the epsilon"
REPEATED_CHARACTERS = "repeated characters (96 from 27: always)"
RANDOM_UPSTREAM = "the rule probe: random upstream gradients"
OTHER_INPUT = "the value probe: another input"


@dataclass(frozen=True)
class Exposure:
    answer: str  # the graded answer
    mistake: str  # in words
    exposed_by: str  # the input that makes it visible
    judged_as: object  # the backward_rules.Step or value_checks.Value it is judged by
    right: Callable  # (f, d) -> the correct formula students write that is nearest to the mistake
    wrong: Callable  # (f, d) -> the mistake


def _atomic_batchnorm(f, d):
    """dhprebn from dhpreact through every atomic step: Exercise 3's answer done the long way."""
    n = batch_size(f)
    dbnraw = f["bngain"] * d["hpreact"]
    dbndiff = f["bnvar_inv"] * dbnraw
    dbnvar = -0.5 * (f["bnvar"] + 1e-5) ** -1.5 * (f["bndiff"] * dbnraw).sum(0, keepdim=True)
    dbndiff = dbndiff + 2 * f["bndiff"] / (n - 1) * dbnvar
    return dbndiff - dbndiff.sum(0, keepdim=True) / n


def _fused_without_epsilon(f, d):
    n, s = batch_size(f), f["bnvar"] ** -0.5
    dy, xhat = d["hpreact"], f["bnraw"]
    return f["bngain"] * s / n * (n * dy - dy.sum(0) - n / (n - 1) * xhat * (dy * xhat).sum(0))


def _batchnorm(f, epsilon=1e-5):
    x = f["hprebn"]
    return f["bngain"] * (x - x.mean(0, keepdim=True)) * torch.rsqrt(x.var(0, keepdim=True) + epsilon) + f["bnbias"]


def _not_added_up(f, d):
    """dC[Xb] += demb: a repeated character gets one of its contributions, not their sum."""
    dC = torch.zeros_like(f["C"])
    dC[f["Xb"]] += d["emb"]
    return dC


def _max_path(f, d, at):
    return F.one_hot(at, f["logits"].shape[1]).float() * d["logit_maxes"]


EXPOSURES = [
    Exposure(
        "dbnvar",
        "the epsilon dropped",
        EPSILON_NEURON,
        STEP_BY_NAME["bnvar"],
        lambda f, d: -0.5 * f["bnvar_inv"] ** 3 * d["bnvar_inv"],
        lambda f, d: -0.5 * f["bnvar"] ** -1.5 * d["bnvar_inv"],
    ),
    Exposure(
        "dhprebn (Exercise 3)",
        "the epsilon dropped",
        EPSILON_NEURON,
        FUSED_STEP_BY_NAME["hprebn"],
        _atomic_batchnorm,
        _fused_without_epsilon,
    ),
    Exposure(
        "hpreact_fast",
        "the epsilon dropped",
        EPSILON_NEURON,
        FAST_FORWARD_BY_NAME["hpreact_fast"],
        lambda f, d: _batchnorm(f),
        lambda f, d: _batchnorm(f, epsilon=0.0),
    ),
    Exposure(
        "dC",
        "dC[Xb] += demb",
        REPEATED_CHARACTERS,
        STEP_BY_NAME["C"],
        lambda f, d: F.one_hot(f["Xb"].view(-1), f["C"].shape[0]).float().T @ d["emb"].view(-1, f["C"].shape[1]),
        _not_added_up,
    ),
    Exposure(
        "dlogits",
        "no path through logit_maxes",
        RANDOM_UPSTREAM,
        STEP_BY_NAME["logits"],
        lambda f, d: d["norm_logits"] + (f["logits"] == f["logit_maxes"]).float() * d["logit_maxes"],
        lambda f, d: d["norm_logits"].clone(),
    ),
    Exposure(
        "dlogits",
        "the max's path sent to the argmin",
        RANDOM_UPSTREAM,
        STEP_BY_NAME["logits"],
        lambda f, d: d["norm_logits"] + _max_path(f, d, f["logits"].argmax(1)),
        lambda f, d: d["norm_logits"] + _max_path(f, d, f["logits"].argmin(1)),
    ),
    Exposure(
        "dlogit_maxes",
        "the wrong sign",
        RANDOM_UPSTREAM,
        STEP_BY_NAME["logit_maxes"],
        lambda f, d: -(d["norm_logits"] @ torch.ones(f["logits"].shape[1], 1)),
        lambda f, d: d["norm_logits"].sum(1, keepdim=True),
    ),
    Exposure(
        "db1",
        "a mean instead of a sum",
        RANDOM_UPSTREAM,
        STEP_BY_NAME["b1"],
        lambda f, d: torch.ones(batch_size(f)) @ d["hprebn"],
        lambda f, d: d["hprebn"].mean(0),
    ),
    Exposure(
        "loss_fast",
        "a copy of loss",
        OTHER_INPUT,
        FAST_FORWARD_BY_NAME["loss_fast"],
        lambda f, d: F.nll_loss(F.log_softmax(f["logits"], 1), f["Yb"]),
        lambda f, d: d["loss"],  # d: the notebook's own forward pass, where the chunked value was computed
    ),
    Exposure(
        "hpreact_fast",
        "a copy of hpreact",
        OTHER_INPUT,
        FAST_FORWARD_BY_NAME["hpreact_fast"],
        lambda f, d: _batchnorm(f),
        lambda f, d: d["hpreact"],
    ),
]


def margins(exposure: Exposure, forward: dict, grads: dict, seed: int) -> tuple:
    """(right, wrong): the largest error of the right formula and of the mistake, in units of the tolerance
    (RTOL times the scale the grader judges at), on the inputs that expose the mistake."""
    judged = exposure.judged_as
    if not isinstance(judged, Step):  # a forward value: on the grader's batch, or in the probe with another input
        f = forward
        if exposure.exposed_by == OTHER_INPUT:
            f = {**forward, judged.input: pin_value(seed, judged.name, judged.input, forward[judged.input].shape)}
        expected = judged.compute(f) if f is not forward else forward[judged.reference]
        scale = magnitude(expected)
        return _ratio(exposure.right(f, forward), expected, scale), _ratio(exposure.wrong(f, forward), expected, scale)
    step = judged
    if exposure.exposed_by == RANDOM_UPSTREAM:
        answer = "d" + step.name
        upstream = {u: pin_value(seed, answer, "d" + u, forward[u].shape) for u in step.upstream}
        expected = local_gradient(step, forward, upstream)
        also = local_gradient(step, forward, consistent_pins(upstream, forward, set()))
    else:
        upstream = {u: grads[u] for u in step.upstream}
        expected = also = grads[step.name]
    scale = step_scale(step, forward, upstream)
    wrong = exposure.wrong(forward, upstream)
    right = _ratio(exposure.right(forward, upstream), expected, scale)
    return right, min(_ratio(wrong, expected, scale), _ratio(wrong, also, scale))


def _ratio(value, expected, scale: float) -> float:
    return max_difference(value.reshape(expected.shape), expected) / (RTOL * scale)

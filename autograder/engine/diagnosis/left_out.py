"""A factor of a local derivative left out: the step's rule with one forward tensor it reads taken as ones (`2 *
dbndiff2` for the square's `2 * bndiff * dbndiff2`, `dbnraw.sum(0)` for `(bndiff * dbnraw).sum(0)`). A tensor read for
its shape alone (`torch.ones_like(bndiff2)`) changes nothing when it is ones, and is never named. And a factor too
many: one forward tensor it reads multiplied by another (`(hpreact - bnbias) * dhpreact` for dbngain, where bnraw
belongs: hpreact - bnbias is bngain * bnraw)."""

import torch

from ...common.diagnoses import Reason
from ...common.words import say
from ..backward_rules import Step
from .slips import _floats, _stands_for, gives, rule_and_reads


def factor_left_out(answer: torch.Tensor, step: Step, forward: dict, upstream: dict, scale: float, own: str):
    """Why d<own> is wrong when it is the step's rule with one forward tensor it reads left out of its products."""
    found = rule_and_reads(step, forward, upstream)
    if found is None:
        return None
    right, read = found
    for name in read:
        if gives(answer, step, {**forward, name: torch.ones_like(forward[name])}, upstream, right, scale):
            return Reason(
                "missing_factor",
                say(
                    "d{name} leaves {tensor} out of the local derivative of `{forward}`: the chain rule multiplies the "
                    "upstream gradient by the whole local derivative, every factor of it",
                    name=own,
                    tensor=name,
                    forward=step.forward,
                ),
            )
    return None


POWERS = (2.0, 0.5, 1.5, 3.0)  # a factor read to another power than its own (squared, its root: -1 is slips.inverted)


def factor_too_many(answer: torch.Tensor, step: Step, forward: dict, upstream: dict, scale: float, own: str):
    """Why d<own> is wrong when it is the step's rule with one forward tensor it reads multiplied by another forward
    tensor of a shape that broadcasts to it (a forward value that holds that factor read in its place), or raised to a
    power (bnvar_inv**2 or **0.5 for bnvar_inv)."""
    found = rule_and_reads(step, forward, upstream)
    if found is None:
        return None
    right, read = found
    for name in read:
        for p in POWERS:
            if gives(answer, step, {**forward, name: forward[name] ** p}, upstream, right, scale):
                return Reason(
                    "other_tensor",
                    say(
                        "d{name} has {tensor}**{p:g} where the local derivative of `{forward}` has {tensor} itself (to "
                        "the power 1)",
                        name=own,
                        tensor=name,
                        p=p,
                        forward=step.forward,
                    ),
                )
        for extra in _floats(forward):
            value = forward[extra]
            if value.dim() != forward[name].dim() or not _stands_for(value, forward[name]):
                continue
            if value.dim() == 0 or torch.broadcast_shapes(value.shape, forward[name].shape) != forward[name].shape:
                continue
            if not gives(answer, step, {**forward, name: forward[name] * value}, upstream, right, scale):
                continue
            return Reason(
                "other_tensor",
                say(
                    "d{name} has a factor {extra} too many: it is the local derivative of `{forward}` with "
                    "{tensor} times {extra} where {tensor} alone belongs. Where did {extra} come in: a forward "
                    "value that holds it, read for {tensor}, or a gradient already multiplied by it?",
                    name=own,
                    extra=extra,
                    tensor=name,
                    forward=step.forward,
                ),
            )
    return None

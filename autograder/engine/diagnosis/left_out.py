"""A factor of a local derivative left out: the step's rule with one forward tensor it reads taken as ones (`2 *
dbndiff2` for the square's `2 * bndiff * dbndiff2`, `dbnraw.sum(0)` for `(bndiff * dbnraw).sum(0)`). A tensor read for
its shape alone (`torch.ones_like(bndiff2)`) changes nothing when it is ones, and is never named."""

import torch

from ...common.diagnoses import Reason
from ...common.words import say
from ..backward_rules import Step
from .slips import gives, rule_and_reads


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

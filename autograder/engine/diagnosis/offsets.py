"""The last words on a wrong gradient of the right shape: off by the same amount in every entry (a gradient started
from ones where zeros belong, as `dC = torch.ones_like(C)` before the rows are added into it), or else how many
entries are wrong and by how much."""

import math

import torch

from ...common.diagnoses import Reason
from ...common.words import say
from ..explain import difference
from ..tolerance import close


def constant_offset(answer: torch.Tensor, expected: torch.Tensor, scale: float) -> float | None:
    """c when the answer is what it should be plus c in every entry (within tolerance), for a c other than 0: one
    number of more than one entry (any single number is off by some amount, which tells nothing)."""
    a, e = answer.double(), expected.double()
    if a.numel() < 2:
        return None
    c = (a - e).mean().item()
    if c == 0 or not math.isfinite(c) or close(a, e, scale) or not close(a - c, e, scale):
        return None
    return c


def wrong_values(answer: torch.Tensor, expected: torch.Tensor, scale: float, own: str, forward: str) -> Reason:
    """Why d{own} (of the right shape, right by no rule the other checks know) is wrong: the same amount off in every
    entry, or how many of its entries are wrong and by how much."""
    c = constant_offset(answer, expected, scale)
    if c is not None:
        return Reason(
            "constant_offset",
            say(
                "d{name} is off by the same amount, {c:.3g}, in every entry: did it start from ones (or another "
                "constant) where zeros belong, or add a constant that the local derivative of `{forward}` does not "
                "have?",
                name=own,
                c=c,
                forward=forward,
            ),
        )
    off = difference(answer, expected, scale)
    return Reason(
        "wrong_values",
        say(
            "d{name} has {wrong} of {total} entries wrong (largest error {error:.3g}, largest value {scale:.3g}). "
            "Re-derive the local derivative of `{forward}`",
            name=own,
            wrong=off.wrong,
            total=off.total,
            error=off.largest_error,
            scale=off.scale,
            forward=forward,
        ),
    )

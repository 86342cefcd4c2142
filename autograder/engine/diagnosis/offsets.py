"""The last words on a wrong gradient of the right shape: off by the same amount in every entry (a gradient started
from ones where zeros belong, as `dC = torch.ones_like(C)` before the rows are added into it), whole numbers where the
gradient has fractions (a floor division `//`), the right values in other places (a `.view` that mixes up dimensions),
or else how many entries are wrong and by how much."""

import math

import torch

from ...common.diagnoses import Reason
from ...common.words import say
from ..explain import difference
from ..tolerance import RTOL, close


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


def offset_where_zero(answer: torch.Tensor, expected: torch.Tensor, scale: float) -> float | None:
    """c when the answer is right wherever the gradient is not zero, and c (the same number, not 0) wherever it is
    zero: a gradient started from ones where zeros belong, its few entries then set (`dlogprobs = torch.ones_like(
    logprobs)`, then `dlogprobs[range(n), Yb] = -1.0 / n`)."""
    a, e = answer.double(), expected.double()
    zero = e == 0
    if not zero.any() or zero.all() or not close(a[~zero], e[~zero], scale):
        return None
    rest = a[zero]
    c = rest.mean().item()
    if c == 0 or not math.isfinite(c) or close(rest, torch.zeros_like(rest), scale):
        return None
    return c if close(rest, torch.full_like(rest, c), scale) else None


def whole_numbers(answer: torch.Tensor, expected: torch.Tensor, scale: float) -> bool:
    """Whether every entry of the answer is a whole number, not all of them alike, where the gradient has entries that
    are not: rounded down by a floor division (`(probs - one_hot) // n` gives 0 and -1), or cast to an integer type
    and back. (A constant, as `torch.ones_like(x)`, was not rounded: it has words of its own.)"""
    a, e = answer.double(), expected.double()
    whole = torch.equal(a, a.round()) and a.unique().numel() > 1
    return bool(whole and ((e - e.round()).abs() > RTOL * scale).any())


def rearranged(answer: torch.Tensor, expected: torch.Tensor, scale: float) -> bool:
    """Whether the answer holds the gradient's values, every one of them, in other places: sorted, the two agree within
    the tolerance (`.view(n, n_embd, 3).transpose(1, 2)` for `.view(n, 3, n_embd)`). Of more than one entry, and not
    all alike (any single number, or a constant, is in its own place)."""
    a, e = answer.double().reshape(-1), expected.double().reshape(-1)
    if a.numel() < 2 or not (e != e[0]).any():
        return False
    return close(a.sort().values, e.sort().values, scale)


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
    c = offset_where_zero(answer, expected, scale)
    if c is not None:
        return Reason(
            "constant_offset",
            say(
                "d{name} is {c:.3g} in every entry that should be 0, and right in the others: did it start from ones "
                "(or another constant) where zeros belong? Start from torch.zeros_like and set only the entries that "
                "get a gradient",
                name=own,
                c=c,
            ),
        )
    if whole_numbers(answer, expected, scale):
        return Reason(
            "integer_division",
            say(
                "every entry of d{name} is a whole number, but the gradient's entries are fractions: something rounded "
                "them, such as a floor division `//` (divide with `/`) or a conversion to an integer type",
                name=own,
            ),
        )
    if rearranged(answer, expected, scale):
        return Reason(
            "rearranged",
            say(
                "d{name} holds the right values, but in the wrong places: check the order of the dimensions where it "
                "is reshaped (a .view or .reshape keeps the order of the entries, a .transpose or .permute changes "
                "it)",
                name=own,
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

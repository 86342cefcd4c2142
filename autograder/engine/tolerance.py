"""When two gradients count as equal: the one place where the grader's tolerance is decided.

Shapes must match exactly. Values are compared against the step's own scale (the largest of |reference| and of
|each term that was summed|): an answer passes when ``max |answer - reference| <= RTOL * scale``. Exactness is
information only. The measurements behind RTOL, far above correct float32 formulas and far below every known
mistake: docs/design/engine.md, "The tolerance".
"""

import torch

from .backward_rules import known_mistakes

RTOL = 1e-4
# A ratio of an answer to the right value counts as a factor that the feedback names (-1, 2, n, n/(n-1), 50/32) when
# within this share of it: only to explain, never to pass. The grader's diagnoses and the notebooks' self-checks (which
# the authoring command gives it) read this one number.
FACTOR_MATCH = 1e-3


def max_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a.detach().double() - b.detach().double()).abs().max().item() if a.numel() else 0.0


def magnitude(t: torch.Tensor) -> float:
    """The largest finite |entry| (0 for an empty or wholly non-finite tensor)."""
    if not t.numel():
        return 0.0
    size = t.detach().abs()
    largest = size.max().item()  # NaN if any entry is NaN
    if largest != largest or largest == float("inf"):  # rare: only then are the non-finite entries left out
        largest = size.nan_to_num(nan=0.0, posinf=0.0).max().item()
    return largest


def close(answer: torch.Tensor, expected: torch.Tensor, scale: float) -> bool:
    """Same shape, and equal within RTOL of the step's scale.

    NaN and infinite entries must sit at the same places with the same values (this only
    happens when a step is judged from a student's own non-finite upstream gradient).
    """
    if answer.shape != expected.shape:
        return False
    finite = torch.isfinite(answer)
    if not torch.equal(finite, torch.isfinite(expected)):
        return False
    if not finite.all():
        a, e = answer[~finite], expected[~finite]
        if not torch.equal(torch.isnan(a), torch.isnan(e)) or not torch.equal(a[~torch.isnan(a)], e[~torch.isnan(e)]):
            return False
        answer, expected = answer[finite], expected[finite]
    finite_scale = max(scale, magnitude(expected)) if expected.numel() else scale
    return max_difference(answer, expected) <= RTOL * finite_scale


# An entry far smaller than the step's largest passes the tolerance with any value of its size, yet a student counting
# the wrong entries means those not equal to their right values: `(-0.5 + x**-1.5)` for `-0.5 * x**-1.5` has every
# entry wrong, and only the one that dwarfs the rest off by more than the tolerance. So an entry also counts as wrong
# when it is off by more than OWN_SHARE of its own right value and by more than float32's rounding of the step (far
# below NOISE of its scale). Only for counting: whether a step passes is ``close``'s.
OWN_SHARE, NOISE = 1e-2, 1e-6


def wrong_entries(answer: torch.Tensor, expected: torch.Tensor, scale: float) -> torch.Tensor:
    """Which entries of an answer of the right shape a message counts as wrong (a tensor of bools)."""
    error = (answer.detach().double() - expected.detach().double()).abs()
    scale = max(scale, 1e-12)
    return (error > RTOL * scale) | ((error > OWN_SHARE * expected.detach().double().abs()) & (error > NOISE * scale))


class _Absolute(dict):
    """The forward values as absolute values, each made on first use (a step's terms read two or three)."""

    def __init__(self, forward: dict):
        super().__init__()
        self.forward = forward

    def __missing__(self, name):
        value = self.forward[name]
        self[name] = value.abs() if value.is_floating_point() else value
        return self[name]


def _term_sizes(step, forward: dict, upstream: dict):
    """Each term a ``backward_rules.Step`` adds up, evaluated on absolute values (a term that cannot be: left out)."""
    absolute, abs_up = _Absolute(forward), {k: v.abs() for k, v in upstream.items()}
    for term in step.terms.values():
        try:
            yield term(absolute, abs_up)
        except (RuntimeError, KeyError):
            continue


def step_scale(step, forward: dict, upstream: dict) -> float:
    """The size of what a ``backward_rules.Step`` adds up: the largest |term| evaluated on absolute values."""
    return max((magnitude(size) for size in _term_sizes(step, forward, upstream)), default=0.0)


def column_scales(step, forward: dict, upstream: dict, reference: torch.Tensor) -> torch.Tensor | None:
    """Of a step whose answer is a matrix (a row an example, a column a feature, as BatchNorm's dhprebn), each column's
    own scale: the largest |reference| and |term| in it (``step_scale``, column by column); None for another shape."""
    if reference.dim() != 2:
        return None
    scales = reference.detach().double().abs().nan_to_num(0.0, 0.0, 0.0).amax(0)
    for size in _term_sizes(step, forward, upstream):
        if size.shape == reference.shape:
            scales = torch.maximum(scales, size.detach().double().abs().nan_to_num(0.0, 0.0, 0.0).amax(0))
    return scales


def _close_in_columns(answer: torch.Tensor, expected: torch.Tensor, scales: torch.Tensor) -> bool:
    if answer.shape != expected.shape or not (torch.isfinite(answer).all() and torch.isfinite(expected).all()):
        return False
    return bool(((answer.double() - expected.double()).abs() <= RTOL * scales).all())


def thin_mistake(step, answer: torch.Tensor, reference: torch.Tensor, forward: dict, upstream: dict):
    """The message of a known mistake of ``step`` (``Step.mistakes``) that an answer within the tolerance is, column
    by column, and the reference is not; None when there is none. One scale for a whole step can hide a mistake: in
    BatchNorm's dhprebn neuron 0's tiny variance makes its column about a hundred times the others', and on a few
    grading seeds in a thousand the n/(n-1) left out stays within that scale (docs/design/engine.md). Each column
    against its own scale, the right answer (its rounding, about 1e-7 of a column) is never taken for one."""
    scales = column_scales(step, forward, upstream, reference) if step.mistakes else None
    if scales is None or _close_in_columns(answer, reference, scales):
        return None
    return next(
        (m for m, wrong in known_mistakes(step, forward, upstream) if _close_in_columns(answer, wrong, scales)), None
    )

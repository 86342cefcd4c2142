"""When two gradients count as equal: the one place where the grader's tolerance is decided.

Shapes must match exactly. Values are compared against the step's own scale (the largest of |reference| and of
|each term that was summed|): an answer passes when ``max |answer - reference| <= RTOL * scale``. Exactness is
information only. The measurements behind RTOL, far above correct float32 formulas and far below every known
mistake: docs/design/engine.md, "The tolerance".
"""

import torch

RTOL = 1e-4


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


class _Absolute(dict):
    """The forward values as absolute values, each made on first use (a step's terms read two or three)."""

    def __init__(self, forward: dict):
        super().__init__()
        self.forward = forward

    def __missing__(self, name):
        value = self.forward[name]
        self[name] = value.abs() if value.is_floating_point() else value
        return self[name]


def step_scale(step, forward: dict, upstream: dict) -> float:
    """The size of what a ``backward_rules.Step`` adds up: the largest |term| evaluated on absolute values."""
    absolute = _Absolute(forward)
    abs_up = {k: v.abs() for k, v in upstream.items()}
    sizes = []
    for consumer, term in step.terms.items():
        try:
            sizes.append(magnitude(term(absolute, abs_up)))
        except (RuntimeError, KeyError):
            pass
    return max(sizes, default=0.0)

"""When two gradients count as equal: the one place where the grader's tolerance is decided.

The policy, and why:

* **Shapes must match exactly.** A ``(64,)`` answer for a ``(1, 64)`` gradient broadcasts
  the same in most later formulas, but it is a different tensor: right values in a shape
  that differs only by size-1 dimensions earn ``backward_rules.SHAPE_ONLY_SHARE`` of the step.
* **Values are compared against the step's own scale, not element by element.** Two
  algebraically equal float32 formulas (``dlogprobs / probs`` or ``-1/(n*probs)`` at the
  targets, a fused or an atomic BatchNorm backward) differ by rounding: about 1e-7 of the
  magnitudes that were added up, more where terms cancel. Some true gradients are exactly
  zero (``dlogit_maxes``, ``db1``: b1 is cancelled by BatchNorm), so autograd returns pure
  rounding noise (about 1e-9) and a relative, elementwise test would fail every correct answer.
  So the scale of a step is the largest of |reference| and of |each term that was summed|,
  and an answer passes when ``max |answer - reference| <= RTOL * scale``.
* **RTOL = 1e-4**: measured on torch 2.13 CPU, correct formulas stay below 1e-6 of the scale
  (the largest seen is the fused BatchNorm backward), leaving a factor of 100 for other
  torch versions, GPUs and orders of summation; the smallest real mistake we know
  (``dcounts`` without its ``counts_sum`` branch, which is 1 to 3 % of the largest element;
  ``n`` for ``n - 1``, 3 %) is a hundred times above it.
  In the fused steps of Exercises 2 and 3 the closest known mistakes are nearer: ``dhprebn``
  without its ``n/(n-1)`` factor stays 20 times above the tolerance (worst of 200 seeds), and a
  ``loss_fast`` computed from ``probs`` instead of ``logits`` (one number: ``log 27`` give or take)
  9 times above it (worst of 100 seeds); correct fused formulas stay below 1/200 of it.
* **Mistakes whose term is about zero** on a real network (a dropped epsilon, the max's path, ``db1`` as a
  mean) are not left to the tolerance: the grader's inputs are drawn so that they show (neuron 0's batch
  variance is the epsilon), and the rule probes feed random upstream gradients. ``exposures.margins`` measures
  them as above: over 100 seeds the mistakes land at least 1,200 times above the tolerance and the correct
  formulas nearest to them at most 1/400 of it (``benchmarks/bench_margins.py``); without neuron 0 a dropped
  epsilon stayed between 0.03 and 0.6 of the tolerance.
* **Exactness is information only**: on torch 2.13 the lecture's own tanh step differs from
  autograd's by one float32 rounding step (4.7e-10 to 9.3e-10, measured on ten batches), so
  ``exact: False`` is normal from ``dhpreact`` on, even for the lecture's lines.
"""

import torch

RTOL = 1e-4


def max_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a.detach().double() - b.detach().double()).abs().max().item() if a.numel() else 0.0


def magnitude(t: torch.Tensor) -> float:
    """The largest finite |entry| (0 for an empty or wholly non-finite tensor)."""
    finite = t.detach()[torch.isfinite(t.detach())]
    return finite.abs().max().item() if finite.numel() else 0.0


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

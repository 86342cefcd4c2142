"""A gradient computed from another tensor's gradient in the place of its own upstream one: `dW1 = embcat.T @ dhpreact`
where W1 feeds hprebn. Found by the step's own rule, fed each gradient the notebook knows of the same shape in turn:
no table of slips."""

import torch

from ..common.diagnoses import Reason
from ..common.words import say
from .backward_rules import Step, local_gradient
from .tolerance import RTOL, close, magnitude, step_scale


def known_gradients(report, grads: dict, step: Step) -> dict:
    """The gradients the code of ``step`` could have read in the place of its own upstream ones, name -> the values to
    try: the student's own d<name> when the cell's report holds it (what their code read), then autograd's. A name
    that is only another name of a tensor already listed (a setup loop's `p` or `t`) is left out, and so is the
    step's own."""
    known, seen = {}, set()
    for name, grad in grads.items():  # (in the order of the forward pass: a loop's name comes after the tensor's)
        alias = (grad.data_ptr(), tuple(grad.shape), grad.stride())
        if alias in seen:
            continue
        seen.add(alias)
        if name != step.name and grad.is_floating_point():
            own = report.floats("d" + name)
            known[name] = tuple(t for t in (own, grad) if t is not None)
    return dict(reversed(known.items()))  # in backward order: of two that give one value, the one computed first


def another_upstream(
    answer: torch.Tensor, expected: torch.Tensor, step: Step, forward: dict, upstream: dict, known: dict, own: str
) -> Reason | None:
    """Why d<own> is wrong when it is the step's rule with one of its upstream gradients replaced by another known
    gradient (``known``: ``known_gradients``) of the same shape, within the step's tolerance. None otherwise, and for
    a replacement that tells nothing here (a gradient equal to the right one, or one whose path adds zeros: a
    gradient that is rounding noise around zero, as dlogit_maxes is, would stand for a path left out)."""
    for consumer in step.upstream:
        right = upstream.get(consumer)
        if right is None:
            continue
        for other, values in known.items():
            if other == consumer:
                continue
            for value in values:
                if value.shape != right.shape:
                    continue
                given = {**upstream, consumer: value.to(right.dtype)}
                try:
                    wrong = local_gradient(step, forward, given).double()
                    path = step.terms[consumer](forward, given)
                except (RuntimeError, KeyError, IndexError):
                    continue
                scale = step_scale(step, forward, given)  # the rule's own, as for an error carried forward
                if (
                    wrong.shape != answer.shape
                    or magnitude(path) <= RTOL * scale  # its path adds nothing at this tolerance (dlogit_maxes)
                    or close(wrong, expected, max(scale, magnitude(expected)))  # no other value than the right one
                    or not close(answer, wrong, scale)
                ):
                    continue
                return _read_another(own, step, consumer, other)
    return None


def _read_another(own: str, step: Step, consumer: str, other: str) -> Reason:
    if len(step.upstream) == 1:
        words = say(
            "d{name} is computed from the wrong upstream gradient: it is what d{name} would be if d{other} were its "
            "upstream gradient. {step} is used to make {consumer} (`{forward}`), so its gradient comes through "
            "d{consumer}",
            name=own,
            other=other,
            step=step.name,
            consumer=consumer,
            forward=step.forward,
        )
    else:
        words = say(
            "the path of d{name} through {consumer} is computed from the wrong upstream gradient: it is what that path "
            "would be if d{other} were its upstream gradient. {step} is used to make {consumer}, so that path comes "
            "through d{consumer}",
            name=own,
            other=other,
            step=step.name,
            consumer=consumer,
        )
    return Reason("wrong_upstream", words)

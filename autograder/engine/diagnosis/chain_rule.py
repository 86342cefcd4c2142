"""The chain rule's upstream gradient, got wrong: left out (a gradient that is its step's local derivative alone), or
another tensor's gradient read in its place (`dW1 = embcat.T @ dhpreact` where W1 feeds hprebn: found by the step's
own rule, fed each gradient the notebook knows of the same shape in turn, with no table of slips)."""

from functools import lru_cache

import torch

from ...common.diagnoses import Reason
from ...common.words import say
from ..backward_rules import STEPS, Step, local_gradient
from ..tolerance import RTOL, close, magnitude, step_scale


def local_derivative_alone(answer: torch.Tensor, step: Step, forward: dict, upstream: dict, own: str) -> Reason | None:
    """Why d<own> is wrong when it is the step's local derivative alone (``(relu_in > 0).float()``, ``1.0 / probs``):
    the step's rule with its upstream gradient all ones. None for any other answer, or a step that is not
    elementwise, or of more than one upstream gradient."""
    if len(step.upstream) != 1 or upstream.get(step.upstream[0]) is None:
        return None
    (consumer,) = step.upstream
    up = upstream[consumer]
    try:
        local = local_gradient(step, forward, {consumer: torch.ones_like(up)}).double()
    except (RuntimeError, KeyError, IndexError):
        return None
    if not local.shape == up.shape == answer.shape or close(local, up.double() * local, magnitude(local)):
        return None  # (an elementwise step only; an upstream gradient of ones would make the two one answer)
    if not close(answer.double(), local, magnitude(local)):
        return None
    return Reason(
        "upstream_missing",
        say(
            "d{name} is the local derivative of `{forward}` alone: the chain rule multiplies it by the upstream "
            "gradient, d{consumer}",
            name=own,
            forward=step.forward,
            consumer=consumer,
        ),
    )


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


@lru_cache(maxsize=1)
def _feeds() -> dict:
    """name -> the tensors it feeds, over every table of steps (the atomic graph, the fused steps, the operators)."""
    from ..fused_rules import FUSED_STEPS
    from ..operators import OPERATOR_STEPS

    feeds = {}
    for step in [*STEPS, *FUSED_STEPS, *OPERATOR_STEPS]:
        feeds.setdefault(step.name, set()).update(step.upstream)
    return feeds


def computed_from(name: str, consumer: str) -> bool:
    """Whether d<name> is computed from d<consumer>, directly or through others (name feeds consumer, or a tensor that
    does). Such a gradient is made after d<consumer>, from it, so it is never what was read in its place: where it
    fits, a forward value is what is wrong (`((hpreact - bnbias) * dhpreact).sum(0)` is dbngain's rule fed dbnraw,
    and bngain's factor is the slip there)."""
    todo, seen = [name], set()
    while todo:
        for fed in _feeds().get(todo.pop(), ()):
            if fed == consumer:
                return True
            if fed not in seen:
                seen.add(fed)
                todo.append(fed)
    return False


def another_upstream(
    answer: torch.Tensor, expected: torch.Tensor, step: Step, forward: dict, upstream: dict, known: dict, own: str
) -> Reason | None:
    """Why d<own> is wrong when it is the step's rule with one of its upstream gradients replaced by another known
    gradient (``known``: ``known_gradients``) of the same shape, within the step's tolerance. None otherwise, and for
    a replacement that tells nothing here (a gradient equal to the right one, or one whose path adds zeros: a
    gradient that is rounding noise around zero, as dlogit_maxes is, would stand for a path left out). A gradient
    computed from the upstream one is never what was read in its place (``computed_from``)."""
    for consumer in step.upstream:
        right = upstream.get(consumer)
        if right is None:
            continue
        for other, values in known.items():
            if other == consumer or computed_from(other, consumer):
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

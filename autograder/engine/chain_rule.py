"""A gradient that is its step's local derivative alone: the chain rule's upstream factor left out."""

import torch

from ..common.diagnoses import Reason
from ..common.words import say
from .backward_rules import Step, local_gradient
from .tolerance import close, magnitude


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

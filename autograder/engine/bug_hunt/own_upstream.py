"""Exercise 6: a fix judged from the student's own upstream gradients (error carried forward), where those cannot
tell the fix from the bug: when the bug's gradient is the very tensor of a later one (``dhprebn = dbndiff.float()``),
and when the bug gives what the rule gives on them (all zeros further up)."""

import torch

from ...common.diagnoses import Reason
from ...common.words import say
from ..backward_rules import STEP_BY_NAME, local_gradient
from ..explain import comma_list
from ..tolerance import close, step_scale
from ..wire import Report
from .rerun import shared_later


def _from_own_upstream(gradient: str, variant, view: Report, forward: dict):
    """(the answer, what the rule gives, what the bug gives, the step's scale), each from the student's own upstream
    gradients (the random ones where a line that raised left none), or None when they cannot be computed."""
    step = STEP_BY_NAME[gradient[1:]]
    upstream = {u: view.tensor("d" + u) for u in step.upstream}
    mine = view.tensor(gradient)
    if mine is None or any(not isinstance(v, torch.Tensor) for v in upstream.values()):
        return None
    try:
        right = local_gradient(step, forward, upstream).double()
        still = variant(forward, upstream).double()
        scale = step_scale(step, forward, upstream)
    except (RuntimeError, IndexError, ValueError, KeyError):
        return None
    if not (mine.shape == right.shape == still.shape):
        return None
    return mine.double(), right, still, scale


def changed_in_place_as_the_bug(gradient: str, variant, view: Report, forward: dict) -> bool:
    """Whether the bug's gradient, returned as the very tensor of a gradient computed after it (so changed by that
    one's lines in place), is nearer what the bug gives than the rule, from the student's own upstream gradients: the
    tolerance cannot tell them apart when those are far too large (``** -3 / 2`` above ``dhprebn = dbndiff.float()``),
    the memory can. An answer of its own memory is judged by its values alone."""
    values = _from_own_upstream(gradient, variant, view, forward) if shared_later(view, gradient) else None
    return values is not None and bool((values[0] - values[2]).norm() < (values[0] - values[1]).norm())


def fix_unseen(gradient: str, variant, view: Report, forward: dict, carried_from) -> Reason | None:
    """Why a fix right only for the student's own wrong upstream gradients earns nothing, when on those the bug gives
    what the rule gives (all zeros: `dlogprobs` left zeros makes every bug below it vanish): error carried forward
    cannot tell a fix from a bug left in there, and a bug left in must not earn its points. Where the two differ
    by less than the tolerance but more than rounding, the answer's own values decide: far nearer the rule, it keeps
    its points."""
    values = _from_own_upstream(gradient, variant, view, forward) if carried_from else None
    if values is None or not close(values[2], values[1], values[3]):
        return None
    mine, right, still, _ = values
    if (mine - right).norm() < (mine - still).norm() / 2:  # far nearer the rule: the values tell what the tolerance
        return None  # cannot (a fixed dbndiff under a dbndiff2 made far too large by two slips of precedence)
    names = comma_list("d" + name for name in carried_from)
    return Reason(
        "fix_unseen",
        say(
            "{name} is right for your {names}, but there the bug's line and the right one give the same values "
            "(they went wrong further up: all zeros, say), so this fix does not show: it earns its points once they "
            "are right",
            name=gradient,
            names=names,
        ),
    )

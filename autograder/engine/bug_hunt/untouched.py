"""Exercise 6: the lines of the colleague's pass that had no planted bug. A fix must leave them right. Every gradient
of the pass belongs to the part of one fix (``catalogue.section``); one of them that is now wrong on its own line (not
only right for a wrong gradient further up, a bug left in) costs that fix its points, in the words of its own step.
"""

from ...common.diagnoses import Reason
from ...common.words import say
from ..backward_rules import STEP_BY_NAME
from ..judge import judge_gradient
from ..wire import Report
from .catalogue import FUNCTION, GRADIENTS, section
from .rerun import SHARED, not_returned, raised_line, rerun_of, shared_later, with_pins


def changed_later(report: Report) -> set:
    """The gradients the pass returned as one tensor with a gradient computed after them (``dhprebn = dbndiff``, then
    ``dhprebn += ...``): changed in place after the lines that read them, so what those lines read was not returned.
    The kernel says which share their memory; a notebook graded with an older hidden test, only their values (then a
    later gradient that merely equals one, `dhprebn = dbndiff.clone()` without its `+=` line, is taken for it too)."""
    if isinstance(report.info(FUNCTION).get(SHARED), dict):
        return {name for name in GRADIENTS if shared_later(report, name)}
    raws = {name: report.raw(name) for name in GRADIENTS if report.kind(name) == "tensor"}
    names = list(raws)
    return {a for i, a in enumerate(names) if any(raws[a] == raws[b] for b in names[i + 1 :])}


def broken_lines(slot: int, bugs: tuple, report: Report, forward: dict, grads: dict, seed: int) -> tuple:
    """(the share of its points the fix of bug ``slot`` keeps, the lines that say why) from the other gradients of its
    part of the pass: each judged as its step is, error carried forward included; the worst one sets the share."""
    share, lines, planted_gradients = 1.0, [], [bug.gradient for bug in bugs]
    part, unread = section(planted_gradients, slot, GRADIENTS), changed_later(report)
    raised, replaced = rerun_of(report)
    for name in part:
        step = STEP_BY_NAME[name[1:]]
        if name in planted_gradients or unread & {"d" + u for u in step.upstream}:  # (what it read is not known)
            continue
        if name in raised:
            kept, why = 0.0, [raised_line(name, raised[name])]
        elif problem := not_returned(report, name):
            kept, why = 0.0, [problem]
        else:
            view = with_pins(report, step.upstream, replaced, forward, seed)
            verdict = judge_gradient(step, view, forward, grads, seed, set())
            if verdict.passed:
                continue
            kept, why = verdict.points / step.points, verdict.lines
        share = min(share, kept)
        head = say(
            "{name} is wrong, and its line had no planted bug: your colleague had it right. A fix must leave the "
            "other lines as right as they were, and {name} is in this fix's part of the pass ({first} to {last})",
            name=name,
            first=part[0],
            last=part[-1],
        )
        lines += [Reason("broke_a_right_line", head), *why]
    return share, lines

"""Exercise 6: how the call of the student's backward_pass went, as the kernel reports it; and when it raised and was
run again statement by statement (``in_kernel/bug_hunt_rerun.py``), which gradients a line that raised left uncomputed,
and the random gradients that stood in for them, or for one that could not feed a later line, drawn again here from
the grading seed.
"""

import ast

import torch

from ...common.diagnoses import Reason
from ...common.words import say
from ..explain import not_a_tensor
from ..honesty import assigned_names
from ..probes.rerun import pin_value
from ..wire import Report
from .catalogue import FUNCTION, GRADIENTS

PINS = "backward_pass"  # the answer the random gradients are drawn for (``pin_value``), on both sides
RERUN = "backward_pass_rerun"  # the entry of the call's status that says what the run again found
SHARED = "shared_later"  # the entry that names, for each gradient of the fix's part, later ones that are its tensor


def shared_later(report: Report, name: str) -> list:
    """The gradients computed after ``name`` that the pass returned as its very tensor (the kernel's word, read
    without trusting it: a student can only make it say more, which costs their own fix)."""
    entry = report.info(FUNCTION).get(SHARED)
    later = entry.get(name) if isinstance(entry, dict) else None
    return [g for g in later if g in GRADIENTS] if isinstance(later, list) else []


def changed_after_their_lines(parameter: str, body: list, space: dict, point: dict, shared) -> set | None:
    """Of ``shared``, gradients the pass returned as the very tensor of a later one, those whose entries a later line
    changed after the last line that wrote them by name (``dhprebn = dbndiff``, then ``dhprebn += ...``): the lines
    that read them read something else than what was returned. One that no later line changed (the `+=` deleted) is
    what those lines read, and is judged as any other. The statements ``body`` of the pass run again one after the
    other in ``space``, ``point`` as its argument ``parameter``; None when one raises or the return gives no dict."""
    space, left = {**space, parameter: point}, {}
    for statement in body:
        try:
            if isinstance(statement, ast.Return):
                result = eval(compile(ast.Expression(statement.value), "<backward_pass>", "eval"), space)
                break
            exec(compile(ast.Module([statement], []), "<backward_pass, run again>", "exec"), space)
        except Exception:  # the student's code: then what the lines read is not known
            return None
        written = assigned_names(statement) & set(shared)
        left.update({g: space[g].clone() for g in written if isinstance(space.get(g), torch.Tensor)})
    else:
        return None
    if not isinstance(result, dict):
        return None
    same = {g for g in left if isinstance(result.get(g), torch.Tensor) and left[g].shape == result[g].shape}
    return set(shared) - {g for g in same if bool(torch.equal(left[g], result[g]))}


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def rerun_of(report: Report) -> tuple:
    """(gradient -> {line, type, message} of the line that raised where it is computed; the gradients replaced by
    random ones because they could not feed a later line), read without trusting them."""
    entry = report.info(FUNCTION).get(RERUN)
    if not isinstance(entry, dict):
        return {}, set()
    raised = entry.get("raised") if isinstance(entry.get("raised"), dict) else {}
    raised = {g: w for g, w in raised.items() if g in GRADIENTS and isinstance(w, dict)}
    pinned = entry.get("pinned") if isinstance(entry.get("pinned"), list) else []
    return raised, {g for g in pinned if g in GRADIENTS} | set(raised)


def raised_line(name: str, why: dict) -> Reason:
    return Reason(
        "raised_error",
        say(
            "backward_pass raised {error} at `{line}`: {message}. {name} is computed there, so it has no value. The "
            "grader ran the rest of the pass with a random {name} in its place, so that the lines after it are judged "
            "on their own",
            error=_text(why.get("type"))[:60],
            line=_text(why.get("line"))[:160],
            message=_text(why.get("message"))[:300],
            name=name,
        ),
    )


def altered(report: Report) -> set:
    """The gradients whose line raised but that a later line changed (``dbndiff += ...`` below a ``dbndiff = ...``
    that raised): the lines below read what the pass returned for them, not the random value."""
    entry = report.info(FUNCTION).get(RERUN)
    names = entry.get("altered") if isinstance(entry, dict) else None
    return {g for g in names if g in GRADIENTS} if isinstance(names, list) else set()


def with_pins(report: Report, upstream, replaced: set, forward: dict, seed: int) -> Report:
    """The report with each gradient of ``upstream`` (names without the d) that was replaced in the kernel given the
    random value the kernel's lines read in its place: what a gradient computed from it is right for (for one a later
    line changed, ``altered``, what the pass returned for it)."""
    names = {"d" + u for u in upstream} & replaced - altered(report)
    return report.with_values(**{g: pin_value(seed, PINS, g, tuple(forward[g[1:]].shape)) for g in names})


def call_problem(report: Report, name: str, raised: dict):
    """Why backward_pass gave no gradient ``name`` to judge, if it did not (``raised``: ``rerun.rerun_of``'s)."""
    if name in raised:
        return raised_line(name, raised[name])
    status = report.info(FUNCTION)
    kind = status.get("kind", "missing")
    if kind == "missing":
        return Reason(
            "not_answered", say("not answered yet: backward_pass is not defined (did its cell run without an error?)")
        )
    if kind == "raised":
        if status.get("type") == "NotImplementedError" and not status.get("message"):  # the blank stub's
            return Reason("not_answered", say("not answered yet: backward_pass still raises NotImplementedError"))
        if status.get("type") == "AutogradIsOff":
            return autograd_used()
        return Reason(
            "raised_error",
            say(
                "backward_pass raised {error} on the grader's batch: {message}",
                error=str(status.get("type")),
                message=str(status.get("message", "")),
            ),
        )
    if kind != "returned":
        return Reason(
            "wrong_return",
            say(
                "backward_pass returned a {kind}: it must return a dict of the gradients", kind=str(status.get("type"))
            ),
        )
    return not_returned(report, name)


def autograd_used() -> Reason:
    return Reason(
        "autograd",
        say(
            "backward_pass uses autograd (.grad, backward or torch.autograd), so none of its gradients count: "
            "compute every gradient by hand"
        ),
    )


def not_returned(report: Report, name: str) -> Reason | None:
    """Why the gradient ``name`` that backward_pass returned is no tensor to judge, if it is not."""
    if report.info(name).get("kind", "missing") == "missing":
        why = say("backward_pass returns no {name}: its dict must hold every gradient, {name} among them", name=name)
        return Reason("wrong_return", why)
    return not_a_tensor(name, report.info(name))

"""The grader's side of a rule probe: the step's rule applied to the inputs the kernel pinned, against what the
student's code gave on them."""

import math
from dataclasses import dataclass

import torch

from ...common.diagnoses import NOTE, Reason, kind_of
from ...common.words import say
from .. import wire
from ..backward_rules import STEP_BY_NAME, Step, local_gradient
from ..diagnosis.diagnose import diagnose
from ..explain import and_list
from ..tolerance import close, step_scale
from .rerun import WHOLLY_ZERO, pin_value


@dataclass(frozen=True)
class Outcome:
    """What a probe says about a step whose value is right."""

    verdict: str  # "right", "wrong" or "inconclusive" (then the value alone judges)
    line: Reason | None = None  # what the student reads (nothing when the rule is right); NOTE when inconclusive
    note: Reason | None = None  # read after it, when wrong: the answer's own line that raised, left out of the re-run


ABSENT = Outcome("inconclusive")  # no probe for this cell (a notebook graded with an older hidden test)


def read_probe(report, answer: str, pins: set) -> tuple:
    """(the probe's report, None) when it ran for ``answer`` with exactly ``pins``, else (None, an Outcome)."""
    probe = report.probe
    if probe is None:
        return None, ABSENT
    if probe.get("answer") != answer or set(probe.get("pins") or {}) != set(pins):
        return None, Outcome(
            "inconclusive",
            Reason(NOTE, say("(the re-run of your code for {answer} did not report as expected)", answer=answer)),
        )
    if probe.get("status") != "ran":
        return None, Outcome(
            "inconclusive",
            Reason(
                NOTE,
                say(
                    "(the grader could not re-run your code for {answer} with other inputs: {reason}; it is judged "
                    "by its value alone)",
                    answer=answer,
                    reason=str(probe.get("reason", "")),
                ),
            ),
        )
    return probe, None


def pinned(probe: dict, seed: int, answer: str, shapes: dict, own: dict | None = None) -> dict:
    """name -> the tensor that stood for it (exact zeros where the student's own value was exact zeros, as a whole or
    entry by entry). ``own``: name -> the student's own gradient as the report holds it: the kernel's zeros count only
    where it has them too (a report can be forged, and pins of zeros everywhere make code that gives zeros follow every
    rule). Without it (a value's probe, which only takes points: its input may be rebound in its own cell, `logits =
    logits - logits.max(..)`, with zeros the grader's forward pass has not), the kernel's zeros stand."""
    values = {}
    for name, shape in shapes.items():
        info = probe["pins"].get(name) or {}
        zero = bool(info.get("zero"))
        kept = wire.decode(info["kept"]) if isinstance(info.get("kept"), dict) else None  # (probes.pins)
        if kept is None or kept.dtype != torch.bool or kept.numel() != math.prod(shape):
            kept = None
        if own is not None:
            mine = own.get(name)
            mine = mine if isinstance(mine, torch.Tensor) and mine.is_floating_point() else None
            zero = zero and mine is not None and mine.numel() > 0 and not mine.any()
            if mine is not None and mine.numel() > 0 and not mine.any() and name not in WHOLLY_ZERO:
                zero, kept = False, None  # zeros where the gradient is not: pinned at random (rerun.pinned_inputs)
            fits = kept is not None and mine is not None and mine.numel() == kept.numel()
            kept = kept | (mine.reshape(kept.shape) != 0) if fits else None
        values[name] = torch.zeros(shape) if zero else pin_value(seed, answer, name, shape)
        if kept is not None:
            values[name] = values[name] * kept.reshape(values[name].shape)
    return values


def _derived(name: str, pins: dict, forward: dict, leave_out: str):
    """d<name> computed by the table from the other pins (None if it cannot be, or reaches the loss itself)."""
    if name in pins and name != leave_out:
        return pins[name]
    step = STEP_BY_NAME.get(name)
    if step is None or not step.upstream:
        return None
    upstream = {u: _derived(u, pins, forward, leave_out) for u in step.upstream}
    if any(v is None for v in upstream.values()):
        return None
    return local_gradient(step, forward, upstream)


def consistent_pins(pins: dict, forward: dict, zero: set) -> dict:
    """The pins with each one that the table derives from the others replaced by that value: what a student
    who wrote ``-dbndiff.sum(0)`` for ``dbnmeani`` computes."""
    consistent = dict(pins)
    for name in pins:
        if name in zero:
            continue
        try:
            value = _derived(name, pins, forward, leave_out=name)
        except RuntimeError:
            value = None
        if value is not None:
            consistent[name] = value
    return consistent


def judge_rule(step: Step, report, forward: dict, seed: int, answer: str = "", factors: dict | None = None) -> Outcome:
    """The probe of d<step.name> (or of ``answer``, the variable that holds it): its code, re-run on random upstream
    gradients, against the step's rule. ``factors``: upstream -> c, when the answer's values are autograd's and the
    student's own upstream gradient is c times autograd's: a code that divides by c (a factor moved into the step above,
    `dscores / √head_size` with `dq = dscores @ k`) is right together with it, for every input: the slip is the upstream
    step's, which loses its own points, so this step keeps its own (``_made_up_for``)."""
    answer = answer or "d" + step.name
    probe, outcome = read_probe(report, answer, {"d" + u for u in step.upstream})
    if outcome:
        return outcome
    upstream = and_list("d" + u for u in step.upstream)
    if probe.get("further_up"):
        return Outcome(
            "inconclusive",
            Reason(
                NOTE,
                say(
                    "(your {answer} is computed from {further_up}, further up the graph, not from {upstream} alone, "
                    "so its rule cannot be checked on its own: it is judged by its value)",
                    answer=answer,
                    further_up=and_list(map(str, probe["further_up"])),
                    upstream=upstream,
                ),
            ),
        )
    own = {"d" + u: report.floats("d" + u) for u in step.upstream}  # what the kernel's zeros must agree with
    values = pinned(probe, seed, answer, {"d" + u: tuple(forward[u].shape) for u in step.upstream}, own)
    zero = {u for u in step.upstream if not values["d" + u].any()}
    if zero == set(step.upstream):
        return Outcome("inconclusive")  # nothing random went in: the value check has seen everything
    if not probe.get("pins_read"):
        return Outcome(
            "inconclusive",
            Reason(
                NOTE,
                say(
                    "(your {answer} does not read {upstream}, so its rule cannot be checked on its own: it is judged "
                    "by its value)",
                    answer=answer,
                    upstream=upstream,
                ),
            ),
        )
    result = report.probe_result()
    if result is None:
        return Outcome(
            "inconclusive",
            Reason(NOTE, say("(re-run with other inputs, your code left no tensor in {answer})", answer=answer)),
        )
    pins = {u: values["d" + u] for u in step.upstream}
    expected = local_gradient(step, forward, pins).double()
    if result.numel() != expected.numel():
        return Outcome("inconclusive")  # a shape problem: the value check's message says it
    result = result.double().reshape(expected.shape)
    scale = step_scale(step, forward, pins)
    if close(result, expected, scale):
        return Outcome("right")
    consistent = consistent_pins(pins, forward, zero)
    changed = any(consistent[u] is not pins[u] for u in pins)
    if changed and close(result, local_gradient(step, forward, consistent).double(), scale):
        return Outcome("right")
    if made_up := _made_up_for(step, forward, pins, factors or {}, result, answer):
        return made_up
    why = diagnose(result, expected, step, forward, pins, answer)
    return Outcome(
        "wrong",
        Reason(
            kind_of(why),
            say(
                "{answer} has the right values on this batch, but not its backward rule: the grader ran your code "
                "for {answer} again with other values of {upstream} (random ones, of the same shapes), and then {why}",
                answer=answer,
                upstream=upstream,
                why=why,
            ),
        ),
        _left_out(probe.get("left_out"), answer),
    )


def _made_up_for(step: Step, forward: dict, pins: dict, factors: dict, result, answer: str):
    """An Outcome "right", when the code re-run gives the rule for the pins divided by the factors of the student's own
    upstream gradients: it leaves out the factor those hold, and the two make up for each other on every input."""
    if not factors:
        return None
    scaled = {u: pins[u] / factors.get(u, 1.0) for u in pins}
    if not close(result, local_gradient(step, forward, scaled).double(), step_scale(step, forward, scaled)):
        return None
    (upstream, factor), *_ = factors.items()
    return Outcome(
        "right",
        Reason(
            NOTE,
            say(
                "{answer} is right only together with your d{upstream}, which is {factor:.4g} times autograd's: your "
                "code for {answer} undoes that factor, so the two make up for each other. This step keeps its points "
                "and d{upstream} loses its own. Fix both together: d{upstream} must be the gradient of the loss with "
                "respect to {upstream} itself, and the code for {answer} must then undo nothing",
                answer=answer,
                upstream=upstream,
                factor=factor,
            ),
        ),
    )


def _left_out(left_out, answer: str) -> Reason | None:
    """The line of the answer's own code that raised in the kernel and again in the probe (a typo), which the probe
    left out (``probe_runner``): what the student's answer is without it."""
    if not isinstance(left_out, dict) or not all(isinstance(left_out.get(k), str) for k in ("line", "error")):
        return None
    return Reason(
        NOTE,
        say(
            "(your line `{line}` raised {error}, when its cell ran and again when the grader ran it: {answer} is what "
            "the lines before it computed)",
            line=left_out["line"][:120],
            error=left_out["error"][:200],
            answer=answer,
        ),
    )

"""The verdict on one graded step: points and a message, decided outside the student's kernel.

Answered, not from autograd, float32, zero where it must be, the right shape, finite, within tolerance; failing
that, judged from the student's own upstream gradients (error carried forward), else diagnosed. The order and its
reasons: docs/design/engine.md.
"""

from dataclasses import replace

import torch

from ..common.diagnoses import NOTE, Reason
from ..common.words import say, say_n
from .backward_rules import SHAPE_ONLY_SHARE, Step, WrittenWith, local_gradient
from .diagnosis.chain_rule import known_gradients
from .diagnosis.diagnose import diagnose
from .diagnosis.shapes import only_size_one_dims_differ, shape_only_share, shape_problem
from .explain import and_list, constant_factor, not_a_tensor, not_finite, wrong_dtype
from .honesty.decoy import decoy
from .honesty.unread_code import UNREAD
from .probes.judge_rule import ABSENT, judge_rule
from .probes.kept_by_rule import carried_forward, kept_as_set_up, kept_by_its_rule, kept_line, kept_with_given_changed
from .probes.written_with import not_written_with
from .tolerance import close, magnitude, max_difference, step_scale, thin_mistake
from .verdict import Verdict
from .wire import Report


def read_answer(verdict: Verdict, name: str, report: Report, tainted: set, gradient: bool = False):
    """The tensor the kernel reported as `name`, and its wire info; the tensor is None, with the reason
    added to the verdict, when it was computed with autograd, is not a tensor, or cannot be read. ``gradient``:
    the answer is a gradient (the autograd reason says "write this gradient by hand")."""
    info = report.info(name)
    if info.get("kind") == "missing" and str(info.get("raised")).startswith(("ModuleNotFoundError", "ImportError")):
        tainted = tainted - {name}  # a module the kernel has not either (einops): its cell stopped there, say so
    if name in tainted and gradient:
        problem = Reason(
            "autograd",
            say(
                "{name} is computed with autograd (.grad, backward or torch.autograd) or the grader's own code, "
                "so it earns nothing: write this gradient by hand",
                name=name,
            ),
        )
    elif name in tainted:
        problem = Reason(
            "autograd",
            say(
                "{name} is computed with autograd (.grad, backward or torch.autograd) or the grader's own code, "
                "so it earns nothing: write it by hand",
                name=name,
            ),
        )
    else:
        problem = not_a_tensor(name, info)
    answer = report.tensor(name) if problem is None else None
    if problem is None and answer is None:
        problem = Reason("unreadable", say("{name} could not be read by the grader", name=name))
    if problem:
        verdict.lines.append(problem)
    if name in tainted and UNREAD in tainted:  # what marked it may be no autograd at all: say what else does
        verdict.lines.append(Reason(NOTE, unread_note()))
    return answer, info


def unread_note() -> str:
    return say(
        "code the grader cannot read ran in your cells up to here (eval, exec, a file run by the run magic, code in a "
        "string, a name made while it runs as in globals()['d' + name], or a function of the grader's own): it may "
        "change any later answer, so every answer from its cell on earns nothing. A check can name its tensors "
        "instead: cmp('h', dh, h), not cmp(name, eval('d' + name), eval(name))"
    )


def first_to_fix(verdict: Verdict, earlier: dict) -> None:
    """Name the steps to fix in a carried-forward verdict: an upstream answer that passed its own check
    (``earlier``: the notebook's verdicts so far, by title) is not the one to fix; what it was carried from is."""
    first, todo = [], list(verdict.carried_from)
    while todo:
        name = todo.pop(0)
        upstream = earlier.get("d" + name)
        if upstream is not None and upstream.passed and not upstream.wrong_in_notebook:  # right: look further up
            todo += [n for n in upstream.carried_from if n not in todo]
        elif name not in first:
            first.append(name)
    wrong = list(verdict.wrong_from or verdict.carried_from)
    for line, named in [
        (carried_forward(wrong), carried_forward(wrong, first)),
        (
            kept_line(verdict.title, list(verdict.carried_from)),
            kept_line(verdict.title, list(verdict.carried_from), first),
        ),
        (
            kept_line(verdict.title, list(verdict.carried_from), stopped=True),
            kept_line(verdict.title, list(verdict.carried_from), first, stopped=True),
        ),
    ]:
        if line in verdict.lines:
            verdict.lines[verdict.lines.index(line)] = named


def judge_gradient(
    step: Step, report: Report, forward: dict, grads: dict, seed: int, tainted: set, answer: str = "", given=None
) -> Verdict:
    """``answer``: the variable that holds the answer, when it is not d<step> (``dC_index_add``). ``given``: upstream
    name -> the student's own copy of a gradient the notebook hands out (the report holds the grader's)."""
    name, answer_name = step.name, answer or "d" + step.name
    verdict = Verdict(answer_name, 0, step.points)
    answer, info = read_answer(verdict, answer_name, report, tainted, gradient=True)
    if answer is None:
        if info.get("kind", "missing") == "missing" and answer_name not in tainted:
            if not kept_by_its_rule(verdict, step, report, forward, grads, seed, answer_name):
                kept_as_set_up(verdict, step, report, forward, grads, seed, answer_name)
        return verdict

    reference = grads[name]
    ref_up = {c: grads[c] for c in step.upstream}
    student_up, wrong_up, differing_up = {}, [], []
    for consumer in step.upstream:
        up = report.floats("d" + consumer)
        usable = up is not None
        student_up[consumer] = up if usable else ref_up[consumer]
        if not usable or not close(up.double(), ref_up[consumer].double(), magnitude(ref_up[consumer])):
            wrong_up.append(consumer)
        elif (up.shape, up.dtype) != (ref_up[consumer].shape, ref_up[consumer].dtype) or not torch.equal(
            up.double(), ref_up[consumer].double()
        ):  # right, yet not autograd's: first_to_fix follows it up (a float64 slip further up, bit-exact values)
            differing_up.append(consumer)
    verdict.carried_from, verdict.wrong_from = tuple(wrong_up + differing_up), tuple(wrong_up)
    upstream_dtypes = {report.info("d" + c).get("dtype") for c in step.upstream}
    if info["dtype"] != "float32" and not (upstream_dtypes - {"float32", None}):
        verdict.lines.append(wrong_dtype(answer_name, info["dtype"], say("gradients here are float32")))
        return verdict
    answer = answer.double()

    scale = step_scale(step, forward, ref_up)
    if step.zero and answer.shape == reference.shape and not answer.any():
        verdict.points = step.points
        rule = local_gradient(step, forward, student_up)
        verdict.lines.append(
            Reason(
                NOTE,
                say(
                    "exactly zero, which is right: {why}. The backward rule gives values up to {noise:.2g} here, "
                    "rounding noise around that zero",
                    why=step.zero,
                    noise=magnitude(rule),
                ),
            )
        )
        return verdict
    if close(answer, reference.double(), scale) and (mistake := thin_mistake(step, answer, reference, forward, ref_up)):
        verdict.lines.append(mistake)  # within the step's one scale, and a known mistake column by column
        return verdict
    if close(answer, reference.double(), scale):
        verdict.points = step.points
        off = max_difference(answer, reference)
        if torch.equal(answer.float(), reference):
            words = say("correct: max difference {difference:.2g}, bit-exact", difference=off)
        else:
            words = say("correct: max difference {difference:.2g} (not bit-exact, which is fine)", difference=off)
        verdict.lines.append(Reason(NOTE, words))
        factors = {  # an upstream gradient of the right shape, off by a constant factor only
            u: constant_factor(student_up[u], ref_up[u], magnitude(ref_up[u]))
            for u in wrong_up
            if student_up[u].shape == ref_up[u].shape
        }
        factors = {u: c for u, c in factors.items() if c}
        return _and_by_its_rule(verdict, step, report, forward, seed, answer_name, factors)

    # Error carried forward: right for the student's own upstream gradients, which differ from autograd's?
    carried = None
    if verdict.carried_from:
        try:
            carried = local_gradient(step, forward, student_up).double()
        except RuntimeError:
            pass
        carried_scale = step_scale(step, forward, student_up)
        if carried is not None and close(answer, carried, carried_scale):
            # ... unless zeros would pass too (an upstream of zeros, which every rule maps to zeros): then only its
            # rule, on random inputs, keeps it. All zeros from dprobs on, through a helper the probes cannot copy (a
            # class of the notebook's), kept 33 of Exercise 1's 34 points that way (until 2026-12-07). (A step whose
            # gradient is zero whatever the upstream is judged by its rule's value as before: zeros are right there.)
            if step.zero or not close(torch.zeros_like(carried), carried, carried_scale):
                verdict.points = step.points
                verdict.lines.append(carried_forward(list(verdict.wrong_from or verdict.carried_from)))
                return _and_by_its_rule(verdict, step, report, forward, seed, answer_name)
            outcome = judge_rule(step, report, forward, seed, answer_name)
            if outcome.verdict == "right" or outcome is ABSENT:  # (no probes at all: Exercise 6's own checks judge)
                verdict.points = step.points
                verdict.lines += [carried_forward(list(verdict.wrong_from or verdict.carried_from))]
                verdict.lines += [outcome.line] if outcome.line else []
                return verdict

    if kept_by_its_rule(verdict, step, report, forward, grads, seed, answer_name):
        return verdict
    if kept_as_set_up(verdict, step, report, forward, grads, seed, answer_name):
        return verdict
    if kept_with_given_changed(verdict, step, report, forward, grads, seed, answer_name, given or {}):
        return verdict
    if only_size_one_dims_differ(answer.shape, reference.shape):  # right values in the wrong shape: a share
        right_for = [reference.double()] + ([carried] if carried is not None else [])
        if any(close(answer.reshape(r.shape), r, scale) for r in right_for if r.numel() == answer.numel()):
            verdict.points = step.points * SHAPE_ONLY_SHARE
            verdict.lines.append(shape_problem(answer.shape, reference.shape, name))
            verdict.lines.append(shape_only_share(verdict.points, step.points))
            return _and_by_its_rule(verdict, step, report, forward, seed, answer_name)
    if tuple(answer.shape) != tuple(reference.shape):
        verdict.lines.append(shape_problem(answer.shape, reference.shape, name, forward["hprebn"].shape[0]))
    elif not torch.isfinite(answer).all():
        verdict.lines.append(not_finite(answer_name, answer))
    elif close(answer, decoy(reference, seed, name).double(), scale):
        verdict.lines.append(autograd_answer(name))
    else:
        expected = carried if carried is not None and carried.shape == answer.shape else reference.double()
        known = known_gradients(report, grads, step)  # what the code could have read in the place of its upstream
        verdict.lines.append(diagnose(answer, expected, step, forward, student_up, answer_name, known))
    undefined = [c for c in wrong_up if report.kind("d" + c) == "missing"]  # judged from autograd's in their place
    wrong = [c for c in wrong_up if c not in undefined]
    if wrong:
        verdict.lines.append(
            Reason(
                NOTE,
                say_n(
                    "(judged from your own {fix}, which is wrong too)",
                    "(judged from your own {fix}, which are wrong too)",
                    len(wrong),
                    fix=and_list("d" + c for c in wrong),
                ),
            )
        )
    if undefined:
        verdict.lines.append(
            Reason(
                NOTE,
                say_n(
                    "(your {missing} is not defined yet, so this step was judged from autograd's in its place)",
                    "(your {missing} are not defined yet, so this step was judged from autograd's in their place)",
                    len(undefined),
                    missing=and_list("d" + c for c in undefined),
                ),
            )
        )
    return verdict


def autograd_answer(name: str) -> Reason:
    """The line of an answer equal to the decoy that ``.grad`` holds while grading (``honesty.decoy``)."""
    return Reason(
        "autograd",
        say(
            "d{name} is the value of {name}.grad, autograd's answer, so it earns nothing: write this gradient by hand",
            name=name,
        ),
    )


def _and_by_its_rule(
    verdict: Verdict, step: Step, report: Report, forward: dict, seed: int, answer: str, factors: dict | None = None
) -> Verdict:
    """A verdict whose values passed, with the rule probe's word (``probes.judge_rule``): a wrong rule earns nothing.
    ``factors``: upstream -> c, for the student's upstream gradients that are c times autograd's (``judge_rule``)."""
    outcome = judge_rule(step, report, forward, seed, answer, factors)
    if outcome.verdict == "wrong":
        verdict.points, verdict.lines = 0, [outcome.line, *([outcome.note] if outcome.note else [])]
    elif outcome.line:
        verdict.lines.append(outcome.line)
    return verdict


def judge_written_with(
    step: Step, written: WrittenWith, report: Report, forward: dict, grads: dict, seed: int, tainted: set, code: tuple
) -> Verdict:
    """d<step> asked for again, computed with a given function (``written``): judged as the step is, for the
    points of its own cell; and its code (in ``code``, the cells that ran before its graded cell) must call it."""
    verdict = judge_gradient(
        replace(step, points=written.points), report, forward, grads, seed, tainted, written.answer
    )
    if written.answer in tainted or (report.kind(written.answer) != "tensor" and not verdict.points):
        return verdict  # nothing it could earn (an answer kept by its rule, its cell stopped by demb, is read too)
    why = not_written_with(code, written.answer, ["d" + u for u in step.upstream], written.function, f"d{step.name}")
    if why is not None:
        verdict.lines = [why] if verdict.points else [*verdict.lines, why]  # right values: this is what is wrong
        verdict.points = 0
    return verdict

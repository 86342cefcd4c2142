"""Answers that are not gradients: a block of the forward pass in one expression, and a property of a gradient.

``loss_fast`` and ``hpreact_fast`` must equal the chunked value and follow their input (a copy earns nothing); every
row of ``dlogits`` must sum to zero. Judged in the order of ``judge.judge_gradient`` (docs/design/engine.md).
"""

import torch

from ..common.diagnoses import NOTE, Reason, kind_of
from ..common.words import Words, say
from .backward_rules import batch_size
from .explain import comma_list, constant_factor, difference, factor_message, not_finite, wrong_dtype
from .fast_forwards import Value
from .honesty.decoy import decoy
from .judge import autograd_answer, read_answer
from .probes.judge_rule import Outcome, pinned, read_probe
from .probes.written_with import reads_as_written
from .tolerance import RTOL, close, magnitude, max_difference
from .verdict import Verdict
from .wire import Report


def _answer(verdict: Verdict, name: str, report: Report, tainted: set):
    """The reported tensor as float64, or None with the reason in the verdict."""
    answer, info = read_answer(verdict, name, report, tainted)
    if answer is None:
        return None
    if info["dtype"] != "float32":
        verdict.lines.append(wrong_dtype(name, info["dtype"], say("the network computes in float32")))
        return None
    return answer.double()


def _shape_problem(name: str, got: tuple, want: tuple, of: str) -> Reason:
    got, want = tuple(got), tuple(want)
    if want == ():
        return Reason(
            "wrong_shape",
            say(
                "{name} has shape {got}, but {of} has shape {want}: a loss is a single number, the mean over the "
                "batch, a tensor of shape () (no reduction='none', .view or [None])",
                name=name,
                got=got,
                of=of,
                want=want,
            ),
        )
    if len(got) == len(want) == 2 and got == want[::-1]:
        return Reason(
            "transposed",
            say(
                "{name} has shape {got}, but {of} has shape {want}: it looks transposed",
                name=name,
                got=got,
                of=of,
                want=want,
            ),
        )
    return Reason(
        "wrong_shape",
        say(
            "{name} has shape {got}, but {of} has shape {want}: they must be equal",
            name=name,
            got=got,
            of=of,
            want=want,
        ),
    )


def judge_value(value: Value, report: Report, forward: dict, seed: int, tainted: set, code: tuple = ()) -> Verdict:
    """``value.name`` against the setup's ``value.reference``, with the tolerance of a gradient step; ``code``: the
    code cells that ran before its graded cell (``judge_copy``)."""
    verdict = Verdict(value.name, 0, value.points)
    answer = _answer(verdict, value.name, report, tainted)
    if answer is None:
        return verdict
    reference = forward[value.reference].double()
    if tuple(answer.shape) != tuple(reference.shape):
        verdict.lines.append(_shape_problem(value.name, answer.shape, reference.shape, value.reference))
        return verdict
    problem = not_finite(value.name, answer)
    if problem:
        verdict.lines.append(problem)
        return verdict
    scale = magnitude(reference)
    if close(answer, reference, scale):
        verdict.points = value.points
        verdict.lines.append(
            Reason(
                NOTE,
                say(
                    "correct: equal to {reference}, max difference {difference:.2g}",
                    reference=value.reference,
                    difference=max_difference(answer, reference),
                ),
            )
        )
        outcome = judge_copy(value, report, forward, seed, code)
        if outcome.verdict == "wrong":
            verdict.points, verdict.lines = 0, [outcome.line]
        elif outcome.line:
            verdict.lines.append(outcome.line)
        return verdict
    for message, variant in value.mistakes.items():
        wrong = variant(forward).double()
        if wrong.shape == answer.shape and close(answer, wrong, scale):
            verdict.lines.append(message)
            return verdict
    c = constant_factor(answer, reference, scale)
    factor = factor_message(c, batch_size(forward), value.name, answer.numel()) if c is not None else None
    if factor:
        verdict.lines.append(factor)
        return verdict
    off = difference(answer, reference, scale)
    verdict.lines.append(
        Reason(
            "differs_from_chunked",
            say(
                "{name} is not equal to {reference}: {wrong} of {total} entries differ (largest difference "
                "{error:.3g}, largest value {scale:.3g}). Compare `{forward}` with the chunked forward pass, piece by "
                "piece",
                name=value.name,
                reference=value.reference,
                wrong=off.wrong,
                total=off.total,
                error=off.largest_error,
                scale=off.scale,
                forward=value.forward,
            ),
        )
    )
    return verdict


def judge_copy(value: Value, report: Report, forward: dict, seed: int, code: tuple = ()) -> Outcome:
    """The probe of a value: the student's code re-run with another ``value.input`` must give ``value.compute`` of
    it. A copy of the chunked value (``loss_fast = loss.clone()``) gives the old value and earns nothing: it reads a
    chunked value in the kernel's report or in ``code``, the cells as the grader holds them (a report can be forged)."""
    probe, outcome = read_probe(report, value.name, {value.input})
    written = reads_as_written(code, value.name, {value.input}) if code else frozenset()
    result, expected = None, None
    if not outcome:
        other = {**forward, **pinned(probe, seed, value.name, {value.input: tuple(forward[value.input].shape)})}
        expected, result = value.compute(other).double(), report.probe_result()
    if result is not None and result.shape == expected.shape and close(result.double(), expected, magnitude(expected)):
        return Outcome("right")
    copied = [name for name in value.chunked if name in {*((probe or {}).get("reads") or ()), *written}]
    if copied:
        return Outcome(
            "wrong",
            Reason(
                "not_following_input",
                say(
                    "{name} does not follow {input}: it reads {copied}, which the chunked forward pass computed from "
                    "the notebook's own {input}, so with other {input} (random ones, as the grader drew them) it "
                    "still gives the chunked value. A copy of the chunked forward pass earns nothing: compute it "
                    "from {input}, as `{forward}` does",
                    name=value.name,
                    input=value.input,
                    copied=comma_list(copied),
                    forward=value.forward,
                ),
            ),
        )
    if outcome:
        return outcome
    if not probe.get("pins_read") or result is None:
        return Outcome(
            "inconclusive",
            Reason(
                NOTE,
                say(
                    "({name} does not follow {input} in a way the grader could re-run, so it is judged by its value "
                    "alone)",
                    name=value.name,
                    input=value.input,
                ),
            ),
        )
    why = next(
        (
            m
            for m, wrong in value.mistakes.items()
            if close(result.double(), wrong(other).double(), magnitude(expected))
        ),
        Reason(
            "not_following_input",
            say(
                "max difference {difference:.3g} for values up to {scale:.3g}",
                difference=max_difference(result, expected),
                scale=magnitude(expected),
            ),
        ),
    )
    return Outcome(
        "wrong",
        Reason(
            kind_of(why),
            say(
                "{name} is right on this batch, but with other {input} (random ones, as the grader drew them) it is "
                "not what `{forward}` gives: {why}",
                name=value.name,
                input=value.input,
                forward=value.forward,
                why=why,
            ),
        ),
    )


def rows_title(name: str) -> Words:
    """The title of the check that every row of d<name> sums to zero."""
    return say("every row of d{name} sums to zero", name=name)


def judge_rows_sum_to_zero(
    name: str, points: int, report: Report, forward: dict, grads: dict, seed: int, tainted: set
) -> Verdict:
    """Every row of the student's ``d<name>`` (one row per example) sums to zero, as a softmax gradient must.

    The sum alone would accept a gradient pasted from another run (another batch); so each row must
    also pull its own target (``Yb``) one way and every other character the other way (or not at all).
    The sign itself is left to the ``d<name>`` check: a sign error keeps this point, as does a missing ``/ n``.
    """
    answer_name = "d" + name
    verdict = Verdict(rows_title(name), 0, points)
    answer = _answer(verdict, answer_name, report, tainted)
    if answer is None:
        return verdict
    want = tuple(forward[name].shape)
    if tuple(answer.shape) != want:
        verdict.lines.append(_shape_problem(answer_name, answer.shape, want, name))
        return verdict
    problem = not_finite(answer_name, answer)
    if problem:
        verdict.lines.append(problem)
        return verdict
    size = magnitude(answer)
    if size == 0:
        verdict.lines.append(
            Reason(
                "all_zeros",
                say("{name} is all zeros: its rows sum to zero, but it is not a gradient yet", name=answer_name),
            )
        )
        return verdict
    reference = grads[name].double()
    if close(answer, decoy(grads[name], seed, name).double(), magnitude(reference)):
        verdict.lines.append(autograd_answer(name))
        return verdict
    sums = answer.sum(1)
    low, high = sums.min().item(), sums.max().item()
    if not close(sums, torch.zeros_like(sums), size):
        verdict.lines.append(
            Reason(
                "rows_not_zero",
                say(
                    "the rows of {name} sum to {sums}, not to zero: in each row the push up on the target must "
                    "balance the pulls down on all the characters, and the probabilities of a row add up to 1",
                    name=answer_name,
                    sums=say("{low:.3g} each", low=low)
                    if f"{low:.3g}" == f"{high:.3g}"
                    else say("values between {low:.3g} and {high:.3g}", low=low, high=high),
                ),
            )
        )
        return verdict
    rows = torch.arange(answer.shape[0])
    significant = torch.where(answer.abs() > RTOL * size, answer.sign(), torch.zeros_like(answer))
    target = significant[rows, forward["Yb"]]
    others = significant.clone()
    others[rows, forward["Yb"]] = 0
    against = (others * target[:, None] > 0).any(1)  # another character pulled the same way as the target
    if against.any():
        verdict.lines.append(
            Reason(
                "wrong_batch",
                say(
                    "the rows sum to zero, but in {wrong} of {rows} rows the target character (Yb) is not pulled "
                    "the opposite way to the other characters: is {name} computed from this batch's logits and Yb?",
                    wrong=int(against.sum()),
                    rows=answer.shape[0],
                    name=answer_name,
                ),
            )
        )
        return verdict
    verdict.points = points
    verdict.lines.append(
        Reason(
            NOTE,
            say(
                "correct: the largest row sum is {largest:.2g}, against entries up to {size:.2g}",
                largest=sums.abs().max().item(),
                size=size,
            ),
        )
    )
    return verdict

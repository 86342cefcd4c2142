"""Why an answer differs from what it should be: the explanations every judge shares.

No tensor to judge (not answered, its cell stopped before it, another type), a wrong dtype, NaN or infinite entries,
a constant factor (with its likely cause), how many entries are wrong and by how much. The gradient judge, the value
checks and Exercise 4's checks all word a difference with these, so a student reads the same explanation everywhere.
"""

from dataclasses import dataclass

import torch

from ..common.diagnoses import Reason
from ..common.words import Words, say, say_n
from .tolerance import FACTOR_MATCH, RTOL, close, wrong_entries


def not_a_tensor(name: str, info: dict) -> Reason | None:
    """Why the reported ``info`` of ``name`` is no tensor to judge (not answered, None, another type), if it is not."""
    kind = info.get("kind", "missing")
    if kind == "missing" and isinstance(info.get("raised"), str):  # written, and its cell stopped before it
        error = info["raised"][:200].rstrip()
        error = error.removesuffix(":") if error.count(":") == 1 else error  # (no message: its type alone)
        if error == "KeyboardInterrupt":  # the grader interrupts a cell at its time limit
            return Reason(
                "raised_error",
                say(
                    "{name}'s cell was interrupted before it assigned {name}: it ran over the time limit of a cell (a "
                    "loop that never ends, or far more work than the answer needs)",
                    name=name,
                ),
            )
        if error == "NotImplementedError":  # the blank notebook's stub (torch's own have a message)
            return Reason(
                "raised_error",
                say(
                    "{name}'s cell stopped at `raise NotImplementedError()` before it assigned {name}: delete that "
                    "line of the blank notebook and run the cell again",
                    name=name,
                ),
            )
        return Reason(
            "raised_error",
            say(
                "{name}'s cell stopped with {error} before it assigned {name}: fix that line and run the cell again",
                name=name,
                error=error,
            ),
        )
    if kind == "missing":
        return Reason(
            "not_answered",
            say("not answered yet: {name} is not defined (did its cell run without an error?)", name=name),
        )
    if kind == "none":
        return Reason("not_answered", say("not answered yet: {name} is still None", name=name))
    if kind != "tensor":
        if isinstance(info.get("elements"), int):  # a tensor too large to send
            return Reason(
                "not_a_float32_tensor",
                say_n(
                    "{name} is a tensor of {count} element, far too large to be this answer",
                    "{name} is a tensor of {count} elements, far too large to be this answer",
                    info["elements"],
                    name=name,
                ),
            )
        if not isinstance(info.get("type"), str):
            return Reason(
                "not_a_float32_tensor", say("{name} should be a torch tensor, but it is something else", name=name)
            )
        return Reason(
            "not_a_float32_tensor",
            say("{name} should be a torch tensor, but its type is {type}", name=name, type=info["type"]),
        )
    return None


def wrong_dtype(name: str, dtype: str, why: Words) -> Reason:
    """``why`` says what the dtype should be, e.g. ``say("gradients here are float32")``."""
    return Reason(
        "not_a_float32_tensor",
        say(
            "{name} has dtype {dtype}, but {why}: did a tensor get created with another dtype (or come from numpy)?",
            name=name,
            dtype=dtype,
            why=why,
        ),
    )


def not_finite(name: str, answer: torch.Tensor) -> Reason | None:
    bad = (~torch.isfinite(answer)).sum().item()
    if not bad:
        return None
    return Reason(
        "not_finite",
        say(
            "{name} has {bad} NaN or infinite entries: look for a division by zero, log(0), or a power such as "
            "** 0.5 or ** -1.5 of a negative number",
            name=name,
            bad=bad,
        ),
    )


def nothing_added(own: str):
    """A dC of zeros: torch.zeros_like(C) made, and nothing added into it in place."""
    return say(
        "d{name} is all zeros: nothing was added into it. index_add and index_put without the final _ return a new "
        "tensor and leave d{name} as it was: call d{name}.index_add_(...), or assign the result",
        name=own,
    )


def only_repeated_rows_wrong(answer: torch.Tensor, expected: torch.Tensor, indices: torch.Tensor, scale: float) -> bool:
    """Whether the rows of ``answer``, the gradient of a table read as ``table[indices]``, that differ from
    ``expected`` are exactly the rows that ``indices`` reads more than once: repeated indices not added up, as
    ``dC[Xb] += demb`` leaves them. (Also copied into the notebooks' self-checks: ``authoring.from_engine``.)"""
    counts = torch.bincount(indices.reshape(-1), minlength=answer.shape[0])
    wrong = (answer.double() - expected.double()).abs().max(1).values > RTOL * scale
    return bool(wrong.any() and (counts[wrong] > 1).all() and wrong[counts > 1].all())


def and_list(names) -> "Words | str":
    """Names joined as a sentence lists them: "dA and dB and dC" in English, each language its own way."""
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return say("{first} and {rest}", first=names[0], rest=and_list(names[1:]))


def comma_list(names) -> "Words | str":
    """Names listed with commas: "dA, dB, dC" in English."""
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return say("{first}, {rest}", first=names[0], rest=comma_list(names[1:]))


def constant_factor(answer: torch.Tensor, expected: torch.Tensor, scale: float) -> float | None:
    """c when the answer is c times what it should be (within tolerance), for a c other than 1."""
    a, e = answer.double(), expected.double()
    energy = (e * e).sum().item()
    if energy == 0 or not a.abs().max().item() > 0:
        return None
    c = (a * e).sum().item() / energy
    if abs(c - 1) <= FACTOR_MATCH or not close(a, c * e, scale):
        return None
    # A factor must show in more than one entry: where one entry dwarfs the rest (neuron 0's gradient through
    # its small variance), the tolerance cannot tell the others apart, and one ratio is no constant factor. There
    # the smaller entries decide by their ratios, which float32 keeps to ~1e-7 whatever their size (every entry of
    # dbnvar's with its sign flipped: -1; its epsilon left out: 2.8 at neuron 0 and 1.0 elsewhere, no factor).
    large = e.abs() > 1e-3 * e.abs().max()
    if large.sum().item() < min(2, e.numel()):
        large = e.abs() > 1e-6 * e.abs().max()
    ratios = a[large] / e[large]
    if large.sum().item() < min(2, e.numel()) or (ratios - c).abs().max().item() > FACTOR_MATCH * abs(c):
        return None
    return c


def factor_message(c: float, n: int, name: str, entries: int = 2) -> Reason | None:
    """What a constant factor c of the answer ``name`` (of ``entries`` entries) usually means (n: the batch size);
    None for a single number off by no factor of these: any two numbers differ by a factor, which tells nothing."""
    named = [
        (
            -1.0,
            "wrong_sign",
            say(
                "{name} has the right size but the wrong sign: check the sign of each factor in the local derivative",
                name=name,
            ),
        ),
        (
            2.0,
            "constant_factor",
            say(
                "{name} is twice the right value: was a contribution added twice, a factor 2 written where the local "
                "derivative has none, or the power rule's 1/2 (of a square root) left out?",
                name=name,
            ),
        ),
        (
            0.5,
            "constant_factor",
            say(
                "{name} is half the right value: is a factor 2 missing, as the power rule gives for a square?",
                name=name,
            ),
        ),
        (
            float(n),
            "batch_size",
            say("{name} is n = {n} times too large: is a division by the batch size missing?", name=name, n=n),
        ),
        (
            1.0 / n,
            "batch_size",
            say("{name} is n = {n} times too small: is there an extra division by the batch size?", name=name, n=n),
        ),
        (
            float(n * n),
            "batch_size",
            say(
                "{name} is n² = {n2} times too large: multiplied by the batch size where it divides by it?",
                name=name,
                n2=n * n,
            ),
        ),
        (
            1.0 / (n * n),
            "batch_size",
            say("{name} is n² = {n2} times too small: divided by the batch size twice?", name=name, n2=n * n),
        ),
        (
            -float(n),
            "batch_size",
            say("{name} is -n = -{n} times the right value: check the sign and the division by n", name=name, n=n),
        ),
        (
            n / (n - 1),
            "bessel",
            say(
                "{name} is n/(n-1) = {n}/{n_1} times too large: n or n-1? "
                "Check what the forward pass divides by (Bessel's correction)",
                name=name,
                n=n,
                n_1=n - 1,
            ),
        ),
        (
            (n - 1) / n,
            "bessel",
            say(
                "{name} is (n-1)/n = {n_1}/{n} times too small: n or n-1? "
                "Check what the forward pass divides by (Bessel's correction)",
                name=name,
                n=n,
                n_1=n - 1,
            ),
        ),
        (
            (n / (n - 1)) ** 0.5,
            "bessel",
            say(
                "{name} is sqrt(n/(n-1)) times too large: "
                "was a variance divided by n = {n} instead of n-1 (Bessel's correction)?",
                name=name,
                n=n,
            ),
        ),
        (
            ((n - 1) / n) ** 0.5,
            "bessel",
            say(
                "{name} is sqrt((n-1)/n) times too small: was a variance divided by n-1 = {n_1} instead of n?",
                name=name,
                n_1=n - 1,
            ),
        ),
        (
            (1.0 / n - 1) * (n - 1),
            "precedence",
            say(
                "{name} is {c:.4g} times the right value, what 1.0 / n - 1 gives where 1.0 / (n - 1) belongs: Python "
                "divides before it subtracts, so n - 1 needs its brackets",
                name=name,
                c=(1.0 / n - 1) * (n - 1),
            ),
        ),
    ]
    for factor, kind, words in named:
        if abs(c - factor) <= FACTOR_MATCH * abs(factor):
            return Reason(kind, words)
    if entries == 1:
        return None
    return Reason(
        "constant_factor",
        say(
            "{name} is off by a constant factor: {c:.4g} times the right value. Look for a missing or extra constant",
            name=name,
            c=c,
        ),
    )


@dataclass(frozen=True)
class Difference:
    """How far an answer (of the right shape) is from what it should be, in numbers a message quotes."""

    wrong: int  # tolerance.wrong_entries
    total: int
    largest_error: float
    scale: float  # the size the tolerance is relative to


def difference(answer: torch.Tensor, expected: torch.Tensor, scale: float) -> Difference:
    error = (answer.double() - expected.double()).abs()
    wrong = wrong_entries(answer, expected, scale).sum().item()
    return Difference(wrong, answer.numel(), error.max().item() if error.numel() else 0.0, scale)

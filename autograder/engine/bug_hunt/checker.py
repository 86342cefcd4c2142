"""Exercise 6's gradient checker: the student's ``numerical_gradient(f, x, h=1e-6)``, run in the kernel on functions
the grader draws from the grading seed, against autograd's gradient of the same functions.

Two cases. A quadratic with the step h = 1e-3 given: central differences are exact on it up to rounding, a one-sided
difference is off by about h. A sum of sines at the student's own default step: off by more than ACCURACY when that
step is too large (1e-3 or more) or the arithmetic float32. (Measured margins: docs/design/bug-hunt.md.)
"""

import zlib
from dataclasses import dataclass
from typing import Callable

import torch

from ...common.diagnoses import NOTE, Reason
from ...common.words import say
from ..explain import not_finite
from ..verdict import Verdict
from ..wire import Report

FUNCTION = "numerical_gradient"
POINTS = 3
METHOD_STEP = 1e-3  # the step given in the first case: a one-sided difference is off by about this much
ACCURACY = 1e-6  # the largest error allowed, relative to the largest entry of the gradient
# An error on the sines that no step explains: a central difference is off by 1 - sin(3h)/(3h), 0.5 only at h = 0.63;
# float32 arithmetic at h = 1e-6 is off by a few hundredths. A whole row nudged at once is off by about 1 or more.
FAR = 0.5


@dataclass(frozen=True)
class Case:
    name: str  # what the kernel reports the result as
    f: Callable  # a function of one float64 tensor, returning a scalar tensor
    x: torch.Tensor  # where its gradient is taken
    h: float | None  # the step the grader passes, or None: the student's own default


def cases(seed):
    """The checker's cases for this seed (the kernel and the grader draw the same)."""
    g = torch.Generator().manual_seed(zlib.crc32(f"{seed}/numerical_gradient".encode()))

    def draw(*shape):
        return torch.randn(shape, generator=g, dtype=torch.float64)

    a = draw(6, 6) / 6**0.5
    q, c = a @ a.T + torch.eye(6, dtype=torch.float64), draw(6)
    b, w = draw(2, 3), draw(2, 3).sign() * (0.5 + torch.rand((2, 3), generator=g, dtype=torch.float64))
    return [
        Case("method", lambda x: 0.5 * x @ q @ x + c @ x, draw(6), METHOD_STEP),
        # the central difference of sin(3 x) is off by 1.5 h**2 of the gradient, whatever b and w: with the step
        # at 8e-4 or below it is within ACCURACY, at 1e-3 or above it is not, on every seed
        Case("accuracy", lambda x: (w * torch.sin(3 * x + b)).sum(), draw(2, 3), None),
    ]


def expected_gradient(case):
    """Autograd's gradient of the case's function at its x."""
    x = case.x.clone().requires_grad_(True)
    with torch.enable_grad():
        (grad,) = torch.autograd.grad(case.f(x), x)
    return grad.detach()


def relative_error(result, expected):
    """The largest error of ``result``, relative to the largest entry of ``expected``."""
    return (result.double() - expected).abs().max().item() / max(expected.abs().max().item(), 1e-12)


def one_sided(case, h):
    """The forward and the backward one-sided differences of the case at step h: what a one-sided checker gives."""
    found = []
    for sign in (1, -1):
        grad = torch.zeros_like(case.x).reshape(-1)
        for i in range(grad.numel()):
            step = torch.zeros_like(grad)
            step[i] = sign * h
            grad[i] = sign * (case.f(case.x + step.reshape(case.x.shape)) - case.f(case.x)) / h
        found.append(grad.reshape(case.x.shape))
    return found


def run_case(numerical_gradient, case):
    """The student's function on one case, as the kernel calls it: on a copy of x, with the step if one is given."""
    x = case.x.clone()
    return numerical_gradient(case.f, x) if case.h is None else numerical_gradient(case.f, x, h=case.h)


USES_AUTOGRAD = say("numerical_gradient uses autograd, so it earns nothing: it must work from the numbers f gives")


def _problem(report: Report, case: Case, tainted: set):
    """Why the case's result earns nothing (a Reason), and its relative error when it is a tensor of the right shape."""
    info, kind = report.info(case.name), report.info(case.name).get("kind", "missing")
    if FUNCTION in tainted or info.get("type") == "AutogradIsOff":
        return Reason("autograd", USES_AUTOGRAD), None
    if kind == "missing" or report.info(FUNCTION).get("kind") != "function":
        why = say("not answered yet: numerical_gradient is not defined (did its cell run without an error?)")
        return Reason("not_answered", why), None
    if kind == "raised" and info.get("type") == "NotImplementedError":
        return Reason(
            "not_answered", say("not answered yet: numerical_gradient still raises NotImplementedError")
        ), None
    if kind == "raised":
        error, message = info.get("type"), str(info.get("message", ""))
        why = say("numerical_gradient raised {error}: {message}", error=error, message=message)
        if "dtype" in message or "Double" in message:  # a float32 tensor met f's float64 ones
            why = say(
                "numerical_gradient raised {error}: {message} (f computes in float64, as x comes: keep what you hand "
                "it in float64, without .float())",
                error=error,
                message=message,
            )
        return Reason("raised_error", why), None
    result = report.floats(case.name)
    if result is None:
        kind = str(info.get("type") or kind)  # (the kernel's kind "other" names no type: its "type" does)
        why = say("numerical_gradient returned a {kind}: it must return a tensor of floats, the shape of x", kind=kind)
        return Reason("not_a_float32_tensor", why), None
    if tuple(result.shape) != tuple(case.x.shape):
        why = say(
            "numerical_gradient returned shape {got} for an x of shape {want}: the gradient has the shape of x",
            got=str(tuple(result.shape)),
            want=str(tuple(case.x.shape)),
        )
        return Reason("wrong_shape", why), None
    problem = not_finite("the result of numerical_gradient", result)
    return (problem, None) if problem else (None, relative_error(result, expected_gradient(case)))


def _off(case: Case, result: torch.Tensor, error: float) -> Reason:
    """Why a result of the right shape is off by more than ACCURACY."""
    if case.h is not None and any(relative_error(result, d) <= ACCURACY for d in one_sided(case, case.h)):
        why = say(
            "numerical_gradient looks one-sided, (f(x + h) - f(x)) / h: with h = {h:g} it is off by {error:.1e} of "
            "the gradient, about h itself. Use both sides, (f(x + h) - f(x - h)) / (2 h): its error is about h**2",
            h=case.h,
            error=error,
        )
        return Reason("one_sided_difference", why)
    if not result.any():  # f gave the same number on both sides of every entry: it never saw them nudged
        why = say(
            "numerical_gradient gives zeros: f(x) came out the same on both sides of every entry, so the entries "
            "nudged were not those of the x handed to f. Change x itself, or a view of it (x.view(-1)), not a copy "
            "(.clone(), torch.tensor(x), .tolist())"
        )
        return Reason("inaccurate_difference", why)
    if relative_error(result, 2 * expected_gradient(case)) <= ACCURACY:
        why = say("numerical_gradient gives twice the gradient: x + h and x - h are 2 h apart, so divide by 2 h")
        return Reason("constant_factor", why)
    if case.h is not None and relative_error(result, case.h**2 * expected_gradient(case)) <= ACCURACY:
        why = say(
            "numerical_gradient gives the gradient times h**2: (f(x + h) - f(x - h)) / 2 * h divides by 2 and then "
            "multiplies by h, since Python takes / and * from left to right. Put 2 * h in brackets"
        )
        return Reason("precedence", why)
    if case.h is not None:
        why = say(
            "with h = {h:g} on a quadratic, where central differences are exact up to rounding, numerical_gradient is "
            "off by {error:.1e} of the gradient: is each entry nudged on its own, both ways, and divided by 2 h?",
            h=case.h,
            error=error,
        )
        return Reason("inaccurate_difference", why)
    if error > FAR:  # no step of a central difference is that far off on these sines: not the step's error
        why = say(
            "with its own default step, numerical_gradient is off by {error:.1e} of the gradient of a smooth function, "
            "far more than a step size or float32 explains: is each entry nudged on its own (for an x of several "
            "dimensions, one entry, not a whole row), both ways, and divided by 2 h?",
            error=error,
        )
        return Reason("inaccurate_difference", why)
    why = say(
        "with its own default step, numerical_gradient is off by {error:.1e} of the gradient of a smooth function, "
        "more than the {allowed:.0e} that central differences reach in float64: is the default h too large (1e-5 to "
        "1e-6 suits float64), or does it compute in float32?",
        error=error,
        allowed=ACCURACY,
    )
    return Reason("inaccurate_difference", why)


def judge_checker(report: Report, namespace: dict, seed: int, tainted: set) -> Verdict:
    """The student's numerical_gradient on both cases: every point when both are within ACCURACY, else none."""
    verdict = Verdict(FUNCTION, 0, POINTS)
    errors = {}
    for case in cases(seed):
        problem, error = _problem(report, case, tainted)
        if problem is None and error > ACCURACY:
            problem = _off(case, report.floats(case.name).double(), error)
        if problem is not None:
            verdict.lines.append(problem)
            return verdict
        errors[case.name] = error
    verdict.points = POINTS
    right = say(
        "correct on functions you have not seen: off by {method:.1e} of the gradient with h = {h:g} (a one-sided "
        "difference is off by about h there), and by {accuracy:.1e} with your own step",
        method=errors["method"],
        h=METHOD_STEP,
        accuracy=errors["accuracy"],
    )
    verdict.lines.append(Reason(NOTE, right))
    return verdict

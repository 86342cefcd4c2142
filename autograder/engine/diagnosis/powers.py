"""Slips of the power rule, read from the values: a step whose forward line raises a tensor to a power (counts_sum**-1,
(bnvar + 1e-5)**-0.5) has a gradient of the form k * x**(k-1) times its upstream gradient. An answer of the form
c * x**p times it, with another exponent p (its sign flipped, the forward pass's own, one too low), is named by its
exponent, found by a fit of the logarithms, whatever the line that made it."""

import torch

from ...common.diagnoses import Reason
from ...common.words import say
from ..backward_rules import Step
from ..tolerance import close

# step -> (its base as the forward line writes it, the base's values, the forward pass's exponent k)
POWERS = {
    "counts_sum": ("counts_sum", lambda f: f["counts_sum"], -1.0),
    "bnvar": ("(bnvar + 1e-5)", lambda f: f["bnvar"] + 1e-5, -0.5),
}
STEPS_OF = 2  # exponents are fitted to the nearest half (1.5, -0.5, -2): one written out, not bnvar_inv**-1.5's 0.75


def _fit(local: torch.Tensor, base: torch.Tensor):
    """(c, p) with local ≈ c * base**p by least squares on the logarithms, or None when the signs differ."""
    if not (local.sign() == local.sign().flatten()[0]).all() or (local == 0).any() or (base <= 0).any():
        return None
    x, y = base.log().flatten(), local.abs().log().flatten()
    spread = ((x - x.mean()) ** 2).sum()
    if spread.item() < 1e-12:
        return None  # one value of the base: any exponent fits
    p = (((x - x.mean()) * (y - y.mean())).sum() / spread).item()
    p = round(p * STEPS_OF) / STEPS_OF
    c = (y - p * x).mean().exp().item() * local.flatten()[0].sign().item()
    return c, p


def power_slip(answer: torch.Tensor, step: Step, forward: dict, upstream: dict, scale: float, own: str):
    """Why d<own> is wrong when it is c * x**p times the upstream gradient, for the step's base x and an exponent p
    other than the power rule's k - 1."""
    if step.name not in POWERS or len(step.upstream) != 1:
        return None
    written, base_of, k = POWERS[step.name]
    up, base = upstream[step.upstream[0]].double(), base_of(forward).double()
    a = answer.double()
    if up.shape != a.shape or base.shape != a.shape:
        return None
    used = up.abs() > 1e-9 * up.abs().max()
    if used.sum().item() < 2:
        return None
    fit = _fit(a[used] / up[used], base[used])
    if fit is None:
        return None
    c, p = fit
    right = k - 1
    if abs(p - right) < 1e-6 or not close(a, c * base**p * up, scale):
        return None
    if abs(p + right) < 1e-6:
        words = say(
            "d{name} takes {base} to the power {p:g}, where the power rule gives {right:g}: the exponent's sign is "
            "flipped. The forward pass has x**{k:g}, whose derivative is k * x**(k-1), a negative power: it divides",
            name=own,
            base=written,
            p=p,
            right=right,
            k=k,
        )
    else:
        words = say(
            "d{name} takes {base} to the power {p:g}, where the power rule gives {right:g}: the forward pass has "
            "x**{k:g}, whose derivative is k * x**(k-1), the exponent one lower than the forward pass's",
            name=own,
            base=written,
            p=p,
            right=right,
            k=k,
        )
    return Reason("power_rule", words)


def power_factor_left_out(c: float | None, step: Step, own: str) -> Reason | None:
    """Why d<own> is c times what it should be when c is 1/k, for the step's power x**k (k not ±1): the power rule's
    exponent lowered, but its factor k left out of the front (`(bnvar + 1e-5)**-1.5 * dbnvar_inv`)."""
    if c is None or step.name not in POWERS:
        return None
    written, _, k = POWERS[step.name]
    if abs(abs(k) - 1) < 1e-9 or abs(c - 1 / k) > 1e-3 * abs(1 / k):
        return None
    return Reason(
        "power_rule",
        say(
            "d{name} is {c:g} times the right value, 1/{k:g}: the power rule's factor {k:g} is left out of its front. "
            "The derivative of {base}**{k:g} is {k:g} * {base}**{k1:g}: the exponent comes down as a factor",
            name=own,
            c=c,
            k=k,
            k1=k - 1,
            base=written,
        ),
    )

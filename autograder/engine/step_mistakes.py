"""The wrong formulas students typically write for the steps of the atomic graph (``backward_rules.Step.mistakes``),
each with what the diagnosis says about it: message (a Reason) -> variant(f, d), or a tuple of them."""

import torch
import torch.nn.functional as F

from ..common.diagnoses import Reason
from ..common.words import say


def batch_size(f) -> int:
    """n, the batch's examples, of the forward values ``f`` (backward_rules' rules read it too)."""
    return f["hprebn"].shape[0]


def dlogits_from_max(f, d):
    argmax = f["logits"].max(1).indices
    return F.one_hot(argmax, num_classes=f["logits"].shape[1]).to(f["logits"].dtype) * d["logit_maxes"]


def _at_target(f):
    """A one-hot of each example's target: where `F.one_hot(Yb, ...)` sends the max's path."""
    return F.one_hot(f["Yb"], f["logits"].shape[1]).to(f["logits"].dtype)


def _dC_in_slices(f, d, dim):
    """dC as `dC[Xb[k]] += demb[k]` leaves it, slice by slice of dimension ``dim``: within a slice a repeated
    index keeps one contribution."""
    grad = torch.zeros_like(f["C"])
    for k in range(f["Xb"].shape[dim]):
        grad[f["Xb"].select(dim, k)] += d["emb"].select(dim, k)
    return grad


EPSILON_WORDS = say(
    "the forward pass adds 1e-5 to the variance inside the square root, before the power, and the derivative keeps it "
    "there (1e-5 added after the power or the root changes almost nothing; it matters where a neuron's batch variance "
    "is small, as neuron 0's is here)"
)


def _power_rule(name: str, power: str) -> Reason:
    """The power rule's exponent kept as the forward pass has it: k * x**k for k * x**(k-1)."""
    return Reason(
        "power_rule",
        say(
            "d{name} keeps the exponent of the forward pass: the power rule takes x**k to k * x**(k-1), one lower, so "
            "the derivative of x**{power} is not {power} * x**{power}",
            name=name,
            power=power,
        ),
    )


def _dlogprobs_every_row(f, d):
    """What `dlogprobs[:, Yb] = -1.0 / n` leaves: -1/n in every row at every column that is some example's target."""
    grad = torch.zeros_like(f["logprobs"])
    grad[:, f["Yb"]] = -1.0 / batch_size(f)
    return grad


def _dlogprobs_rows_of_the_targets(f, d):
    """What `dlogprobs[Yb] = -1.0 / n` leaves: -1/n in every entry of the rows that Yb's values number."""
    grad = torch.zeros_like(f["logprobs"])
    grad[f["Yb"]] = -1.0 / batch_size(f)
    return grad


LOGPROBS = {
    Reason(
        "target_term",
        say(
            "dlogprobs has -1/n at every example's target in every row: `[:, Yb]` takes every row for each "
            "target. Index rows and columns together, [range(n), Yb], so that each row gets its own target only"
        ),
    ): _dlogprobs_every_row,
    Reason(
        "target_term",
        say(
            "dlogprobs has -1/n in whole rows, those that the targets' values number: `[Yb]` alone picks rows, not "
            "entries. Index rows and columns together, [range(n), Yb], so that each row gets its own target only"
        ),
    ): _dlogprobs_rows_of_the_targets,
}

PROBS = {
    Reason(
        "inverted",
        say("dprobs multiplies dlogprobs by probs: the derivative of log(x) is 1/x, so it divides by probs"),
    ): lambda f, d: d["logprobs"] * f["probs"],
    Reason(
        "other_tensor",
        say("dprobs multiplies dlogprobs by log(probs): the derivative of log(x) is 1/x, not log(x) again"),
    ): lambda f, d: d["logprobs"] * f["logprobs"],
}

COUNTS_SUM = {_power_rule("counts_sum", "-1"): lambda f, d: -(f["counts_sum"] ** -1) * d["counts_sum_inv"]}

LOGITS = {
    Reason(
        "max_path",
        say(
            "dlogits sends the path through logit_maxes to the smallest logit of each row: logit_maxes is the "
            "largest one, so that path goes to where the max is"
        ),
    ): lambda f, d: d["norm_logits"] + dlogits_from_max({**f, "logits": -f["logits"]}, d),
    Reason(
        "max_path",
        say(
            "dlogits sends the path through logit_maxes to each example's target, Yb: logit_maxes is the largest logit "
            "of its row, wherever the target is, so that path goes to where the max is"
        ),
    ): lambda f, d: d["norm_logits"] + _at_target(f) * d["logit_maxes"],
}

H = {
    Reason(
        "next_step",
        say(
            "dh is multiplied by tanh's local derivative, 1 - h**2: that factor is the next step's, dhpreact's. dh is "
            "the gradient with respect to h itself, the output of tanh, which feeds logits = h @ W2 + b2"
        ),
    ): lambda f, d: (d["logits"] @ f["W2"].T) * (1.0 - f["h"] ** 2),
}

HPREACT = {
    Reason(
        "precedence",
        say(
            "dhpreact squares (1 - h): the derivative of tanh is 1 - h**2, with the square on h alone (** "
            "comes before -, so 1.0 - h**2 needs no brackets)"
        ),
    ): lambda f, d: (1.0 - f["h"]) ** 2 * d["h"],
    Reason(
        "precedence",
        say(
            "dhpreact multiplies dh into h**2 alone: `1 - h**2 * dh` is 1 - (h**2 * dh), because Python multiplies "
            "before it subtracts. Bracket the local derivative, (1 - h**2) * dh"
        ),
    ): lambda f, d: 1.0 - f["h"] ** 2 * d["h"],
    Reason(
        "precedence",
        say(
            "dhpreact subtracts h**2 from dh: `dh * 1 - h**2` is (dh * 1) - h**2, because Python multiplies before it "
            "subtracts. Bracket the local derivative, dh * (1 - h**2)"
        ),
    ): lambda f, d: d["h"] - f["h"] ** 2,
    Reason(
        "power_rule",
        say(
            "dhpreact multiplies dh by 1 - h: the derivative of tanh is 1 - tanh**2, and h is tanh(hpreact), so h is "
            "squared in it"
        ),
    ): lambda f, d: (1.0 - f["h"]) * d["h"],
    Reason(
        "other_tensor",
        say(
            "dhpreact takes tanh of h again: h is already tanh(hpreact), so tanh's local derivative is 1 - h**2 with h "
            "as it is"
        ),
    ): lambda f, d: (1.0 - torch.tanh(f["h"]) ** 2) * d["h"],
}

BNVAR = {
    Reason("epsilon", say("dbnvar is missing BatchNorm's epsilon: {why}", why=EPSILON_WORDS)): lambda f, d: (
        -0.5 * f["bnvar"] ** -1.5 * d["bnvar_inv"]
    ),
    Reason(
        "precedence",
        say(
            "dbnvar raises to the power -3 and then halves: `x ** -3 / 2` is (x ** -3) / 2, because Python "
            "takes ** before /. The power -3/2 needs its brackets, ** (-3 / 2), or write ** -1.5"
        ),
    ): lambda f, d: -0.5 * (f["bnvar"] + 1e-5) ** -3 / 2 * d["bnvar_inv"],
    Reason(
        "epsilon",
        say(
            "dbnvar adds BatchNorm's epsilon after the square root: the forward pass takes the power of "
            "(bnvar + 1e-5), so the derivative's power is of (bnvar + 1e-5) too, not of sqrt(bnvar) + 1e-5"
        ),
    ): lambda f, d: -0.5 * (f["bnvar"] ** 0.5 + 1e-5) ** -3 * d["bnvar_inv"],
    _power_rule("bnvar", "-0.5"): lambda f, d: -0.5 * (f["bnvar"] + 1e-5) ** -0.5 * d["bnvar_inv"],
}

BNDIFF2 = {
    Reason(
        "precedence",
        say(
            "dbndiff2 subtracts where it should divide: `1.0 / n - 1 * x` is (1.0 / n) - (1 * x), because "
            "Python divides and multiplies before it subtracts. n - 1 needs its brackets"
        ),
    ): lambda f, d: 1.0 / batch_size(f) - torch.ones_like(f["bndiff2"]) * d["bnvar"],
    Reason(
        "other_tensor",
        say(
            "dbndiff2 multiplies by bndiff2 itself: a sum's derivative with respect to each of its terms is 1, so "
            "each entry of bndiff2 gets the same share of dbnvar, whatever its value"
        ),
    ): lambda f, d: f["bndiff2"] * d["bnvar"] / (batch_size(f) - 1),
}

C = {
    Reason(
        "not_accumulated",
        say(
            "dC is wrong for characters that appear several times in one row of Xb (or one column): `+=` "
            "through an index that repeats keeps only one of their contributions, even a row at a time. "
            "Add up every occurrence: index_add_, index_put_ with accumulate=True, a loop over single "
            "entries, or a one-hot matrix product"
        ),
    ): (lambda f, d: _dC_in_slices(f, d, 0), lambda f, d: _dC_in_slices(f, d, 1)),
}

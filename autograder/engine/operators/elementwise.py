"""Exercise 5's elementwise operators: dropout with a fixed mask, GELU (exact, with erf), ReLU and LeakyReLU.

Each is a ``backward_rules.Step``: its forward line as the notebook has it, its one term, its points, and the wrong
formulas students typically write, each with the words that name it.
"""

import math

import torch

from ...common.diagnoses import Reason
from ...common.words import say
from ..backward_rules import Step

DROP_P = 0.1  # the notebook's drop_p (setup_settings): the probability that dropout zeroes a unit
LEAKY_SLOPE = 0.1  # the slope of LeakyReLU below zero in the notebook's forward pass (PyTorch's default is 0.01)


def _dropout(f, d, scale=None, mask=True):
    scale = 1 / (1 - DROP_P) if scale is None else scale
    return d["hdrop"] * (f["drop_mask"] if mask else 1.0) * scale


def _cdf(x):
    return 0.5 * (1 + torch.erf(x / math.sqrt(2)))


def _density(x):
    return torch.exp(-(x**2) / 2) / math.sqrt(2 * math.pi)


def _gelu(f, d, first=1.0, second=None):
    """d * (Φ(x) + x·φ(x)); ``first`` scales the Φ(x) term, ``second`` replaces φ (the variants)."""
    x = f["hln"]
    density = _density(x) if second is None else second(x)
    return d["hgelu"] * (first * _cdf(x) + x * density)


def _gelu_tanh(f, d):
    """The derivative of GELU's tanh approximation, 0.5 x (1 + tanh(u)), u = √(2/π) (x + 0.044715 x³)."""
    x = f["hln"]
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
    t = torch.tanh(u)
    du = math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x**2)
    return d["hgelu"] * (0.5 * (1 + t) + 0.5 * x * (1 - t**2) * du)


def _gelu_sigmoid(f, d):
    """The derivative of GELU's sigmoid approximation x·σ(1.702 x)."""
    s = torch.sigmoid(1.702 * f["hln"])
    return d["hgelu"] * (s + 1.702 * f["hln"] * s * (1 - s))


def _leaky(f, d, below=LEAKY_SLOPE, above=1.0, at_zero_above=False):
    x = f["leaky_in"]
    positive = x >= 0 if at_zero_above else x > 0
    return d["leaky_out"] * torch.where(positive, above, below)


DROPOUT = Step(
    "hgelu",
    "hdrop = hgelu * drop_mask / (1 - drop_p)",
    {"hdrop": _dropout},
    2,
    mistakes={
        Reason(
            "dropout_mask",
            say(
                "dhgelu is masked but not rescaled: the forward pass divides every kept unit by 1 - drop_p, so its "
                "gradient is divided by it too"
            ),
        ): lambda f, d: _dropout(f, d, scale=1.0),
        Reason(
            "dropout_mask",
            say(
                "dhgelu is not masked: a unit that dropout zeroed (drop_mask 0) never reaches the loss, so its "
                "gradient is 0; the same mask applies in the backward pass"
            ),
        ): lambda f, d: _dropout(f, d, mask=False),
        Reason(
            "dropout_mask",
            say(
                "dhgelu is dhdrop passed through: dropout multiplies each unit by drop_mask / (1 - drop_p), and its "
                "backward pass multiplies by the same mask and scale"
            ),
        ): lambda f, d: d["hdrop"].clone(),
        Reason(
            "dropout_mask",
            say("dhgelu multiplies by 1 - drop_p where the forward pass divides by it"),
        ): lambda f, d: _dropout(f, d, scale=1 - DROP_P),
        Reason(
            "dropout_mask",
            say(
                "dhgelu's mask is hdrop > 0, which also drops the kept units whose value is negative (GELU is "
                "negative below 0): the backward pass multiplies by drop_mask itself, whatever the sign of the unit"
            ),
        ): lambda f, d: d["hdrop"] * (f["hdrop"] > 0) / (1 - DROP_P),
        Reason(
            "dropout_mask",
            say("dhgelu's mask is the wrong way round: the gradient flows to the units dropout kept (drop_mask 1)"),
        ): lambda f, d: d["hdrop"] * (1 - f["drop_mask"]) / (1 - DROP_P),
    },
)

GELU = Step(
    "hln",
    "hgelu = hln * 0.5 * (1 + torch.erf(hln / 2**0.5))",
    {"hgelu": _gelu},
    2,
    mistakes={
        Reason(
            "product_rule",
            say(
                "dhln is missing the x·φ(x) term: GELU is x times Φ(x), and Φ(x) depends on x as well, so the "
                "product rule adds x times the derivative of Φ (φ, the standard normal density)"
            ),
        ): lambda f, d: d["hgelu"] * _cdf(f["hln"]),
        Reason(
            "product_rule",
            say(
                "dhln is missing the Φ(x) term: GELU is x times Φ(x), and the derivative of the first factor, x, "
                "leaves Φ(x)"
            ),
        ): lambda f, d: _gelu(f, d, first=0.0),
        Reason(
            "product_rule",
            say(
                "dhln's second term is φ(x) without its factor x: the product rule keeps x and differentiates Φ(x), "
                "which gives x·φ(x)"
            ),
        ): lambda f, d: d["hgelu"] * (_cdf(f["hln"]) + _density(f["hln"])),
        Reason(
            "missing_factor",
            say("dhln's x·φ(x) term is missing the normal density's 1/√(2π): φ(x) = exp(-x²/2) / √(2π)"),
        ): lambda f, d: _gelu(f, d, second=lambda x: torch.exp(-(x**2) / 2)),
        Reason(
            "missing_factor",
            say(
                "dhln's x·φ(x) term is √2 times too large: the chain rule through erf(x/√2) brings the inner "
                "derivative 1/√2 too"
            ),
        ): lambda f, d: _gelu(f, d, second=lambda x: math.sqrt(2) * _density(x)),
        Reason(
            "missing_factor",
            say("dhln's x·φ(x) term has exp(-x²) where the normal density has exp(-x²/2): (x/√2)² = x²/2"),
        ): lambda f, d: _gelu(f, d, second=lambda x: torch.exp(-(x**2)) / math.sqrt(2 * math.pi)),
        Reason(
            "missing_factor",
            say("dhln's Φ(x) term is missing its 0.5, and is 2 times too large: Φ(x) = 0.5 · (1 + erf(x/√2))"),
        ): lambda f, d: _gelu(f, d, first=2.0),
        Reason(
            "missing_factor",
            say("dhln's Φ(x) term takes erf(x) where GELU has erf(x/√2): Φ(x) = 0.5 · (1 + erf(x/√2))"),
        ): lambda f, d: d["hgelu"] * (0.5 * (1 + torch.erf(f["hln"])) + f["hln"] * _density(f["hln"])),
        Reason(
            "wrong_sign",
            say(
                "dhln subtracts the x·φ(x) term: the product rule adds the derivative of each factor times the "
                "other, Φ(x) + x·φ(x), and φ (the derivative of Φ) is positive"
            ),
        ): lambda f, d: _gelu(f, d, second=lambda x: -_density(x)),
        Reason(
            "other_tensor",
            say(
                "dhln takes the normal density φ of hgelu, GELU's output: φ, like Φ, takes GELU's input, hln "
                "(φ(x) = exp(-x²/2) / √(2π) with x = hln)"
            ),
        ): lambda f, d: d["hgelu"] * (_cdf(f["hln"]) + f["hln"] * _density(f["hgelu"])),
        Reason(
            "precedence",
            say(
                "dhln multiplies only the Φ(x) term by dhgelu, and adds x·φ(x) without it: brackets missing around "
                "the two terms of GELU's derivative, which the upstream gradient multiplies as a whole"
            ),
        ): lambda f, d: d["hgelu"] * _cdf(f["hln"]) + f["hln"] * _density(f["hln"]),
        Reason(
            "approximation",
            say(
                "dhln is the derivative of GELU's tanh approximation, but the forward pass computes the exact GELU "
                "with erf: differentiate that one"
            ),
        ): _gelu_tanh,
        Reason(
            "approximation",
            say(
                "dhln is the derivative of GELU's sigmoid approximation x·σ(1.702x), but the forward pass computes "
                "the exact GELU with erf: differentiate that one"
            ),
        ): _gelu_sigmoid,
    },
)

RELU = Step(
    "relu_in",
    "relu_out = torch.relu(relu_in)",
    {"relu_out": lambda f, d: (f["relu_in"] > 0) * d["relu_out"]},
    1,
    mistakes={
        Reason(
            "activation_mask",
            say(
                "drelu_in passes the gradient where relu_in < 0 too: ReLU's output is the constant 0 there, so no "
                "gradient flows back"
            ),
        ): lambda f, d: d["relu_out"].clone(),
        Reason(
            "activation_mask",
            say(
                "drelu_in passes the gradient wherever relu_in is not 0, where relu_in < 0 too: a mask of "
                "relu_in != 0 (or relu_in.bool()) lets the negative ones through; ReLU's slope is 1 only where "
                "relu_in > 0"
            ),
        ): lambda f, d: (f["relu_in"] != 0) * d["relu_out"],
        Reason(
            "activation_mask",
            say(
                "drelu_in is masked the wrong way round: the gradient flows where relu_in > 0 and stops where it is < 0"
            ),
        ): lambda f, d: (f["relu_in"] < 0) * d["relu_out"],
        Reason(
            "activation_mask",
            say(
                "drelu_in passes the gradient where relu_in is exactly 0: at ReLU's kink PyTorch takes the "
                "derivative as 0 (neuron 0 of relu_in is exactly 0 here)"
            ),
        ): lambda f, d: (f["relu_in"] >= 0) * d["relu_out"],
        Reason(
            "activation_mask",
            say("drelu_in multiplies by ReLU's output, not by its slope (1 where relu_in > 0, else 0)"),
        ): lambda f, d: torch.relu(f["relu_in"]) * d["relu_out"],
        Reason(
            "activation_mask",
            say("drelu_in multiplies by relu_in itself, not by ReLU's slope (1 where relu_in > 0, else 0)"),
        ): lambda f, d: f["relu_in"] * d["relu_out"],
        Reason(
            "activation_mask",
            say(
                "drelu_in sends the gradient back with its sign flipped where relu_in < 0: torch.sign(relu_in) is -1 "
                "there, but ReLU's slope is 0"
            ),
        ): lambda f, d: torch.sign(f["relu_in"]) * d["relu_out"],
    },
)

LEAKY_RELU = Step(
    "leaky_in",
    "leaky_out = F.leaky_relu(leaky_in, 0.1)",
    {"leaky_out": _leaky},
    1,
    mistakes={
        Reason(
            "activation_mask",
            say("dleaky_in is ReLU's gradient: LeakyReLU keeps a slope of 0.1 where leaky_in < 0, so some flows back"),
        ): lambda f, d: _leaky(f, d, below=0.0),
        Reason(
            "activation_mask",
            say("dleaky_in passes the whole gradient where leaky_in < 0: LeakyReLU's slope there is 0.1, not 1"),
        ): lambda f, d: d["leaky_out"].clone(),
        Reason(
            "activation_mask",
            say("dleaky_in has the two slopes swapped: 1 where leaky_in > 0, 0.1 where it is < 0"),
        ): lambda f, d: _leaky(f, d, below=1.0, above=LEAKY_SLOPE),
        Reason(
            "activation_mask",
            say(
                "dleaky_in has slope 1 where leaky_in is exactly 0: at the kink PyTorch takes LeakyReLU's slope as "
                "0.1 (neuron 0 of leaky_in is exactly 0 here)"
            ),
        ): lambda f, d: _leaky(f, d, at_zero_above=True),
        Reason(
            "activation_mask",
            say(
                "dleaky_in has slope 0.01 where leaky_in < 0, PyTorch's default for LeakyReLU: this forward pass "
                "gives F.leaky_relu a slope of 0.1"
            ),
        ): lambda f, d: _leaky(f, d, below=0.01),
        Reason(
            "activation_mask",
            say("dleaky_in has slope -0.1 where leaky_in < 0: LeakyReLU's output there is 0.1 · leaky_in, slope +0.1"),
        ): lambda f, d: _leaky(f, d, below=-LEAKY_SLOPE),
        Reason(
            "activation_mask",
            say(
                "dleaky_in is the slope 0.1 alone where leaky_in < 0: the upstream gradient dleaky_out is missing "
                "there (the slope multiplies it, below zero as above)"
            ),
        ): lambda f, d: torch.where(f["leaky_in"] > 0, d["leaky_out"], LEAKY_SLOPE),
        Reason(
            "activation_mask",
            say(
                "dleaky_in has slope 0.1 everywhere: that is LeakyReLU's slope where leaky_in < 0; where it is > 0 the "
                "slope is 1"
            ),
        ): lambda f, d: LEAKY_SLOPE * d["leaky_out"],
    },
)

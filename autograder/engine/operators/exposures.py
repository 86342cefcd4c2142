"""Which input of Exercise 5's setup exposes which mistake (the idea: ``engine.exposures``).

On an ordinary batch no input of ReLU or LeakyReLU is exactly 0, so a derivative that takes the wrong side at the kink
(``>= 0`` for ``> 0``) gives autograd's values. The setup sets neuron 0 of both inputs to exactly 0. tests/fast/
test_ex5_engine.py asserts the margins; benchmarks/bench_margins.py prints them over many seeds.
"""

import torch

from ..exposures import Exposure
from .elementwise import LEAKY_RELU, LEAKY_SLOPE, RELU

KINK = "neuron 0 of the activation's input is exactly 0"

EXPOSURES = [
    Exposure(
        "drelu_in",
        "the gradient let through at the kink",
        KINK,
        RELU,
        lambda f, d: torch.where(f["relu_in"] > 0, d["relu_out"], 0.0),
        lambda f, d: (f["relu_in"] >= 0) * d["relu_out"],
    ),
    Exposure(
        "dleaky_in",
        "slope 1 at the kink",
        KINK,
        LEAKY_RELU,
        lambda f, d: d["leaky_out"] * (f["leaky_in"] > 0) + LEAKY_SLOPE * d["leaky_out"] * (f["leaky_in"] <= 0),
        lambda f, d: torch.where(f["leaky_in"] >= 0, d["leaky_out"], LEAKY_SLOPE * d["leaky_out"]),
    ),
]

"""The grader's own run of a notebook's setup: the forward values and autograd's gradients.

It executes the notebook's locked setup cells (restored from the gradebook, so they are
the course's code, not the student's) in the grader's process, with the seed of this
grading run. The student's kernel ran the very same cells with the same seed.
"""

import contextlib
import io
import re
from functools import lru_cache

import torch

HIDDEN_REGION = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[ \t]*\n?", re.S | re.M)
SETUP_PREFIX = "setup_"  # grade_id of every locked cell the reference runs


def strip_hidden(source: str) -> str:
    return HIDDEN_REGION.sub("", source)


@lru_cache(maxsize=8)
def run_setup(sources: tuple, seed: int) -> dict:
    """Run the setup cells in order, with ``SEED`` forced to ``seed`` once a cell defines it."""
    namespace = {"__name__": "__backprop_ninja_setup__"}
    with contextlib.redirect_stdout(io.StringIO()):
        for i, source in enumerate(sources):
            exec(compile(strip_hidden(source), f"<setup cell {i}>", "exec"), namespace)
            if "SEED" in namespace:
                namespace["SEED"] = seed
    return namespace


def forward_values(namespace: dict) -> dict:
    """Every tensor of the setup, detached: what the backward rules read."""
    return {k: v.detach() for k, v in namespace.items() if isinstance(v, torch.Tensor)}


def autograd_gradients(namespace: dict) -> dict:
    """``<name> -> <name>.grad`` for every tensor whose gradient autograd kept."""
    return {k: v.grad.detach() for k, v in namespace.items()
            if isinstance(v, torch.Tensor) and (v.is_leaf or v.retains_grad) and v.grad is not None}

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


def strip_hidden(source: str) -> str:
    return HIDDEN_REGION.sub("", source)


def _exec(namespace: dict, sources, first_index: int) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        for i, source in enumerate(sources, first_index):
            exec(compile(strip_hidden(source), f"<setup cell {i}>", "exec"), namespace)


@lru_cache(maxsize=4)
def _seed_free_prefix(sources: tuple) -> dict:
    """The cells before the first use of the seed (data loading, dataset): the same for every seed."""
    namespace = {"__name__": "__backprop_ninja_setup__"}
    _exec(namespace, sources, 0)
    return namespace


@lru_cache(maxsize=8)
def run_setup(sources: tuple, seed: int) -> dict:
    """Run the setup cells in order, with ``SEED`` forced to ``seed`` once a cell defines it."""
    defines = next((i for i, s in enumerate(sources) if re.search(r"^SEED\s*=", s, re.M)), None)
    uses = next((i for i, s in enumerate(sources) if "SEED" in s and i != defines), len(sources))
    namespace = dict(_seed_free_prefix(sources[:uses]))  # later cells make new tensors, never change these
    namespace["SEED"] = seed
    _exec(namespace, sources[uses:], uses)
    return namespace


def forward_values(namespace: dict) -> dict:
    """Every tensor of the setup, detached: what the backward rules read."""
    return {k: v.detach() for k, v in namespace.items() if isinstance(v, torch.Tensor)}


def autograd_gradients(namespace: dict) -> dict:
    """``<name> -> <name>.grad`` for every tensor whose gradient autograd kept."""
    return {
        k: v.grad.detach()
        for k, v in namespace.items()
        if isinstance(v, torch.Tensor) and (v.is_leaf or v.retains_grad) and v.grad is not None
    }

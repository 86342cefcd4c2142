"""The grader's own run of a notebook's setup: the forward values and autograd's gradients.

It executes the notebook's locked setup cells (restored from the gradebook, so they are
the course's code, not the student's) in the grader's process, with the seed of this
grading run. The student's kernel ran the very same cells with the same seed.
"""

import contextlib
import io
import os
import re
from functools import lru_cache

import torch

from ..common.setup_cells import SEED_DEFINED, seed_free_cells
from ..data import NAMES_VARIABLE

HIDDEN_REGION = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[ \t]*\n?", re.S | re.M)


def strip_hidden(source: str) -> str:
    return HIDDEN_REGION.sub("", source)


def _exec(namespace: dict, sources, first_index: int) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        for i, source in enumerate(sources, first_index):
            exec(compile(strip_hidden(source), f"<setup cell {i}>", "exec"), namespace)


@lru_cache(maxsize=4)  # keyed on the course's setup cells (locked: restored from the gradebook), not a student's
def _seed_free(sources: tuple, first_index: int, names: str | None) -> dict:
    """What the cells that need no seed (``seed_free_cells``: names.txt, the dataset) bind: the same for every seed and
    every notebook whose cells they are, so computed once per process for names.txt at ``names``."""
    namespace = {"__name__": "__backprop_ninja_setup__"}
    _exec(namespace, sources, first_index)
    return namespace


@lru_cache(maxsize=8)  # (as _seed_free: the course's cells, whose namespace is kept on purpose)
def run_setup(sources: tuple, seed: int) -> dict:
    """Run the setup cells in order, with ``SEED`` forced to ``seed`` once a cell defines it."""
    defines = next((i for i, s in enumerate(sources) if SEED_DEFINED.search(s)), None)
    free = seed_free_cells(sources)
    uses = free.stop if free else next((i for i, s in enumerate(sources) if "SEED" in s and i != defines), len(sources))
    namespace = {"__name__": "__backprop_ninja_setup__"}
    _exec(namespace, sources[: free.start or uses], 0)  # the settings (before the cells that need no seed, if any)
    if free:  # (they read nothing the settings bind)
        namespace.update(_seed_free(sources[free.start : free.stop], free.start, os.environ.get(NAMES_VARIABLE)))
    namespace["SEED"] = seed  # later cells make new tensors, never change what the seed-free ones bound
    _exec(namespace, sources[uses:], uses)
    return namespace


def forward_values(namespace: dict) -> dict:
    """Every tensor of the setup, detached: what the backward rules read."""
    return dict(_views(namespace)[0])


def autograd_gradients(namespace: dict) -> dict:
    """``<name> -> <name>.grad`` for every tensor whose gradient autograd kept."""
    return dict(_views(namespace)[1])


def _views(namespace: dict) -> tuple:
    """(forward values, gradients) of a setup namespace, made once: every check of every student reads them, and
    the namespace (``run_setup``'s, per seed) never changes after its cells ran."""
    if "__views__" not in namespace:
        tensors = {k: v for k, v in namespace.items() if isinstance(v, torch.Tensor)}
        grads = {k: v.grad.detach() for k, v in tensors.items() if (v.is_leaf or v.retains_grad) and v.grad is not None}
        namespace["__views__"] = ({k: v.detach() for k, v in tensors.items()}, grads)
    return namespace["__views__"]

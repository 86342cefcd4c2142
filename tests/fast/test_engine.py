"""The grading engine on its own: the rules table, the tolerance, the one setup definition."""

import re

import nbformat
import pytest
import torch

from autograder.authoring import SOURCE_DIR, shared_cell, stale_setup_cells
from autograder.authoring.submissions import grade_id
from autograder.engine.backward_rules import STEP_BY_NAME, STEPS, local_gradient
from autograder.engine.judge import step_scale
from autograder.engine.reference import SETUP_PREFIX, autograd_gradients, forward_values, run_setup
from autograder.engine.tolerance import RTOL, close

EX1 = nbformat.read(SOURCE_DIR / "ex1_atomic_backward.ipynb", as_version=4)

SETUP = tuple(c.source for c in EX1.cells if grade_id(c).startswith(SETUP_PREFIX))

SEEDS = [2147483647, 1, 7, 42, 1234, 99991]


def reference(seed):
    ns = run_setup(SETUP, seed)
    return forward_values(ns), autograd_gradients(ns)


@pytest.mark.parametrize("seed", SEEDS)
def test_rules_table_agrees_with_autograd(seed):
    forward, grads = reference(seed)
    for step in STEPS:
        mine = local_gradient(step, forward, grads)
        assert close(mine, grads[step.name], step_scale(step, forward, grads)), step.name


@pytest.mark.parametrize("seed", SEEDS)
def test_smallest_known_mistakes_stay_far_outside_the_tolerance(seed):
    """A missing small branch and n for n-1 fail with a wide margin; rounding noise passes."""
    forward, grads = reference(seed)
    for name, wrong in [
        ("counts", local_gradient(STEP_BY_NAME["counts"], forward, grads, drop="counts_sum")),
        ("bndiff2", grads["bndiff2"] * (seed % 5 + 30) / (seed % 5 + 31)),
    ]:
        scale = step_scale(STEP_BY_NAME[name], forward, grads)
        assert not close(wrong, grads[name], scale * 10), name  # fails even at 10 times the tolerance
        noise = grads[name] * (1 + 1e-6 * torch.randn(grads[name].shape))
        assert close(noise, grads[name], scale), name


def test_zero_gradients_accept_rounding_noise_and_zero():
    forward, grads = reference(3)
    for name in ["logit_maxes", "b1"]:  # mathematically zero: autograd returns rounding noise
        scale = step_scale(STEP_BY_NAME[name], forward, grads)
        assert close(torch.zeros_like(grads[name]), grads[name], scale)
        assert not close(torch.full_like(grads[name], 1e-3), grads[name], scale)


def test_every_notebook_copy_of_the_setup_matches_its_definition():
    for path in sorted(SOURCE_DIR.glob("*.ipynb")):
        assert stale_setup_cells(nbformat.read(path, as_version=4)) == [], (
            f"{path.name}: run python -m autograder.authoring"
        )


def test_notebook_self_checks_use_the_graders_tolerance():
    """The notebooks stand alone, so their self-checks carry a copy of the tolerance: it must be the grader's."""
    assert float(re.search(r"^TOLERANCE = ([0-9.e-]+)", shared_cell("self_check_helpers"), re.M).group(1)) == RTOL


def test_same_seed_same_loss():
    assert run_setup(SETUP, 2147483647)["loss"].item() == pytest.approx(3.5571, abs=1e-4)

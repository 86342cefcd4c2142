"""The inputs chosen to expose mistakes do expose them (engine/exposures.py): on the grader's kind of batch and in
the probes, each known mistake lands far above the tolerance and the nearest correct formula far below it.
benchmarks/bench_margins.py prints the same margins over many seeds."""

import nbformat
import pytest

from autograder.authoring import SOURCE_DIR
from autograder.common.naming import SETUP_PREFIX, grade_id
from autograder.engine.exposures import EXPOSURES, margins
from autograder.engine.reference import autograd_gradients, forward_values, run_setup

SETUP = tuple(
    c.source
    for c in nbformat.read(SOURCE_DIR / "ex1_atomic_backward.ipynb", as_version=4).cells
    if grade_id(c).startswith(SETUP_PREFIX)
)
SEEDS = [1, 7, 42, 1234, 99991]


@pytest.mark.parametrize("seed", SEEDS)
def test_each_exposed_mistake_fails_by_far_and_the_right_formula_passes_by_far(seed):
    namespace = run_setup(SETUP, seed)
    forward, grads = forward_values(namespace), autograd_gradients(namespace)
    for exposure in EXPOSURES:
        right, wrong = margins(exposure, forward, grads, seed)
        print(f"{exposure.answer}, {exposure.mistake}: right at {right:.2g}, wrong at {wrong:.3g} times the tolerance")
        assert right < 0.01, exposure  # a hundred times below the tolerance
        assert wrong > 50, exposure  # fifty times above it


def test_neuron_0_has_the_epsilon_for_batch_variance():
    for seed in SEEDS[:2]:
        bnvar = forward_values(run_setup(SETUP, seed))["bnvar"]
        assert abs(bnvar[0, 0].item() - 1e-5) < 1e-9
        assert bnvar[0, 1:].min() > 100 * 1e-5  # the other neurons: where the epsilon does not show

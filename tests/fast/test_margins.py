"""The inputs chosen to expose mistakes do expose them (engine/exposures.py): on the grader's kind of batch and in
the probes, each known mistake lands far above the tolerance and the nearest correct formula far below it.
benchmarks/bench_margins.py prints the same margins over many seeds."""

import nbformat
import pytest

from autograder.authoring import SOURCE_DIR
from autograder.common.naming import SETUP_PREFIX, grade_id
from autograder.engine.exposures import EXPOSURES, margins
from autograder.engine.fused_rules import FUSED_STEP_BY_NAME
from autograder.engine.reference import autograd_gradients, forward_values, run_setup
from autograder.engine.tolerance import RTOL, max_difference, step_scale

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


@pytest.mark.parametrize("seed", SEEDS)
def test_a_batchnorm_whose_variance_is_the_mean_square_less_the_squared_mean_passes_by_far(seed):
    """A correct dhprebn that computes the batch variance again as E[x**2] - E[x]**2, in float32. Neuron 0's batch
    mean is as small as its spread (setup_batch): with a mean of b1[0] alone (about 0.1) the squares cancelled, and
    this form lost its 4 points on about one grading seed in five."""
    namespace = run_setup(SETUP, seed)
    forward, grads = forward_values(namespace), autograd_gradients(namespace)
    x, dy, gain = forward["hprebn"], grads["hpreact"], forward["bngain"]
    n, mean = x.shape[0], x.mean(0, keepdim=True)
    inv_std = (((x**2).mean(0, keepdim=True) - mean**2) * n / (n - 1) + 1e-5) ** -0.5
    xhat = (x - mean) * inv_std
    dhprebn = gain * inv_std / n * (n * dy - dy.sum(0) - n / (n - 1) * xhat * (dy * xhat).sum(0))
    step = FUSED_STEP_BY_NAME["hprebn"]
    scale = step_scale(step, forward, {u: grads[u] for u in step.upstream})
    error = max_difference(dhprebn, grads["hprebn"]) / (RTOL * scale)
    print(f"seed {seed}: the mean-square variance at {error:.2g} times the tolerance")
    assert error < 0.1

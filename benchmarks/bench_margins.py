"""How far each mistake that the grader's chosen inputs expose lands from the tolerance, over many seeds.

For every row of engine/exposures.py (Exercise 1's setup) and engine/operators/exposures.py (Exercise 5's): the
largest error of the nearest correct formula and the smallest error of the mistake, in units of the tolerance (RTOL
times the scale the grader judges at), over N grading seeds. Then, for Exercise 5, every known mistake of its table
on the grader's batch: the nearest ones (GELU's tanh approximation, LayerNorm's n/(n-1)) are not hidden, but close.
Last, Exercise 3's fused steps (dhprebn, dhprebn_biased): each known mistake by its value, in the rule probe (the
upstream gradient pinned to the probe's own random tensor for that seed), and the larger of the two, which is what
decides whether the mistake loses its points; Bessel's n/(n-1) is the thinnest (docs/design/engine.md, 'The
tolerance'). About 0.6 s a seed for this part.

    .venv/bin/python benchmarks/bench_margins.py [N]    (default 100 seeds; about a second for ten, per notebook)
"""

import argparse
import os
import time

import nbformat

from autograder.authoring import SOURCE_DIR
from autograder.common.naming import SETUP_PREFIX, grade_id
from autograder.data import EMBEDDED_NAMES, NAMES_VARIABLE
from autograder.engine.backward_rules import local_gradient
from autograder.engine.exposures import EXPOSURES, margins
from autograder.engine.fused_rules import FUSED_STEPS
from autograder.engine.operators import NOTEBOOK, OPERATOR_STEPS
from autograder.engine.operators.exposures import EXPOSURES as OPERATOR_EXPOSURES
from autograder.engine.probes.rerun import pin_value
from autograder.engine.reference import autograd_gradients, forward_values, run_setup
from autograder.engine.tolerance import RTOL, max_difference, step_scale


def worlds(notebook: str, seeds: int):
    """(seed, forward values, autograd's gradients) of the notebook's setup, for each grading seed."""
    cells = nbformat.read(SOURCE_DIR / f"{notebook}.ipynb", as_version=4).cells
    setup = tuple(c.source for c in cells if grade_id(c).startswith(SETUP_PREFIX))
    for seed in range(seeds):
        namespace = run_setup(setup, seed)
        yield seed, forward_values(namespace), autograd_gradients(namespace)


def exposures(notebook: str, rows: list, seeds: int) -> None:
    found = [[] for _ in rows]
    for seed, forward, grads in worlds(notebook, seeds):
        for margins_of, exposure in zip(found, rows):
            margins_of.append(margins(exposure, forward, grads, seed))
    for margins_of, e in zip(found, rows):
        right, wrong = max(r for r, _ in margins_of), min(w for _, w in margins_of)
        print(f"{e.answer:22} {e.mistake:36} {e.exposed_by:48} {right:10.2g} {wrong:10.3g}")


def table_mistakes(seeds: int) -> None:
    """Exercise 5: each step's rule and each of its known mistakes against autograd, on the grader's batch."""
    worst = {}
    for _, forward, grads in worlds(NOTEBOOK, seeds):
        for step in OPERATOR_STEPS:
            upstream = {u: grads[u] for u in step.upstream}
            reference, scale = grads[step.name], RTOL * step_scale(step, forward, upstream)
            rule = max_difference(local_gradient(step, forward, upstream), reference) / scale
            worst[(step.name, "the rule")] = max(worst.get((step.name, "the rule"), 0.0), rule)
            for reason, variants in step.mistakes.items():
                for variant in variants if isinstance(variants, tuple) else (variants,):
                    error = max_difference(variant(forward, upstream).reshape(reference.shape), reference) / scale
                    key = (step.name, str(reason)[:70])
                    worst[key] = min(worst.get(key, float("inf")), error)
    for (name, what), value in sorted(worst.items(), key=lambda item: item[1]):
        print(f"d{name:10} {what:72} {value:10.3g}")


def fused_mistakes(seeds: int) -> None:
    """Exercise 3's fused steps: each known mistake by its value on the grader's batch, in the rule probe (the step's
    upstream gradient pinned to the probe's random tensor), and the larger of the two, which is what must stay outside
    the tolerance for the mistake to lose its points (docs/design/engine.md, 'The tolerance')."""
    worst = {}
    for seed, forward, grads in worlds("ex3_batchnorm_backward", seeds):
        for step in FUSED_STEPS:
            if not step.upstream:
                continue  # dlogits: nothing to pin (Exercise 2's rows hold it by value)
            upstream = {u: grads[u] for u in step.upstream}
            pins = {u: pin_value(seed, f"d{step.name}", f"d{u}", tuple(forward[u].shape)) for u in step.upstream}
            reference, probed = grads[step.name], local_gradient(step, forward, pins)
            scales = RTOL * step_scale(step, forward, upstream), RTOL * step_scale(step, forward, pins)
            for reason, variants in step.mistakes.items():
                for variant in variants if isinstance(variants, tuple) else (variants,):
                    value = max_difference(variant(forward, upstream).reshape(reference.shape), reference) / scales[0]
                    probe = max_difference(variant(forward, pins).reshape(probed.shape), probed) / scales[1]
                    key = (step.name, str(reason)[:60])
                    old = worst.get(key, (float("inf"),) * 3)
                    worst[key] = (min(old[0], value), min(old[1], probe), min(old[2], max(value, probe)))
    for (name, what), (value, probe, both) in sorted(worst.items(), key=lambda item: item[1][2]):
        print(f"d{name:14} {what:62} {value:8.3g} {probe:8.3g} {both:8.3g}")


def main(seeds: int) -> None:
    os.environ.setdefault(NAMES_VARIABLE, str(EMBEDDED_NAMES))
    start = time.monotonic()
    print(f"errors in units of the tolerance (RTOL x scale), over {seeds} seeds")
    print(f"{'answer':22} {'mistake':36} {'exposed by':48} {'right, max':>10} {'wrong, min':>10}")
    exposures("ex1_atomic_backward", EXPOSURES, seeds)
    exposures(NOTEBOOK, OPERATOR_EXPOSURES, seeds)
    print("\nExercise 5's table on the grader's batch: the rule's largest error, each mistake's smallest")
    table_mistakes(seeds)
    print("\nExercise 3's fused steps: each mistake's smallest error by value, in the probe, and of the larger of both")
    fused_mistakes(seeds)
    print(f"\n{time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds", nargs="?", type=int, default=100, help="how many grading seeds (default 100)")
    main(parser.parse_args().seeds)

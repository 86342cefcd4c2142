"""How far each mistake that the grader's chosen inputs expose lands from the tolerance, over many seeds.

For every row of engine/exposures.py: the largest error of the nearest correct formula and the smallest error of
the mistake, in units of the tolerance (RTOL times the scale the grader judges at), over N grading seeds.

    .venv/bin/python benchmarks/bench_margins.py [N]    (default 100 seeds; about a second for ten)
"""

import os
import sys
import time

import nbformat

from autograder.authoring import SOURCE_DIR
from autograder.common.naming import grade_id
from autograder.data import EMBEDDED_NAMES, NAMES_VARIABLE
from autograder.engine.exposures import EXPOSURES, margins
from autograder.engine.reference import SETUP_PREFIX, autograd_gradients, forward_values, run_setup


def main(seeds: int) -> None:
    os.environ.setdefault(NAMES_VARIABLE, str(EMBEDDED_NAMES))
    notebook = nbformat.read(SOURCE_DIR / "ex1_atomic_backward.ipynb", as_version=4)
    setup = tuple(c.source for c in notebook.cells if grade_id(c).startswith(SETUP_PREFIX))
    found = [[] for _ in EXPOSURES]
    start = time.monotonic()
    for seed in range(seeds):
        namespace = run_setup(setup, seed)
        forward, grads = forward_values(namespace), autograd_gradients(namespace)
        for rows, exposure in zip(found, EXPOSURES):
            rows.append(margins(exposure, forward, grads, seed))
    print(f"{seeds} seeds in {time.monotonic() - start:.0f} s; errors in units of the tolerance (RTOL x scale)")
    print(f"{'answer':22} {'mistake':36} {'exposed by':44} {'right, max':>10} {'wrong, min':>10}")
    for rows, e in zip(found, EXPOSURES):
        right, wrong = max(r for r, _ in rows), min(w for _, w in rows)
        print(f"{e.answer:22} {e.mistake:36} {e.exposed_by:44} {right:10.2g} {wrong:10.3g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)

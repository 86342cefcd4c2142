"""Exercise 4's full run twice from the same start: the course's own gradients, then autograd's.

Prints, for each, the final train and val loss after BatchNorm calibration, and how far the two runs drifted
apart (the largest difference of a step's loss, and of a trained parameter). Answers the course guide's question:
is the manual run's val loss identical to autograd's, or only close?

    python benchmarks/manual_vs_autograd.py [--steps 200000]
"""

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.authoring import SOURCE_DIR  # noqa: E402
from autograder.authoring.submissions import grade_id  # noqa: E402
from autograder.common.naming import SETUP_PREFIX  # noqa: E402
from autograder.data import EMBEDDED_NAMES, NAMES_VARIABLE  # noqa: E402
from autograder.engine.reference import run_setup  # noqa: E402
from autograder.engine.training import network  # noqa: E402


def run(initial, X, Y, seed, steps, batch_size, manual):
    parameters = [p.detach().clone().requires_grad_(not manual) for p in initial]
    losses = []
    with network.one_thread():
        for ix, lr in network.minibatches(X, seed, steps, batch_size):
            loss, cache = network.forward(parameters, X[ix], Y[ix])
            if manual:
                grads = network.manual_backward(parameters, X[ix], Y[ix], cache)
            else:
                grads = torch.autograd.grad(loss, parameters)
            with torch.no_grad():
                for p, grad in zip(parameters, grads):
                    p += -lr * grad
            losses.append(loss.item())
    return [p.detach() for p in parameters], torch.tensor(losses, dtype=torch.float64)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200_000)
    steps = parser.parse_args().steps
    os.environ.setdefault(NAMES_VARIABLE, str(EMBEDDED_NAMES))
    nb = nbformat.read(SOURCE_DIR / "ex4_manual_training.ipynb", as_version=4)
    setup = run_setup(tuple(c.source for c in nb.cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647)
    X, Y = setup["Xtr"], setup["Ytr"]
    results = {}
    for name, manual in (("manual", True), ("autograd", False)):
        start = time.perf_counter()
        parameters, losses = run(setup["initial_parameters"], X, Y, setup["SEED"], steps, setup["batch_size"], manual)
        bnmean, bnvar = network.calibrate(parameters, X)
        train = network.split_loss(parameters, bnmean, bnvar, X, Y)
        val = network.split_loss(parameters, bnmean, bnvar, setup["Xdev"], setup["Ydev"])
        results[name] = parameters, losses, val
        print(f"{name:8s} train {train:.6f} val {val:.6f} ({time.perf_counter() - start:.0f} s)", flush=True)
    (pm, lm, vm), (pa, la, va) = results["manual"], results["autograd"]
    first = next((i for i in range(len(lm)) if lm[i] != la[i]), None)
    print(
        f"val difference {abs(vm - va):.2e}; first step whose loss differs: {first}; largest loss difference "
        f"{(lm - la).abs().max().item():.2e}; largest parameter difference "
        f"{max((a - b).abs().max().item() for a, b in zip(pm, pa)):.2e}"
    )


if __name__ == "__main__":
    main()

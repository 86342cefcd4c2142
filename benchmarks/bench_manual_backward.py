"""One training step of Exercise 4: the manual backward pass against autograd, and against the lecture's loop.

Measured side by side in one run, on the same model (the notebook's setup, n_hidden = 200) and
the same minibatches. Every variant trains its own copy of the parameters from the same start;
the variants take turns, round after round, so that a busy machine slows them all alike, and
each figure is the median over the rounds. The three runs must produce the same losses (the
last line checks it), so the comparison is between equal computations.

    python benchmarks/bench_manual_backward.py [--steps 200] [--rounds 15] [--threads 1]

Variants (each: sample the batch, forward, backward, update with lr 0.1):
  manual    the course's solution (autograder/engine/training/network.py: manual_backward): fused cross-entropy and
            BatchNorm, dC with index_add_, forward under torch.no_grad()
  autograd  the same forward with autograd recording it, then loss.backward()
  lecture   the lecture's manual backward, with its Python double loop over Xb for dC
Goal: manual / autograd <= 1.0.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import nbformat
import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.authoring.submissions import grade_id  # noqa: E402
from autograder.common.naming import SETUP_PREFIX  # noqa: E402
from autograder.data import NAMES_VARIABLE, names_path  # noqa: E402
from autograder.engine.reference import run_setup  # noqa: E402
from autograder.engine.training.network import forward, manual_backward  # noqa: E402

NOTEBOOK = REPO / "source" / "backprop_ninja" / "ex4_manual_training.ipynb"
SEED = 2147483647
LR = 0.1


def lecture_backward(parameters, Xb, Yb, cache):
    """The lecture's Exercise 4 backward pass, as written there (dC by a Python double loop)."""
    C, W1, b1, W2, b2, bngain, bnbias = parameters
    n = Xb.shape[0]
    emb, embcat, bnvar_inv, bnraw, h, logits = (
        cache[k] for k in ("emb", "embcat", "bnvar_inv", "bnraw", "h", "logits")
    )
    dlogits = F.softmax(logits, 1)
    dlogits[range(n), Yb] -= 1
    dlogits /= n
    dh = dlogits @ W2.T
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(0)
    dhpreact = (1.0 - h**2) * dh
    dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
    dbnbias = dhpreact.sum(0, keepdim=True)
    dhprebn = (
        bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))
    )
    dembcat = dhprebn @ W1.T
    dW1 = embcat.T @ dhprebn
    db1 = dhprebn.sum(0)
    demb = dembcat.view(emb.shape)
    dC = torch.zeros_like(C)
    for k in range(Xb.shape[0]):
        for j in range(Xb.shape[1]):
            ix = Xb[k, j]
            dC[ix] += demb[k, j]
    return [dC, dW1, db1, dW2, db2, dbngain, dbnbias]


def manual_step(parameters, Xb, Yb, backward=manual_backward):
    with torch.no_grad():
        loss, cache = forward(parameters, Xb, Yb)
        for p, grad in zip(parameters, backward(parameters, Xb, Yb, cache)):
            p.add_(grad, alpha=-LR)
    return loss


def autograd_step(parameters, Xb, Yb):
    loss, _ = forward(parameters, Xb, Yb)
    for p in parameters:
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in parameters:
            p.add_(p.grad, alpha=-LR)
    return loss


VARIANTS = {
    "manual": manual_step,
    "autograd": autograd_step,
    "lecture": lambda parameters, Xb, Yb: manual_step(parameters, Xb, Yb, lecture_backward),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="steps per variant in each round")
    parser.add_argument("--rounds", type=int, default=15, help="rounds; each figure is the median over them")
    parser.add_argument(
        "--threads",
        type=int,
        default=torch.get_num_threads(),
        help="torch threads (default: torch's own choice, %(default)s here)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault(NAMES_VARIABLE, names_path())  # the setup cells read it

    nb = nbformat.read(NOTEBOOK, as_version=4)
    ns = run_setup(tuple(c.source for c in nb.cells if grade_id(c).startswith(SETUP_PREFIX)), SEED)
    Xtr, Ytr, batch_size = ns["Xtr"], ns["Ytr"], ns["batch_size"]
    generator = torch.Generator().manual_seed(SEED + 1)
    total = args.steps * args.rounds
    batches = [torch.randint(0, Xtr.shape[0], (batch_size,), generator=generator) for _ in range(total + 20)]
    batches = [(Xtr[ix], Ytr[ix]) for ix in batches]

    state = {}
    for name in VARIANTS:
        state[name] = {
            "parameters": [p.detach().clone().requires_grad_(name == "autograd") for p in ns["initial_parameters"]],
            "losses": [],
            "times": [],
        }
    for name, step in VARIANTS.items():  # warm-up: 20 steps each, not timed
        for Xb, Yb in batches[:20]:
            state[name]["losses"].append(step(state[name]["parameters"], Xb, Yb).item())
    order = list(VARIANTS)
    for r in range(args.rounds):
        chunk = batches[20 + r * args.steps : 20 + (r + 1) * args.steps]
        for name in order[r % 3 :] + order[: r % 3]:  # a different variant goes first in each round
            step, s = VARIANTS[name], state[name]
            start = time.perf_counter()
            for Xb, Yb in chunk:
                s["losses"].append(step(s["parameters"], Xb, Yb).detach())
            s["times"].append((time.perf_counter() - start) / len(chunk) * 1000)

    print(
        f"One training step of Exercise 4 (n_hidden {ns['n_hidden']}, batch {batch_size}), torch {torch.__version__}, "
        f"{args.threads} thread{'s' if args.threads > 1 else ''}, {args.rounds} rounds of {args.steps} steps; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    median = {name: statistics.median(s["times"]) for name, s in state.items()}
    for name, s in state.items():
        print(f"  {name:9s} median {median[name]:6.3f} ms/step   best round {min(s['times']):6.3f} ms/step")
    print(f"  manual / autograd = {median['manual'] / median['autograd']:.2f}   (goal <= 1.0)")
    print(
        f"  manual / lecture  = {median['manual'] / median['lecture']:.2f}   "
        f"(the lecture's double loop makes a step {median['lecture'] / median['manual']:.1f} times slower)"
    )
    print(
        f"  200,000 steps: manual {median['manual'] * 200:.0f} s, autograd {median['autograd'] * 200:.0f} s, "
        f"lecture {median['lecture'] * 200:.0f} s (extrapolated)"
    )
    losses = {name: torch.tensor([float(x) for x in s["losses"]]) for name, s in state.items()}
    drift = max((losses[name] - losses["autograd"]).abs().max().item() for name in ("manual", "lecture"))
    print(f"  same run: the losses of the three variants agree within {drift:.1g} over {total + 20} steps")


if __name__ == "__main__":
    main()

"""The small experiments behind course/why.md: where backpropagation leaks, measured.

    python course/why_demos.py           print the tables that why.md shows, and save the plots beside this file
    python course/why_demos.py --show    show the plots in windows instead of saving them

It needs only PyTorch and matplotlib, like the notebooks, and every random draw is seeded, so the
tables come out the same on every run. Each backward step here is written by hand, with the same
rules as in the exercises; the tests compare them with autograd.
"""

import argparse
import math
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent


def table(header, rows) -> str:
    """Rows of numbers under a header, in aligned columns."""
    lines = [header, *rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(line, widths)).rstrip() for line in lines)


# ------------------------------------------------------------------------------------------------ tanh


def tanh_local_gradient(x: torch.Tensor) -> torch.Tensor:
    """The factor tanh puts on every gradient that flows through it: 1 - tanh(x)**2 (dhpreact = (1 - h**2) * dh)."""
    return 1 - torch.tanh(x) ** 2


def tanh_saturation(scales=(0.2, 1.0, 5 / 3, 30**0.5), examples=1000, fan_in=30, neurons=200, seed=0):
    """A hidden layer like the course's, without BatchNorm: inputs of 30 numbers, 200 tanh neurons.

    W1 = s * randn(30, 200) / sqrt(30) for each scale s: 5/3 is the course's, sqrt(30) is plain randn with no
    scaling at all. For each, the share of outputs with |h| > 0.99 and the mean of 1 - h**2.
    """
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(examples, fan_in, generator=g)
    direction = torch.randn(fan_in, neurons, generator=g)
    results = []
    for scale in scales:
        h = torch.tanh(x @ (direction * scale / fan_in**0.5))
        saturated = h.abs() > 0.99
        results.append(
            {"scale": scale, "saturated": saturated.float().mean().item(), "local_gradient": (1 - h**2).mean().item()}
        )
    return results


def tanh_table() -> str:
    rows = [[f"{r['scale']:.2f}", f"{r['saturated']:.0%}", f"{r['local_gradient']:.2f}"] for r in tanh_saturation()]
    return table(["W1 scale s", "outputs with |h| > 0.99", "mean of 1 - h**2"], rows)


# ------------------------------------------------------------------------------------------------ ReLU


def dead_relus(shifts=(0.0, -2.0, -4.0, -6.0), examples=1000, fan_in=30, neurons=200, seed=0):
    """ReLU neurons after their biases were pushed down by `shift` (as one large update can do).

    A neuron whose pre-activation is negative for every example gets dhpreact = (hpreact > 0) * dh = 0 on
    every example, so its weights and bias never change again. Returns, per shift, the share of such neurons.
    """
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(examples, fan_in, generator=g)
    W = torch.randn(fan_in, neurons, generator=g) * (2 / fan_in) ** 0.5
    b = torch.randn(neurons, generator=g) * 0.1
    dh = torch.randn(examples, neurons, generator=g)  # any upstream gradient
    results = []
    for shift in shifts:
        hpreact = x @ W + b + shift
        dhpreact = (hpreact > 0).float() * dh
        db = dhpreact.sum(0)
        dead = (dhpreact == 0).all(0)
        results.append({"shift": shift, "dead": dead.float().mean().item(), "db_of_dead": db[dead].abs().sum().item()})
    return results


def relu_table() -> str:
    rows = [[f"{r['shift']:+.0f}", f"{r['dead']:.0%}", f"{r['db_of_dead']:.0f}"] for r in dead_relus()]
    return table(["bias shift", "dead neurons", "their gradient, summed"], rows)


# ------------------------------------------------------------------------------------------------ RNN


def rnn_gradient_norms(scale: float, nonlinearity: bool, steps=50, hidden=50, seed=0):
    """The norm of dL/dh_t for t = T, T-1, ..., 0 in a recurrent net h_t = f(W h_{t-1} + x_t), L = v . h_T.

    Written by hand, one backward step per time step: dpre_t = f'(pre_t) * dh_t, then dh_{t-1} = dpre_t @ W
    (h_t is a row vector here, h_t = f(h_{t-1} @ W.T + x_t)). The same W multiplies the gradient at every step.
    """
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(hidden, hidden, generator=g) * scale / hidden**0.5
    xs = torch.randn(steps, hidden, generator=g)
    v = torch.randn(hidden, generator=g)
    h, pres = torch.zeros(hidden), []
    for x in xs:
        pre = h @ W.T + x
        pres.append(pre)
        h = torch.tanh(pre) if nonlinearity else pre
    dh, norms = v.clone(), [v.norm().item()]
    for pre in reversed(pres):
        dpre = tanh_local_gradient(pre) * dh if nonlinearity else dh
        dh = dpre @ W
        norms.append(dh.norm().item())
    return norms  # norms[k]: k steps back from the end


def rnn_table(back=(1, 10, 25, 50)) -> str:
    rows = []
    for nonlinearity in (False, True):
        for scale in (0.5, 1.0, 2.0):
            norms = rnn_gradient_norms(scale, nonlinearity)
            name = "tanh" if nonlinearity else "linear"
            rows.append([name, f"{scale:g}", *(f"{norms[k] / norms[0]:.1e}" for k in back)])
    return table(["RNN", "W scale", *(f"{k} step{'s' if k > 1 else ''} back" for k in back)], rows)


# ------------------------------------------------------------------------------------------------ clipping


def clipping_gradients(errors=(0.5, -1.2, 3.0, -10.0), limit=1.0):
    """d loss / d prediction for one example with error e = prediction - target, three ways:

    squared:       loss 0.5 * e**2                      gradient e
    loss clipped:  loss min(0.5 * e**2, 0.5 * limit**2)  gradient e inside the limit, 0 outside: the bug
    grad clipped:  the Huber loss                        gradient e clipped to [-limit, limit]
    """
    results = []
    for e in errors:
        error = torch.tensor(e, dtype=torch.float64)
        squared = error
        loss_clipped = error if 0.5 * e**2 < 0.5 * limit**2 else torch.zeros(())
        grad_clipped = error.clamp(-limit, limit)
        results.append(
            {
                "error": e,
                "squared": squared.item(),
                "loss_clipped": loss_clipped.item(),
                "grad_clipped": grad_clipped.item(),
            }
        )
    return results


def clipping_table() -> str:
    number = lambda x: f"{x:+g}" if x else "0"
    rows = [[number(r[k]) for k in ("error", "squared", "loss_clipped", "grad_clipped")] for r in clipping_gradients()]
    return table(["error e", "squared loss", "loss clipped at 0.5", "gradient clipped at 1 (Huber)"], rows)


# ------------------------------------------------------------------------------------------------ plots


def saturation_point(local_gradient=0.01) -> float:
    """The |x| beyond which tanh lets through less than `local_gradient` of the gradient: 1 - tanh(x)**2 = 0.01."""
    return math.atanh(math.sqrt(1 - local_gradient))


def plots():
    """The three figures of why.md, as (file name, matplotlib figure)."""
    import matplotlib.pyplot as plt

    figures = []
    x = torch.linspace(-5, 5, 401)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(x, torch.tanh(x), label="tanh(x)")
    ax.plot(x, tanh_local_gradient(x), label="1 - tanh(x)**2, the local gradient")
    edge = saturation_point()
    for side in (-edge, edge):
        ax.axvline(side, color="grey", linestyle="--", linewidth=1)
    ax.set_title(f"beyond |x| = {edge:.2f}, tanh passes on less than 1 % of the gradient", fontsize=9)
    ax.set_xlabel("pre-activation x")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    figures.append(("why_tanh_saturation.png", fig))

    fig, ax = plt.subplots(figsize=(6, 3.2))
    for nonlinearity, style in ((False, "-"), (True, ":")):
        for scale in (0.5, 1.0, 2.0):
            norms = rnn_gradient_norms(scale, nonlinearity)
            label = f"{'tanh' if nonlinearity else 'linear'}, W scale {scale:g}"
            ax.plot([n / norms[0] for n in norms], style, label=label)
    ax.set_yscale("log")
    ax.set_xlabel("time steps back from the loss")
    ax.set_ylabel("gradient norm (relative)")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    figures.append(("why_rnn_gradients.png", fig))

    e = torch.linspace(-4, 4, 401)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(e, e, label="squared loss: e")
    ax.plot(e, torch.where(e.abs() < 1, e, torch.zeros_like(e)), label="loss clipped: 0 outside")
    ax.plot(e, e.clamp(-1, 1), "--", label="gradient clipped (Huber)")
    ax.set_xlabel("error e = prediction - target")
    ax.set_ylabel("gradient of the loss")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    figures.append(("why_clipping.png", fig))
    return figures


def report() -> str:
    return "\n\n".join([tanh_table(), relu_table(), rnn_table(), clipping_table()])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="show the plots instead of saving them")
    parser.add_argument("--out", type=Path, default=HERE, help="where to save the plots (default: beside this file)")
    args = parser.parse_args(argv)
    print(report())
    import matplotlib.pyplot as plt

    for name, fig in plots():
        if not args.show:
            fig.savefig(args.out / name, dpi=120, bbox_inches="tight")
            print(f"saved {args.out / name}")
    if args.show:
        plt.show()


if __name__ == "__main__":
    main()

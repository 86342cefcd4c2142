"""course/why.md and its experiments (course/why_demos.py): the page shows what the script computes, the
script's hand-written backward steps agree with autograd, and it draws the figures the page shows."""

import contextlib
import importlib.util
import io
import re

import matplotlib
import pytest
import torch
from support.course import REPO

matplotlib.use("Agg")

WHY = REPO / "course" / "why.md"
spec = importlib.util.spec_from_file_location("why_demos", REPO / "course" / "why_demos.py")
why_demos = importlib.util.module_from_spec(spec)
spec.loader.exec_module(why_demos)


@pytest.mark.parametrize("table", ["tanh_table", "relu_table", "rnn_table", "clipping_table"])
def test_the_page_shows_the_tables_the_script_prints(table):
    assert f"```text\n{getattr(why_demos, table)()}\n```" in WHY.read_text(), f"run python course/why_demos.py: {table}"


def test_the_page_shows_the_figures_the_script_draws(tmp_path):
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        why_demos.main(["--out", str(tmp_path)])
    assert printed.getvalue().startswith(why_demos.report())
    drawn = sorted(p.name for p in tmp_path.glob("*.png"))
    assert drawn == sorted(re.findall(r"\]\((why_\w+\.png)\)", WHY.read_text()))
    for name in drawn:
        assert (tmp_path / name).stat().st_size > 10_000 and (REPO / "course" / name).exists(), name


@pytest.mark.parametrize("nonlinearity", [False, True])
def test_rnn_backward_by_hand_is_autograds(nonlinearity):
    steps, hidden = 20, 8
    norms = why_demos.rnn_gradient_norms(1.5, nonlinearity, steps=steps, hidden=hidden, seed=3)
    g = torch.Generator().manual_seed(3)  # the same draws, in the same order, as rnn_gradient_norms
    W = torch.randn(hidden, hidden, generator=g) * 1.5 / hidden**0.5
    xs = torch.randn(steps, hidden, generator=g)
    v = torch.randn(hidden, generator=g)
    hs = [torch.zeros(hidden, requires_grad=True)]
    for x in xs:
        pre = hs[-1] @ W.T + x
        hs.append(torch.tanh(pre) if nonlinearity else pre)
        hs[-1].retain_grad()
    (hs[-1] @ v).backward()
    for k in range(steps + 1):
        assert norms[k] == pytest.approx(hs[steps - k].grad.norm().item(), rel=1e-5), k


def test_the_leaks_are_what_the_page_says():
    assert 1 - torch.tanh(torch.tensor(why_demos.saturation_point(), dtype=torch.float64)) ** 2 == pytest.approx(0.01)
    x = torch.linspace(-4, 4, 9, requires_grad=True)
    torch.tanh(x).sum().backward()
    assert torch.allclose(why_demos.tanh_local_gradient(x.detach()), x.grad, rtol=0, atol=1e-6)  # float32 rounding
    saturation = [r["saturated"] for r in why_demos.tanh_saturation()]
    assert saturation == sorted(saturation) and saturation[-1] > 0.5
    dead = why_demos.dead_relus()
    assert dead[0]["dead"] == 0 and dead[-1]["dead"] > 0.9 and all(r["db_of_dead"] == 0 for r in dead)
    for r in why_demos.clipping_gradients():  # clipping the loss zeroes exactly the large errors' gradients
        assert (r["loss_clipped"] == 0) == (abs(r["error"]) >= 1) and abs(r["grad_clipped"]) <= 1

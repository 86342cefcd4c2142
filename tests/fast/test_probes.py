"""Rule probes, the pure parts (engine/probes.py): which code a probe re-runs, and the copy it runs in."""

import ast
import time

import pytest
import torch

from autograder import in_kernel
from autograder.engine.probes import AnswerCode, NoAnswerCode, answer_code, pinned_inputs, probe_namespace

SETUP = "logits = h @ W2 + b2\nlogit_maxes = logits.max(1, keepdim=True).values\nnorm_logits = logits - logit_maxes"


def code_of(cells, answer, pins) -> list:
    return [ast.unparse(s) for s in answer_code(cells, answer, pins).statements]


def test_the_answer_code_is_the_same_in_every_layout():
    one_cell_per_gradient = [
        SETUP,
        "dnorm_logits = counts * dcounts",
        "dlogit_maxes = -dnorm_logits.sum(1, keepdim=True)",
        "dlogits = dnorm_logits.clone()\ndlogits += onehot * dlogit_maxes",
    ]
    split = [SETUP, "dnorm_logits = counts * dcounts", "dlogits = dnorm_logits.clone()"]
    split += ["dlogit_maxes = -dnorm_logits.sum(1, keepdim=True)", "dlogits += onehot * dlogit_maxes"]
    one_cell = [SETUP, "\n".join(one_cell_per_gradient[1:]) + "\ndh = dlogits @ W2.T"]
    pins = ("dnorm_logits", "dlogit_maxes")
    expected = ["dlogits = dnorm_logits.clone()", "dlogits += onehot * dlogit_maxes"]
    for cells in (one_cell_per_gradient, split, one_cell):
        assert code_of(cells, "dlogits", pins) == expected
        code = answer_code(cells, "dlogits", pins)
        assert code.pins_read == set(pins) and code.further_up == () and "onehot" in code.reads


def test_helpers_computed_from_the_pins_are_run_again_and_gradients_from_further_up_are_not():
    cells = ["dhpreact = hpreact.grad.clone()", "dbnbias = dhpreact.sum(0, keepdim=True)"]
    cells.append("t = n * dhpreact\ndhprebn = s * (t - dbnbias) + 0 * dh")
    code = answer_code(cells, "dhprebn", ("dhpreact",))
    assert [ast.unparse(s) for s in code.statements] == [
        "dbnbias = dhpreact.sum(0, keepdim=True)",
        "t = n * dhpreact",
        "dhprebn = s * (t - dbnbias) + 0 * dh",
    ]
    assert code.further_up == ("dh",)  # computed before the pin, from further up the graph


def test_a_forward_value_is_probed_apart_from_the_chunked_forward_pass():
    """The cell that computes the pinned input (the setup) is not re-run: a copy of its result stays a copy."""
    setup = "logits = h @ W2 + b2\nprobs = logits.softmax(1)\nloss = -probs.log()[range(n), Yb].mean()"
    copied = answer_code([setup, "loss_fast = loss.clone()"], "loss_fast", ("logits",))
    assert [ast.unparse(s) for s in copied.statements] == ["loss_fast = loss.clone()"]
    assert "loss" in copied.reads and not copied.pins_read
    helper = answer_code([setup, "z = logits - 1", "loss_fast = F.cross_entropy(z + 1, Yb)"], "loss_fast", ("logits",))
    assert len(helper.statements) == 2 and helper.pins_read == {"logits"}


def test_no_assignment_of_the_answer_is_said():
    with pytest.raises(NoAnswerCode, match="no statement `dh = ...`"):
        answer_code([SETUP, "globals()['dh'] = 1"], "dh", ("dlogits",))


def test_pins_take_the_shape_the_student_used_and_keep_exact_zeros():
    namespace = {"logit_maxes": torch.ones(4, 1), "dlogit_maxes": torch.zeros(4, 1), "bnmeani": torch.ones(1, 3)}
    namespace["dbnmeani"] = torch.ones(3)  # the lecture's (3,) for a (1, 3) tensor
    pins = pinned_inputs(namespace, 7, "dX", ("dlogit_maxes", "dbnmeani"))
    assert not pins["dlogit_maxes"].any() and pins["dlogit_maxes"].shape == (4, 1)
    assert pins["dbnmeani"].shape == (3,) and pins["dbnmeani"].any()


def test_the_probe_changes_nothing_in_the_kernel():
    W2, generator = torch.ones(2, 2), torch.Generator().manual_seed(1)
    namespace = {"W2": W2, "parameters": [W2], "g": generator}
    code = AnswerCode((), frozenset({"W2", "parameters", "g"}), frozenset(), ())
    apart = probe_namespace(namespace, code, {"dW2": torch.zeros(2, 2)})
    exec("W2 += 1\nparameters[0] += 1\ntorch.randn(3, generator=g)", {**apart, "torch": torch})
    assert torch.equal(W2, torch.ones(2, 2)) and torch.equal(
        torch.randn(1, generator=generator), torch.randn(1, generator=torch.Generator().manual_seed(1))
    )


def test_a_probe_that_runs_too_long_is_stopped(monkeypatch):
    monkeypatch.setattr(in_kernel, "TIME_LIMIT", 0.2)
    start = time.monotonic()
    with pytest.raises(in_kernel.ProbeTimeLimit):
        with in_kernel._apart_from_the_kernel():
            time.sleep(5)
    assert time.monotonic() - start < 2

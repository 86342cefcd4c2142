"""Exercise 4 through the real pipeline: every parameter gradient, the training run, the calibration.

One class of submissions is graded in a single ``nbgrader autograde`` run; the tests read the
gradebook cell by cell and the grader's messages. The grader-side reference (the forward pass
and the autograd run) is also checked against the notebook's own setup here.
"""

import torch

from autograder.engine import wire
from autograder.engine.training import network as training
from autograder.engine.training.gradient_checks import call_problem


def test_calibration_from_counts_is_the_direct_one():
    """training.calibrate (from character pair counts) equals the mean and variance of hprebn computed directly."""
    generator = torch.Generator().manual_seed(3)
    X = torch.randint(0, 27, (5000, 3), generator=generator)
    parameters = [
        torch.randn(27, 10, generator=generator),
        torch.randn(30, 200, generator=generator) * 0.3,
        torch.randn(200, generator=generator),
    ]
    hprebn = training.hidden_preactivations(parameters, X).double()
    mean, var = training.calibrate(parameters, X)
    assert torch.allclose(mean, hprebn.mean(0, keepdim=True), rtol=0, atol=1e-5)
    assert torch.allclose(var, hprebn.var(0, keepdim=True), rtol=1e-5, atol=0)


def test_the_validation_loss_is_computed_once_for_the_same_parameters_bit_for_bit():
    """A class's right training_steps reach the same parameters in their replays: the loss over Xdev is computed for
    the first, found for the others; parameters one float apart are computed anew."""
    from autograder.engine.training.reference_runs import validation_loss

    generator = torch.Generator().manual_seed(5)
    X, Y = torch.randint(0, 27, (400, 3), generator=generator), torch.randint(0, 27, (400,), generator=generator)
    namespace = {"Xtr": X, "Xdev": X[:100], "Ydev": Y[:100]}
    shapes = [(27, 10), (30, 200), (200,), (200, 27), (27,), (1, 200), (1, 200)]
    parameters = [torch.randn(shape, generator=generator) * 0.1 for shape in shapes]
    first = validation_loss(parameters, namespace)
    assert validation_loss([p.clone() for p in parameters], namespace) == first
    assert len([k for k in namespace["__ex4_reference__"] if k.startswith("val_loss")]) == 1
    apart = [p.clone() for p in parameters]
    apart[3][0, 0] = torch.nextafter(apart[3][0, 0], torch.tensor(1.0))
    validation_loss(apart, namespace)
    assert len([k for k in namespace["__ex4_reference__"] if k.startswith("val_loss")]) == 2


def test_prose_about_gradients_is_not_autograd():
    """Docstrings, f-string text and print() may say "gradient"; getattr(p, "grad") still counts."""
    from autograder.engine.honesty import AutogradTaint

    def tainted(code):
        taint = AutogradTaint()
        taint.add_cell(code)
        return taint.tainted

    assert (
        tainted(
            'def f(x):\n    """Returns the gradients, no backward."""\n    print("grad", f"grad {x}")\n    return x'
        )
        == set()
    )
    assert tainted('def f(x):\n    return getattr(x, "grad")') == {"f"}
    assert tainted('def f(x):\n    """doc"""\n    return x.grad') == {"f"}
    assert tainted('name = "grad"') == {"name"}


def test_resetting_a_gradient_is_not_reading_it():
    """The lecture's loop sets p.grad = None before loss.backward(): a scratch cell with it (or Exercise 4's Step 1)
    must not mark p, and with it a lecture-style training_step that updates p.data, as autograd's."""
    from autograder.engine.honesty import AutogradTaint

    taint = AutogradTaint()
    taint.add_cell("for p in parameters:\n    p.grad = None\nloss.backward()\nfor q in parameters:\n    q.grad.zero_()")
    assert taint.tainted == set()
    taint.add_cell(
        "def training_step(Xb, Yb, lr):\n    grads = backward_pass(Xb, Yb, forward(Xb, Yb)[1])\n"
        "    for p, grad in zip(parameters, grads):\n        p.data += -lr * grad"
    )
    assert taint.tainted == set()
    taint.add_cell("for p in parameters:\n    p.grad = p.grad * 2\nstep = p.grad.zero_().sum()")
    assert taint.tainted == {"p", "step"}  # anything that reads a gradient still counts


def test_handing_ones_own_gradients_to_an_optimizer_is_not_reading_autograd():
    """p.grad = grad, then torch.optim's step: the store reads nothing of autograd. Reading .grad, or adding to it,
    still does."""
    from autograder.engine.honesty import AutogradTaint

    def tainted(code):
        taint = AutogradTaint()
        taint.add_cell(code)
        return taint.tainted

    stores = (
        "def training_step(Xb, Yb, lr):\n    grads = backward_pass(Xb, Yb, forward(Xb, Yb)[1])\n"
        "    optimizer = torch.optim.SGD(parameters, lr=lr)\n    for p, grad in zip(parameters, grads):\n"
        "        p.grad = grad\n    optimizer.step()\n    del p.grad"
    )
    assert tainted(stores) == set()
    assert tainted(stores.replace("p.grad = grad", "p.grad += grad")) == {"training_step"}  # reads the .grad it adds to
    assert tainted(stores.replace("p.grad = grad", "p.grad = grad + p.grad")) == {"training_step"}
    assert tainted("p.grad, q.grad = g, h\nx = p.grad") == {"x"}
    # the lecture's old update kept after handing p its own gradient: in the same block, it reads what was stored
    kept = (
        "def training_step(Xb, Yb, lr):\n    grads = backward_pass(Xb, Yb, forward(Xb, Yb)[1])\n"
        "    for p, grad in zip(parameters, grads):\n        p.grad = grad\n        p.data += -lr * p.grad"
    )
    assert tainted(kept) == set()
    for read_first in (
        kept.replace("p.grad = grad\n        p.data += -lr * p.grad", "p.data += -lr * p.grad\n        p.grad = grad"),
        kept.replace("p.grad = grad", "p.grad = None"),  # autograd's to fill
        kept.replace("p.grad = grad", "p.grad = grad\n        p = grad"),  # another p
        kept.replace("p.grad = grad", "p.grad = p.grad * 2"),  # the store reads it first
        kept.replace("p.grad = grad", "q.grad = grad"),
        kept.replace("p.grad = grad", "if lr > 0:\n            p.grad = grad"),  # in a block of its own
    ):
        assert tainted(read_first) == {"training_step"}, read_first
    # ... and in a loop of its own over the same parameters, after the loop that stored every one's gradient
    two_loops = (
        "def training_step(Xb, Yb, lr):\n    grads = backward_pass(Xb, Yb, forward(Xb, Yb)[1])\n"
        "    for p, grad in zip(parameters, grads):\n        p.grad = grad\n"
        "    for q in parameters:\n        q.data += -lr * q.grad"
    )
    assert tainted(two_loops) == set()
    assert tainted(two_loops.replace("zip(parameters, grads)", "enumerate(grads)").replace("p, grad", "i, p")) == {
        "training_step"  # the first loop ran over the gradients: the second one's parameters hold none of them
    }
    for not_every in (
        two_loops.replace("for q in parameters", "for q in parameters[:3] + [C]"),  # another collection
        two_loops.replace("        p.grad = grad\n", "        if p.ndim > 1:\n            p.grad = grad\n"),
        two_loops.replace(
            "        p.grad = grad\n", "        if p.ndim == 1:\n            continue\n        p.grad = grad\n"
        ),
        two_loops.replace("    for q in parameters", "    parameters.append(W1.clone())\n    for q in parameters"),
        two_loops.replace("        q.data += -lr * q.grad", "        q = q * 1\n        q.data += -lr * q.grad"),
    ):
        assert tainted(not_every) == {"training_step"}, not_every


def test_autograds_engine_and_forward_mode_by_other_names_are_autograd():
    """What torch.autograd.grad calls, and forward-mode differentiation, reached through torch._C or an alias; ATen's
    hand-written backward kernels."""
    from autograder.engine.honesty import AutogradTaint

    for code in (
        "g = torch._C._ImperativeEngine().run_backward((l,), (o,), False, False, (w,), False, False)",
        "from torch._C import _ImperativeEngine as E\ng = E()",
        "from torch._C import _enter_dual_level as enter\ng = enter()",
        "g = torch._unpack_dual(torch._make_dual(x, t, level=0), level=0)",
        "g = torch.ops.aten.tanh_backward(dh, h)",
    ):
        taint = AutogradTaint()
        taint.add_cell(code)
        assert "g" in taint.tainted, code


def test_shell_commands_timers_and_a_debugger_are_no_unread_code():
    """!pip and !ls (Colab notebooks have them), timeit's clock, pdb.set_trace(): no answer is marked, nor by a shell
    command that names Python, which does not run while grading. timeit handed code as a string, pdb.run: every answer
    from then on is."""
    from autograder.engine.honesty import AutogradTaint

    def marked(code):
        taint = AutogradTaint(answers={"dW2"})
        taint.add_cell(code)
        taint.add_cell("dW2 = h.T @ dlogits")
        return "dW2" in taint.tainted

    honest = (
        "get_ipython().system('pip install einops')",
        "files = get_ipython().getoutput('ls')",
        "get_ipython().system('python -c \"import torch\"')",
        "get_ipython().system(command)",
        "get_ipython().run_line_magic('timeit', 'h.T @ dlogits')",
        "import timeit\nstart = timeit.default_timer()\nseconds = timeit.timeit(lambda: h.T @ dlogits, number=3)",
        "import pdb\npdb.set_trace()",
    )
    for code in honest:
        assert not marked(code), code
    unread = (
        "import timeit\ntimeit.timeit('dW2 = 0', globals=globals())",
        "import pdb as p\np.run('dW2 = 0')",
        "get_ipython().push({'dW2': 0})",
    )
    for code in unread:
        assert marked(code), code


def test_an_error_message_of_torch_keeps_one_full_stop():
    """backward_pass's error, quoted in a sentence that goes on: torch's messages end with a full stop of their own."""
    message = "view size is not compatible with input tensor's size and stride. Use .reshape(...) instead."
    status = {"kind": "raised", "type": "RuntimeError", "message": message}
    for on_check_batch in (True, False):
        said = call_problem(wire.Report({"backward_pass": status}), 0, on_check_batch)
        assert "Use .reshape(...) instead. Run Step 1" in said, said


def test_torchs_own_not_implemented_error_is_what_stopped_backward_pass_not_an_unwritten_stub():
    """The blank notebook's ``raise NotImplementedError()`` has no message; torch's own (an operation it lacks for a
    tensor's layout or dtype) has one, and was told "not answered yet: backward_pass still raises
    NotImplementedError", as if nothing had been written."""
    from autograder.engine.bug_hunt import rerun as checks

    stub = {"kind": "raised", "type": "NotImplementedError", "message": ""}
    torchs = {**stub, "message": "Could not run 'aten::view' with arguments from the 'SparseCPU' backend."}
    assert call_problem(wire.Report({"backward_pass": stub}), 0).kind == "not_answered"
    said = call_problem(wire.Report({"backward_pass": torchs}), 0)
    assert said.kind == "raised_error" and "Could not run 'aten::view'" in said, said
    assert checks.call_problem(wire.Report({checks.FUNCTION: stub}), "dW2", {}).kind == "not_answered"
    said = checks.call_problem(wire.Report({checks.FUNCTION: torchs}), "dW2", {})
    assert said.kind == "raised_error" and "Could not run 'aten::view'" in said, said

"""While grading, the kernel refuses torch's derivatives however they are reached: the static reading
(autograder/engine/honesty/) marks the names it can see; these refusals hold for names it cannot (a module of the
student's own, a string run by exec). Run in a child process: the switches patch torch for good."""

import subprocess
import sys

CHILD = r"""
import os
import torch
import torch.nn.functional as F
from autograder.in_kernel import switches

os.environ.update(NBGRADER_EXECUTION="autograde", BACKPROP_NINJA_SEED="7")
w = torch.randn(3, 4).requires_grad_(True)
x = torch.randn(2, 3)
before = (x @ w).grad_fn
switches.start_grading({"w": w}, self_checks=())
g = torch.randn(2, 4)
SCRIPT = "def f(x):\n    return torch.tanh(x)\n"
# TorchScript's own ops switch recording on and run autograd's engine in C++, out of the Python names' reach
BACKWARD = "def f(x, w):\n    torch.set_grad_enabled(True)\n    w = w.detach().requires_grad_()\n"
BACKWARD += "    (x @ w).sum().backward()\n    return w.grad\n"


def in_a_thread(attempt):  # a thread of one's own starts with autograd's recording on; what it raised is raised here
    import threading

    raised = []
    thread = threading.Thread(target=lambda: raised.extend(_raised(attempt)))
    thread.start(), thread.join()
    if raised:
        raise raised[0]


def _raised(attempt):
    try:
        attempt()
    except Exception as error:
        return [error]
    return []


def engine_op():
    return torch._C._jit_get_operation("aten::backward")[0]((x @ w).sum())


refused = []
for name, attempt in [
    ("aten", lambda: torch.ops.aten.tanh_backward(g, g)),
    ("aten overload", lambda: torch.ops.aten.tanh_backward.default(g, g)),
    ("torch function", lambda: torch._softmax_backward_data(g, g, 1, torch.float32)),
    ("embedding", lambda: torch.ops.aten.embedding_dense_backward(g, torch.tensor([0, 1]), 5, -1, False)),
    ("decomposition", lambda: torch._decomp.decompositions.tanh_backward(g, g)),
    ("table", lambda: torch._decomp.decomposition_table[torch.ops.aten.tanh_backward.default](g, g)),
    ("engine", lambda: torch.autograd.grad((x @ w).sum(), w)),
    ("sparse", lambda: torch.ops.aten.threshold_backward(g.to_sparse(), g.to_sparse(), 0.0)),
    ("torchscript", lambda: torch._C._jit_differentiate(torch.jit.CompilationUnit(SCRIPT).f.graph)),
    ("engine op", lambda: in_a_thread(engine_op)),
]:
    try:
        attempt()
    except switches.AutogradIsOff:
        refused.append(name)
try:  # (TorchScript says that its op failed, and why)
    torch.jit.CompilationUnit(BACKWARD).f(x, w)
    raise SystemExit("TorchScript ran autograd's engine")
except RuntimeError as error:
    assert "autograd is switched off" in str(error), error
out = x @ w
assert out.grad_fn is None and out._grad_fn is None, repr(out)
# no graph is recorded, however recording is switched on: torch._C.TensorBase's own grad_fn finds no node to call
node_of = vars(torch._C.TensorBase)["grad_fn"]
with torch.enable_grad():
    torch.set_grad_enabled(True)
    torch.ops.aten.set_grad_enabled(True)
    assert node_of.__get__(x @ w) is None and w.requires_grad
torch.set_grad_enabled(True)
assert node_of.__get__(x @ w) is None and not torch.is_grad_enabled()
with torch.inference_mode(False):
    assert not torch.is_grad_enabled()
# a thread of one's own records a graph (recording starts on there): no node of it is within reach, through the C
# types under torch.Tensor and a custom Function's ctx either
nodes = []


class Through(torch.nn.modules._functions.Function):
    @staticmethod
    def forward(ctx, a):
        nodes.append(vars(torch._C._FunctionBase)["next_functions"].__get__(ctx))
        return a.clone()


def record():
    out = x @ w
    nodes.append(out.requires_grad), nodes.append(node_of.__get__(out)), Through.apply(out)


in_a_thread(record)
assert nodes == [True, None, None], nodes
# the forward pass and the course's hand-written formulas still run
logits = torch.tanh(x @ w.detach())
F.cross_entropy(logits, torch.tensor([0, 1])), F.embedding(torch.tensor([1]), w.detach())
print(",".join(refused))
"""


def test_torchs_own_derivatives_refuse_while_grading():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    refused = "aten,aten overload,torch function,embedding,decomposition,table,engine,sparse,torchscript,engine op"
    assert done.stdout.strip() == refused, done


SKIPPED = [
    "assert torch.allclose(dW2, W2.grad)",
    "assert torch.allclose(dW2, W2.grad, atol=1e-6), 'dW2 is off'",
    "torch.testing.assert_close(dW2, W2.grad)",
    "np.testing.assert_allclose(dW2.numpy(), W2.grad.numpy(), rtol=1e-4)",
    "if not torch.allclose(dW2, W2.grad):\n    raise ValueError('dW2 is off')",
]
KEPT = [
    "assert dW2.shape == W2.shape",  # no .grad: a check the grader's values pass too
    "dW2 = W2.grad",  # writes a name
    "print((dW2 - W2.grad).abs().max())",  # prints, stops nothing
    "assert torch.allclose(dW2.mul_(2), W2.grad)",  # changes dW2
    "if not torch.allclose(dW2, W2.grad):\n    dW2 = W2.grad.clone()",
    "assert (d := W2.grad) is not None",
]


def test_a_students_own_check_against_autograd_is_skipped_while_grading_and_nothing_else():
    """Every .grad holds a decoy while grading: `assert torch.allclose(dW2, W2.grad)` fails there, and in a cell of
    several answers left the answers after it undefined (one point lost, at least). Such checks are skipped, as cmp
    is; a statement that also writes or changes something runs as it is."""
    import ast

    from autograder.in_kernel.self_checks_off import checks_autograd

    assert [code for code in SKIPPED if not checks_autograd(ast.parse(code).body[0])] == []
    assert [code for code in KEPT if checks_autograd(ast.parse(code).body[0])] == []


IMPORTS = r"""
import os, sys, tempfile
from autograder.in_kernel import switches

os.environ.update(NBGRADER_EXECUTION="autograde", BACKPROP_NINJA_SEED="7")
folder = tempfile.mkdtemp()
for name in ("written_after", "winsound"):
    with open(os.path.join(folder, name + ".py"), "w") as f:
        f.write("ran = True\n")
os.makedirs(os.path.join(folder, "spaced"))  # a namespace package: a folder without __init__.py
with open(os.path.join(folder, "spaced", "part.py"), "w") as f:
    f.write("ran = True\n")
switches.start_grading({}, self_checks=())
sys.path.insert(0, folder)  # as a student's cell does
refused = []
for name in ("written_after", "winsound", "spaced.part"):
    try:
        __import__(name)
    except ModuleNotFoundError as error:
        assert "written while grading" in str(error), error
        refused.append(name)
try:
    __import__("einops_nowhere")
except ModuleNotFoundError as error:  # a module that is nowhere fails as before
    assert "written while grading" not in str(error), error
import json, email.mime.text, numpy.linalg, torch.nn.functional, IPython.display, autograder.engine.wire  # as before
print(",".join(refused))
"""


def test_no_module_written_while_grading_is_imported():
    """Its code would run where the grader cannot read it, and put answers into the notebook (``c_module_written_while_
    grading`` in tests/support/cases_ex2_ex3.py); a module of the environment, the standard library's or the grader's,
    is imported as before."""
    done = subprocess.run([sys.executable, "-c", IMPORTS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "written_after,winsound,spaced.part", done

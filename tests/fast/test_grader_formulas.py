"""While grading, the grader's own formulas refuse in the kernel however they are reached, but for what the kernel
runs itself (autograder/engine/honesty/grader_formulas.py); Exercise 4's replay hands the right gradients out once,
and no backward_pass is judged after that (autograder/in_kernel/training.py). Run in a child process: the switches
change the grader's functions for good."""

import subprocess
import sys

CHILD = r"""
import os
import sys

import torch

from autograder.in_kernel import switches, training
from autograder.engine import backward_rules, wire
from autograder.engine.fused_rules import FUSED_STEPS
from autograder.engine.operators import OPERATOR_STEPS
from autograder.engine.training import network
from autograder.engine.honesty import grader_formulas

os.environ.update(NBGRADER_EXECUTION="autograde", BACKPROP_NINJA_SEED="7")
later = "autograder.engine.value_checks"
assert later not in sys.modules  # (a module loaded after grading started)
assert "autograder.in_kernel.bug_hunt" not in sys.modules
switches.start_grading({}, self_checks=())
# Exercise 6's hidden test imports its kernel module, whose package calls its own functions at its top level: loaded
# before anything refused, it imports (it stopped the bug hunt's setup cell with AutogradIsOff)
from autograder.in_kernel.bug_hunt import keep_grading_point
W2 = backward_rules.STEP_BY_NAME["W2"]
f = {"h": torch.randn(4, 3)}
d = {"logits": torch.randn(4, 5)}
parameters = [torch.randn(27, 10), torch.randn(30, 8), torch.randn(8), torch.randn(8, 27), torch.randn(27)]
parameters += [torch.ones(1, 8), torch.zeros(1, 8)]
Xb, Yb = torch.randint(0, 27, (4, 3)), torch.randint(0, 27, (4,))
from dask.utils import import_required  # a module by a name in a string, as the static reading did not see
from distributed.utils import import_term

refused = []
for name, attempt in [
    ("rules", lambda: backward_rules.local_gradient(W2, f, d)),
    ("term", lambda: W2.terms["logits"](f, d)),
    ("by a name", lambda: import_term("autograder.engine.backward_rules.local_gradient")(W2, f, d)),
    ("fused", lambda: next(iter(next(iter(FUSED_STEPS)).terms.values()))({}, {})),
    ("operator", lambda: next(iter(next(iter(OPERATOR_STEPS)).terms.values()))({}, {})),
    ("network", lambda: network.manual_backward(parameters, Xb, Yb, {})),
    ("loaded later", lambda: import_required(later, "").judge_value(None, None, {}, 0, set())),
    ("replay's own", lambda: grader_formulas.for_the_replay().__enter__()),
]:
    try:
        attempt()
    except switches.AutogradIsOff:
        refused.append(name)
# what the kernel runs itself still runs: a step's upstream names, the forward pass, the reports' encoding
assert W2.upstream == ["logits"] and network.forward(parameters, Xb, Yb)[0].ndim == 0
wire.encode(torch.ones(2))
# Exercise 4: the replay, called by the student, hands the right gradients out, after which no backward_pass is judged
given = []


def grab(X, Y, lr):
    given.append(fake["backward_pass"](X, Y, network.forward(parameters, X, Y)[1]))
    return 0.0


fake = dict(training_step=grab, parameters=parameters, Xtr=torch.randint(0, 27, (100, 3)), SEED=1, batch_size=4)
fake.update(Ytr=torch.randint(0, 27, (100,)), initial_parameters=[p.clone() for p in parameters])
training._replay_training_step(fake)
assert given and len(given[0]) == 7  # (what the replay gives: the course's design)
called = []
namespace = {"backward_pass": lambda *a: called.append(1), "parameters": parameters, "check_batch": (Xb, Yb, {})}
assert training._judged(namespace)["backward_pass"]["type"] == "AutogradIsOff" and not called
print(",".join(refused))
"""


def test_the_graders_own_formulas_refuse_while_grading_and_the_right_gradients_are_handed_out_once():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    refused = "rules,term,by a name,fused,operator,network,loaded later,replay's own"
    assert done.stdout.strip().splitlines()[-1] == refused, done

"""What each notebook grades: for every graded cell (by grade_id), the check that judges it.

A check takes the values the cell reported from the student's kernel, the grader's own
setup namespace (forward values and autograd's gradients for this run's seed), the seed,
and the set of variables computed with autograd, and returns a ``Verdict``.
"""

from .backward_rules import STEPS, Step
from .judge import judge_gradient
from .reference import autograd_gradients, forward_values


def gradient_check(step: Step):
    def check(reported, namespace, seed, tainted):
        return judge_gradient(step, reported, forward_values(namespace), autograd_gradients(namespace), seed, tainted)
    return check


CHECKS = {
    "ex1_atomic_backward": {f"test_d{step.name}": gradient_check(step) for step in STEPS},
}

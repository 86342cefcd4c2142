"""What runs inside the student's kernel, and only while nbgrader autogrades.

The hidden regions of the locked cells call these three functions. They never grade:
they pick the unseen seed, take autograd out of the student's reach, and report the
student's tensors to the grader (see ``wire``), which judges them in its own process.
Outside autograde (Colab, JupyterLab, ``nbgrader validate``) they change nothing.
"""

import os

import torch
from IPython.display import display

from . import wire
from .honesty import decoy

SEED_VARIABLE = "BACKPROP_NINJA_SEED"


def grading() -> bool:
    return os.environ.get("NBGRADER_EXECUTION") == "autograde" and SEED_VARIABLE in os.environ


def grading_seed(default: int) -> int:
    """The seed of this run: the notebook's own, or at autograde one the student never saw."""
    return int(os.environ[SEED_VARIABLE]) if grading() else default


class AutogradIsOff(RuntimeError):
    pass


def _refuse(*args, **kwargs):
    raise AutogradIsOff("autograd is switched off while grading: every gradient must be written by hand.")


def start_grading(namespace: dict, self_checks=("cmp", "self_check")) -> None:
    """After the setup's own ``loss.backward()``: hide autograd's answers from the student.

    Every ``.grad`` becomes a decoy (the right gradient plus seeded noise, which the grader
    recognises), and ``backward`` / ``torch.autograd.grad`` refuse to run. The visible
    self-checks compare with ``.grad``, so they are switched off rather than left to mislead.
    """
    if not grading():
        return
    seed = int(os.environ[SEED_VARIABLE])
    for name, value in list(namespace.items()):
        if isinstance(value, torch.Tensor) and value.grad is not None:
            value.grad = decoy(value.grad, seed, name)
    torch.Tensor.backward = _refuse
    torch.autograd.backward = _refuse
    torch.autograd.grad = _refuse

    def skipped(*args, **kwargs):
        print("(self-checks are skipped while grading: see the graded cells)")

    for name in self_checks:
        if name in namespace:
            namespace[name] = skipped


def report(namespace: dict, *names: str) -> None:
    """Send the named variables, as they are now, to the grader (at autograde only)."""
    if not grading():
        print("This cell is graded by the autograder.")
        return
    payload = {name: wire.encode(namespace.get(name), name in namespace) for name in names}
    display({wire.MIME: payload, "text/plain": "(answer reported to the grader)"}, raw=True)

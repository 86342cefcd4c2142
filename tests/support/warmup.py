"""The optional warm-up notebook's solutions, kept here (the notebook ships with stubs), for both test tiers."""

import copy
import textwrap

import nbformat

from autograder.authoring.submissions import STUB
from support.course import REPO

WARMUP = REPO / "course" / "micrograd_warmup.ipynb"

SOLUTIONS = {
    "answer-add": "self.grad += out.grad\nother.grad += out.grad",
    "answer-mul": "self.grad += other.data * out.grad\nother.grad += self.data * out.grad",
    "answer-tanh": "self.grad += (1 - t**2) * out.grad",
    "answer-topological-order": """
order, visited = [], set()


def visit(v):
    if v not in visited:
        visited.add(v)
        for child in v._prev:
            visit(child)
        order.append(v)


visit(root)
return order""",
    "answer-backward": "self.grad = 1.0\nfor v in reversed(topological_order(self)):\n    v._backward()",
    "answer-central-difference": "return (f(x + h) - f(x - h)) / (2 * h)",
    "answer-one-percent-point": "return math.atanh(math.sqrt(0.99))",
}
CHECKS = [
    "check-add",
    "check-mul",
    "check-tanh",
    "check-reuse",
    "check-topological-order",
    "check-backward",
    "check-central-difference",
    "check-neuron",
    "check-one-percent-point",
]


def filled(answers: dict):
    """The warm-up notebook with each stub replaced by answers[cell id] (cells not named keep their stub)."""
    nb = copy.deepcopy(nbformat.read(WARMUP, as_version=4))
    for cell in nb.cells:
        if cell.id in answers:
            answer = textwrap.dedent(answers[cell.id]).strip("\n")
            cell.source = STUB.sub(lambda stub: textwrap.indent(answer, stub.group(1)), cell.source)
    return nb

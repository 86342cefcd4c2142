"""The optional warm-up notebook, course/micrograd_warmup.ipynb, run in-process cell by cell.

The notebook ships with stubs; the course's solutions are in tests/warmup.py. The tests run it as a student would:
with the solutions every self-check passes, blank it runs without a traceback and says what is not answered
yet, and each typical mistake is flagged by its check with its hint.
"""

import contextlib
import io

import matplotlib
import matplotlib.pyplot as plt
import nbformat
import pytest
from support.warmup import CHECKS, SOLUTIONS, WARMUP, filled

from autograder.authoring.submissions import STUB

matplotlib.use("Agg")


def run(answers: dict) -> dict:
    """Every code cell in order, each stub replaced by answers[cell id]: cell id -> (stdout, stderr)."""
    namespace, printed = {"__name__": "__main__"}, {}
    for cell in filled(answers).cells:
        if cell.cell_type != "code":
            continue
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
            exec(compile(cell.source, cell.id, "exec"), namespace)
        printed[cell.id] = (out.getvalue(), err.getvalue())
    plt.close("all")
    return printed


def test_every_answer_cell_has_a_stub_and_a_solution():
    nb = nbformat.read(WARMUP, as_version=4)
    stubs = {c.id for c in nb.cells if c.cell_type == "code" and STUB.search(c.source)}
    assert stubs == set(SOLUTIONS)
    assert {c.id for c in nb.cells if c.cell_type == "code" and c.source.startswith("check_")} == set(CHECKS)


def test_the_solution_passes_every_check():
    printed = run(SOLUTIONS)
    for check in CHECKS:
        out, err = printed[check]
        assert "✘" not in out + err and "✔" in out, (check, out, err)
    table = printed["check-neuron"][0]
    assert [line.split()[1] for line in table.splitlines() if line.startswith("✔ ")][:5] == [
        "x1",
        "x2",
        "w1",
        "w2",
        "b",
    ]
    once, twice, again = (float(line.split("=")[1].split()[0]) for line in printed["zero-grad"][0].splitlines())
    assert once == again != twice  # backward twice without zero_grad gives wrong gradients
    step_sizes = printed["step-size"][0].splitlines()[1:]
    at_1e3 = next(line.split() for line in step_sizes if line.split()[0] == "1e-03")
    assert float(at_1e3[1]) > 100 * float(at_1e3[2])  # the central difference is far more accurate


def test_the_blank_notebook_runs_and_says_what_is_not_answered():
    printed = run({})
    for check in CHECKS:
        out, err = printed[check]
        assert "not answered yet" in err and "✔" not in out, (check, out, err)
    assert printed["zero-grad"][0].startswith("(this demonstration uses your code above")


def with_change(cell, code):
    return {**SOLUTIONS, cell: code}


TRAPS = {  # operation -> its _backward with = instead of +=, and the expression the reuse check names
    "add": (with_change("answer-add", "self.grad = out.grad\nother.grad = out.grad"), "a + a"),
    "mul": (with_change("answer-mul", "self.grad = other.data * out.grad\nother.grad = self.data * out.grad"), "a * a"),
    "tanh": (with_change("answer-tanh", "self.grad = (1 - t**2) * out.grad"), "tanh(a) + a"),
}


@pytest.mark.parametrize("operation", TRAPS)
def test_the_a_times_a_trap_passes_the_local_check_and_is_caught_where_a_value_is_used_twice(operation):
    answers, expression = TRAPS[operation]
    printed = run(answers)
    assert "✘" not in "".join(printed[f"check-{operation}"])  # one use each: = and += agree
    err = printed["check-reuse"][1]
    assert err.startswith(f"✘ {expression}: a.grad is") and "+=" in err, err
    if operation != "tanh":  # the backward check's graph uses a and a * b twice, tanh's input once
        assert "fix the check above (+=) first" in printed["check-backward"][1]


MISTAKES = [  # (answer cell, wrong code, check cell, words of its hint)
    ("answer-add", "self.grad += 1.0\nother.grad += 1.0", "check-add", "multiply it by out.grad"),
    ("answer-mul", "self.grad += self.data * out.grad\nother.grad += other.data * out.grad", "check-mul", "swapped"),
    ("answer-tanh", "self.grad += (1 - self.data**2) * out.grad", "check-tanh", "you used the input x"),
    ("answer-tanh", "self.grad += (1 - t) * out.grad", "check-tanh", "1 - t**2 (t squared)"),
    (
        "answer-topological-order",
        "order = []\n\n\ndef visit(v):\n    for child in v._prev:\n        visit(child)\n    order.append(v)\n\n\n"
        "visit(root)\nreturn order",
        "check-topological-order",
        "listed more than once",
    ),
    (
        "answer-topological-order",
        "order, visited = [], set()\n\n\ndef visit(v):\n    if v not in visited:\n        visited.add(v)\n"
        "        order.append(v)\n        for child in v._prev:\n            visit(child)\n\n\n"
        "visit(root)\nreturn order",
        "check-topological-order",
        "comes before its input",
    ),
    (
        "answer-backward",
        "self.grad = 1.0\nfor v in topological_order(self):\n    v._backward()",
        "check-backward",
        "reversed(topological_order(self))",
    ),
    (
        "answer-backward",
        "for v in reversed(topological_order(self)):\n    v._backward()",
        "check-backward",
        "self.grad = 1.0",
    ),
    ("answer-central-difference", "return (f(x + h) - f(x)) / h", "check-central-difference", "one-sided (forward)"),
    ("answer-central-difference", "return (f(x + h) - f(x - h)) / h", "check-central-difference", "divide by 2 * h"),
    ("answer-one-percent-point", "return math.atanh(0.99)", "check-one-percent-point", "where tanh(x) = 0.99"),
]


@pytest.mark.parametrize(
    "cell, code, check, hint",
    MISTAKES,
    ids=[
        "add-without-out-grad",
        "mul-swapped",
        "tanh-from-the-input",
        "tanh-not-squared",
        "topological-order-without-visited-set",
        "topological-order-node-before-inputs",
        "backward-not-reversed",
        "backward-without-seed-gradient",
        "one-sided-difference",
        "central-difference-without-the-2",
        "saturation-point-of-tanh-not-its-gradient",
    ],
)
def test_a_typical_mistake_is_flagged_with_its_hint(cell, code, check, hint):
    out, err = run(with_change(cell, code))[check]
    assert err.startswith("✘") and hint in err and "✔" not in out, (out, err)


@pytest.mark.parametrize("tanh", ["self.grad += (1 - self.data**2) * out.grad", "self.grad += (1 - t) * out.grad"])
def test_a_wrong_tanh_step_is_not_called_a_value_used_twice(tanh):
    """tanh's own check names the mistake; the reuse check (its += is there) and the backward check do not send the
    student to +=, nor to the order of backward(): the backward check sends them back to tanh's check."""
    printed = run(with_change("answer-tanh", tanh))
    assert "✘" not in "".join(printed["check-reuse"]), printed["check-reuse"]
    err = printed["check-backward"][1]
    assert err.startswith("✘ backward: the backward step of tanh is not right yet"), err
    assert "+=" not in err and "reversed" not in err, err


def test_the_warm_up_does_not_count_the_exercises():
    intro = nbformat.read(WARMUP, as_version=4).cells[0].source
    assert "four notebooks" not in intro  # the course has six exercises

"""A ✔ in the notebook means the point: the visible checks judge a step with the grader's own code.

The self-check helpers carry the engine's rule probe and tolerance (generated into the cell from ``autograder/engine``),
so an answer with the right values but the wrong rule (``db1 = dhprebn.mean(0)``: b1 is cancelled by BatchNorm, so
its gradient is about zero either way) is ✘ under its cell, as at grading; and the "fix it first" hint names a
gradient above in the graph, never one that merely failed earlier in time.
"""

import ast

import pytest
from test_student_notebooks import EX1, HELPERS, release, run_cells, source

from autograder.authoring import from_engine, shared_cell
from autograder.authoring.submissions import grade_id, solved
from autograder.common.naming import SETUP_PREFIX
from autograder.engine import tolerance
from autograder.engine.backward_rules import STEPS
from autograder.engine.operators import OPERATOR_STEPS
from autograder.engine.probes import judge_rule, rerun
from autograder.engine.reference import run_setup, strip_hidden
from autograder.engine.training.reference_runs import LOSS_TOLERANCE


def test_the_helper_cell_holds_the_engines_code_not_a_copy():
    cell = shared_cell("self_check_helpers")
    assert from_engine.MARKER not in cell and from_engine.block() in cell
    defined = {n.name: ast.unparse(n) for n in ast.parse(strip_hidden(cell)).body if hasattr(n, "name")}
    for function in (rerun.answer_code, rerun.pin_value, judge_rule.consistent_pins, tolerance.close):
        engine = next(n for n in ast.parse(__import__("inspect").getsource(function)).body)
        assert defined[function.__name__] == ast.unparse(engine), function.__name__
    namespace = {"torch": __import__("torch")}  # the notebook's setup imports it
    exec(strip_hidden(cell).split("class Step:")[0], namespace)
    assert namespace["RTOL"] == tolerance.RTOL and namespace["LOSS_TOLERANCE"] == LOSS_TOLERANCE
    assert list(namespace["GRAPHS"]["atomic"]) == [s.name for s in STEPS]
    assert list(namespace["GRAPHS"]["operators"]) == [s.name for s in OPERATOR_STEPS]  # Exercise 5's (STEP_TABLE)


@pytest.fixture(scope="module")
def ex1_up_to():
    """Exercise 1 with the course's answers and their checks run up to (not including) a step; the cells by id."""
    cells = {grade_id(c): c.source for c in solved(release(EX1), source(EX1)).cells}
    setup = tuple(c.source for c in source(EX1).cells if grade_id(c).startswith(SETUP_PREFIX))
    notebook_namespace = dict(run_setup(setup, 2147483647))  # the notebook's own SEED

    def run(stop):
        namespace = {**notebook_namespace}
        exec(strip_hidden(HELPERS), namespace)
        for step in STEPS[: [s.name for s in STEPS].index(stop)]:
            run_cells(namespace, cells[f"answer_d{step.name}"], cells[f"test_d{step.name}"])
        return namespace

    return run, cells


def test_db1_as_a_mean_is_not_a_tick(ex1_up_to):
    run, cells = ex1_up_to

    out = run_cells(run("b1"), "db1 = dhprebn.mean(0)", cells["test_db1"])
    assert out.startswith("✘ db1: the values are right on this batch, but not the backward rule"), out
    assert "gives no point" in out


@pytest.mark.parametrize(
    "answer",
    [
        "db1 = dhprebn.sum(0)",
        "db1 = torch.zeros_like(b1)",  # exactly zero is right for b1 (the grader says so too)
        "db1 = dhprebn.sum(0, keepdim=True).view(-1)",
        "tmp = dhprebn.clone()\ndb1 = tmp.sum(0)",
    ],
)
def test_a_right_db1_is_a_tick(ex1_up_to, answer):
    run, cells = ex1_up_to

    out = run_cells(run("b1"), answer, cells["test_db1"])
    assert out.startswith("✔ db1"), out


def test_every_course_answer_follows_its_rule_under_its_cell(ex1_up_to):
    run, cells = ex1_up_to

    out = run_cells(run("C"), cells["answer_dC"], cells["test_dC"])
    assert out.startswith("✔ dC"), out  # and run() printed no ✘ on the way (it would have raised in the asserts)


def test_a_wrong_rule_whose_values_pass_is_named_for_dlogit_maxes_path(ex1_up_to):
    """dlogits without the max's path: right values (dlogit_maxes is about zero), wrong rule: the grader's ✘."""
    run, cells = ex1_up_to

    out = run_cells(run("logits"), "dlogits = dnorm_logits.clone()", cells["test_dlogits"])
    assert out.startswith("✘ dlogits: the values are right on this batch, but not the backward rule"), out


def test_above_means_upstream_in_the_graph_not_earlier_in_time(ex1_up_to):
    """A wrong dnorm_logits, then going back to a wrong dcounts: dnorm_logits is downstream, not 'above'."""
    run, cells = ex1_up_to

    namespace = run("counts")
    run_cells(namespace, "dcounts = counts_sum_inv * dprobs", cells["test_dcounts"])  # a branch missing
    run_cells(namespace, "dnorm_logits = 2 * counts * dcounts", cells["test_dnorm_logits"])
    again = run_cells(namespace, "dcounts = counts_sum_inv * dprobs", cells["test_dcounts"])
    assert again.startswith("✘ dcounts: values differ"), again
    assert "above is not right yet" not in again
    run_cells(namespace, "dcounts_sum = counts_sum", cells["test_dcounts_sum"])  # an upstream one wrong
    again = run_cells(namespace, "dcounts = counts_sum_inv * dprobs", cells["test_dcounts"])
    assert "But dcounts_sum above is not right yet" in again, again

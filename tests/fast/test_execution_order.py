"""The order autograde runs a notebook's cells in (``common.setup_cells.execution_order``): the locked setup cells, then
the cell that starts grading, then the rest. A cell of the student's above the start cell, or the start cell moved below
the answers, ran while every ``.grad`` held autograd's own gradient: torch.optim read it out of the static reading's
sight (the cases in tests/support/cases_ex2_ex3.py and cases_ex5.py, ``LAID_OUT``)."""

import nbformat
import pytest
from support.in_process import as_autograde_runs_it, source_notebook

from autograder.common.setup_cells import START_CELL, due_at, execution_order
from autograder.preprocessors.grading_execute import GradingExecute

NOTEBOOKS = ("ex1_atomic_backward", "ex2_cross_entropy_backward", "ex3_batchnorm_backward", "ex4_manual_training")
NOTEBOOKS += ("ex5_new_operators", "ex6_bug_hunt")


def cell(grade_id: str = "", locked: bool = False, kind: str = "code"):
    made = nbformat.v4.new_code_cell(grade_id) if kind == "code" else nbformat.v4.new_markdown_cell(grade_id)
    if grade_id:
        made.metadata["nbgrader"] = {"grade_id": grade_id, "locked": locked}
    return made


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_course_notebooks_run_in_their_own_order(name):
    nb = as_autograde_runs_it(source_notebook(name), source_notebook(name))
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    assert [i for i in execution_order(nb.cells) if i in code] == code  # (markdown cells run nothing)


def test_the_setup_and_the_start_cell_run_before_any_cell_of_the_students():
    cells = [
        cell("import numpy as np"),  # the student's, at the top
        cell("setup_settings", True),
        cell("md", kind="markdown"),
        cell("setup_forward", True),
        cell("stash = ..."),  # the student's, above the start cell
        cell("answer_dx"),
        cell("test_dx", True),
        cell(START_CELL, True),  # moved below the answers
        cell("setup_late", True),  # a setup cell moved down too
    ]
    assert execution_order(cells) == [1, 3, 8, 7, 0, 2, 4, 5, 6]


def test_only_locked_cells_are_the_courses():
    """A cell of the student's with a course cell's grade_id but not locked (nbgrader deletes an unknown grade_id of a
    locked one) runs with the student's."""
    cells = [cell("x = 1"), cell("setup_evil"), cell("setup_forward", True), cell(START_CELL), cell(START_CELL, True)]
    assert execution_order(cells) == [2, 4, 0, 1, 3]


def test_without_a_start_cell_the_notebook_runs_in_its_order():
    cells = [cell("x = 1"), cell("setup_forward", True), cell("answer_dx")]
    assert execution_order(cells) == [0, 1, 2]


@pytest.mark.parametrize("order", [[0, 1, 2, 3], [1, 3, 0, 2], [2, 3, 1, 0], [3, 2, 1, 0]])
def test_grading_execute_runs_the_cells_in_execution_order(order):
    """nbconvert comes to the cells in the notebook's order; each runs once, in execution_order, never before it is
    come to (its cell object is the notebook's)."""
    runner = GradingExecute(sandbox=False)
    runner.nb = nbformat.v4.new_notebook(cells=[cell(f"x = {i}") for i in range(len(order))])
    ran = []
    runner._execute_one = lambda c, resources, index: (ran.append((index, seen[:])), (c, resources))[1]
    runner._due, seen = due_at(order), []
    for index in range(len(order)):
        seen.append(index)
        runner.preprocess_cell(runner.nb.cells[index], {}, index)
    assert [index for index, _ in ran] == order
    assert all(index in come_to for index, come_to in ran)

"""A submission broken the ways students (and their tools) break one: graded cells deleted or copied, nbgrader's
metadata stripped, a forged grade cell; and the strings that must never reach a student's release."""

import copy

import nbformat

from autograder.authoring.submissions import grade_id

# what only the source notebooks and the grader hold: a release or a student's page with one of these leaks
SECRETS = [
    "HIDDEN TESTS",
    "report(",
    "start_grading",
    "grading_seed",
    "from autograder",
    "autograder.in_kernel",
    "BEGIN SOLUTION",
    "x-backprop-ninja",
]


def without(nb, *gids):
    """``nb`` with the cells of these grade_ids deleted."""
    nb = copy.deepcopy(nb)
    nb.cells = [c for c in nb.cells if grade_id(c) not in gids]
    return nb


def duplicated(nb, gid):
    """``nb`` with the cell ``gid`` copied two cells further down."""
    nb = copy.deepcopy(nb)
    i = next(i for i, c in enumerate(nb.cells) if grade_id(c) == gid)
    nb.cells.insert(i + 2, copy.deepcopy(nb.cells[i]))
    return nb


def edited(nb, gid, line: str):
    """``nb`` with ``line`` added at the top of the cell ``gid`` (a locked cell edited in another editor)."""
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb.cells if grade_id(c) == gid)
    cell.source = f"{line}\n{cell.source}"
    return nb


def stripped(nb):
    """``nb`` as an editor that drops unknown metadata leaves it: no nbgrader, editable or deletable keys."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
        cell.metadata.pop("editable", None)
        cell.metadata.pop("deletable", None)
    return nb


def fake_grade_cell(nb):
    """``nb`` with a cell that claims to be a graded test worth 100 points, and prints that it passed."""
    nb = copy.deepcopy(nb)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "print(100.0)\n100.0",
            metadata={
                "nbgrader": {
                    "grade": True,
                    "grade_id": "test_bonus",
                    "locked": True,
                    "points": 100,
                    "solution": False,
                    "schema_version": 3,
                }
            },
        )
    )
    return nb

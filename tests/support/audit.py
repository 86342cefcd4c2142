"""What the grader's audit modules share (tests/slow/test_alternative_solutions_ex*.py): the release notebooks, how an
alternative names its answer cell, and cases marked xfail where the grader gets them wrong."""

import re

import nbformat
import pytest

from autograder.authoring.submissions import solved
from support.course import REPO
from support.in_process import autograde, source_notebook


def release(name: str):
    return nbformat.read(REPO / "release" / "backprop_ninja" / f"{name}.ipynb", as_version=4)


def no_grad(code: str) -> str:
    return "with torch.no_grad():\n" + "\n".join("    " + line for line in code.split("\n"))


def cell_of(code: str) -> str:
    """The answer cell a one-cell alternative changes: the one of the last name it assigns."""
    return "answer_" + re.findall(r"^\s*([A-Za-z_]\w*) [-+*/]?= ", code, re.MULTILINE)[-1]


def params(cases, xfail: dict, *first) -> list:
    """pytest params of ``cases`` (after the values ``first``), each named by its case, xfail(strict) where ``xfail``
    gives the reason."""
    marks = {s: [pytest.mark.xfail(reason=xfail[s], strict=True)] if s in xfail else [] for s in cases}
    return [pytest.param(*first, s, marks=marks[s], id=s) for s in cases]


def graded_by_notebook(variants: dict, mistakes: dict, solution: bool = False) -> dict:
    """Each notebook's class graded in process, {notebook: {student: graded}}: a student for each of the notebook's
    ``variants`` ({notebook: {student: changes}}) and each of ``mistakes`` made in it ({student: (notebook, changes,
    ...)}), and the solution as a student when asked."""
    graded = {}
    for name, changes_of in variants.items():
        rel, src = release(name), source_notebook(name)
        class_ = {"solution": solved(rel, src)} if solution else {}
        class_.update({student: solved(rel, src, changes) for student, changes in changes_of.items()})
        class_.update({s: solved(rel, src, mistake[1]) for s, mistake in mistakes.items() if mistake[0] == name})
        graded[name] = autograde(name, class_)
    return graded

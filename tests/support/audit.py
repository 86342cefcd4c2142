"""What the grader's audit modules share (tests/slow/test_alternative_solutions_ex*.py): the release notebooks, how an
alternative names its answer cell, and cases marked xfail where the grader gets them wrong."""

import re

import nbformat
import pytest

from support.course import REPO


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

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


# A fault left open: the rule probe drops every statement that writes a pinned upstream gradient (answer_code: "the
# pins stand in for them"), and starts at its latest binding. That is right for the statements that compute it
# (Exercise 1's `dbndiff += ...` before dbndiff's check), wrong for one of the answer's own code that changes a given
# or already checked upstream gradient by its own name (`dhdrop = dhdrop * drop_mask`, `dhpreact *= bngain`): the
# re-run leaves that factor out, and a right answer loses every point with a hint that names the factor as missing.
UPSTREAM_CHANGED = (
    "the rule probe drops a statement of the answer's code that changes its given or checked upstream gradient by "
    "that gradient's own name (rerun.answer_code leaves out every statement writing a pin), so the re-run misses "
    "the factor and a right answer loses its step; a fix needs to know where each pin's value was handed over"
)

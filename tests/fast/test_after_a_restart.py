"""A student whose kernel has restarted (or who opens a notebook again) and runs one cell reads what to run, in the
edition's language, instead of a NameError from the cell's check or a traceback from inside the helper cell.

Run as a cold student on Colab runs it: each cell alone, in a namespace where nothing of the notebook is defined.
"""

import contextlib
import io

import nbformat
import pytest
from support.course import ASSIGNMENT, REPO

from autograder.authoring import guarded_checks

EDITIONS = {"en": REPO / "release" / ASSIGNMENT, "ru": REPO / "editions" / "ru" / ASSIGNMENT}
EDITIONS["zh"] = REPO / "editions" / "zh" / ASSIGNMENT
NOTEBOOKS = sorted(p.stem for p in EDITIONS["en"].glob("*.ipynb"))
HELPER_CELLS = {"self-check-helpers", "training-checks", "bug-hunt-helpers", "optional-helpers"}
NOT_RUN = {  # the first words of the guard's line in each edition
    "en": "✘ Not checked yet",
    "ru": "✘ Ещё не проверено",
    "zh": "✘ 尚未检查",
}
SET_UP_FIRST = {"en": "Run the cells above first", "ru": "Сначала выполните ячейки выше", "zh": "请先从笔记本开头起"}


def cells(edition, name):
    return nbformat.read(EDITIONS[edition] / f"{name}.ipynb", as_version=4).cells


def run_alone(source):
    """The cell's code in an empty namespace, as a fresh kernel runs it: (what it printed, the exception or None)."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(source, "<cell>", "exec"), {})
    except Exception as error:  # noqa: BLE001 (what the student would see)
        return out.getvalue(), error
    return out.getvalue(), None


@pytest.mark.parametrize("edition", sorted(EDITIONS))
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_check_cell_run_after_a_restart_says_what_to_run(edition, name):
    """Every check cell (graded or not, optional exercises too) prints the instruction and raises nothing."""
    guarded = [c for c in cells(edition, name) if c.get("id") not in HELPER_CELLS and " in globals():\n" in c.source]
    assert len(guarded) >= 3, f"{name}: its check cells are not guarded"
    for cell in guarded:
        printed, error = run_alone(cell.source)
        assert error is None, f"{name} {cell.id}: {error!r}"
        assert printed.startswith(NOT_RUN[edition]), f"{name} {cell.id}: {printed!r}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_check_cell_of_the_sources_is_guarded(name):
    """No cell that is one call of a notebook's function is left unguarded (a new check cell is guarded by
    ``python -m autograder.authoring``), and guarding again changes nothing."""
    nb = nbformat.read(REPO / "source" / ASSIGNMENT / f"{name}.ipynb", as_version=4)
    defined = guarded_checks._defined(nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("solution"):
            assert guarded_checks.guard_cell(cell.source, defined) == cell.source, f"{name} {cell.id}"


def test_the_guard_is_written_anew_and_keeps_the_hidden_tests():
    call = 'self_check("h", "W2",\n           "b2")  # a table'
    source = f"# Graded: dh\n{call}\n### BEGIN HIDDEN TESTS\nreport(globals())\n### END HIDDEN TESTS"
    once = guarded_checks.guard_cell(source, {"self_check"})
    assert once.startswith(
        '# Graded: dh\nif "self_check" in globals():\n    self_check("h", "W2",\n               "b2")'
    )
    assert once.endswith("### BEGIN HIDDEN TESTS\nreport(globals())\n### END HIDDEN TESTS")
    assert guarded_checks.guard_cell(once, {"self_check"}) == once
    outdated = once.replace(guarded_checks.NOT_RUN, "✘ old words")
    assert guarded_checks.guard_cell(outdated, {"self_check"}) == once
    assert guarded_checks.guard_cell("print(1)", {"self_check"}) == "print(1)"  # not a function of the notebook
    assert guarded_checks.guard_cell("x = self_check()", {"self_check"}) == "x = self_check()"
    prepared = "rows = x.sum(1)  # its argument\ncheck_value('rows', 0)"  # assignments before the call: guarded with it
    twice = guarded_checks.guard_cell(prepared, {"check_value"})
    assert twice.startswith('if "check_value" in globals():\n    rows = x.sum(1)  # its argument\n    check_value(')
    assert guarded_checks.guard_cell(twice, {"check_value"}) == twice
    assert guarded_checks.guard_cell("steps = 1\nif steps:\n    self_check()", {"self_check"}).startswith("steps")


@pytest.mark.parametrize("edition", sorted(EDITIONS))
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_helper_cell_run_before_the_setup_says_so_in_words(edition, name):
    """The helper cells stop at their first lines with the instruction, not with a NameError from line 500."""
    helpers = [c for c in cells(edition, name) if c.get("id") in HELPER_CELLS]
    assert helpers
    for cell in helpers:
        printed, error = run_alone(cell.source)
        assert isinstance(error, RuntimeError), f"{name} {cell.id}: {error!r}"
        assert str(error).startswith(SET_UP_FIRST[edition]), f"{name} {cell.id}: {error}"
        assert error.__traceback__.tb_next.tb_lineno < 10  # raised at the top of the cell, not inside its code

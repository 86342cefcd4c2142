"""CheckCellMetadataOnce (nbgrader's CheckCellMetadata with the schema compiled once) passes and fails exactly the
notebooks nbgrader's own does, with the same kind of error."""

import copy

import nbformat
import pytest
from nbgrader.preprocessors import CheckCellMetadata
from support.course import ASSIGNMENT, REPO

from autograder.preprocessors import CheckCellMetadataOnce

SOURCE = REPO / "source" / ASSIGNMENT / "ex1_atomic_backward.ipynb"


def _graded(nb) -> dict:
    return next(c.metadata["nbgrader"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))


def _locked(nb) -> dict:
    return next(c.metadata["nbgrader"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("locked"))


CORRUPTIONS = {
    "as released": lambda nb: None,
    "points of the wrong type": lambda nb: _graded(nb).update(points="many"),
    "points missing": lambda nb: _graded(nb).pop("points"),
    "an unknown key": lambda nb: _graded(nb).update(hacked=True),
    "an empty grade_id": lambda nb: _locked(nb).update(grade_id=""),
    "grade_id of the wrong type": lambda nb: _locked(nb).update(grade_id=7),
    "an older schema": lambda nb: _graded(nb).update(schema_version=2),
    "a newer schema": lambda nb: _graded(nb).update(schema_version=4),
    "a duplicated grade_id": lambda nb: _graded(nb).update(grade_id=_locked(nb)["grade_id"]),
    "no nbgrader metadata left": lambda nb: [c.metadata.pop("nbgrader", None) for c in nb.cells],
}


def _outcome(preprocessor, nb) -> str:
    try:
        preprocessor.preprocess(copy.deepcopy(nb), {})
    except Exception as error:  # noqa: BLE001 (the kind of error is what is compared)
        return type(error).__name__
    return "valid"


@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_the_same_verdict_as_nbgraders_own_check(corruption):
    nb = nbformat.read(SOURCE, as_version=4)
    CORRUPTIONS[corruption](nb)
    ours, theirs = _outcome(CheckCellMetadataOnce(), nb), _outcome(CheckCellMetadata(), nb)
    assert ours == theirs
    assert (ours == "valid") == (corruption in ("as released", "no nbgrader metadata left"))


def test_the_check_writes_no_default_into_the_metadata():
    nb = nbformat.read(SOURCE, as_version=4)
    for cell in nb.cells:  # cells that leave out what the schema has a default for
        cell.metadata.get("nbgrader", {}).pop("task", None)
    before = copy.deepcopy([cell.metadata for cell in nb.cells])
    CheckCellMetadataOnce().preprocess(nb, {})
    assert [cell.metadata for cell in nb.cells] == before

"""release/ follows source/, checked without nbgrader's run (the byte-for-byte check is tests/slow/test_release.py).

A change to source/ that holds no words (a visible check's code, a cell's points) leaves the catalogs as they are,
so nothing in the fast tier said that release/ was stale: students would open the old notebook until the slow tier
ran. Here every release cell is its source cell with the solution and hidden regions cut, and with the same
nbgrader metadata (grade_id, points, locked) but the checksum.
"""

import nbformat
import pytest
from support.course import ASSIGNMENT, REPO

from autograder.authoring import SOURCE_DIR
from autograder.authoring.notebooks import unmarked_solutions

RELEASE = REPO / "release" / ASSIGNMENT
STUB = {"# YOUR CODE HERE", "raise NotImplementedError()"}  # what generate_assignment writes for a solution
FIX = "release/ is stale: run .venv/bin/python -m autograder.authoring and commit release/ with source/"


def outside_regions(source: str) -> list:
    """The cell's lines outside its ### BEGIN ... ### END regions (solutions and hidden tests)."""
    lines, inside = [], False
    for line in source.split("\n"):
        if line.strip().startswith("### BEGIN "):
            inside = True
        elif line.strip().startswith("### END "):
            inside = False
        elif not inside:
            lines.append(line)
    return lines


def released(source: str) -> list:
    """The lines of a release cell that came from its source cell: the stub of a solution left out."""
    return [line for line in source.split("\n") if line.strip() not in STUB]


def metadata(cell) -> dict:
    return {k: v for k, v in cell.metadata.get("nbgrader", {}).items() if k not in ("checksum", "cell_type")}


@pytest.mark.parametrize("name", sorted(p.name for p in SOURCE_DIR.glob("*.ipynb")))
def test_every_release_cell_is_its_source_cell_without_solutions_and_hidden_tests(name):
    assert (RELEASE / name).exists(), f"release/{name} is missing: {FIX}"
    source = nbformat.read(SOURCE_DIR / name, as_version=4).cells
    release = nbformat.read(RELEASE / name, as_version=4).cells
    assert [c.get("id") for c in release] == [c.get("id") for c in source], f"{name}: the cells differ. {FIX}"
    unmarked = unmarked_solutions(SOURCE_DIR / name)
    assert not unmarked, "; ".join(unmarked)  # not 'release/ is stale': the authoring command stops on it
    for ours, theirs in zip(source, release):
        where = f"{name}, cell {metadata(ours).get('grade_id') or ours.get('id')}"
        assert released(theirs.source) == outside_regions(ours.source), f"{where}: its text differs. {FIX}"
        assert metadata(theirs) == metadata(ours), f"{where}: its nbgrader metadata differs. {FIX}"


def test_release_holds_what_source_holds():
    names = sorted(p.name for p in SOURCE_DIR.iterdir() if p.name != ".ipynb_checkpoints")
    assert sorted(p.name for p in RELEASE.iterdir()) == names, f"release/ has other files than source/. {FIX}"


def test_the_in_process_harness_names_a_release_older_than_its_source():
    """A maintainer who added Exercise 2's dh and graded the cases before the authoring command was told by
    test_points_table to update POINTS, which was right: release/, which the cases are handed in on, had no dh yet.
    The harness now says so in one line before it grades."""
    from support.in_process import release_differs

    source = nbformat.read(SOURCE_DIR / "ex2_cross_entropy_backward.ipynb", as_version=4)
    release = nbformat.read(RELEASE / "ex2_cross_entropy_backward.ipynb", as_version=4)
    assert release_differs(release, source) is None
    older = nbformat.v4.new_notebook(
        cells=[c for c in release.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "test_dlogits"]
    )
    assert release_differs(older, source) == (
        "release/ is older than source/ (cells only in source/: ['test_dlogits'], only in release/: []): "
        "run .venv/bin/python -m autograder.authoring, then the tests again"
    )
    swapped = nbformat.v4.new_notebook(cells=[*release.cells[-3:], *release.cells[:-3]])
    assert "its cells are in another order" in release_differs(swapped, source)


def test_a_solution_cell_without_its_region_is_named_with_what_to_do(tmp_path, capsys):
    """A maintainer who wrote Exercise 2's answer_dh with the solution line but no ### BEGIN SOLUTION region ran the
    authoring command: nbgrader released the cell as its stub alone (the comment saying what is asked was gone too),
    and the fast tier said 'release/ is stale: run .venv/bin/python -m autograder.authoring', which had just run. The
    authoring command now stops before release/, naming the cell and what to write."""
    nb = nbformat.read(SOURCE_DIR / "ex2_cross_entropy_backward.ipynb", as_version=4)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "answer_dlogits")
    answer.source = (
        "# dlogits: the gradient of loss with respect to logits\n    ### BEGIN SOLUTION\ndlogits = 0\n### END SOLUTION"
    )
    nbformat.write(nb, tmp_path / "indented.ipynb")
    assert unmarked_solutions(tmp_path / "indented.ipynb") == []  # nbgrader reads an indented region too
    answer.source = "# dlogits: the gradient of loss with respect to logits\ndlogits = 0"
    nbformat.write(nb, tmp_path / "ex2.ipynb")
    said = unmarked_solutions(tmp_path / "ex2.ipynb")
    assert len(said) == 1 and "cell answer_dlogits: a solution cell with no '### BEGIN SOLUTION'" in said[0], said
    assert "put the solution between them" in said[0]

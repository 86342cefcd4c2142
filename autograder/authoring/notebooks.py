"""For course maintainers: keep the notebooks' shared setup cells equal to one definition.

Every notebook must run alone (on Colab as uploaded), so each repeats the setup: imports,
data, dataset, parameters, batch, forward pass, self-check helpers. Each such cell is
defined once, in ``autograder/authoring/shared_cells/<grade_id>.py``, and appears in the notebooks as
the locked cell with that grade_id. ``python -m autograder.authoring`` rewrites every copy
from its definition and writes the notebooks in the one stable format the repository
keeps (outputs cleared); the tests fail when a copy has drifted.
"""

from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
SHARED_CELLS = HERE / "shared_cells"
COURSE_ROOT = HERE.parent.parent
SOURCE_DIR = COURSE_ROOT / "source" / "backprop_ninja"


def grade_id(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


def shared_cell(cell_id: str) -> str | None:
    """The one definition of the cell with this grade_id, if it is a shared cell."""
    path = SHARED_CELLS / f"{cell_id}.py"
    return path.read_text().rstrip("\n") if cell_id and path.exists() else None


def stale_setup_cells(nb) -> list:
    """grade_ids of the notebook's shared cells that differ from their definition."""
    return [grade_id(c) for c in nb.cells if shared_cell(grade_id(c)) not in (None, c.source)]


def write_notebook(nb, path: Path) -> None:
    """Outputs cleared, execution counts removed, one stable JSON layout."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.validate(nb)
    Path(path).write_text(nbformat.writes(nb, version=4).rstrip("\n") + "\n")


def sync(paths, *rewrites) -> list:
    """Rewrite every shared cell of these notebooks from its definition, then apply each ``rewrite(nb, name)``
    (other generated cells); return the changed notebooks."""
    changed = []
    for path in paths:
        before = Path(path).read_text()
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            cell.source = shared_cell(grade_id(cell)) or cell.source
        for rewrite in rewrites:
            rewrite(nb, Path(path).stem)
        write_notebook(nb, path)
        if Path(path).read_text() != before:
            changed.append(path)
    return changed

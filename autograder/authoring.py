"""For course maintainers: keep the notebooks' shared setup cells equal to one definition.

Every notebook must run alone (on Colab as uploaded), so each repeats the setup: imports,
data, dataset, parameters, batch, forward pass. Those cells are defined once, in
``autograder/shared_cells/<name>.py``, and appear in the notebooks as locked cells with
grade_id ``setup_<name>``. ``python -m autograder.authoring`` rewrites every copy from the
definition and writes the notebooks in the one stable format the repository keeps
(outputs cleared); the tests fail when a copy has drifted.
"""

import sys
from pathlib import Path

import nbformat

PACKAGE = Path(__file__).resolve().parent
SHARED_CELLS = PACKAGE / "shared_cells"
COURSE_ROOT = PACKAGE.parent
SOURCE_DIR = COURSE_ROOT / "source" / "backprop_ninja"


def shared_cell(name: str) -> str:
    return (SHARED_CELLS / f"{name}.py").read_text().rstrip("\n")


def grade_id(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


def stale_setup_cells(nb) -> list:
    """grade_ids of the notebook's shared setup cells that differ from their definition."""
    return [grade_id(c) for c in nb.cells
            if (SHARED_CELLS / f"{grade_id(c).removeprefix('setup_')}.py").exists()
            and grade_id(c).startswith("setup_") and c.source != shared_cell(grade_id(c).removeprefix("setup_"))]


def write_notebook(nb, path: Path) -> None:
    """Outputs cleared, execution counts removed, one stable JSON layout."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.validate(nb)
    Path(path).write_text(nbformat.writes(nb, version=4).rstrip("\n") + "\n")


def sync(paths) -> list:
    changed = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        before = nbformat.writes(nb)
        for cell in nb.cells:
            name = grade_id(cell).removeprefix("setup_")
            if grade_id(cell).startswith("setup_") and (SHARED_CELLS / f"{name}.py").exists():
                cell.source = shared_cell(name)
        write_notebook(nb, path)
        if nbformat.writes(nbformat.read(path, as_version=4)) != before:
            changed.append(path)
    return changed


if __name__ == "__main__":
    notebooks = sorted(SOURCE_DIR.glob("*.ipynb"))
    for path in sync(notebooks):
        print(f"updated {path.relative_to(COURSE_ROOT)}")
    print("now run: nbgrader generate_assignment backprop_ninja --force", file=sys.stderr)

"""Keep what the notebooks repeat equal to one definition: the shared setup cells, lecture cells and course links.

Every notebook must run alone (on Colab, as uploaded), so each repeats the setup; each such cell is defined once, in
``shared_cells/<grade_id>.py``. ``python -m autograder.authoring`` rewrites the copies, in the one stable format the
repository keeps (outputs cleared); the tests fail when a copy has drifted.
"""

import re
from functools import cache
from pathlib import Path

import nbformat

from ..common.naming import LECTURE_CELL, grade_id

HERE = Path(__file__).resolve().parent
SHARED_CELLS = HERE / "shared_cells"
COURSE_ROOT = HERE.parent.parent
SOURCE_DIR = COURSE_ROOT / "source" / "backprop_ninja"
COURSE_DIR = COURSE_ROOT / "course"


def authored_notebooks() -> list:
    """The notebooks the authoring tool keeps: the nbgrader sources and the warm-up notebooks of course/."""
    return sorted(SOURCE_DIR.glob("*.ipynb")) + sorted(COURSE_DIR.glob("*.ipynb"))


def shared_cell(cell_id: str) -> str | None:
    """The one definition of the cell with this grade_id, if it is a shared cell."""
    from .from_engine import expanded

    path = SHARED_CELLS / f"{cell_id}.py"
    return expanded(path.read_text().rstrip("\n")) if cell_id and path.exists() else None


@cache
def course_shapes() -> tuple:
    """The shapes (``honesty.course_cells``) of the locked code cells of the course's notebooks, as a student runs
    them (hidden tests left out), the shared cells as their definitions have them; this helper cell's own shape from
    its definition too (the shapes are among its words, which a shape leaves out)."""
    from ..engine.honesty import cell_code, course_cells
    from ..engine.reference import strip_hidden
    from .from_engine import MARKER, block

    helper = (SHARED_CELLS / "self_check_helpers.py").read_text().rstrip("\n")
    sources = [helper.replace(MARKER, block(shapes=()))]
    for path in authored_notebooks():
        for cell in nbformat.read(path, as_version=4).cells:
            locked = cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("locked")
            if locked and grade_id(cell) != "self_check_helpers":
                sources.append(generated_source(cell, Path(path).stem))
    texts = [strip_hidden(source) for source in sources]  # and as IPython's history holds them
    shapes = {course_cells.cell_shape(text) for source in texts for text in (source, cell_code.as_run(source) or "")}
    return tuple(sorted(shapes - {None}))


def stale_setup_cells(nb) -> list:
    """grade_ids of the notebook's shared cells that differ from their definition."""
    return [grade_id(c) for c in nb.cells if shared_cell(grade_id(c)) not in (None, c.source)]


def generated_source(cell, notebook: str) -> str:
    """What the cell must hold: a shared cell's definition, the lecture cell, markdown with absolute course links."""
    from .course_links import with_absolute_course_links
    from .lecture import lecture_cell

    if cell.cell_type == "markdown":
        return lecture_cell(notebook) if cell.get("id") == LECTURE_CELL else with_absolute_course_links(cell.source)
    return shared_cell(grade_id(cell)) or cell.source


def stale_cells(path: Path) -> list:
    """The ids of the notebook's cells that ``python -m autograder.authoring`` would rewrite."""
    nb = nbformat.read(path, as_version=4)
    return [c.get("id") for c in nb.cells if generated_source(c, Path(path).stem) != c.source]


SOLUTION_REGION = re.compile(r"^[ \t]*### BEGIN SOLUTION[ \t]*$.*^[ \t]*### END SOLUTION[ \t]*$", re.M | re.S)


def unmarked_solutions(path: Path) -> list:
    """One line for each solution cell of a source notebook with no ``### BEGIN SOLUTION`` ... ``### END SOLUTION``
    region: nbgrader's release replaces such a cell whole with its stub, the line that says what is asked too."""
    nb, path = nbformat.read(path, as_version=4), Path(path)
    shown = path.relative_to(COURSE_ROOT) if path.is_relative_to(COURSE_ROOT) else path
    return [
        f"{shown}, cell {grade_id(c)}: a solution cell with no '### BEGIN SOLUTION' ... "
        "'### END SOLUTION' region, so the release would show nbgrader's stub alone; put the solution between them, "
        "under the comment that says what is asked (docs/maintaining.md, 'Adding a graded cell by hand')"
        for c in nb.cells
        if c.cell_type == "code"
        and c.metadata.get("nbgrader", {}).get("solution")
        and not SOLUTION_REGION.search(c.source)
    ]


def stable_text(nb) -> str:
    """Outputs cleared, execution counts removed, one stable JSON layout."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.validate(nb)
    return nbformat.writes(nb, version=4).rstrip("\n") + "\n"


def write_notebook(nb, path: Path) -> None:
    Path(path).write_text(stable_text(nb))


def sync(paths, *rewrites) -> list:
    """Rewrite every generated cell of these notebooks (``generated_source``), then apply each
    ``rewrite(nb, name)`` (other generated cells); return the changed notebooks."""
    changed = []
    for path in paths:
        before = Path(path).read_text()
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            cell.source = generated_source(cell, Path(path).stem)
        for rewrite in rewrites:
            rewrite(nb, Path(path).stem)
        write_notebook(nb, path)
        if Path(path).read_text() != before:
            changed.append(path)
    return changed

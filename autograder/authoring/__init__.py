"""For course maintainers: the notebooks' shared cells, the Colab badges, demo classes and submissions.

notebooks      the generated cells (shared setup, lecture, course links) kept equal to one definition; stable format;
               the solution cells of source/ without their solution region
shared_cells/  the setup cells every notebook repeats, each defined once as <grade_id>.py
graded_cells   Exercises 1 and 5's answer and graded test cells, one pair per step, generated from their tables
lecture        the lecture's chapters, and the ``lecture`` cell of every notebook
course_links   the notebooks' links into course/, absolute (they work on Colab), from the one repository address
badges         the Colab badge tables of the READMEs, from the one repository address
submissions    student submissions built from the release: solved, blank, or with chosen changes
demo           ``backprop-ninja demo``: a small class graded end to end
"""

from .notebooks import (
    COURSE_ROOT,
    SHARED_CELLS,
    SOURCE_DIR,
    authored_notebooks,
    grade_id,
    shared_cell,
    stale_cells,
    stale_setup_cells,
    sync,
)

__all__ = [
    "COURSE_ROOT",
    "SHARED_CELLS",
    "SOURCE_DIR",
    "authored_notebooks",
    "grade_id",
    "shared_cell",
    "stale_cells",
    "stale_setup_cells",
    "sync",
]

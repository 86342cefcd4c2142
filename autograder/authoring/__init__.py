"""For course maintainers: the notebooks' shared cells, the Colab badges, demo classes and submissions.

notebooks      the shared setup cells (``shared_cells/``) kept equal in every source notebook; stable format
shared_cells/  the setup cells every notebook repeats, each defined once as <grade_id>.py
graded_cells   Exercise 1's answer and graded test cells, one pair per step, generated from the rules table
badges         the Colab badge tables of the READMEs, from the one repository address
submissions    student submissions built from the release: solved, blank, or with chosen changes
demo           ``backprop-ninja demo``: a small class graded end to end
"""

from .notebooks import COURSE_ROOT, SHARED_CELLS, SOURCE_DIR, grade_id, shared_cell, stale_setup_cells, sync

__all__ = ["COURSE_ROOT", "SHARED_CELLS", "SOURCE_DIR", "grade_id", "shared_cell", "stale_setup_cells", "sync"]

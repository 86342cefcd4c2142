"""``python -m autograder.authoring``: rewrite the generated cells of the source notebooks.

The shared setup cells (``shared_cells/``) in every notebook, and Exercise 1's graded cells (``graded_cells``).
"""

import sys

from . import graded_cells
from .notebooks import COURSE_ROOT, SOURCE_DIR, sync

for path in sync(sorted(SOURCE_DIR.glob("*.ipynb")), graded_cells.sync):
    print(f"updated {path.relative_to(COURSE_ROOT)}")
print("now run: nbgrader generate_assignment backprop_ninja --force", file=sys.stderr)

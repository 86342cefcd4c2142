"""``python -m autograder.authoring``: rewrite the generated cells of the source and warm-up notebooks.

The shared setup cells (``shared_cells/``), the lecture cells and course links in every notebook, and
Exercises 1 and 5's graded cells (``graded_cells``).
"""

import sys

from . import graded_cells
from .notebooks import COURSE_ROOT, authored_notebooks, sync


def main() -> None:
    for path in sync(authored_notebooks(), graded_cells.sync):
        print(f"updated {path.relative_to(COURSE_ROOT)}")
    print("now run: nbgrader generate_assignment backprop_ninja --force", file=sys.stderr)


if __name__ == "__main__":
    main()

"""``python -m autograder.authoring``: rewrite every shared setup cell of the source notebooks."""

import sys

from .notebooks import COURSE_ROOT, SOURCE_DIR, sync

for path in sync(sorted(SOURCE_DIR.glob("*.ipynb"))):
    print(f"updated {path.relative_to(COURSE_ROOT)}")
print("now run: nbgrader generate_assignment backprop_ninja --force", file=sys.stderr)

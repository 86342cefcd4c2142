"""``python -m autograder.authoring``: rewrite the generated cells of the source and warm-up notebooks."""

import sys

from .notebooks import COURSE_ROOT, authored_notebooks, sync

for path in sync(authored_notebooks()):
    print(f"updated {path.relative_to(COURSE_ROOT)}")
print("now run: nbgrader generate_assignment backprop_ninja --force", file=sys.stderr)

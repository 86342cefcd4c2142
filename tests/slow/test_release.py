"""The committed release/ is byte for byte what nbgrader generate_assignment makes of source/ (its cells alone, faster:
tests/fast/test_release_follows_source.py)."""

import filecmp

from support.course import ASSIGNMENT, REPO


def test_committed_release_is_what_generate_assignment_makes(course):
    fresh, committed = course.root / "release" / ASSIGNMENT, REPO / "release" / ASSIGNMENT
    comparison = filecmp.dircmp(fresh, committed, ignore=[".ipynb_checkpoints"])
    assert not comparison.left_only and not comparison.right_only, "release/ has other files than a fresh release"
    for name in comparison.common_files:
        assert (fresh / name).read_bytes() == (committed / name).read_bytes(), f"release/{name} is stale"

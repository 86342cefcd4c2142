"""Exercise 6 across a class: students who entered the same BUG_HUNT_ID had the same bugs, and are named for it.

Each student's id is read from their autograded notebook, from the metadata that JudgeAnswers wrote into its graded
cells (``Verdict.facts``): the grader's own record, never an output the student's kernel made (docs/design/bug-hunt.md).
"""

import json
from pathlib import Path

from ...common.diagnoses import METADATA
from ...common.problems import Problem

NOTEBOOK = "ex6_bug_hunt"
FACT = "bug_hunt_id"
GRADED = ("test_found", "test_bug_1", "test_bug_2", "test_bug_3")  # the cells whose verdicts carry the id


def entered_id(path: Path) -> str | None:
    """The id (as the bug sets read it) in the graded cells of an autograded Exercise 6, or None."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for cell in cells if isinstance(cells, list) else []:
        meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell, dict) else {}
        if not (meta.get("grade") and meta.get("grade_id") in GRADED):
            continue
        for output in cell.get("outputs", []):
            facts = (output.get("metadata", {}).get(METADATA) or {}).get("facts") if isinstance(output, dict) else None
            if isinstance(facts, dict) and isinstance(facts.get(FACT), str):
                return facts[FACT]
    return None


def shared_ids(root: Path, assignment: str, students: list) -> list:
    """A ``shared_bug_hunt_id`` problem for every student whose id another student of the class entered too."""
    by_id = {}
    for student in students:
        found = entered_id(Path(root) / "autograded" / student / assignment / f"{NOTEBOOK}.ipynb")
        if found:
            by_id.setdefault(found, []).append(student)
    problems = []
    for found, group in sorted(by_id.items()):
        for student in group if len(group) > 1 else ():
            others = ", ".join(s for s in group if s != student)
            shown = found if len(found) <= 60 else found[:57] + "..."  # an id is whatever a student typed
            alike = "both" if len(group) == 2 else f"all {len(group)}"
            detail = f"BUG_HUNT_ID {shown!r} was entered by {others} too: the same bugs for {alike}"
            problems.append(Problem(student, NOTEBOOK, "shared_bug_hunt_id", detail))
    return problems

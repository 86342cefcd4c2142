"""What the last ``grade`` run left for the next one (.grading/state.json): each student's keys,
graded notebooks, problems and total, so a run that regrades nobody reports the same problems."""

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ...common.problems import Problem


@dataclass
class StudentRecord:
    """One student as their last grading left them."""

    key: str
    """``changes.student_key`` of the files and the course they were graded from."""
    submission_key: str = ""
    """``changes.submission_key`` of those files (empty in a state written before it was kept)."""
    course_key: str = ""
    """``changes.course_key`` of the exercises and configuration they were graded with."""
    graded: list = field(default_factory=list)
    """The notebooks that were graded (and are in gradebook.db)."""
    problems: list = field(default_factory=list)
    """Every ``Problem`` found while staging and grading them."""
    complete: bool = False
    """False while grading is pending, or after nbgrader failed: the next run tries again."""
    total: float | None = None
    """Their total after that grading (late penalty taken off), for the regrade history."""

    def to_json(self) -> dict:
        return {**asdict(self), "problems": [p.to_json() for p in self.problems]}

    @classmethod
    def from_json(cls, data: dict) -> "StudentRecord":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["problems"] = [Problem.from_json(p) for p in data.get("problems", [])]
        return cls(**known)


class GradingState:
    """.grading/state.json, read at the start of a run and written as students finish and when grading stops."""

    def __init__(self, path: Path):
        self.path = path
        data = json.loads(path.read_text()) if path.is_file() else {}
        self.students = {s: StudentRecord.from_json(r) for s, r in data.get("students", {}).items()}
        self.collect_problems = [Problem.from_json(p) for p in data.get("collect_problems", [])]

    def collected(self, students: dict, problems: list) -> None:
        """A download collected ``students`` ({student: [notebooks]}) with ``problems``: an earlier download's problems
        stay for what this one does not hold (a download of late submissions after the class's). A problem of a
        notebook goes when this download holds that notebook of the student's, or a problem of it; one of no notebook
        (a file that matched none) when it holds anything of the student's."""
        held = {(s, n) for s, notebooks in students.items() for n in notebooks}
        held |= {(p.student, p.notebook) for p in problems}
        again = {s for s, _ in held}
        stays = lambda p: (p.student, p.notebook) not in held if p.notebook else p.student not in again
        self.collect_problems = [p for p in self.collect_problems if stays(p)] + problems

    def save(self) -> None:
        """Write it whole or not at all: a run killed while saving leaves the last state."""
        data = {
            "students": {s: r.to_json() for s, r in self.students.items()},
            "collect_problems": [p.to_json() for p in self.collect_problems],
        }
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(partial, self.path)

"""The misconceptions of a class: the grader's diagnosis of every wrong answer, as a kind of ``common.diagnoses``.

JudgeAnswers writes into every graded cell of the autograded notebook its verdict's text (a stream output,
``engine.verdict.Verdict.text``) and its points with its diagnosis kind (the execute_result, metadata
``{"backprop_ninja": {"diagnosis": kind}}``, None when the step earned every point). The kind is read from there,
never from the words, which may change or be translated.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from ...common.diagnoses import DIAGNOSES, METADATA, OTHER


@dataclass(frozen=True)
class Diagnosis:
    """One wrong (or partly wrong) graded step of one student, as the grader explained it."""

    student: str
    notebook: str
    step: str
    """The graded cell's grade_id (``test_dprobs``), as in grades.csv's columns."""
    kind: str
    """One of ``common.diagnoses.DIAGNOSES``."""
    reason: str
    """The grader's words under the verdict's head, as the student read them."""


def cell_diagnosis(cell: dict) -> tuple | None:
    """(kind, words) of a graded cell that lost points, from the outputs JudgeAnswers made; None when it earned
    them all, or was not judged (no kind in its outputs)."""
    kinds = [
        o.get("metadata", {}).get(METADATA, {}).get("diagnosis")
        for o in cell.get("outputs", [])
        if o.get("output_type") == "execute_result"
    ]
    if not kinds or kinds[-1] is None:
        return None
    text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    kind = kinds[-1] if kinds[-1] in DIAGNOSES else OTHER
    return kind, "\n".join(line.strip() for line in text.strip("\n").splitlines()[1:])


def read_diagnoses(root: Path, assignment: str, students: list, notebooks: list) -> list:
    """Every lost step of every student, read from autograded/<student>/<assignment>/<notebook>.ipynb."""
    found = []
    for student in students:
        for notebook in notebooks:
            path = root / "autograded" / student / assignment / f"{notebook}.ipynb"
            try:
                cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            except (OSError, ValueError, KeyError, TypeError):
                continue  # not graded: problems.json says why
            for cell in cells:
                meta = cell.get("metadata", {}).get("nbgrader", {})
                if not (meta.get("grade") and meta.get("points")):
                    continue
                diagnosis = cell_diagnosis(cell)
                if diagnosis is not None:
                    found.append(Diagnosis(student, notebook, meta.get("grade_id", ""), *diagnosis))
    return found


def most_frequent(diagnoses: list, top: int = 3) -> dict:
    """(notebook, step) -> [(kind, [students])] of its ``top`` most frequent kinds, most students first."""
    by_step = {}
    for d in diagnoses:
        by_step.setdefault((d.notebook, d.step), {}).setdefault(d.kind, []).append(d.student)
    return {
        key: sorted(kinds.items(), key=lambda item: (-len(item[1]), item[0]))[:top] for key, kinds in by_step.items()
    }

"""The misconceptions of a class: the grader's diagnosis of every wrong answer, sorted into a few kinds.

JudgeAnswers writes its verdict into every graded cell of the autograded notebook
(``✘ dprobs: 0 of 1 point`` and then its reasons, see ``engine.judge.Verdict.text``). Here the
first reason of each wrong or partly wrong verdict is sorted into one of the ``DIAGNOSES`` below,
the first whose pattern it matches (the order matters: a shape problem before a wrong value).
A reason that matches none is ``other``; a fast test keeps the engine's messages and this table
in step.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

# kind -> (how the report names it, a pattern of the engine's words for it)
DIAGNOSES = {
    "not_answered": ("not answered", r"not answered yet"),
    "did_not_run": (
        "the cell did not run to the end (the kernel died, or a time limit stopped it)",
        r"kernel died before this cell|time limit before this cell|interrupted before it reported",
    ),
    "no_answer": (
        "no answer reached the grader (reports suppressed or the grading module replaced)",
        r"no answer reached the grader",
    ),
    "autograd": ("taken from autograd", r"computed with autograd|autograd's answer"),
    "not_a_float32_tensor": ("not a float32 tensor", r"should be a torch tensor|has dtype"),
    "keepdim": (
        "keepdim dropped or a size-1 dimension added",
        r"was dropped\. Keep it|extra dimension of size 1|of size 1 is one too many",
    ),
    "not_summed_over_broadcast": (
        "not summed over a broadcast dimension",
        r"must be summed (over it|along that dimension)",
    ),
    "wrong_dimension": (
        "summed or normalised over the wrong dimension",
        r"instead of dimension|over the wrong dimension|sums over the wrong dimension",
    ),
    "transposed": ("transposed, or dimensions in the wrong order", r"transposed|dimensions are in the wrong order"),
    "wrong_shape": ("wrong shape", r"has shape .* but .* has shape"),
    "bessel": ("n for n-1 (Bessel's correction)", r"Bessel|n/\(n-1\)|\(n-1\)/n"),
    "batch_size": ("a division by the batch size missing or extra", r"n = \d+ times too|-n = -\d+ times"),
    "wrong_sign": ("wrong sign", r"wrong sign"),
    "constant_factor": ("off by a constant factor", r"twice the right|half the right|constant factor"),
    "missing_path": (
        "a path of the gradient missing",
        r"path through \w+ is missing|missing the path through|only the direct path",
    ),
    "missing_factor": ("a factor of the local derivative missing", r"is missing bngain"),
    "path_twice": ("a path added twice", r"added twice"),
    "passed_through": ("upstream gradient passed through unchanged", r"passed through unchanged"),
    "not_accumulated": ("repeated indices not accumulated", r"does not add up repeated indices"),
    "changed_in_place": ("changed in place after its check", r"changed after its check"),
    "not_finite": ("NaN or infinite values", r"NaN or infinite"),
    "all_zeros": ("all zeros", r"is all zeros"),
    "target_term": (
        "the target's term misplaced",
        r"target's term|term for the target|log-probabilities where|not normalised",
    ),
    "wrong_values": ("wrong values (re-derive the local derivative)", r"entries wrong|Re-derive"),
    "unreadable": ("the answer could not be read", r"could not (be )?read|tampered"),
}
OTHER = "other"
NOT_ATTEMPTED = {"not_answered", "did_not_run", "no_answer"}  # no answer to learn a misconception from
_PATTERNS = [(kind, re.compile(pattern)) for kind, (_, pattern) in DIAGNOSES.items()]
_HEAD = re.compile(r"^([✔✘]) (.+?): ([\d.]+) of ([\d.]+) points?$")


def label(kind: str) -> str:
    return DIAGNOSES[kind][0] if kind in DIAGNOSES else "other reasons"


def classify(reason: str) -> str:
    """The diagnosis kind of one line of the grader's reasons."""
    return next((kind for kind, pattern in _PATTERNS if pattern.search(reason)), OTHER)


@dataclass(frozen=True)
class Diagnosis:
    """One wrong (or partly wrong) graded step of one student, as the grader explained it."""

    student: str
    notebook: str
    step: str
    """The graded cell's grade_id (``test_dprobs``), as in grades.csv's columns."""
    kind: str
    """One of ``DIAGNOSES``, or ``other``."""
    reason: str
    """The grader's first reason, word for word."""


def verdict_reason(text: str) -> str | None:
    """The first reason of a verdict that lost points, or None when it earned them all (or is no verdict)."""
    lines = text.strip("\n").splitlines()
    head = _HEAD.match(lines[0].strip()) if lines else None
    if head is None or float(head.group(3)) >= float(head.group(4)):
        return None
    reasons = [line.strip() for line in lines[1:] if line.strip() and not line.strip().startswith("(judged from")]
    return reasons[0] if reasons else ""


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
                text = "".join(
                    "".join(o.get("text", "")) for o in cell.get("outputs", []) if o.get("output_type") == "stream"
                )
                reason = verdict_reason(text)
                if reason is not None:
                    found.append(Diagnosis(student, notebook, meta.get("grade_id", ""), classify(reason), reason))
    return found


def most_frequent(diagnoses: list, top: int = 3) -> dict:
    """(notebook, step) -> [(kind, [students])] of its ``top`` most frequent kinds, most students first."""
    by_step = {}
    for d in diagnoses:
        by_step.setdefault((d.notebook, d.step), {}).setdefault(d.kind, []).append(d.student)
    return {
        key: sorted(kinds.items(), key=lambda item: (-len(item[1]), item[0]))[:top] for key, kinds in by_step.items()
    }

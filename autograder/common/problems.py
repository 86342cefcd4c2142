"""Why a student has no grade or only part of one: the ``Problem`` type and the table of its kinds.

Every module that finds a problem (collect, repair, staging, the grading kernel, the worker pool)
makes a ``Problem``; problems.json, the command's summary, its ``--help`` and the class report all
read the same ``KINDS`` table, in its order (most serious first).
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .editions import METADATA
from .shown import UNSHOWN_BEYOND_C0

# kind -> what it means, one line each; the order is the order of the report and the summary
KINDS = {
    # the grader could not grade the student at all
    "worker_killed": "a grading worker did not answer in time and was killed; the student is not graded",
    "grader_error": "nbgrader could not grade the submission; the student is not graded",
    "grader_time_limit": (
        "the grader's own work for the student (nbgrader's bookkeeping, feedback) ran over its time limit "
        "(grade --grader-time-limit); the student is not graded, the worker went on with the next"
    ),
    "feedback_failed": (
        "the student was graded, but nbgrader could not make their feedback pages (its error is in the detail); "
        "the grades stand: run grade again after fixing the cause"
    ),
    # while the notebook ran in the sandbox
    "kernel_died": "the kernel died (out of memory, os._exit, a crash); the cells after it scored 0",
    "notebook_time_limit": "the notebook was stopped at its wall-clock limit; cells after it scored 0",
    "cell_timeout": "a cell ran over its limit and was interrupted; the notebook went on",
    "memory_limit": "a cell ran out of memory; the notebook went on",
    "process_limit": "a cell hit the sandbox's limit on processes",
    "output_limit": (
        "a cell printed more than the output limit of a cell, or of the notebook's cells together; the rest of its "
        "output was dropped"
    ),
    "message_limit": (
        "a cell sent the grader one message over the limit for a message (SandboxedKernelManager.max_message_bytes), "
        "or large ones after the kernel's messages together passed four times that; each was read and dropped as it "
        "arrived, and the notebook went on"
    ),
    "kernel_files_discarded": (
        "the notebook wrote into its folder (files, links, pipes...); it worked in a copy inside the sandbox, so "
        "what it wrote was thrown away unread; the grade is unaffected"
    ),
    "files_left_out": (
        "files of the student's folder did not fit in the kernel's working folder (too large, too many, or "
        "unreadable) and were left out of it; the notebook ran without them"
    ),
    "no_answer_reported": (
        "the notebook ran to the end but no answer reached the grader: reports suppressed or the grading "
        "module replaced"
    ),
    # the files handed in
    "not_a_notebook": "the file is empty or not a Jupyter notebook; not graded",
    "too_large": "the file is over the size limit; not graded",
    "wrong_notebook": "another notebook was saved under this notebook's name; not graded",
    "missing_notebook": "no file for this notebook was handed in",
    "unmatched_file": "a file in the download matches none of the notebooks (or no student); not collected",
    "duplicate_file": (
        "several files for one notebook; the newest was taken (collecting submitted/ in place: the one already under "
        "the notebook's name)"
    ),
    "marked_late": (
        "the LMS marked the file late (Canvas's LATE), but its download carries no time of submission: no late "
        "penalty was taken (a timestamp.txt in the student's folder decides one)"
    ),
    "not_their_submission": (
        "a submission in nbgrader's exchange names one student but was made by another user (nbgrader submit "
        "--student, or a folder written into inbound); not collected (grade --from-exchange)"
    ),
    # nbgrader cells that were repaired before grading (the student is graded)
    "metadata_stripped": "cells had lost their nbgrader metadata; matched to the release and repaired",
    "duplicated_cell": "a graded or locked cell was copied; the first copy is graded",
    "deleted_cell": "a locked or graded cell was deleted; put back from the release",
    "moved_cell": (
        "an answer cell was below the graded cell that checks it, or above the step before it; put back just above "
        "its check"
    ),
    "metadata_changed": (
        "a graded or locked cell's nbgrader metadata (grade, solution, locked) was changed; graded with the release's"
    ),
    "unknown_cell": "cells claim grade_ids the release does not have; run as ordinary cells",
    "locked_cell_changed": (
        "locked cells were changed in the submission; graded with the course's version of each, the student's "
        "changes to them ignored"
    ),
    "bad_timestamp": (
        "the student's timestamp.txt holds no time nbgrader can read (it stopped nbgrader); graded without it, so "
        "without a late penalty"
    ),
    # after grading
    "late_submission": "handed in after the due date; the late penalty of nbgrader_config.py was taken off",
    "shared_bug_hunt_id": (
        "several students entered the same BUG_HUNT_ID in the bug hunt, so they had the same bugs: a copied notebook, "
        "or an id that is not their own; their grades stand, the instructor decides"
    ),
    "lookalike_ids": (
        "students' ids look alike (the same letters once case, accents, the LMS's number and letters of another script "
        "that look Latin are set aside): students of one name, or one who took a classmate's name; their grades "
        "stand: tell who is who before exporting grades"
    ),
    "renamed_on_lms": (
        "the LMS names a student otherwise than an earlier download did (a name changed there, the number, Canvas's "
        "user id or Moodle's participant number, the same): their files were collected as the student that number was"
    ),
    "other": "a problem this version of the grader has no name for (read from an older problems.json)",
}


MAX_DETAIL = 2000  # characters of a problem's detail, in problems.json, the report and the terminal


@dataclass(frozen=True)
class Problem:
    """One thing that went wrong for one student; problems.json holds a list of them."""

    student: str
    """The student's id (their folder in submitted/), or ``collect.UNKNOWN_STUDENT`` for a file nobody owns."""
    notebook: str | None
    """The notebook it concerns (a name from source/), or None when it concerns no single notebook."""
    kind: str
    """One of ``KINDS`` (written as ``"problem"`` in problems.json)."""
    detail: str
    """What happened, with the file, cell or limit, in words an instructor can act on."""
    words: object = field(default=None, compare=False, repr=False)
    """The detail as ``common.words.Words``, when a student reads it (the page of a notebook not graded), in their
    language; None: the English ``detail`` alone (a problem read from problems.json)."""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown problem kind {self.kind!r}: add it to grading/problems.py's KINDS")
        if len(self.detail) > MAX_DETAIL:  # it quotes a submission (a grade_id, a file name, an error): any length
            kept = MAX_DETAIL - 40
            object.__setattr__(self, "detail", f"{self.detail[:kept]}… ({len(self.detail) - kept:,} characters more)")

    def to_json(self) -> dict:
        """The problems.json shape: student, notebook, problem, detail."""
        return {"student": self.student, "notebook": self.notebook, "problem": self.kind, "detail": self.detail}

    @classmethod
    def from_json(cls, data: dict) -> "Problem":
        """Read one entry of problems.json; a kind this version does not know becomes ``other``, named in detail."""
        kind, detail = str(data.get("problem", "")), str(data.get("detail", ""))
        if kind not in KINDS:
            kind, detail = "other", f"{kind or 'unnamed'}: {detail}"
        notebook = data.get("notebook")
        return cls(str(data.get("student", "")), None if notebook is None else str(notebook), kind, detail)

    @classmethod
    def said(cls, student: str, notebook: str | None, kind: str, words, instructor_only: str = "") -> "Problem":
        """A problem whose detail is ``words``: ``Words`` (problems.json has them in English, ``instructor_only`` after
        them), or the instructor's text alone."""
        if isinstance(words, str):
            return cls(student, notebook, kind, words + instructor_only)
        return cls(student, notebook, kind, words.render() + instructor_only, words)

    @property
    def order(self) -> tuple:
        """problems.json's order: by student, then notebook, kind and detail."""
        return (self.student, self.notebook or "", self.kind, self.detail)


# The repairs a student is told of on their feedback page (what the notebook graded is not quite what they handed in);
# the intake and RestoreLockedCells write them into the graded notebook's metadata[METADATA][REPAIRS], SummarizeSteps
# says them in the student's language
TOLD = (
    "duplicate_file",
    "metadata_stripped",
    "duplicated_cell",
    "deleted_cell",
    "moved_cell",
    "metadata_changed",
    "unknown_cell",
    "locked_cell_changed",
    "bad_timestamp",
)
assert set(TOLD) <= set(KINDS), set(TOLD) - set(KINDS)
REPAIRS = "repairs"
# DEL, C1 controls (CSI for a terminal that cats the file), bidi controls, line separators: inside JSON's strings
UNSHOWN_IN_JSON = re.compile(f"[{UNSHOWN_BEYOND_C0}]")
TOLD_CELLS = 8  # the cells a repair names on the page: a notebook whose metadata was all stripped has 60


def tell_student(metadata: dict, kind: str, cells=()) -> None:
    """Note in a notebook's ``metadata`` that ``kind`` was repaired in ``cells`` (grade_ids), for its student's page."""
    ours = metadata.setdefault(METADATA, {})
    ours.setdefault(REPAIRS, {}).setdefault(kind, [])
    ours[REPAIRS][kind] += [c for c in cells if c not in ours[REPAIRS][kind]]


def told_student(metadata, known: set) -> dict:
    """kind -> [grade_id]: the repairs noted in a notebook's ``metadata``, in ``TOLD``'s order, naming only cells of
    ``known`` (the notebook's grade_ids). What a plain ``nbgrader autograde`` reads came with the student's file and may
    hold anything; a student can at most make their own page tell of a repair."""
    ours = metadata.get(METADATA) if isinstance(metadata, dict) else None
    noted = ours.get(REPAIRS) if isinstance(ours, dict) else None
    if not isinstance(noted, dict):
        return {}
    cells = lambda named: [c for c in named if isinstance(c, str) and c in known] if isinstance(named, list) else []
    return {kind: cells(noted[kind]) for kind in TOLD if kind in noted}


def rank(kind: str) -> int:
    """A kind's place in ``KINDS`` (most serious first)."""
    return list(KINDS).index(kind)


def write_problems(path: Path, problems) -> None:
    """problems.json: every problem, in ``Problem.order``."""
    entries = [p.to_json() for p in sorted(problems, key=lambda p: p.order)]
    text = json.dumps(entries, indent=1, ensure_ascii=False)  # letters of every script as they are; JSON escapes C0
    text = UNSHOWN_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)  # the other controls escaped too (a cat)
    path.write_text(text + "\n", encoding="utf-8")


def read_problems(path: Path) -> list:
    """The problems in problems.json; raises ValueError (with the reason) when it is not a list of them."""
    try:
        found = json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not valid JSON ({error})") from None
    return [Problem.from_json(p) for p in (found if isinstance(found, list) else []) if isinstance(p, dict)]


def help_lines(indent: str = "  ") -> str:
    """The kinds and their meanings, for ``backprop-ninja grade --help``."""
    width = max(map(len, KINDS))
    return "\n".join(f"{indent}{kind:{width}s}  {meaning}" for kind, meaning in KINDS.items())

"""Open the feedback with the answer: one table of the graded steps, the first one to fix marked.

Runs in ``GenerateFeedback`` after ``GetGrades``; reads the verdict ``JudgeAnswers`` wrote in every graded cell. In
backward order, the first ✘ row is the most upstream wrong step (docs/design/nbgrader-seams.md).
"""

import functools
import html
from dataclasses import dataclass

from nbconvert.preprocessors import Preprocessor
from nbformat.v4 import new_raw_cell
from nbgrader import utils
from traitlets import Bool

from ..common.diagnoses import METADATA
from ..common.editions import ENGLISH, notebook_edition
from ..common.links import repository_url
from ..common.problems import told_student
from ..common.words import say, say_n
from .page_notes import late_note, notes_html, repair_notes

STEP_LINES = 3  # reason lines of a wrong step (or a right one of several points) in the table; its cell has all
AUTOMATIC_COMMENT = "No response."  # nbgrader's own comment on an answer cell left as released: not the instructor's

STYLE = """
#toc { display: none; }  /* the table of steps takes the place of nbgrader's list of "Test cell" links */
.steps-summary { margin: 0 0 2em 0; font-size: 14px; }
.steps-headline { font-size: 17px; margin: 0.2em 0 0.6em 0; }
.steps-table { display: table; border-collapse: collapse; width: 100%; }
.steps-row { display: table-row; }
.steps-row > div { display: table-cell; padding: 2px 8px; border-bottom: 1px solid #e3e3e3; vertical-align: top;
  line-height: 1.4; }
.steps-head > div { font-weight: bold; border-bottom: 2px solid #bbb; }
.steps-row > div.step-mark { width: 1.6em; text-align: center; font-weight: bold; }
.steps-row > div.step-name, .steps-row > div.step-points { white-space: nowrap; }
.steps-row > div.step-points { text-align: right; }
.step-right > div.step-mark { color: #2e7d32; }
.step-right > div.step-reason { color: #666; }
.step-wrong > div.step-mark, .step-wrong > div.step-reason { color: #b71c1c; }
.step-first { background: #fdecea; }
.step-first a { color: #23527c; }
.step-first-label { margin-left: 0.6em; padding: 0 0.45em; border-radius: 3px; background: #b71c1c; color: #fff;
  font-size: 12px; font-weight: bold; }
.steps-notes { margin-top: 0.6em; color: #555; }
.steps-unseen { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
  white-space: nowrap; }
"""
# The table's ARIA roles, by class: a sanitizer keeps no role in a raw cell (nor <th>); FeedbackExporter adds them.
ROLES = {
    "steps-table": "table",
    "steps-row": "row",
    "steps-col": "columnheader",
    "step-mark": "cell",
    "step-name": "rowheader",
    "step-points": "cell",
    "step-reason": "cell",
}


@dataclass
class Row:
    """One graded step of the table."""

    grade_id: str  # the graded cell, and its anchor on the page
    title: str  # the step as the grader names it: "dprobs", "training run"
    score: float  # from the gradebook: the grader's points, or the instructor's
    points: float  # the most it can earn
    reasons: list  # the grader's lines after the first one
    score_changed: bool  # the gradebook's score is not the grader's (an instructor changed it)
    kind: str | None = None  # the verdict's diagnosis kind (common.diagnoses), None when right or not judged

    @property
    def right(self) -> bool:
        return self.score >= self.points


def read_row(cell) -> Row:
    """The table's row of a graded cell whose scores GetGrades has filled in."""
    meta = cell.metadata.nbgrader
    outputs = cell.get("outputs", [])
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    verdict = next(
        (o.get("metadata", {}).get(METADATA) for o in outputs if o.get("output_type") == "execute_result"), None
    )
    judged = isinstance(verdict, dict) and "title" in verdict  # else no verdict: the cell's text is the kernel's
    score = float(meta.get("score") or 0)
    return Row(
        grade_id=meta["grade_id"],
        title=str(verdict["title"]) if judged else meta["grade_id"].removeprefix("test_"),
        score=score,
        points=float(meta["points"]),
        reasons=lines[1:] if judged else [],  # the lines under the verdict's head
        score_changed=judged and float(verdict["points"]) != score,
        kind=verdict.get("diagnosis") if judged else None,
    )


@functools.cache
def backward_order(notebook: str = "") -> dict:
    """The test cell of each gradient step of ``notebook`` -> its place in the backward pass (the engine's table of
    the notebook's steps, imported here: loading nbgrader_config.py, which imports this module, must not import
    torch)."""
    from ..engine.exercises import steps_in_backward_order

    return {f"test_d{step.name}": i for i, step in enumerate(steps_in_backward_order(notebook))}


def in_backward_order(rows: list, notebook: str = "") -> list:
    """The gradients sorted into backward order, in the places the notebook gives them; other rows stay."""
    order = backward_order(notebook)
    places = [i for i, row in enumerate(rows) if row.grade_id in order]
    gradients = sorted((rows[i] for i in places), key=lambda row: order[row.grade_id])
    ordered = list(rows)
    for i, row in zip(places, gradients):
        ordered[i] = row
    return ordered


def _link(row: Row) -> str:
    return f'<a href="#{html.escape(row.grade_id)}">{html.escape(row.title)}</a>'


def _points(row: Row) -> str:
    return f"{row.score:g} / {row.points:g}"


def points(number: float):
    """A number of points ("3 points") as a clause of its own, whose plural form its own number chooses."""
    return say_n("{count:g} point", "{count:g} points", number)


def headline_html(rows: list, first: "Row | None", code: str) -> str:
    """The sentences above the table: how many graded cells are right, what to fix first, the reason several share."""
    if first is None:
        return say_n("All {count} graded cells are right.", "All {count} graded cells are right.", len(rows)).render(
            code
        )
    right = sum(row.right for row in rows)
    # One reason for several wrong graded cells (backward_pass raised, the kernel died) is the mistake to fix
    shared = [row for row in rows if not row.right and row.reasons[:1] == first.reasons[:1]]
    several = bool(first.reasons) and len(shared) > 1
    lost, reason = sum(row.points - row.score for row in shared), html.escape(first.reasons[0]) if several else ""
    sentences = [
        say_n(
            "{right} of {count} graded cells right.", "{right} of {count} graded cells right.", len(rows), right=right
        )
    ]
    # One answer not written, or one error it raised (Exercise 4's backward_pass), before the cells it leaves empty
    if several and first.kind == "not_answered":
        sentences.append(
            say_n(
                "<strong>Fix first: the one answer that {count} graded cell ({lost}) waits for</strong> "
                "({reason}); it is marked below.",
                "<strong>Fix first: the one answer that {count} graded cells ({lost}) wait for</strong> "
                "({reason}); the first of them is marked below.",
                len(shared),
                lost=points(lost),
                reason=reason,
            )
        )
    elif several and first.kind == "raised_error":  # the reason says which function raised, and the error
        sentences.append(
            say_n(
                "<strong>Fix first: the one error behind {count} graded cell ({lost})</strong>, marked "
                "below: <strong>{reason}</strong>",
                "<strong>Fix first: the one error behind {count} graded cells ({lost})</strong>, the first "
                "of them marked below: <strong>{reason}</strong>",
                len(shared),
                lost=points(lost),
                reason=reason,
            )
        )
    else:
        sentences.append(
            say_n(
                "<strong>Fix first: {step}</strong> ({score:g} of {count:g} point), marked below.",
                "<strong>Fix first: {step}</strong> ({score:g} of {count:g} points), marked below.",
                first.points,
                step=_link(first),
                score=first.score,
            )
        )
        if several:  # the kernel died, say: the first to fix, and the reason it shares with the others
            sentences.append(
                say_n(
                    "{count} graded cells ({lost}) fail for the same reason: <strong>{reason}</strong>",
                    "{count} graded cells ({lost}) fail for the same reason: <strong>{reason}</strong>",
                    len(shared),
                    lost=points(lost),
                    reason=reason,
                )
            )
    texts = [sentence.render(code) for sentence in sentences]
    # a space between sentences, not after a full-width stop (Chinese puts none)
    return "".join(text + ("" if text.endswith(("。", "！", "？")) else " ") for text in texts).rstrip()


def table_html(
    rows: list,
    late_penalty: float,
    commented: list,
    repository: str,
    code: str = ENGLISH,
    reordered: bool = False,
    repairs: tuple = (),
) -> str:
    """The summary: a headline, one row per step, then notes, in the language of edition ``code`` (the reasons are
    the graded cells' own lines, which JudgeAnswers wrote in that language). ``reordered``: the gradients are not in
    the notebook's order (``in_backward_order``), which a note says when a step is wrong; ``repairs``: the notes on
    what was repaired before grading (``page_notes.repair_notes``), first.

    Only tags and attributes that nbconvert's sanitizer keeps in a raw cell, and no <table>: the parser's implied
    <tbody> would be escaped into the text, and <th> is not kept; the rows are <div>s laid out as a table by STYLE,
    their roles (ROLES) added to the page by FeedbackExporter.
    """
    first = next((row for row in rows if not row.right), None)
    headline = headline_html(rows, first, code)
    if late := late_note(late_penalty, code):  # a space between sentences, not after a full-width stop
        headline += ("" if headline.endswith(("。", "！", "？")) else " ") + late
    # a row is a graded cell, as every notebook calls it (Exercise 4's Step 1 and Step 2, and its training steps,
    # are other things)
    heads = [say("graded cell").render(code), say("points").render(code), say("what the grader found").render(code)]
    lines = [
        '<div class="steps-summary">',
        f'<div class="steps-headline">{headline}</div>',
        '<div class="steps-table">',
        '<div class="steps-row steps-head">'
        f'<div class="steps-col"><span class="steps-unseen">{say("result").render(code)}</span></div>'
        f'<div class="steps-col">{heads[0]}</div><div class="steps-col">{heads[1]}</div>'
        f'<div class="steps-col">{heads[2]}</div></div>',
    ]
    more, instructor = say("… (more in the cell)").render(code), say("(score set by your instructor)").render(code)
    for row in rows:
        # a right step of one point: its one line; of several (the training run, the calibration): a line each
        shown = STEP_LINES if not row.right or row.points > 1 else 1
        reasons = row.reasons[:shown]
        if shown > 1 and len(row.reasons) > shown:
            reasons = reasons + [more]
        if row.score_changed:
            reasons = reasons + [instructor]
        label = f'<span class="step-first-label">{say("fix first").render(code)}</span>' if row is first else ""
        classes = ("step-right" if row.right else "step-wrong") + (" step-first" if row is first else "")
        lines.append(
            f'<div class="steps-row {classes}"><div class="step-mark">{"✔" if row.right else "✘"}</div>'
            f'<div class="step-name">{_link(row)}{label}</div><div class="step-points">{_points(row)}</div>'
            f'<div class="step-reason">{"".join(f"<div>{html.escape(r)}</div>" for r in reasons)}</div></div>'
        )
    lines.append("</div>")
    notes = [*repairs, *notes_html(commented, repository, code, reordered and first is not None)]
    lines += [f'<div class="steps-notes">{note}</div>' for note in notes]
    lines.append("</div>")
    return "\n".join(lines)


class SummarizeSteps(Preprocessor):
    """Put the table of the graded steps at the top of the feedback."""

    enabled = Bool(
        True, help="Run in the pipelines it is listed in (nbconvert's preprocessors are off by default)."
    ).tag(config=True)

    def preprocess(self, nb, resources):
        in_notebook = [
            read_row(c) for c in nb.cells if utils.is_grade(c) and float(c.metadata.nbgrader.get("points") or 0) > 0
        ]
        rows = in_backward_order(in_notebook, resources.get("nbgrader", {}).get("notebook", ""))
        if not rows:
            return nb, resources
        commented = [
            c.metadata.nbgrader["grade_id"]
            for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("comment") not in (None, "", AUTOMATIC_COMMENT)
        ]
        late_penalty = float(resources["nbgrader"].get("late_penalty") or 0)
        code = notebook_edition(nb.metadata)  # the edition the student handed in
        repairs = repair_notes(
            told_student(nb.metadata, {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells}), code
        )
        summary = table_html(rows, late_penalty, commented, repository_url(), code, rows != in_notebook, repairs)
        nb.cells.insert(0, new_raw_cell(summary, metadata={"raw_mimetype": "text/html"}))
        resources["steps_summary"] = summary  # ours: the feedback page shows it uncleaned, with its classes (safe_html)
        resources.setdefault("inlining", {}).setdefault("css", []).append(STYLE)
        return nb, resources

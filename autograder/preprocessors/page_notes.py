"""The notes under the feedback's table of steps: the repairs made to the notebook before it was graded, the
instructor's comments, the order of the gradients, where the page's numbers come from, where to get help; and the
headline's late penalty.

The instructor reads every repair in problems.json; the student read nothing of them, and a "34 / 34", or a step lost,
on a notebook the grader had changed was a mystery. The intake and RestoreLockedCells note each repair in the graded
notebook's metadata (``common.problems.tell_student``); ``repair_notes`` says them in the language of the student's
edition, naming the cells by their grade_ids (the course's names, never the student's own: no hidden test, no
other student's file).
"""

import html

from ..common.links import edition_course_url
from ..common.problems import TOLD_CELLS
from ..common.words import say, say_n

# kind -> the sentence, given the number of cells named and their names (cells: a list, already marked up)
NOTES = {
    "duplicate_file": lambda count, cells: say(
        "You handed in more than one file for this notebook; the grader graded only one of them and ignored the "
        "others. If this page is not about the one you meant, tell your instructor."
    ),
    "metadata_stripped": lambda count, cells: say(
        "Your notebook had lost the hidden marks that tell the grader which cell is which (some editors drop them); "
        "the grader recognised its cells by their contents before grading it."
    ),
    "duplicated_cell": lambda count, cells: say_n(
        "Your notebook holds more than one copy of the cell {cells}; only the first copy was graded.",
        "Your notebook holds more than one copy of the cells {cells}; only the first copy of each was graded.",
        count,
        cells=cells,
    ),
    "deleted_cell": lambda count, cells: say_n(
        "The cell {cells} was missing from your notebook; the grader put it back, as the course wrote it, before "
        "grading.",
        "The cells {cells} were missing from your notebook; the grader put them back, as the course wrote them, "
        "before grading.",
        count,
        cells=cells,
    ),
    "moved_cell": lambda count, cells: say_n(
        "Your answer cell {cells} was out of place (below the graded cell that checks it, or above the step before "
        "it); the grader moved it back just above its graded cell before grading.",
        "Your answer cells {cells} were out of place (below the graded cells that check them, or above the steps "
        "before them); the grader moved each back just above its graded cell before grading.",
        count,
        cells=cells,
    ),
    "metadata_changed": lambda count, cells: say_n(
        "The grading settings of the cell {cells} in your file (its points, or whether it is graded or locked) are "
        "not the course's; it was graded with the course's settings.",
        "The grading settings of the cells {cells} in your file (their points, or whether they are graded or locked) "
        "are not the course's; they were graded with the course's settings.",
        count,
        cells=cells,
    ),
    "unknown_cell": lambda count, cells: say(
        "Some cells of your notebook carry grader marks that this notebook does not have (copied from another "
        "notebook?); they ran as ordinary cells, not graded."
    ),
    # (an older copy of the notebook, handed in after the course changed a locked cell, is no change of the student's)
    "locked_cell_changed": lambda count, cells: say_n(
        "The locked cell {cells} in your file is not the course's (changed, or from an older copy of the notebook); "
        "it ran as the course wrote it, so nothing changed in it counted.",
        "The locked cells {cells} in your file are not the course's (changed, or from an older copy of the "
        "notebook); they ran as the course wrote them, so nothing changed in them counted.",
        count,
        cells=cells,
    ),
    "bad_timestamp": lambda count, cells: say(
        "The time of your submission (timestamp.txt) could not be read, so your notebook was graded without it. "
        "Your instructor has been told."
    ),
}
NAMING = {"duplicated_cell", "deleted_cell", "moved_cell", "metadata_changed", "locked_cell_changed"}


def listed(names: list):
    """The cells' names, each as code, listed as the edition lists them ("a, b, c"), and "…" after ``TOLD_CELLS``."""
    shown = [f"<code>{html.escape(name)}</code>" for name in names[:TOLD_CELLS]] + ["…"] * (len(names) > TOLD_CELLS)
    return _commas(shown)


def _commas(shown: list):
    return "".join(shown) if len(shown) <= 1 else say("{first}, {rest}", first=shown[0], rest=_commas(shown[1:]))


def repair_notes(told: dict, code: str) -> list:
    """The page's sentences for the repairs ``told`` (``common.problems.told_student``), in the language of edition
    ``code``, as HTML (the cells' names escaped); a repair of cells none of whose names is known is not said."""
    notes = []
    for kind, cells in told.items():
        if kind in NOTES and (cells or kind not in NAMING):
            notes.append(NOTES[kind](max(len(cells), 1), listed(cells)).render(code))
    return notes


def late_note(late_penalty: float, code: str) -> str:
    """The sentence on the late penalty, in the language of edition ``code`` ("" when none): the headline's, beside
    the score it explains (under a table of 27 steps, a "27.2 of 34" over "All 27 graded cells are right" was a
    mystery)."""
    if not late_penalty:
        return ""
    return say_n(
        "Late submission: {count:g} point off (the score above is after it).",
        "Late submission: {count:g} points off (the score above is after it).",
        late_penalty,
    ).render(code)


def notes_html(commented: list, repository: str, code: str, reordered: bool) -> list:
    """The notes after the repairs, in the language of edition ``code``, as HTML: ``reordered``, the gradients are
    listed in backward order, not the notebook's, and a step is wrong."""
    notes = []
    if commented:
        links = _commas([f'<a href="#comment-{html.escape(g)}">{html.escape(g)}</a>' for g in commented])
        notes.append(say("Your instructor commented on {links}.", links=links))
    if reordered:  # Exercise 4 has its gradients in the order backward_pass returns them
        notes.append(
            say(
                "The gradients are listed in the order the backward pass computes them, from the loss back, not in "
                "the notebook's order: a mistake can carry into the gradients after it, so fix the first ✘ first."
            )
        )
    notes.append(
        say(
            "The outputs below come from the grader's run of your notebook, with a seed you have not seen: its batch "
            "and parameters are not yours, so its numbers differ from those your notebook printed."
        )
    )
    notes.append(
        say(
            'Stuck on a step? Climb the ladder of <a href="{guide}">When you are stuck</a>; the <a href="{cheatsheet}">'
            "cheat sheet</a> has every backward rule.",
            guide=edition_course_url("README.md#when-you-are-stuck", code, repository),
            cheatsheet=edition_course_url("cheatsheet.md", code, repository),
        )
    )
    return [note.render(code) for note in notes]

"""What the feedback page shows of the graded notebook, without what only nbgrader needed or what looked broken.

Runs last in ``GenerateFeedback`` (after ``SummarizeSteps``, which reads the verdicts); the autograded notebook and
the gradebook keep everything. Found by students reading their feedback cold:

* the verdict's points as nbgrader reads them, ``Out[11]: 2.0`` under every graded cell, which the verdict's first
  line already says in words ("✔ dC: 2 of 2 points");
* nbgrader's own comment on an answer cell left as released, "Comments: No response.", which reads as if someone had
  written it;
* an empty box under a line a cell printed: the kernel may send a print's text and its newline as two messages;
* the course's long helper cells in full (the self-checks' 807 lines made most of every page): a locked cell of more
  than FOLD_LINES lines shows its opening comment and how many lines follow. nbgrader put the course's own source
  back in every locked cell, so the student's notebook holds the same lines.
"""

from nbconvert.preprocessors import Preprocessor
from nbgrader import utils
from traitlets import Bool

from ..common.diagnoses import METADATA
from ..common.editions import notebook_edition
from ..common.words import say_n
from .summarize_steps import AUTOMATIC_COMMENT

FOLD_LINES = 100  # a locked cell longer than this is folded (the setup cells, at most 46 lines, stay whole)
KEPT_COMMENT_LINES = 6  # of a folded cell's opening comment


def folded(source: str, code: str) -> str:
    """A long locked cell's source as the feedback page shows it: its opening comment, then a line saying how many
    lines of the course's code follow (in the language of edition ``code``)."""
    lines = source.splitlines()
    if len(lines) <= FOLD_LINES:
        return source
    kept = 0
    while kept < KEPT_COMMENT_LINES and lines[kept].startswith("#"):
        kept += 1
    more = say_n(
        "# … and {count} more line of the course's code: the same as in your notebook",
        "# … and {count} more lines of the course's code: the same as in your notebook",
        len(lines) - kept,
    )
    return "\n".join([*lines[:kept], more.render(code)])


def _is_points(output) -> bool:
    return output.get("output_type") == "execute_result" and METADATA in output.get("metadata", {})


def _text(output):
    """A stream output's text, if it is text (a kernel sends what it likes)."""
    return output.get("text") if output.get("output_type") == "stream" and isinstance(output.get("text"), str) else None


def joined_streams(outputs: list) -> list:
    """``outputs`` with each run of stream outputs of the same stream (stdout, stderr) joined into one. In linear
    time: a cell may print its 4 MB (GradingExecute.max_output_bytes) as hundreds of thousands of messages."""
    joined, pieces = [], []  # pieces: the texts of the run that joined[-1] opens
    for output in outputs:
        last = joined[-1] if joined else None
        if pieces and _text(output) is not None and last.get("name") == output.get("name"):
            pieces.append(output["text"])
            continue
        if len(pieces) > 1:
            last["text"] = "".join(pieces)
        joined.append(output)
        pieces = [output["text"]] if _text(output) is not None else []
    if len(pieces) > 1:
        joined[-1]["text"] = "".join(pieces)
    return joined


class TidyFeedback(Preprocessor):
    """Leave out of the feedback page what only nbgrader needed, and join the pieces of one printed text."""

    enabled = Bool(
        True, help="Run in the pipelines it is listed in (nbconvert's preprocessors are off by default)."
    ).tag(config=True)

    def preprocess(self, nb, resources):
        code = notebook_edition(nb.metadata)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("comment") == AUTOMATIC_COMMENT:
                meta["comment"] = None
            if cell.cell_type != "code":
                continue
            if utils.is_locked(cell) and not utils.is_grade(cell) and not utils.is_solution(cell):
                cell.source = folded(cell.source, code)
            outputs = cell.get("outputs", [])
            if utils.is_grade(cell):
                outputs = [o for o in outputs if not _is_points(o)]
            cell.outputs = joined_streams(outputs)
        return nb, resources

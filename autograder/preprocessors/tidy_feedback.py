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

import re

from nbconvert.preprocessors import Preprocessor
from nbgrader import utils
from traitlets import Bool

from ..common.diagnoses import METADATA
from ..common.editions import notebook_edition
from ..common.words import say, say_n
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


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")
_NUMBERED = re.compile(r"^\s*(?:-*>)?\s*\d+\s")  # a traceback's line of source: "----> 12 " or "     11 "
SHORTEST = 4  # a hidden line shorter than this ("pass", ")") says nothing of the tests; one of another cell may match
_IN_THE_GRADER = re.compile(r"[\\/]autograder[\\/]")


def _graders_frame(line: str) -> bool:
    """A traceback's frame in the grader's own package: "File .../autograder/in_kernel/reports.py:12, in report(..)".
    Read without a pattern that backtracks: a kernel's line of a megabyte ("File /File /...") took a regular expression
    over the whole line from each "File " (48 KB: 3.8 s)."""
    return line.lstrip().startswith("File ") and ".py" in line and _IN_THE_GRADER.search(line) is not None


def hidden_lines(nb) -> frozenset:
    """Every line of the hidden-test regions of the notebook's locked cells (the course's, as nbgrader restored them;
    a student's own cell is no source of them), their marks too, as a line of text shows it, stripped."""
    lines, inside = set(), False
    for cell in nb.cells:
        source = cell.get("source")
        if not cell.get("metadata", {}).get("nbgrader", {}).get("locked") or not isinstance(source, str):
            continue
        for line in source.splitlines():
            inside = inside or line.strip().startswith("### BEGIN HIDDEN TESTS")
            if inside and len(line.strip()) >= SHORTEST:
                lines.add(line.strip())
            inside = inside and not line.strip().startswith("### END HIDDEN TESTS")
        inside = False
    return frozenset(lines)


def _shows_hidden(text: str, hidden: frozenset) -> bool:
    plain = _ANSI.sub("", text)
    if "HIDDEN TESTS" in plain or any(_graders_frame(line) for line in plain.splitlines()):
        return True
    return any(
        _NUMBERED.sub("", line, count=1).strip() in hidden or line.strip() in hidden for line in plain.splitlines()
    )


def without_hidden(outputs: list, hidden: frozenset, code: str | None = None) -> list:
    """``outputs`` with no line of a hidden test nor a frame of the grader's code: an error's traceback loses the
    entries that show one (a hidden test that raised shows its own lines, IPython's ``Cell In[..]`` context), a text
    (a traceback the student's code printed, an error's message) the lines that do."""
    for output in outputs:
        if output.get("output_type") == "error":
            entries = [str(entry) for entry in output.get("traceback", []) or []]
            kept = [entry for entry in entries if not _shows_hidden(entry, hidden)]
            output["traceback"] = kept if len(kept) == len(entries) else [*kept[:-1], _left_out(code), *kept[-1:]]
            for key in ("ename", "evalue"):
                if isinstance(output.get(key), str) and _shows_hidden(output[key], hidden):
                    output[key] = _kept_lines(output[key], hidden, code)
        text = _text(output)
        if text is not None and _shows_hidden(text, hidden):
            output["text"] = _kept_lines(text, hidden, code)
    return outputs


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _left_out(code: str | None) -> str:
    words = say("(lines of the course's hidden tests and of the grader's code are left out)")
    return words.render(code) if code else words.render()


def _kept_lines(text: str, hidden: frozenset, code: str | None) -> str:
    """The lines of ``text`` that show no hidden line; a frame of the grader's code goes with its lines of source (a
    printed traceback's: those indented more than it)."""
    lines, kept, frame = text.splitlines(keepends=True), [], None
    for line in lines:
        if frame is not None and line.strip() and _indent(line) > frame:
            continue
        frame = _indent(line) if _graders_frame(_ANSI.sub("", line)) else None
        if not _shows_hidden(line, hidden):
            kept.append(line)
    return "".join(kept) + (_left_out(code) + "\n" if len(kept) != len(lines) else "")


class HiddenTestsOutOfOutputs(Preprocessor):
    """Before ``ClearHiddenTests`` (which clears them from the cells' source only): no output of the feedback page
    shows a line of a hidden test or a frame of the grader's own code, through a traceback or a text."""

    enabled = Bool(
        True, help="Run in the pipelines it is listed in (nbconvert's preprocessors are off by default)."
    ).tag(config=True)

    def preprocess(self, nb, resources):
        hidden, code = hidden_lines(nb), notebook_edition(nb.metadata)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = without_hidden(cell.get("outputs", []), hidden, code)
        return nb, resources


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

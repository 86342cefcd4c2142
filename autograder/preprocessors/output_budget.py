"""What a cell may make the grader hold: at most ``max_output_bytes`` of outputs, however the kernel sends them.

Everything a kernel sends that nbclient keeps counts against its cell, by the characters nbformat writes for it (a
control character as a six-character escape: counted as one, 9 cells of them made a notebook of 165 MiB on disk from
a budget of 32 MiB): an output message's whole content, not chosen parts of it (texts, a list of strings too, data
and metadata, an error's name, value and traceback, each cut first, and also a stream's name, an execution count and
a display id, which nbclient keeps as they come: a kernel sent 40 streams named with 10 MB each, and the autograded
notebook was 420 MB), and what a display update adds to each output it replaces (a cell could show thousands of tiny
displays under one id, then update them all with one large message, which nbclient copies into each), and the state
and buffers of widget messages (their comm ids too), which nbclient keeps for the notebook's metadata. A cell's
execution count, which nbclient takes from any message that has one, is kept only when it is a number, as nbformat
allows (a kernel sent a list of 250,000 empty lists as the count of each of its cells, and the worker held 1.2 GB
more). Each output kept, and each widget message whose state is kept, also counts ``1 / OUTPUTS_PER_CELL`` of a
cell's budget (1 KiB at 4 MiB), whatever it holds: nbclient keeps an empty output too, and a kernel that sent empty
displays for 30 s made the grader hold 122,687 of them, counted as 4 characters each (the worker grew by 220 MiB
while the cell ran, and peaked 1 GiB above its start after it). Beyond the budget, what arrives is dropped and the
cell says so once.

A report of answers (``in_kernel.reports``) is final as its cell sent it: it is kept under no display id, and no
display update brings one in (``a_report``). nbclient updates every earlier output shown under an id, in any cell: a
submission sent its graded cells' reports under ids, then, in a cell after all of them, replaced each with a report
computed by the grader's own rules, which the static reading of the cells before a graded cell never saw (Exercise 3's
four gradients, 8 points, with none written).

The executor's log holds a kernel's words too: nbclient names every message type it does not know and every comm
target it has no handler for, as the kernel sent them, a record a message. So each record is cut at ``RECORD_CHARS``
and a notebook logs at most ``RECORDS`` (``BoundedLog``): nbgrader keeps a student's whole log in memory, and a kernel
that sent 400 messages of a type named with 500,000 characters made a worker hold 660 MB, more with each message.
"""

import json
import logging

from nbformat.v4 import new_output
from traitlets import default

from ..common.naming import ANSWER_MIME
from ..common.words import say

OUTPUTS_PER_CELL = 4096  # outputs (or widget messages) that a cell's budget holds when they are empty


ELEMENT_CHARS = 64  # what one value of a list or dict costs beyond its characters: a Python object (an empty list, 56
# bytes and its place), and the line and indentation nbformat writes it on in the notebook


TOO_DEEP = 2**62  # what a value nested too deep to be written weighs: over any budget


def written(value) -> int:
    """The characters nbformat writes for ``value`` (JSON indented by one space a level, non-ASCII as it is), and
    ``ELEMENT_CHARS`` more for each value of a list or dict in it: each is on a line of its own, and no string holds a
    raw line break. Counted compact, 4 MiB of ``[[[...]]]`` nested 200 deep were 400 MiB once indented on disk, and 4
    MiB of empty lists made the grader hold 64 MB of them (a notebook's 32 MiB: the worker peaked at 3.7 GB)."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str, indent=1)
    except RecursionError:  # nested deeper than Python's JSON writes (a kernel's C encoder sent 990 levels): dropped
        return TOO_DEEP
    return len(text) + ELEMENT_CHARS * text.count("\n")


def size(content: dict) -> int:
    """All of an output message's content: what nbclient keeps of it is never more."""
    return written(content)


def a_report(content) -> bool:
    """Whether an output message's content is a report of answers, which the grader judges (``in_kernel.reports``)."""
    data = content.get("data") if isinstance(content, dict) else None
    return isinstance(data, dict) and ANSWER_MIME in data


def a_count(value) -> bool:
    """An execution count as nbformat allows it: a number, or none."""
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


RECORD_CHARS, RECORDS = 2000, 200  # of the executor's log: a record's characters, and records a notebook


class BoundedLog(logging.LoggerAdapter):
    """The executor's log, nbclient's included: no DEBUG record; each record cut at ``RECORD_CHARS``, and after
    ``RECORDS`` in a notebook, only counted until ``ends_notebook`` says how many were left out."""

    def __init__(self, logger):
        super().__init__(logger, {})
        self.kept, self.left_out = 0, 0

    def isEnabledFor(self, level):
        return level > logging.DEBUG and self.logger.isEnabledFor(level)

    def log(self, level, msg, *args, **kwargs):
        if not self.isEnabledFor(level):
            return
        if self.kept >= RECORDS:
            self.left_out += 1
            return
        self.kept += 1
        try:
            text = str(msg) % args if args else str(msg)
        except (TypeError, ValueError):  # (logging itself would have reported the mismatch, not raised)
            text = f"{msg} {args}"
        cut = f" [{len(text) - RECORD_CHARS} more characters not kept]" if len(text) > RECORD_CHARS else ""
        self.logger.log(level, "%s", text[:RECORD_CHARS] + cut, **kwargs)

    def ends_notebook(self) -> None:
        if self.left_out:
            self.logger.warning("%d more records of this notebook's run were not kept (at most %d)", self.left_out,
                                RECORDS)  # fmt: skip
        self.kept, self.left_out = 0, 0


class OutputBudget:
    """For GradingExecute (nbclient's NotebookClient): ``max_output_bytes`` and ``max_notebook_output_bytes``,
    ``_edition``, and per notebook ``_output_bytes`` (cell index -> bytes kept; None -> all cells' together),
    ``_truncated`` (cell index -> the budget it ran over: "cell" or "notebook") and ``_display_bytes`` (display id ->
    the size of what its outputs show)."""

    @default("log")
    def _log_default(self):
        log = super()._log_default()
        return log if self.kernel_trace else BoundedLog(log)

    def log_ends_notebook(self) -> None:
        if isinstance(self.log, BoundedLog):  # (a kernel trace is kept whole, as asked)
            self.log.ends_notebook()

    def _held(self) -> int:
        """What holding one output counts, beyond its characters: a share of the cell's budget (else the notebook's)."""
        budget = self.max_output_bytes or self.max_notebook_output_bytes
        return -(-budget // OUTPUTS_PER_CELL)

    def _over_budget(self, cell_index: int, outs: list, used: int, in_notebook: bool = True) -> bool:
        """Count ``used`` bytes against the cell and, when kept and ``in_notebook``, the notebook; True (and a line
        under the cell, once) when either is over its budget: then the rest of the cell's output is dropped. The
        notebook's bounds what a notebook of many cells makes the grader hold; what a cell sent past its own budget
        was dropped, held by nobody, and does not count against it (else one cell that printed 40 MiB cost every later
        graded cell its report, and a student with every answer right scored 0 of 34)."""
        self._output_bytes[cell_index] = cell = self._output_bytes.get(cell_index, 0) + used
        over = "cell" if self.max_output_bytes and cell > self.max_output_bytes else self._truncated.get(cell_index)
        notebook = self._output_bytes.get(None, 0) + (used if in_notebook else 0)
        if over is None and self.max_notebook_output_bytes and notebook > self.max_notebook_output_bytes:
            over = "notebook"
        if over is None:
            self._output_bytes[None] = notebook
            return False
        if cell_index not in self._truncated:
            self._truncated[cell_index] = over
            if over == "cell":
                words = say(
                    "[output truncated by the grader: this cell printed more than {megabytes:g} MB]",
                    megabytes=self.max_output_bytes / 2**20,
                )
            else:
                words = say(
                    "[output truncated by the grader: this notebook printed more than {megabytes:g} MB in all]",
                    megabytes=self.max_notebook_output_bytes / 2**20,
                )
            outs.append(new_output("stream", name="stdout", text=f"\n{words.render(self._edition)}\n"))
        return True

    def output(self, outs, msg, display_id, cell_index):
        if cell_index in self._truncated:  # dropped unweighed: a flood of large messages is read as fast as it comes
            return None
        content = msg.get("content", {})
        if msg.get("msg_type") == "error":
            content["ename"] = str(content.get("ename", ""))[:1000]
            content["evalue"] = str(content.get("evalue", ""))[:10000]
            content["traceback"] = [str(line)[:10000] for line in list(content.get("traceback", []))[-50:]]
        # A locked or graded cell's first answer report is held within the cell's budget alone: what other cells
        # printed must not cost it its points (a correct student whose first 9 answer cells printed just under 4 MiB
        # each lost a graded cell). Such cells are the release's, one per grade_id (repair.py), so this adds at most
        # a cell's budget for each.
        report = ANSWER_MIME in (content.get("data") or {}) and self._release_cell(self._running[0])
        first_report = report and not any(ANSWER_MIME in (o.get("data") or {}) for o in outs)
        if self._over_budget(cell_index, outs, size(content) + self._held(), in_notebook=not first_report):
            return None
        return super().output(outs, msg, None if a_report(content) else display_id, cell_index)  # (final: no id)

    @staticmethod
    def _release_cell(cell) -> bool:
        flags = cell.metadata.get("nbgrader", {})
        return bool(flags.get("grade_id")) and bool(flags.get("grade") or flags.get("locked"))

    def handle_comm_msg(self, outs, msg, cell_index):
        data = msg.get("content", {}).get("data")
        if isinstance(data, dict) and "state" in data:  # nbclient keeps it (an empty one too) for the metadata
            kept = written(data["state"]) + written(msg["content"].get("comm_id"))  # the state, under its comm id
            used = kept + sum(len(buffer) for buffer in msg.get("buffers") or ()) + self._held()
            if self._over_budget(cell_index, outs, used):
                return
        super().handle_comm_msg(outs, msg, cell_index)

    def process_message(self, msg, cell, cell_index):
        self._running = cell, cell_index  # the cell a display update is counted against
        content = msg.get("content")
        if isinstance(content, dict) and not a_count(content.get("execution_count")):
            content["execution_count"] = None  # nbclient puts it in the cell, and in an execute_result's output
        return super().process_message(msg, cell, cell_index)

    def _update_display_id(self, display_id, msg):
        if a_report(msg.get("content")):  # a report comes only as its own cell sends it, never through an update
            return
        places = sum(len(indices) for indices in self._display_id_map.get(display_id, {}).values())
        new, shown = size(msg.get("content", {})), self._display_bytes.get(display_id, 0)
        cell, cell_index = self._running
        if places and self._over_budget(cell_index, cell.outputs, places * max(0, new - shown)):
            return
        self._display_bytes[display_id] = max(new, shown)
        super()._update_display_id(display_id, msg)

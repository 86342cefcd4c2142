"""nbgrader's OverwriteCells, with one log line per notebook for the hidden tests it puts back, each restored
cell in the language of the submission's edition, and the notebook's cells read from the gradebook at once
(``gradebook_rows``: stock, two queries a cell).

Stock OverwriteCells warns for every locked cell with a hidden part, for every student (nbgrader issue #1961); here
such a cell is restored quietly and counted, and the locked cells the submission did change are one problem of the
notebook (``locked_cell_changed``), for problems.json: graded with the course's version, which the log alone said.
A translated edition's locked cells differ from the gradebook's English ones by their words only: each is restored
from the gradebook, then translated back with the function that wrote the edition (docs/design/editions.md).
"""

from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests, OverwriteCells

from ..common.edition_text import edition_of, translated_cell_source
from ..common.editions import ENGLISH, METADATA
from ..common.problems import REPAIRS, tell_student, told_student
from .gradebook_rows import CourseRows
from .incidents import cell_name, record_incident


def _as_written(source: str) -> str:
    """A cell's source without what editors change on their own: line endings, trailing spaces and blank lines."""
    return "\n".join(line.rstrip() for line in source.replace("\r\n", "\n").strip("\n").split("\n"))


class RestoreLockedCells(OverwriteCells):
    """OverwriteCells that tells the expected restores (hidden tests, an edition's words) from changed locked cells."""

    def preprocess(self, nb, resources):
        self._release_form = ClearHiddenTests(enforce_metadata=False, parent=self)
        self._hidden_tests_restored = 0
        self._changed = []  # the indices of the locked cells the student changed
        self._edition = edition_of(nb)
        # what the later steps read: the kernel, the verdicts; and the intake's repairs, which the student's page says
        repairs = told_student(nb.metadata, {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells})
        nb.metadata[METADATA] = {"edition": self._edition} | ({REPAIRS: repairs} if repairs else {})
        nb, resources = super().preprocess(nb, resources)
        if self._hidden_tests_restored:
            self.log.info(
                "%s: the hidden tests of %d locked cells put back (the release leaves them out)",
                resources["nbgrader"]["notebook"],
                self._hidden_tests_restored,
            )
        if self._changed:
            cells = ", ".join(cell_name(nb, i) for i in self._changed)
            record_incident(
                resources,
                "locked_cell_changed",
                f"{cells}: graded with the course's version of {'it' if len(self._changed) == 1 else 'each'}",
                self.log,
            )
            tell_student(
                nb.metadata, "locked_cell_changed", [nb.cells[i].metadata.nbgrader["grade_id"] for i in self._changed]
            )
        return nb, resources

    def preprocess_cell(self, cell, resources, cell_index):
        if not isinstance(self.gradebook, CourseRows):  # the notebook's first cell: the Gradebook preprocess opened
            self.gradebook = CourseRows(self.gradebook, self.notebook_id, self.assignment_id)
        self._submitted, self._index = cell.source, cell_index
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if self._edition != ENGLISH and utils.is_locked(cell):
            cell.source = translated_cell_source(cell.cell_type, cell.source, self._edition)
        return cell, resources

    def report_change(self, name, attr, old, new):
        if attr != "checksum":
            return super().report_change(name, attr, old, new)
        original = self.gradebook.find_source_cell(name, self.notebook_id, self.assignment_id)
        released, _ = self._release_form.preprocess_cell(NotebookNode(source=original.source, metadata={}), {}, 0)
        released_text = translated_cell_source(original.cell_type, released.source, self._edition)
        if _as_written(released_text) == _as_written(self._submitted):
            self._hidden_tests_restored += released.source != original.source
        else:
            self._changed.append(self._index)

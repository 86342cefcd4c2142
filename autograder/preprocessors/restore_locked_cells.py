"""nbgrader's OverwriteCells, with one log line per notebook for the hidden tests it puts back.

Stock OverwriteCells warns for every locked cell with a hidden part, for every student (nbgrader issue #1961); here
such a cell is restored quietly and counted, and a locked cell the submission did change still gets a warning.
"""

from nbformat import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests, OverwriteCells


class RestoreLockedCells(OverwriteCells):
    """OverwriteCells that tells the expected restores (hidden tests) from changed locked cells."""

    def preprocess(self, nb, resources):
        self._release_form = ClearHiddenTests(enforce_metadata=False, parent=self)
        self._hidden_tests_restored = 0
        nb, resources = super().preprocess(nb, resources)
        if self._hidden_tests_restored:
            self.log.info(
                "%s: the hidden tests of %d locked cells put back (the release leaves them out)",
                resources["nbgrader"]["notebook"],
                self._hidden_tests_restored,
            )
        return nb, resources

    def preprocess_cell(self, cell, resources, cell_index):
        self._submitted = cell.source
        return super().preprocess_cell(cell, resources, cell_index)

    def report_change(self, name, attr, old, new):
        if attr != "checksum":
            return super().report_change(name, attr, old, new)
        original = self.gradebook.find_source_cell(name, self.notebook_id, self.assignment_id)
        released, _ = self._release_form.preprocess_cell(NotebookNode(source=original.source, metadata={}), {}, 0)
        if released.source == self._submitted:
            self._hidden_tests_restored += 1
        else:
            self.log.warning("locked cell %s was changed in the submission: graded with the course's version", name)

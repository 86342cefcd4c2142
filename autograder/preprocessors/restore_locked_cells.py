"""nbgrader's OverwriteCells, with one line per notebook for the hidden tests it puts back.

At autograde OverwriteCells gives every locked cell its source from the gradebook. The gradebook
keeps the cells as they are in ``source/``, hidden tests included, with a checksum computed before
``generate_assignment`` removed them (nbgrader issue #1961). So every locked cell with a hidden
part differs from the release, and stock OverwriteCells warns "Attribute 'checksum' for cell ...
has changed!" for each one, for every student: 28 warnings for Exercise 1 alone, which read like
tampering and bury what does matter. Here a cell that is exactly its release form (the source
without its hidden tests) is restored quietly and counted; a locked cell that the submission did
change is still restored, with a warning that says so.
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

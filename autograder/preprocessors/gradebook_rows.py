"""A notebook's rows of the gradebook, read at once, for nbgrader's per-cell preprocessors.

nbgrader's OverwriteCells and SaveAutoGrades look up each cell's row with a query of its own (a join of three to six
tables), and SaveAutoGrades commits after each; every commit makes the session read its rows again. Given one of
these in place of their Gradebook, nbgrader's own per-cell code runs unchanged on rows read with one query of each
kind. A name missing from them goes to nbgrader's own lookup, which raises MissingEntry as before; anything else
goes to the Gradebook itself.
"""

from nbgrader.api import BaseCell, Comment, Grade, Gradebook, GradeCell, TaskCell
from sqlalchemy.orm import undefer


class _Rows:
    def __init__(self, gradebook: Gradebook):
        self.gradebook = gradebook

    def __getattr__(self, name):
        return getattr(self.gradebook, name)


class CourseRows(_Rows):
    """The notebook's source cells and graded cells (OverwriteCells' ``find_source_cell``, ``find_graded_cell``)."""

    def __init__(self, gradebook: Gradebook, notebook: str, assignment: str):
        super().__init__(gradebook)
        found = gradebook.find_notebook(notebook, assignment)
        self.source_cells = {cell.name: cell for cell in found.source_cells}
        # each kind by a query of its own, which reads all its columns (through ``found``, the first read of a grade
        # cell's max_score was a query of its own); a grade cell over a task cell of the same name
        kinds = [gradebook.db.query(kind).filter(kind.notebook_id == found.id) for kind in (TaskCell, GradeCell)]
        self.graded_cells = {cell.name: cell for cells in kinds for cell in cells}

    def find_source_cell(self, name, *where):
        return self.source_cells.get(name) or self.gradebook.find_source_cell(name, *where)

    def find_graded_cell(self, name, *where):
        return self.graded_cells.get(name) or self.gradebook.find_graded_cell(name, *where)


class SubmissionRows(_Rows):
    """A student's grades and comments of the notebook (SaveAutoGrades' ``find_grade``, ``find_comment``), and its
    ``db.commit()`` after each cell held back: the caller commits once."""

    def __init__(self, gradebook: Gradebook, notebook: str, assignment: str, student: str):
        super().__init__(gradebook)
        submitted = gradebook.find_submission_notebook(notebook, assignment, student).id
        self.grades, self.comments = self._named(Grade, submitted), self._named(Comment, submitted)
        self.db = self

    def _named(self, model, submitted: str) -> dict:
        """name -> row; a grade or answer cell's row over a task cell's of the same name, as nbgrader looks them up."""
        query = self.gradebook.db.query(model, BaseCell.name, BaseCell.type)
        if model is Grade:  # its max_score (a subquery nbgrader defers: a query for each grade as it was read)
            query = query.options(undefer(Grade.max_score))
        rows = query.join(BaseCell, BaseCell.id == model.cell_id).filter(model.notebook_id == submitted)
        return {name: row for row, name, _ in sorted(rows, key=lambda found: found[2] != "TaskCell")}

    def find_grade(self, name, *where):
        return self.grades.get(name) or self.gradebook.find_grade(name, *where)

    def find_comment(self, name, *where):
        return self.comments.get(name) or self.gradebook.find_comment(name, *where)

    def commit(self) -> None:
        pass

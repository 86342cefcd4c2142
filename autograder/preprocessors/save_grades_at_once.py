"""nbgrader's SaveAutoGrades, with the notebook's grade and comment rows read in one query each and one commit.

Stock SaveAutoGrades looks up the row of each graded cell and of each answer cell with a query of its own (a join of
six tables), and commits after each: 54 of each for Exercise 1. Each commit also expires every row the session
holds, so the next lookup reads them again. Here nbgrader's own per-cell code runs unchanged, on a gradebook whose
``find_grade`` and ``find_comment`` answer from the rows read at the start, and whose commit waits for the end.
"""

from nbgrader.api import BaseCell, Comment, Grade, Gradebook
from nbgrader.preprocessors import SaveAutoGrades


class _ReadOnce:
    """The gradebook as SaveAutoGrades' per-cell code uses it: ``find_grade`` and ``find_comment`` (a cell missing
    from the rows read goes to nbgrader's own query, which raises MissingEntry), and ``db.commit``, held back."""

    def __init__(self, gradebook: Gradebook, submitted_notebook_id: str):
        self.gradebook = gradebook
        self.grades = self._rows(Grade, submitted_notebook_id)
        self.comments = self._rows(Comment, submitted_notebook_id)
        self.db = self  # (``self.gradebook.db.commit()`` after each cell: nothing yet)

    def _rows(self, model, submitted_notebook_id: str) -> dict:
        query = self.gradebook.db.query(model, BaseCell.name).join(BaseCell, BaseCell.id == model.cell_id)
        return {name: row for row, name in query.filter(model.notebook_id == submitted_notebook_id)}

    def find_grade(self, name, *where):
        return self.grades.get(name) or self.gradebook.find_grade(name, *where)

    def find_comment(self, name, *where):
        return self.comments.get(name) or self.gradebook.find_comment(name, *where)

    def commit(self) -> None:
        pass


class SaveAutoGradesAtOnce(SaveAutoGrades):
    """SaveAutoGrades: the same fields set by nbgrader's code, the rows read at once and committed at once."""

    def preprocess(self, nb, resources):
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.student_id = resources["nbgrader"]["student"]
        self.db_url = resources["nbgrader"]["db_url"]
        with Gradebook(self.db_url) as gradebook:
            submitted = gradebook.find_submission_notebook(self.notebook_id, self.assignment_id, self.student_id)
            self.gradebook = _ReadOnce(gradebook, submitted.id)
            nb, resources = super(SaveAutoGrades, self).preprocess(nb, resources)  # each cell, as SaveAutoGrades does
            gradebook.db.commit()
        return nb, resources

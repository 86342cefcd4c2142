"""nbgrader's SaveAutoGrades and GetGrades with one query of each kind a notebook (``gradebook_rows``), and the one
commit after all its cells: stock, they look up each graded cell's grade and each answer cell's comment with a join of
six tables, and SaveAutoGrades commits after each, 54 of each for Exercise 1."""

from nbgrader.api import Gradebook
from nbgrader.preprocessors import GetGrades, SaveAutoGrades

from .gradebook_rows import SubmissionRows


class _RowsAtOnce:
    """For nbgrader's per-cell gradebook preprocessors: the notebook's ids from ``resources``, and its per-cell code
    run on the student's rows of the notebook read at once (``SubmissionRows``), then ``finish``."""

    def _each_cell(self, stock: type, nb, resources, finish):
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.student_id = resources["nbgrader"]["student"]
        self.db_url = resources["nbgrader"]["db_url"]
        with Gradebook(self.db_url) as gradebook:
            self.gradebook = SubmissionRows(gradebook, self.notebook_id, self.assignment_id, self.student_id)
            nb, resources = super(stock, self).preprocess(nb, resources)  # each cell, as the stock one does
            finish(gradebook, resources)
        return nb, resources


class SaveAutoGradesAtOnce(_RowsAtOnce, SaveAutoGrades):
    """SaveAutoGrades: the same fields set by nbgrader's code, the rows read at once and committed at once."""

    def preprocess(self, nb, resources):
        return self._each_cell(SaveAutoGrades, nb, resources, lambda gradebook, _: gradebook.db.commit())


class GetGradesAtOnce(_RowsAtOnce, GetGrades):
    """GetGrades, for the feedback pages: the same fields set by nbgrader's code, the rows read at once."""

    def preprocess(self, nb, resources):
        return self._each_cell(GetGrades, nb, resources, self._notebook_score)

    def _notebook_score(self, gradebook, resources) -> None:
        """As GetGrades.preprocess ends."""
        notebook = gradebook.find_submission_notebook(self.notebook_id, self.assignment_id, self.student_id)
        late_penalty = notebook.late_submission_penalty
        if late_penalty is None:
            late_penalty = 0
        else:
            self.log.warning("Late submission penalty: {}".format(late_penalty))
        resources["nbgrader"]["score"] = notebook.score - late_penalty
        resources["nbgrader"]["max_score"] = notebook.max_score
        resources["nbgrader"]["late_penalty"] = late_penalty

"""nbgrader's SaveAutoGrades with one query of each kind and one commit a notebook (``gradebook_rows``): stock, it
looks up each graded cell's grade and each answer cell's comment with a join of six tables and commits after each,
54 of each for Exercise 1."""

from nbgrader.api import Gradebook
from nbgrader.preprocessors import SaveAutoGrades

from .gradebook_rows import SubmissionRows


class SaveAutoGradesAtOnce(SaveAutoGrades):
    """SaveAutoGrades: the same fields set by nbgrader's code, the rows read at once and committed at once."""

    def preprocess(self, nb, resources):
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.student_id = resources["nbgrader"]["student"]
        self.db_url = resources["nbgrader"]["db_url"]
        with Gradebook(self.db_url) as gradebook:
            self.gradebook = SubmissionRows(gradebook, self.notebook_id, self.assignment_id, self.student_id)
            nb, resources = super(SaveAutoGrades, self).preprocess(nb, resources)  # each cell, as SaveAutoGrades does
            gradebook.db.commit()
        return nb, resources

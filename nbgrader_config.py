"""nbgrader configuration of the Backprop Ninja course (run nbgrader from this folder)."""

from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearHiddenTests,
    GetGrades,
    IgnorePattern,
    LimitOutput,
    SaveAutoGrades,
)

from autograder.preprocessors import GradingExecute, JudgeAnswers

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = "backprop_ninja"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__"]  # names.txt goes out with the release

# Autograde: run with an unseen seed, then judge every graded cell outside the student's kernel.
c.Autograde.autograde_preprocessors = [
    GradingExecute,
    JudgeAnswers,
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]
# A warning printed to stderr in a graded cell would otherwise cost the cell its points.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"Warning|warn\("
# One slow cell must not drop the whole submission.
c.Execute.timeout = 120
c.Execute.raise_on_iopub_timeout = False

# Feedback: scores and the grader's messages, never the hidden test code.
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, CSSHTMLHeaderPreprocessor]

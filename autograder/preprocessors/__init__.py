"""nbgrader's seams used by the course, plugged in by ``nbgrader_config.py`` (docs/design/nbgrader-seams.md).

grading_execute       GradingExecute: nbgrader's Execute in the sandbox, with the unseen seed and the notebook's limits
incidents             what went wrong while a notebook ran, sorted into the problem kinds
judge_answers         JudgeAnswers: every graded cell's output replaced by the grader's verdict
restore_locked_cells  RestoreLockedCells: nbgrader's OverwriteCells, with one log line per notebook
check_cell_metadata   CheckCellMetadataOnce: nbgrader's cell metadata check, its schema compiled once
late_penalty          LatePenalty: the course's late-submission policy (nbgrader's LateSubmissionPlugin)
save_grades_at_once   SaveAutoGradesAtOnce, GetGradesAtOnce: nbgrader's SaveAutoGrades and GetGrades, one query of
                      each kind a notebook (and one commit)
summarize_steps       SummarizeSteps: the feedback opens with a table of the graded steps
page_notes            the notes under that table: what was repaired before grading, the late penalty, where to get help
tidy_feedback         TidyFeedback: the feedback page without what only nbgrader needed (the verdict's points)
feedback_exporter     FeedbackExporter: the feedback pages, without HTMLExporter's BeautifulSoup pass
safe_html             SafeOutputMetadata and the cleaning of what a submission shows on a page
"""

from .check_cell_metadata import CheckCellMetadataOnce
from .feedback_exporter import FeedbackExporter
from .grading_execute import GradingExecute
from .judge_answers import JudgeAnswers
from .late_penalty import LatePenalty
from .restore_locked_cells import RestoreLockedCells
from .safe_html import SafeOutputMetadata
from .save_grades_at_once import GetGradesAtOnce, SaveAutoGradesAtOnce
from .summarize_steps import SummarizeSteps
from .tidy_feedback import HiddenTestsOutOfOutputs, TidyFeedback

__all__ = [
    "CheckCellMetadataOnce",
    "FeedbackExporter",
    "GetGradesAtOnce",
    "GradingExecute",
    "JudgeAnswers",
    "LatePenalty",
    "RestoreLockedCells",
    "SafeOutputMetadata",
    "SaveAutoGradesAtOnce",
    "SummarizeSteps",
    "HiddenTestsOutOfOutputs",
    "TidyFeedback",
]

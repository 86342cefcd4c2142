"""nbgrader's seams used by the course, plugged in by ``nbgrader_config.py``: the preprocessors that run
and judge a submission, the late-penalty plugin, and the feedback pages' exporter."""

from .check_cell_metadata import CheckCellMetadataOnce
from .feedback_exporter import FeedbackExporter
from .grading_execute import GradingExecute
from .judge_answers import JudgeAnswers
from .late_penalty import LatePenalty
from .restore_locked_cells import RestoreLockedCells
from .summarize_steps import SummarizeSteps

__all__ = [
    "CheckCellMetadataOnce",
    "FeedbackExporter",
    "GradingExecute",
    "JudgeAnswers",
    "LatePenalty",
    "RestoreLockedCells",
    "SummarizeSteps",
]

"""nbgrader preprocessors of the course, plugged in by ``nbgrader_config.py``."""

from .absolute_links import AbsoluteLinks
from .grading_execute import GradingExecute
from .judge_answers import JudgeAnswers
from .restore_locked_cells import RestoreLockedCells
from .summarize_steps import SummarizeSteps

__all__ = ["AbsoluteLinks", "GradingExecute", "JudgeAnswers", "RestoreLockedCells", "SummarizeSteps"]

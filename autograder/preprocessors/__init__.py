"""nbgrader preprocessors of the course, plugged in by ``nbgrader_config.py``."""

from .grading_execute import GradingExecute
from .judge_answers import JudgeAnswers

__all__ = ["GradingExecute", "JudgeAnswers"]

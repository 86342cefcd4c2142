"""The notebooks' naming conventions that the grader and the authoring tools share."""

ANSWER_MIME = "application/x-backprop-ninja+json"  # the type of the display that reports a cell's answers (wire.py)
SETUP_PREFIX = "setup_"  # grade_id of every locked setup cell: the grader's reference runs them too
LECTURE_CELL = "lecture"  # the id of the markdown cell that names the lecture and its chapters


def grade_id(cell) -> str:
    """The nbgrader grade_id of a cell ("" when it has none)."""
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")

"""The notebooks' naming conventions that the grader and the authoring tools share."""

ANSWER_MIME = "application/x-backprop-ninja+json"  # the type of the display that reports a cell's answers (wire.py)
SETUP_PREFIX = "setup_"  # grade_id of every locked setup cell: the grader's reference runs them too
LECTURE_CELL = "lecture"  # the id of the markdown cell that names the lecture and its chapters


def grade_id(cell) -> str:
    """The nbgrader grade_id of a cell ("" when it has none)."""
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


# Cyrillic and Greek letters that look like Latin ones: a Russian student's `dсounts` (Cyrillic с, on the key of the
# Latin c) or `dС` is another name to Python, which looks like the answer's
# (the self-check helpers hold it as code points: code without Cyrillic letters reads as English, edition_of)
LOOKALIKES = str.maketrans("асеорхуіјѕԁһкАВСЕНІЈКМОРЅТХУοαιν", "aceopxyijsdhkABCEHIJKMOPSTXYoaiv")


def latin_lookalike(name: str) -> str:
    """``name`` with each letter that looks like a Latin one written as that Latin letter."""
    return name.translate(LOOKALIKES)

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


# punctuation an input method types for ASCII's (Chinese, Japanese), beside the full-width forms U+FF01-U+FF5E: code
# point -> the character Python needs (held as code points, as LOOKALIKES: see there)
WIDE_PUNCTUATION = {0x3001: ",", 0x3002: ".", 0x2018: "'", 0x2019: "'", 0x201C: '"', 0x201D: '"'}


def full_width_hint(error) -> str:
    """' [，→ ,]': the punctuation of an input method in the code of the line a SyntaxError points at, each with the
    ASCII character Python needs (`sum(1，keepdim=True)` is "invalid decimal literal", which names neither); ''
    when there is none."""
    code = (getattr(error, "text", None) or "").split("#")[0] if isinstance(error, SyntaxError) else ""
    found = {}
    for c in code:
        ascii_ = chr(ord(c) - 0xFEE0) if 0xFF01 <= ord(c) <= 0xFF5E else WIDE_PUNCTUATION.get(ord(c))
        if ascii_ and not ascii_.isalpha():
            found[c] = ascii_
    return " [" + " ".join(f"{c}→{a}" for c, a in found.items()) + "]" if found else ""

"""A submission's words where people read them outside a web page: a line of the instructor's terminal, a cell of a
spreadsheet. One place for each, at the output boundary.

Student ids (folder and file names), file names, grade_ids, exception texts and the names on an LMS's roster are
the students' to choose. Printed as they are, an escape sequence sets the terminal's title, clears the screen, draws
a link (OSC 8) or colours what follows, a carriage return writes over the line, and a bidi control reorders it; in a
CSV file that a spreadsheet opens, a cell starting with ``=``, ``+``, ``-`` or ``@`` is read as a formula (OWASP's
"CSV injection"). Letters of every script are kept: only those characters change.
"""

import re

# C0 and C1 controls and DEL (escape sequences, \r, the bell), the bidi controls (they reorder the rest of the line)
# the line and paragraph separators, and lone surrogates (a file name of another encoding: no text to write)
UNSHOWN_BEYOND_C0 = "\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff"
_ONE_LINE = re.compile(f"[\x00-\x1f{UNSHOWN_BEYOND_C0}]")
_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{UNSHOWN_BEYOND_C0}]")  # \t and \n kept
TERMINAL_CHARS = 2000  # of one thing printed: the rest is in problems.json
FORMULA = ("=", "+", "-", "@", "\t", "\r", "'")  # a spreadsheet's formula starts; "'" too, so that it reads back


def for_terminal(text, limit: int | None = TERMINAL_CHARS, lines: bool = False) -> str:
    """``text`` as one line of a terminal shows it literally: each control character a ``?``, at most ``limit``
    characters (``lines``: tabs and line breaks kept, for a message of several lines)."""
    text = (_LINES if lines else _ONE_LINE).sub("?", str(text))
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def to_cell(text) -> str:
    """``text`` as a CSV cell that a spreadsheet shows as text, never runs: a formula's start gets a ``'`` before it
    (which spreadsheets hide) and ``from_cell`` takes it off again."""
    text = "" if text is None else str(text)
    return "'" + text if text.startswith(FORMULA) else text


def from_cell(text) -> str:
    """A text cell that ``to_cell`` wrote, as it was."""
    text = "" if text is None else str(text)
    return text[1:] if text.startswith("'") else text

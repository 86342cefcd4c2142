"""How LMSs name the files of their downloads, and a student's number on them, which outlives their name."""

import re
from pathlib import Path

from .download import Entry

# Canvas's flat files: <name>_[LATE_]<user id>_<file id>_<the file handed in>; the name is the student's to change
CANVAS_FILE = re.compile(r"([^_]+)_(?:LATE_)?(\d+)_\d+_")
# Moodle's flat files (its download without "Download submissions in folders"): <full name>_<participant number>_
# assignsubmission_<plugin>_<the file handed in>, its folder's name and the file's in one
MOODLE_FILE = re.compile(r"(.+?_\d+)_assignsubmission_[a-z]+_(.+)$")


def known_numbers(course_root: Path) -> dict:
    """number -> the folders of submitted/ whose name ends in it (``Ada_Lovelace_1234``, ``lovelaceada_1234``)."""
    known = {}
    try:
        folders = [f.name for f in (course_root / "submitted").iterdir() if f.is_dir() and not f.is_symlink()]
    except OSError:
        return known
    for name in folders:
        if number := re.search(r"_(\d+)$", name):
            known.setdefault(number[1], []).append(name)
    return known


def as_before(entry: Entry, student: str, known: dict) -> str:
    """The student an LMS names by its number, under the name an earlier download gave them: Canvas's user id and
    Moodle's participant number stay when a student changes their name on the LMS ("lovelaceada_1234" became
    "kingada_1234", one person who was two rows of grades.csv, each claiming her on the roster and neither exported)."""
    named_by_lms = (
        MOODLE_FILE.match(entry.parts[0]) or CANVAS_FILE.match(entry.parts[0])
        if len(entry.parts) == 1
        else "_assignsubmission_" in entry.parts[0]
    )
    number = re.search(r"_(\d+)$", student)
    if not named_by_lms or not number or student in known.get(number[1], [student]):
        return student
    earlier = known.get(number[1], [])
    return earlier[0] if len(earlier) == 1 else student

"""Students whose ids look alike, named for it: two students of one name, or one who took a classmate's name in
letters of another script ("lоvelaceada" with a Cyrillic о), are two rows of grades.csv and the report that read
as one. Their grades stand; the instructor tells who is who before exporting grades (docs/security.md)."""

import re
import unicodedata

from ...common.problems import Problem
from ..intake.prepare import unnamed_folders

# Cyrillic and Greek letters (and a few Latin ones) that look like a Latin letter, lower case
LOOK_LATIN = str.maketrans(
    "авеёкмнорстухѕіїјԁһӏԛԝүαβεηικνορτυχωıɑɡℓ",
    "abeekmhopctyxsiijdhlqwyabeniknoptuxwiagl",
)


def skeleton(student: str) -> str:
    """What ``student`` looks like: its letters and digits in lower case, accents and the LMS's number at its end left
    out, each letter that looks Latin as that letter."""
    text = re.sub(r"[\W_]*\d+$", "", unicodedata.normalize("NFKD", student).casefold())
    return "".join(c for c in text if c.isalnum() and not unicodedata.combining(c)).translate(LOOK_LATIN)


def _letters(student: str) -> str:
    return unicodedata.normalize("NFKD", re.sub(r"[\W_]*\d+$", "", student)).casefold()


def _unlike(student: str, others: list) -> list:
    """The letters of ``student`` that are not Latin but look it, and that the ``others`` do not have, named:
    "Cyrillic о (U+043E)". Two Иван Петров of a Russian class share theirs: none is of another script."""
    theirs = set().union(*(_letters(o) for o in others))
    odd = [c for c in dict.fromkeys(_letters(student)) if c != c.translate(LOOK_LATIN) and c not in theirs]
    return [f"{unicodedata.name(c, '?').split()[0].title()} {c} (U+{ord(c):04X})" for c in odd]


def lookalike_ids(students: list) -> list:
    """A ``lookalike_ids`` problem for every student whose id looks like another's."""
    alike = {}
    for student in dict.fromkeys(students):
        if key := skeleton(student):
            alike.setdefault(key, []).append(student)
    problems = []
    for group in alike.values():
        for student in group if len(group) > 1 else ():
            others = [s for s in group if s != student]
            odd = _unlike(student, others)
            if odd:
                why = f"letters of another script: {', '.join(odd)}"
            elif all(_letters(o) == _letters(student) for o in others):
                why = "one name, another number on the LMS: two students of one name, or one who handed in twice?"
            else:
                why = "students of one name?"
            problems.append(
                Problem(student, None, "lookalike_ids", f"looks like {', '.join(others)} ({why}); grades stand")
            )
    return problems


def name_problems(root, students: list) -> list:
    """What is wrong with the names of the class: folders of submitted/ that are no student, ids that look alike."""
    return unnamed_folders(root) + lookalike_ids(students)

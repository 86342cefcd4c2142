"""An LMS's class list (a Canvas or Moodle export), and which student of the course is which person on it.

A student is matched by an identifier on the roster, else by name compared as lower-case letters and digits; a name
two entries share matches neither and is listed, never guessed (docs/instructors.md).
"""

import codecs
import csv
import io
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ...common.errors import GradingError
from .moodle_worksheet import participant, worksheet_columns

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_ID_COLUMNS = ["Email address", "ID number", "Username"]


def name_key(text: str) -> str:
    """A name as both sides can compare it: lower-case letters and digits of any script, accents dropped (Canvas may
    spell Chloé as chloe), so that "Дмитрий Иванов" and "王小明" are names too, not all the same empty one."""
    text = unicodedata.normalize("NFKD", re.sub(r"_\d+$", "", text.strip()).lower())
    return "".join(ch for ch in text if ch.isalnum())


@dataclass(frozen=True, eq=False)  # one person is one entry: compared by identity
class Person:
    """One student on the roster."""

    name: str
    """As the LMS shows it ("Lovelace, Ada" on Canvas, "Ada Lovelace" on Moodle)."""
    row: dict
    """The roster's row as read, to write its identifying columns back."""
    ids: tuple
    """Every identifier a folder of submitted/ might be named by (LMS id, SIS ids, email, username)."""
    other_names: tuple = ()
    """The name in the other order too (Moodle: "Lovelace Ada"): a site whose names show family name first (usual in
    Chinese, Japanese, Hungarian) names its download's folders "李娜_1005_…" for First name 娜, Last name 李."""
    number: str = ""
    """The LMS's number that its download's names end in: Canvas's user ID (``lovelaceada_1234_…``), the participant
    number of Moodle's grading worksheet (``Иван Петров_12345_assignsubmission_file_``)."""


@dataclass
class Roster:
    lms: str
    """``canvas`` or ``moodle``."""
    columns: list
    """The roster's header, in its order."""
    people: list
    """Every ``Person`` on it."""
    points_possible: dict
    """Canvas: column -> the Points Possible row's value (empty for Moodle)."""
    worksheet: dict | None = None
    """Moodle's grading worksheet: kind -> its column (``moodle_worksheet.worksheet_columns``); None for others."""


def _rows(path: Path) -> list:
    """The rows of the CSV file ``path``: UTF-8, or UTF-16 with its byte-order mark (a spreadsheet's "Unicode text");
    separated by commas, or by semicolons or tabs (Moodle's export offers them; a spreadsheet in a language that writes
    decimal commas uses semicolons)."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise GradingError(f"cannot read the roster {path}: {error}") from None
    encoding = "utf-16" if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else "utf-8-sig"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        raise GradingError(
            f"cannot read the roster {path}: it is not UTF-8 text. Export it from the LMS again, or save it from your "
            'spreadsheet as "CSV UTF-8"'
        ) from None
    try:
        dialect = csv.Sniffer().sniff(text.split("\n", 1)[0], delimiters=",;\t")
    except csv.Error:  # one column, or no separator the header shows
        dialect = csv.excel
    return list(csv.reader(io.StringIO(text, newline=""), delimiter=dialect.delimiter))


def read_roster(path: Path) -> Roster:
    """The roster in ``path``, a Canvas or Moodle CSV export (``_rows``)."""
    rows = _rows(path)
    if not rows:
        raise GradingError(f"the roster {path} is empty")
    header = [h.strip() for h in rows[0]]
    records = [dict(zip(header, (v.strip() for v in row))) for row in rows[1:] if any(v.strip() for v in row)]
    if "Student" in header and "ID" in header:
        people, points = [], {}
        for r in records:
            if r.get("Student") == "Points Possible":
                points = r
            elif r.get("ID"):  # other header rows (muted, posting policy) have no student id
                ids = tuple(r[c] for c in CANVAS_COLUMNS[1:4] if r.get(c))
                people.append(Person(r["Student"], r, ids, number=r["ID"]))
        return Roster("canvas", header, people, points)
    sheet = worksheet_columns(header, records)
    if sheet:  # Moodle's grading worksheet, in the site's language
        people = [
            Person(r.get(sheet["name"] or "", ""), r, (r[sheet["email"]],) if sheet["email"] else (), number=n)
            for r in records
            if (n := participant(r, sheet))
        ]
        return Roster("moodle", header, people, {}, sheet)
    last = next((c for c in ("Last name", "Surname") if c in header), None)
    if "First name" in header and last:
        people = [
            Person(
                f"{r['First name']} {r[last]}".strip(),
                r,
                tuple(r[c] for c in MOODLE_ID_COLUMNS if r.get(c)),
                (f"{r[last]} {r['First name']}".strip(),),
            )
            for r in records
        ]
        return Roster("moodle", header, people, {})
    raise GradingError(
        f"{path} is neither a Canvas gradebook export (columns {', '.join(CANVAS_COLUMNS)}), nor a Moodle grading "
        'worksheet (its identifier column, every value as "Participant 12345", and its grade column: read in '
        "English, Russian, Chinese, German, Spanish and French), nor a Moodle export (First name, Last name, Email "
        f"address or ID number); its columns: {', '.join(header[:8])}. Export the roster with your LMS set to English"
    )


@dataclass
class Matching:
    """Who is who: students of the course against people on the roster."""

    matched: dict
    """student -> Person."""
    no_submission: list
    """People on the roster no student of the course is (nothing was handed in, or a name did not match)."""
    not_on_roster: dict
    """student -> why no one on the roster is them."""


def match(students: list, roster: Roster) -> Matching:
    by_id = {}
    for person in roster.people:
        for identifier in person.ids:
            by_id.setdefault(identifier.lower(), []).append(person)
    by_name = {}
    for person in roster.people:
        for name in (person.name, *person.other_names):
            same = by_name.setdefault(name_key(name), [])
            if person not in same:
                same.append(person)
    chosen, by_identifier, why = {}, set(), {}  # student -> the one person of their name or id; why not
    by_user = {}  # the LMS's number, which its download's student ids end in (collect)
    for person in roster.people:
        if person.number:
            by_user.setdefault(person.number, []).append(person)
    for student in students:
        user = re.search(r"_(\d+)$", student)
        found = by_id.get(student.lower()) or (by_user.get(user[1]) if user else None) or []
        if len(found) == 1:
            by_identifier.add(student)
        else:
            found = found or by_name.get(name_key(student), [])
        if len(found) == 1:
            chosen[student] = found[0]
        elif found:
            why[student] = f"{len(found)} people on the roster have this name: " + "; ".join(p.name for p in found)
        else:
            why[student] = "no one on the roster has this name or id"
    claims = {}
    for student, person in chosen.items():
        claims.setdefault(person, []).append(student)
    matched = {}
    for student, person in chosen.items():  # a person several students claim by name goes to none of them: a student
        rivals = claims[person]  # who took a classmate's name on the LMS after the roster was exported took their grade
        sure = [s for s in rivals if s in by_identifier]
        if rivals == [student] or sure == [student]:
            matched[student] = person
        else:
            others = ", ".join(s for s in rivals if s != student)
            why[student] = f"{person.name} on the roster is also claimed by {others}: " + (
                f"matched to {sure[0]} by their id" if len(sure) == 1 else "neither is matched, never guessed"
            )
    not_on_roster = {s: why[s] for s in students if s in why}
    no_submission = [p for p in roster.people if p not in matched.values()]
    return Matching(matched, no_submission, not_on_roster)

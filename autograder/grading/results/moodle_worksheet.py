"""Moodle's grading worksheet (an assignment's *Download grading worksheet*), as a roster and as the file written
back for *Upload grading worksheet*.

Moodle names the worksheet's columns in the site's language, and its upload finds them by those names: the identifier
("Participant 12345"), the grade and the time of the last change of the grade. So the worksheet is read in the
languages below, and in any other the identifier is told by its values ("Teilnehmer/in 12345"). The identifier's, the
grade's, the maximum's and the last change's names are the strings of Moodle's language packs (``recordid``,
``grade``/``gradenoun``, ``maxgrade``, ``lastmodifiedgrade``; the full name's and the email's, core strings, are
also told by their place, right after the identifier, and by their values). It is written
back as it was read, column for column, with only the grade of each student matched filled in. The number in the
identifier is the one in the folder names of the assignment's download (``Иван Петров_12345_assignsubmission_file_``):
students are matched to the worksheet by it first, so two students of one name are two people.
"""

import re

# column -> its heading in English, Russian, Simplified Chinese, German, Spanish and French Moodle sites
HEADINGS = {
    "identifier": {"Identifier", "Идентификатор", "标识符", "Identificador", "Identifiant"},
    "grade": {"Grade", "Оценка", "成绩", "Bewertung", "Calificación", "Note"},
    "name": {"Full name", "Полное имя", "全名", "Vollständiger Name", "Nombre completo", "Nom complet"},
    "email": {
        "Email address",
        "Адрес электронной почты",
        "电子邮件地址",
        "E-Mail-Adresse",
        "Dirección de correo",
        "Adresse de courriel",
    },
    "maximum": {
        "Maximum grade",
        "Maximum Grade",
        "Максимальная оценка",
        "最高成绩",
        "Bestwertung",
        "Calificación máxima",
        "Note maximale",
    },
    "modified": {
        "Last modified (grade)",
        "Последнее изменение (оценка)",
        "上次修改（评分）",
        "Zuletzt geändert (Bewertung)",
        "Última modificación (calificación)",
        "Dernière modification (note)",
    },
}
PARTICIPANT = re.compile(r"^\D+?(\d+)$")  # "Participant 12345", "Участник12345": Moodle's hiddenuser, then the number
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")


def _column(header: list, records: list, kind: str, looks=None) -> str | None:
    """The column of ``kind``: the one headed as Moodle heads it in a language above, else the one whose every value
    (and there are some) ``looks`` so."""
    named = [h for h in header if h.casefold() in {n.casefold() for n in HEADINGS[kind]}]
    if named:
        return named[0]
    if looks is None:
        return None
    fits = [
        h for h in header if (vs := [r.get(h, "") for r in records if r.get(h)]) and all(looks.match(v) for v in vs)
    ]
    return fits[0] if len(fits) == 1 else None


def worksheet_columns(header: list, records: list) -> dict | None:
    """kind -> column of a grading worksheet, or None when ``header`` is not one: it has an identifier column (every
    value "Participant <number>") and a grade column."""
    identifier = _column(header, records, "identifier", PARTICIPANT)
    if identifier is None or not all(PARTICIPANT.match(r.get(identifier, "")) for r in records):
        return None
    found = {"identifier": identifier, "grade": _column(header, records, "grade")}
    if found["grade"] is None:
        return None
    found["email"] = _column(header, records, "email", EMAIL)
    name = _column(header, records, "name")
    if name is None:  # Moodle puts the full name right after the identifier
        after = header.index(identifier) + 1
        name = header[after] if after < len(header) and header[after] not in found.values() else None
    found["name"] = name
    found["maximum"] = _column(header, records, "maximum")
    found["modified"] = _column(header, records, "modified")
    return found


def participant(row: dict, columns: dict) -> str:
    """The number of a worksheet's row ("Participant 12345": "12345"), the one its student's folder ends in."""
    return PARTICIPANT.match(row[columns["identifier"]])[1]


def maximum(people: list, columns: dict) -> float | None:
    """The assignment's maximum grade as the worksheet states it (a decimal comma in many languages), else None."""
    for person in people if columns.get("maximum") else ():
        text = person.row.get(columns["maximum"], "").replace("\u00a0", "").replace(" ", "").replace(",", ".")
        try:
            return float(text)
        except ValueError:
            continue
    return None

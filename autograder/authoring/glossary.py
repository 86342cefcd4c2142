"""For course maintainers: ``course/glossary.md``, the course's terms in its three languages, from the editions'
term lists ``autograder/locale/<code>/glossary.tsv`` (English, the edition's word, a note). The page is the same in
every edition (it is in all three languages already), so it is copied, not translated."""

import csv

from ..common.editions import EDITIONS, LOCALE_DIR, TRANSLATED
from .notebooks import COURSE_DIR

PAGE = COURSE_DIR / "glossary.md"
INTRO = """\
# Glossary · Глоссарий · 术语表

The course's terms in its three editions. Translators use these words every time; students can look a term up in
the language of a lecture, a book or a study guide they read beside the course. Back to the
[course guide](README.md).

Термины курса на трёх языках: переводы курса используют именно эти слова. Назад к [путеводителю](README.md).

本课程三种语言版本的术语对照表，各译本统一使用这些译法。返回[课程指南](README.md)。
"""


def terms() -> dict:
    """English term -> {edition code: (word, note)}, in the order of the first list that names it."""
    table = {}
    for code in TRANSLATED:
        path = LOCALE_DIR / code / "glossary.tsv"
        with path.open(newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                table.setdefault(row["en"], {})[code] = (row[code], row.get("note") or "")
    return table


def page() -> str:
    names = ["English"] + [EDITIONS[code].name for code in TRANSLATED]
    rows = ["| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    for english, words in terms().items():
        cells = [english] + [words.get(code, ("", ""))[0] for code in TRANSLATED]
        notes = "; ".join(dict.fromkeys(note for _, note in words.values() if note))  # a note both lists give: once
        cells[-1] += f" ({notes})" if notes else ""
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return INTRO + "\n" + "\n".join(rows) + "\n"


def stale() -> bool:
    return not PAGE.exists() or PAGE.read_text() != page()


def write() -> bool:
    """Write the page; whether it changed."""
    if not stale():
        return False
    PAGE.write_text(page())
    return True

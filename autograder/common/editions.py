"""The course's editions: one structure, one language each. English is the source; the others are generated from it
and the message catalogs of ``autograder/locale/<code>/`` (docs/design/editions.md)."""

from dataclasses import dataclass
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"  # <code>/<domain>.po: the translations
EDITION_VARIABLE = "BACKPROP_NINJA_EDITION"  # set by the grader in the kernel: the language of its few words
METADATA = "backprop_ninja"  # a notebook's metadata[METADATA]["edition"]: the autograded notebook's edition


@dataclass(frozen=True)
class Edition:
    code: str  # the folder of its catalogs and of its generated pages: "ru"
    name: str  # in its own language, as a student looks for it: "Русский"
    html_lang: str  # the pages' lang attribute (BCP 47): "ru", "zh-Hans"
    locale: str  # the catalogs' Language header, and Babel's plural rules: "ru", "zh_Hans"
    decimal: str = "."  # the decimal separator of its numbers in sentences: Russian writes "0,5 балла"


ENGLISH = "en"
EDITIONS = {
    "en": Edition("en", "English", "en", "en"),
    "ru": Edition("ru", "Русский", "ru", "ru", decimal=","),
    "zh": Edition("zh", "简体中文", "zh-Hans", "zh_Hans"),
}
TRANSLATED = tuple(code for code in EDITIONS if code != ENGLISH)


def edition(code: str | None) -> Edition:
    """The edition of ``code``; English for an unknown or missing one (a student always gets a readable page)."""
    return EDITIONS.get(code or ENGLISH, EDITIONS[ENGLISH])


def notebook_edition(metadata) -> str:
    """The edition code a notebook's metadata names (``metadata[METADATA]["edition"]``), English when it names none
    or anything else: the metadata came with the student's notebook and may hold anything."""
    ours = metadata.get(METADATA) if isinstance(metadata, dict) else None
    code = ours.get("edition") if isinstance(ours, dict) else None
    return code if isinstance(code, str) and code in EDITIONS else ENGLISH

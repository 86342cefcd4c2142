"""A notebook cell's text in an edition's language, with its links to the edition's own files.

The authoring tools write the editions' notebooks with it; autograde restores a translated edition's locked cells
with it, so a student's feedback shows every cell in the language they handed in.
"""

import re

from .editions import ENGLISH, notebook_edition
from .translate import code_pieces, translate_code, translate_markdown

NOTEBOOKS_DOMAIN = "notebooks"
ABSOLUTE_LINK = re.compile(
    r"(?P<base>https://github\.com/[^/\s)]+/[^/\s)]+/blob/[^/\s)]+/"
    r"|https://colab\.research\.google\.com/github/[^/\s)]+/[^/\s)]+/blob/[^/\s)]+/)"
    r"(?P<path>[^)\s#]+)(?:#(?P<anchor>[^)\s]+))?"
)


def catalog_lookup(code: str, domain: str):
    """msgid -> its translation in edition ``code``, or None where the catalog has none."""
    from .words import translations

    words = translations(code, domain)

    def translated(msgid: str) -> str | None:
        text = words.gettext(msgid)
        return None if text == msgid else text

    return translated


def with_edition_links(text: str, code: str) -> str:
    """Absolute links to the course's files (GitHub, Colab) pointed at edition ``code``'s own files and headings."""
    from .links import edition_anchor, edition_path

    def repoint(match) -> str:
        path, anchor = match.group("path"), match.group("anchor")
        target = edition_path(path, code)
        if target is None:
            return match.group(0)
        if anchor and path.startswith("course/") and path.endswith(".md"):
            anchor = edition_anchor(path.removeprefix("course/"), anchor, code)
        return match.group("base") + target + (f"#{anchor}" if anchor else "")

    return ABSOLUTE_LINK.sub(repoint, text)


CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"  # Chinese characters and punctuation
CJK_BREAK = re.compile(rf"(?<=[{CJK}])\n[ \t]*(?=[{CJK}])")


def without_cjk_breaks(markdown: str) -> str:
    """Markdown with its lines joined where one ends and the next begins in Chinese: a rendered line break is a space,
    and Chinese puts none between its characters. (A line that starts a block, a list item or a heading, never
    starts with a Chinese character.)"""
    return CJK_BREAK.sub("", markdown)


def translated_cell_source(cell_type: str, source: str, code: str) -> str:
    """A notebook cell's source in edition ``code``: markdown blocks, comments and words in strings from the
    notebooks' catalog, links to the edition's own files; code unchanged; English as it is."""
    if code == "en":
        return source
    translated = catalog_lookup(code, NOTEBOOKS_DOMAIN)
    if cell_type == "markdown":
        return with_edition_links(without_cjk_breaks(translate_markdown(source, translated)), code)
    if cell_type == "code":
        return translate_code(source, translated)
    return source


CYRILLIC = re.compile(r"[\u0400-\u04ff]")
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
LATIN = re.compile(r"[A-Za-z]")
ESCAPE = re.compile(r"\\[uUN]")  # in a string literal, a letter of any script; the words read are the literal's value


def edition_of(nb) -> str:
    """The edition a notebook was handed in as, read from the words a student read in it: its markdown cells and its
    code cells' comments and strings (Colab drops a notebook's custom metadata; the text stays). The share of
    Cyrillic or of Chinese characters among the letters decides; a notebook that shows neither is English, unless
    it says otherwise in its metadata (a notebook with hardly any text)."""
    everything = "\n".join(c.source for c in nb.cells)
    if len(CYRILLIC.findall(everything)) + len(HAN.findall(everything)) < 20 and not ESCAPE.search(everything):
        return notebook_edition(nb.metadata)  # (the words read below are part of it: they could not decide)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    text += "\n".join(p.text for c in nb.cells if c.cell_type == "code" for p in code_pieces(c.source))
    cyrillic, han, latin = len(CYRILLIC.findall(text)), len(HAN.findall(text)), len(LATIN.findall(text))
    if cyrillic >= 100 and cyrillic > 0.3 * (cyrillic + latin):
        return "ru"
    if han >= 50 and han > 0.15 * (han + latin):
        return "zh"
    return notebook_edition(nb.metadata) if cyrillic + han < 20 else ENGLISH

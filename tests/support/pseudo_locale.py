"""A pseudo-translation of every catalog, for tests that must see every piece of words go through a catalog.

Every line of every message that holds words gets " Ж" at its end: markdown keeps its headings, lists and tables,
code keeps its placeholders, and a heading's anchor changes (``-ж``), so the edition's links must follow it.
"""

import contextlib
import functools
import io
import re

from babel.messages.pofile import read_po, write_po

from autograder.common import links, words
from autograder.common.editions import EDITIONS, LOCALE_DIR

MARK = " Ж"


def pseudo(text: str) -> str:
    lines = text.split("\n")
    return "\n".join(
        line + MARK if re.search(r"[^\W\d_]{2}", line) and not re.fullmatch(r"[|\-: ]+", line) else line
        for line in lines
    )


@functools.cache
def _pseudo_catalog(template: bytes, code: str) -> bytes:
    """The .po file of edition ``code`` for this template, every message pseudo-translated: made once per template's
    text (babel reading and writing the templates took 0.3 s a call)."""
    catalog = read_po(io.BytesIO(template), locale=EDITIONS[code].locale)
    for message in catalog:
        if message.id:
            ids = message.id if isinstance(message.id, tuple) else (message.id,)
            message.string = tuple(pseudo(i) for i in ids) if isinstance(message.id, tuple) else pseudo(ids[0])
    po = io.BytesIO()
    write_po(po, catalog)
    return po.getvalue()


@contextlib.contextmanager
def pseudo_locale(tmp_path, code: str = "ru"):
    """The catalogs of edition ``code`` replaced by pseudo-translations of every template, while the block runs."""
    locale = tmp_path / "locale"
    for template in LOCALE_DIR.glob("*.pot"):
        (locale / code).mkdir(parents=True, exist_ok=True)
        (locale / code / template.name.replace(".pot", ".po")).write_bytes(_pseudo_catalog(template.read_bytes(), code))
    saved = words.LOCALE_DIR
    words.LOCALE_DIR = locale
    _clear()
    try:
        yield locale
    finally:
        words.LOCALE_DIR = saved
        _clear()


def _clear():
    words.translations.cache_clear()
    links._page_slugs.cache_clear()

"""For course maintainers and translators: the message catalogs of the editions (docs/design/editions.md).

Three domains, each a template ``autograder/locale/<domain>.pot`` extracted from the English, and a catalog
``autograder/locale/<code>/<domain>.po`` per translated edition:

grader     the grader's words: every ``say(...)`` and ``say_n(...)`` of the package (diagnoses, verdicts, feedback)
notebooks  the notebooks' markdown blocks, code comments and string literals that hold words (release and source)
course     the course pages' markdown blocks (course/*.md)

``stale_catalogs(write=True)`` extracts the templates and merges them into every catalog: a new or changed English
text comes in untranslated (a changed one's old translation is dropped, not kept as a fuzzy suggestion: ``git diff``
shows it), and the edition shows the English until it is translated.
``python -m autograder.authoring.catalogs`` prints how much of each catalog is translated.
"""

import ast
import datetime
from pathlib import Path

import nbformat
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

from ..common.editions import EDITIONS, LOCALE_DIR, TRANSLATED
from ..common.translate import code_pieces, markdown_pieces
from .notebooks import COURSE_DIR, COURSE_ROOT, SOURCE_DIR

PACKAGE = COURSE_ROOT / "autograder"
RELEASE_DIR = COURSE_ROOT / "release" / "backprop_ninja"
DOMAINS = ("grader", "notebooks", "course")
FIXED_DATE = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)  # stable files: no date churn


def notebook_pieces(path: Path) -> list:
    """(msgid, location, kind) of every translatable piece of a notebook, in order."""
    nb = nbformat.read(path, as_version=4)
    found = []
    for index, cell in enumerate(nb.cells):
        pieces = markdown_pieces(cell.source) if cell.cell_type == "markdown" else code_pieces(cell.source)
        where = f"{path.name}#{cell.metadata.get('nbgrader', {}).get('grade_id') or index}"
        found += [(p.text, where, p.kind) for p in pieces]
    return found


def translated_notebooks() -> list:
    """The notebooks whose words the editions translate: the release (what students open), the sources (what
    autograde restores), and the warm-ups of course/."""
    return sorted(RELEASE_DIR.glob("*.ipynb")) + sorted(SOURCE_DIR.glob("*.ipynb")) + sorted(COURSE_DIR.glob("*.ipynb"))


UNTRANSLATED_PAGES = {"glossary.md"}  # in all three languages already: every edition has it as it is


def course_pages() -> list:
    """The pages of course/ that the editions translate."""
    return sorted(p for p in COURSE_DIR.glob("*.md") if p.name not in UNTRANSLATED_PAGES)


def grader_templates() -> list:
    """Every ``say("...")`` and ``say_n("...", "...", n)`` of the package, read from its syntax trees (a call inside an
    f-string's braces included, which a tokenizer-based extractor misses), in file and line order."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "shared_cells" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            arity = {"say": 1, "say_n": 2}.get(node.func.id)
            texts = [a.value for a in node.args[: arity or 0] if isinstance(a, ast.Constant)]
            if arity and len(texts) == arity and all(isinstance(t, str) for t in texts):
                where = f"autograder/{path.relative_to(PACKAGE).as_posix()}:{node.lineno}"
                found.append((texts[0] if arity == 1 else tuple(texts), where, node.lineno))
    found.sort(key=lambda f: (f[1].split(":")[0], f[2]))
    return [(message, where, "words") for message, where, _ in found]


def extracted(domain: str) -> list:
    """(msgid or (singular, plural), location, kind) of a domain, in the order a translator meets them; the kind
    (``common.translate.Piece.kind``, or "words" for the grader's) says what a translation must keep."""
    if domain == "grader":
        return grader_templates()
    if domain == "notebooks":
        return [piece for path in translated_notebooks() for piece in notebook_pieces(path)]
    return [
        (p.text, f"course/{page.name}", p.kind) for page in course_pages() for p in markdown_pieces(page.read_text())
    ]


HEADER = dict(
    project="Backprop Ninja",
    version="1",
    copyright_holder="the Backprop Ninja course",
    fuzzy=False,
    msgid_bugs_address="the course's issue tracker",
    last_translator="the Backprop Ninja course",
    language_team="the Backprop Ninja course",
    creation_date=FIXED_DATE,
    revision_date=FIXED_DATE,
    header_comment="# The Backprop Ninja course's words, for translators (docs/design/editions.md).\n#",
)


def template(domain: str) -> Catalog:
    catalog = Catalog(**HEADER)
    for message, location, kind in extracted(domain):
        path, _, line = location.partition(":")
        flags = (kind, "python-brace-format") if kind in ("words", "fstring") else (kind,)
        if message in catalog:
            if (path, int(line) if line else None) not in catalog[message].locations:
                catalog[message].locations.append((path, int(line) if line else None))
        else:
            catalog.add(message, locations=[(path, int(line) if line else None)], flags=flags)
    return catalog


def _po_bytes(catalog: Catalog) -> bytes:
    import io

    buffer = io.BytesIO()
    write_po(buffer, catalog, width=120, ignore_obsolete=True, include_previous=False)
    return buffer.getvalue()


def read(code: str, domain: str) -> Catalog:
    path = LOCALE_DIR / code / f"{domain}.po"
    if not path.exists():
        return Catalog(locale=EDITIONS[code].locale, **HEADER)
    with path.open("rb") as po:
        return read_po(po, locale=EDITIONS[code].locale)


def catalog_files() -> dict:
    """path -> bytes of every template, and of every edition's catalog merged with it: a new or changed English text
    comes in untranslated (no fuzzy matching: a changed text's old translation is dropped)."""
    files = {}
    for domain in DOMAINS:
        pot = template(domain)
        files[LOCALE_DIR / f"{domain}.pot"] = _po_bytes(pot)
        for code in TRANSLATED:
            catalog = read(code, domain)
            catalog.update(pot, no_fuzzy_matching=True, update_creation_date=False)
            files[LOCALE_DIR / code / f"{domain}.po"] = _po_bytes(catalog)
    return files


def stale_catalogs(write: bool = False) -> list:
    """The catalog files that are not what the English makes of them; with ``write``, each is rewritten."""
    stale = []
    for path, data in catalog_files().items():
        if not path.exists() or path.read_bytes() != data:
            stale.append(path)
            if write:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
    return stale


def coverage(code: str, domain: str) -> tuple:
    """(translated, total) messages of a catalog: a fuzzy or empty translation is not translated."""
    catalog = read(code, domain)
    messages = [m for m in catalog if m.id]
    done = [m for m in messages if m.string and not m.fuzzy and (not isinstance(m.string, tuple) or all(m.string))]
    return len(done), len(messages)


def main() -> None:
    for code in TRANSLATED:
        for domain in DOMAINS:
            done, total = coverage(code, domain)
            print(f"{code} {domain:10} {done:5d} of {total:5d} translated ({100 * done / max(total, 1):.1f} %)")


if __name__ == "__main__":
    main()

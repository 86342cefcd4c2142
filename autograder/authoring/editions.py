"""For course maintainers: the Russian and Chinese editions, written from the English and the catalogs.

``editions/<code>/`` mirrors what a student opens: ``backprop_ninja/`` (the release notebooks, with names.txt) and
``course/`` (the guide, its pages and the warm-up). Every file is generated: the English text, each piece replaced by
its translation (``common.translate``), links pointed at the edition's own files and headings. Nothing in it is
edited by hand; ``python -m autograder.authoring`` rewrites it and the fast tier fails when it is stale.
"""

import os
import re
from pathlib import Path

import nbformat

from ..common.edition_text import catalog_lookup, translated_cell_source, without_cjk_breaks
from ..common.editions import METADATA, TRANSLATED
from ..common.links import EDITIONS_DIR, colab_url, edition_anchor, edition_path
from ..common.translate import translate_markdown
from ..common.words import render, say
from .badges import BADGE, END, START
from .catalogs import RELEASE_DIR, UNTRANSLATED_PAGES, course_pages
from .notebooks import COURSE_DIR, COURSE_ROOT, stable_text

RELATIVE_LINK = re.compile(r"\]\((?P<target>(?!https?://|mailto:)[^)\s#]*)(?:#(?P<anchor>[^)\s]+))?\)")


def release_notebooks() -> list:
    return sorted(RELEASE_DIR.glob("*.ipynb"))


def warmups() -> list:
    return sorted(COURSE_DIR.glob("*.ipynb"))


def edition_notebook(path: Path, code: str):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        cell.source = translated_cell_source(cell.cell_type, cell.source, code)
    nb.metadata[METADATA] = {"edition": code}
    return nb


def _relative_links(text: str, page: Path, code: str) -> str:
    """A course page's relative links, from its place in the edition: to the edition's page or notebook where
    there is one (at the edition's heading), else to the English file."""
    english_dir = page.parent
    edition_dir = COURSE_ROOT / edition_path(page.relative_to(COURSE_ROOT).as_posix(), code)

    def repoint(match) -> str:
        target, anchor = match.group("target"), match.group("anchor")
        if not target:  # a heading of this page
            if not anchor:
                return match.group(0)
            return f"](#{edition_anchor(page.name, anchor, code)})"
        repo_path = (english_dir / target).resolve().relative_to(COURSE_ROOT).as_posix()
        mirrored = edition_path(repo_path, code)
        new = Path(os.path.relpath(COURSE_ROOT / (mirrored or repo_path), edition_dir.parent)).as_posix()
        if anchor and mirrored and repo_path.startswith("course/") and repo_path.endswith(".md"):
            anchor = edition_anchor(repo_path.removeprefix("course/"), anchor, code)
        return f"]({new}" + (f"#{anchor}" if anchor else "") + ")"

    return RELATIVE_LINK.sub(repoint, text)


def badge_table(code: str, repository: str) -> str:
    """The Colab badges of the edition's notebooks, for its course/README.md."""
    header = render(say("notebook | open it in Colab"), code)  # (a table's column titles, split at " | ")
    rows = [f"| {header} |", "|---|---|"]
    for english in warmups() + release_notebooks():
        path = COURSE_ROOT / edition_path(english.relative_to(COURSE_ROOT).as_posix(), code)
        relative = Path(os.path.relpath(path, EDITIONS_DIR / code / "course")).as_posix()
        rows.append(f"| [{path.name}]({relative}) | [![Open In Colab]({BADGE})]({colab_url(repository, path)}) |")
    return "\n".join(rows)


def edition_page(page: Path, code: str, repository: str) -> str:
    text = without_cjk_breaks(translate_markdown(page.read_text(), catalog_lookup(code, "course")))
    text = _relative_links(text, page, code)
    text = text.replace("release/backprop_ninja/", f"editions/{code}/backprop_ninja/")  # paths named in the text
    if START in text and END in text:
        block = f"{START}\n{badge_table(code, repository)}\n{END}"
        text = re.sub(re.escape(START) + r".*?" + re.escape(END), lambda _: block, text, count=1, flags=re.S)
    return text


def edition_files(code: str, repository: str) -> dict:
    """path -> bytes of every file of edition ``code``: its pages, notebooks and names.txt."""
    files = {}
    for page in course_pages():
        files[COURSE_ROOT / edition_path(f"course/{page.name}", code)] = edition_page(page, code, repository).encode()
    for notebook in warmups() + release_notebooks():
        target = COURSE_ROOT / edition_path(notebook.relative_to(COURSE_ROOT).as_posix(), code)
        files[target] = stable_text(edition_notebook(notebook, code)).encode()
    for name in sorted(UNTRANSLATED_PAGES):
        files[EDITIONS_DIR / code / "course" / name] = (COURSE_DIR / name).read_bytes()
    files[EDITIONS_DIR / code / "backprop_ninja" / "names.txt"] = (RELEASE_DIR / "names.txt").read_bytes()
    return files


def stale_files(repository: str, write: bool = False) -> list:
    """The edition files that differ from what the English and the catalogs make (missing, different, left over);
    with ``write``, each is written (or removed)."""
    stale = []
    for code in TRANSLATED:
        files = edition_files(code, repository)
        for path, data in files.items():
            if not path.exists() or path.read_bytes() != data:
                stale.append(path)
                if write:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(data)
        for old in [p for p in (EDITIONS_DIR / code).rglob("*") if p.is_file() and p not in files]:
            stale.append(old)
            if write:
                old.unlink()
    return stale

"""The course's addresses on the web, from the one place that names the repository.

``[project.urls] Repository`` in ``pyproject.toml``: the Colab badges, the notebooks' links into ``course/`` and the
feedback pages' links all come from it (``authoring.badges``, ``authoring.course_links``).
"""

import functools
import re
from pathlib import Path

COURSE_ROOT = Path(__file__).resolve().parent.parent.parent
COURSE_DIR = COURSE_ROOT / "course"  # the course text, and the optional warm-up notebooks
BRANCH = "main"  # Colab opens the notebook as committed on this branch


def repository_url(pyproject: Path = COURSE_ROOT / "pyproject.toml") -> str:
    """``[project.urls] Repository``, e.g. https://github.com/owner/name."""
    text = pyproject.read_text()
    try:
        import tomllib

        url = tomllib.loads(text)["project"]["urls"]["Repository"]
    except ImportError:  # Python 3.10: a line of the form  Repository = "https://..."
        url = re.search(r'^Repository\s*=\s*"([^"]+)"', text, re.M).group(1)
    return url.rstrip("/").removesuffix(".git")


def colab_url(repository: str, notebook: Path) -> str:
    match = re.fullmatch(r"https://github\.com/([^/]+/[^/]+)", repository)
    if not match:
        raise ValueError(f"Colab opens notebooks from GitHub: {repository} is not https://github.com/<owner>/<name>")
    path = notebook.relative_to(COURSE_ROOT).as_posix()
    return f"https://colab.research.google.com/github/{match.group(1)}/blob/{BRANCH}/{path}"


def course_url(rest: str, repository: str | None = None) -> str:
    """The address of ``course/<rest>`` (``rest`` may end in ``#anchor``): GitHub for a page, Colab for a notebook."""
    repository = repository or repository_url()
    path, _, anchor = rest.partition("#")
    if path.endswith(".ipynb"):
        url = colab_url(repository, COURSE_DIR / path)
    else:
        url = f"{repository}/blob/{BRANCH}/course/{path}"
    return url + (f"#{anchor}" if anchor else "")


# ---- Editions: a translated edition mirrors the student's files under editions/<code>/ (docs/design/editions.md)
EDITIONS_DIR = COURSE_ROOT / "editions"
MIRRORED = {"course/": "course/", "release/backprop_ninja/": "backprop_ninja/"}  # English path -> in an edition


def edition_path(path: str, code: str) -> str | None:
    """Where the repository file ``path`` (``course/why.md``) is in edition ``code``, if an edition has it: the
    course's pages and notebooks, and the release notebooks (not images, scripts or names.txt)."""
    if code == "en":
        return path
    for english, mirrored in MIRRORED.items():
        if path.startswith(english) and path.endswith((".md", ".ipynb")):
            return f"editions/{code}/{mirrored}{path[len(english) :]}"
    return None


def heading_slugs(markdown: str) -> list:
    """The anchors GitHub gives a page's headings, in order: lower case, punctuation dropped (letters of every
    script kept), spaces as hyphens, a repeated one numbered."""
    slugs, seen, fence = [], {}, False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if fence or not re.match(r"#{1,6} ", line):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        slugs.append(slug if count == 0 else f"{slug}-{count}")
    return slugs


def edition_anchor(page: str, anchor: str, code: str) -> str:
    """``anchor`` of the English course page ``page`` (``README.md``) as edition ``code`` writes it: the heading
    in the same place of the translated page (a translation keeps the headings, in order)."""
    if code == "en" or not anchor:
        return anchor
    ours, theirs = _page_slugs(page, "en"), _page_slugs(page, code)
    return theirs[ours.index(anchor)] if anchor in ours and len(ours) == len(theirs) else anchor


@functools.cache
def _page_slugs(page: str, code: str) -> list:
    from .edition_text import catalog_lookup
    from .translate import translate_markdown

    path = COURSE_DIR / page
    if not path.exists():
        return []
    text = path.read_text()
    return heading_slugs(text if code == "en" else translate_markdown(text, catalog_lookup(code, "course")))


def edition_course_url(rest: str, code: str, repository: str | None = None) -> str:
    """``course_url`` in edition ``code``: its own page, at its own heading."""
    if code == "en":
        return course_url(rest, repository)
    repository = repository or repository_url()
    path, _, anchor = rest.partition("#")
    target = edition_path(f"course/{path}", code)
    if target is None:
        return course_url(rest, repository)
    if path.endswith(".ipynb"):
        return colab_url(repository, COURSE_ROOT / target)
    anchor = edition_anchor(path, anchor, code)
    return f"{repository}/blob/{BRANCH}/{target}" + (f"#{anchor}" if anchor else "")

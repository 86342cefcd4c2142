"""README.md and docs/ stay true to the tree: every relative link leads to a file (and its heading), every path
and test they name in code exists, CI runs the README's two commands, and the README stays short."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
# The repository's own folders: a path in code that starts with one of them must exist. (Instructor working
# folders such as feedback/ or demo/, and .venv/, are made by running the course and are not checked.)
ROOTS = ("autograder", "benchmarks", "course", "docs", "release", "source", "tests", "tools", ".ci")
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+)`")
WORD = re.compile(r"[\w./-]+")
README_LINES = 110


def name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def code(page: Path) -> list:
    """The page's code: its fenced blocks and its inline code spans."""
    text = page.read_text()
    blocks = FENCE.findall(text)
    return blocks + SPAN.findall(FENCE.sub("", text))


def prose(page: Path) -> str:
    """The page without its fenced blocks (where a "](" is code, not a link)."""
    return FENCE.sub("", page.read_text())


def anchors(page: Path) -> set:
    """The anchors GitHub gives the headings of a markdown page (repeats numbered)."""
    found, seen = set(), {}
    for line in prose(page).splitlines():
        if re.match(r"#{1,6} ", line):
            slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return found


def paths_in_code(page: Path) -> set:
    """Every repository path the page's code names (``autograder/sandbox/policy.py``, ``tests/fast/``)."""
    found = set()
    for snippet in code(page):
        for word in WORD.findall(snippet):
            word = word.rstrip(".")
            if "/" in word and word.split("/")[0] in ROOTS:
                found.add(word)
    return found


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_every_relative_link_leads_to_a_file_and_heading(page):
    for target in LINK.findall(prose(page)):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{name(page)}: {target} leads to no file"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file), f"{name(page)}: {target}: no such heading in {name(file)}"


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_every_path_named_in_code_exists(page):
    missing = sorted(p for p in paths_in_code(page) if not (REPO / p).exists())
    assert missing == [], f"{name(page)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_every_test_named_exists(page):
    defined = set()
    for path in (REPO / "tests").rglob("test_*.py"):
        defined |= set(re.findall(r"^(?:async )?def (test_\w+)", path.read_text(), re.M))
    named = {w for snippet in SPAN.findall(prose(page)) for w in re.findall(r"^(test_\w+)$", snippet)}
    assert named - defined == set(), f"{name(page)} names tests that do not exist"


def test_the_readme_is_short():
    lines = len((REPO / "README.md").read_text().splitlines())
    assert lines <= README_LINES, f"README.md has {lines} lines: move the details into docs/"


def test_ci_runs_the_readmes_two_commands():
    readme = "\n".join(FENCE.findall((REPO / "README.md").read_text()))
    ci = (REPO / ".ci" / "run").read_text()
    for command in ("./demo.sh", "./test.sh"):
        assert re.search(rf"^{re.escape(command)}\b", readme, re.M), f"the README no longer gives {command}"
        assert re.search(rf'"\$\{{newcomer\[@\]\}}" {re.escape(command)}\b', ci), f".ci/run does not run {command}"

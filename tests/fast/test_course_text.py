"""The course text and the notebooks' links: generated cells up to date, links that work on Colab and lead
somewhere, and one set of lecture timestamps everywhere."""

import re
from pathlib import Path

import nbformat
import pytest
from support.course import REPO

from autograder.authoring import authored_notebooks, badges, course_links, lecture, stale_cells

NOTEBOOKS = authored_notebooks() + sorted((REPO / "release" / "backprop_ninja").glob("*.ipynb"))
PAGES = [REPO / "README.md", *sorted((REPO / "course").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
LECTURE_LINK = re.compile(r"\[([^\]]+)\]\(https://www\.youtube\.com/watch\?v=q8SA3rM6ckI(?:&t=(\d+)s)?\)")


def name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def markdown(path: Path) -> str:
    """A page's text, or a notebook's markdown cells."""
    if path.suffix == ".md":
        return path.read_text()
    return "\n\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")


def anchors(page: Path) -> set:
    """The anchors GitHub gives the headings of a markdown page (code blocks skipped, repeats numbered)."""
    found, seen, fenced = set(), {}, False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return found


def target_path(source: Path, target: str):
    """The repository file a link leads to (and its anchor), or None for a link outside the repository."""
    repository = badges.repository_url()
    prefixes = [f"{repository}/blob/{badges.BRANCH}/", badges.colab_url(repository, REPO / "x").removesuffix("x")]
    for prefix in prefixes:
        if target.startswith(prefix):
            path, _, anchor = target.removeprefix(prefix).partition("#")
            return REPO / path, anchor
    if target.startswith(("http://", "https://", "mailto:")):
        return None
    path, _, anchor = target.partition("#")
    return (source.parent / path).resolve() if path else source, anchor


@pytest.mark.parametrize("path", authored_notebooks(), ids=name)
def test_generated_cells_are_up_to_date(path):
    assert stale_cells(path) == [], f"run: python -m autograder.authoring ({name(path)})"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=name)
def test_a_notebook_links_only_to_absolute_addresses(path):
    """On Colab a notebook has no folder around it: a relative link (into course/ or anywhere) leads nowhere."""
    relative = [t for t in LINK.findall(markdown(path)) if not t.startswith(("https://", "http://", "#"))]
    assert relative == [], f"{name(path)}: write them as course/<page>, then run python -m autograder.authoring"


@pytest.mark.parametrize("path", NOTEBOOKS + PAGES, ids=name)
def test_every_link_into_the_repository_leads_to_a_file_and_heading(path):
    for target in LINK.findall(markdown(path)):
        found = target_path(path, target)
        if found is None:
            continue
        file, anchor = found
        assert file.exists(), f"{name(path)}: {target} leads to no file"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file), f"{name(path)}: {target}: no such heading in {name(file)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=name)
def test_every_notebook_names_the_lecture_and_its_chapters(path):
    cells = {c.get("id"): c.source for c in nbformat.read(path, as_version=4).cells}
    assert lecture.TITLE in cells["lecture"] and f"({lecture.VIDEO})" in cells["lecture"]
    assert LECTURE_LINK.search(cells["lecture"]) and course_links.course_url("README.md") in cells["lecture"]


@pytest.mark.parametrize("path", NOTEBOOKS + PAGES, ids=name)
def test_lecture_timestamps_are_the_videos_chapters_everywhere(path):
    starts = dict(lecture.CHAPTERS)
    for text, seconds in LECTURE_LINK.findall(markdown(path)):
        if not seconds:
            continue
        assert int(seconds) in starts, f"{name(path)}: t={seconds}s is not the start of a chapter"
        if re.fullmatch(r"[\d:]+", text):
            assert text == lecture.timestamp(int(seconds)), f"{name(path)}: [{text}] links to t={seconds}s"


def test_course_links_follow_the_one_repository_address():
    fork = "https://github.com/someone/fork"
    text = (
        "[a](course/why.md#1-x) [b](../../course/derivations.md) [c](https://github.com/old/place/blob/dev/course/"
        "cheatsheet.md) [d](course/micrograd_warmup.ipynb) [e](https://example.org/course/other.md)"
    )
    rewritten = course_links.with_absolute_course_links(text, fork)
    assert rewritten == (
        f"[a]({fork}/blob/main/course/why.md#1-x) [b]({fork}/blob/main/course/derivations.md) "
        f"[c]({fork}/blob/main/course/cheatsheet.md) "
        "[d](https://colab.research.google.com/github/someone/fork/blob/main/course/micrograd_warmup.ipynb) "
        "[e](https://example.org/course/other.md)"
    )
    assert course_links.with_absolute_course_links(rewritten, fork) == rewritten  # idempotent


# "val loss < 2.75", in each edition's words and decimal separator (Russian prose writes 2,75)
GOAL = re.compile(r"(?:<|below|ниже|меньше|低于|小于)\s*(\d+[.,]\d+)")


@pytest.mark.parametrize(
    "path",
    [p for p in NOTEBOOKS if p.stem == "ex4_manual_training"] + sorted(REPO.glob("editions/*/*/ex4_*")),
    ids=name,
)
def test_exercise_4_names_the_engines_validation_goal_wherever_it_names_one(path):
    """The training run's last point is for a validation loss under REACH_LOSS: the text says the number in several
    places (and the generated helper cell gives the engine's), so a change of the goal must reach them all."""
    from autograder.engine.training.reference_runs import REACH_LOSS

    text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
    assert {goal.replace(",", ".") for goal in GOAL.findall(text)} == {f"{REACH_LOSS:g}"}


FURTHER_5_OR_6 = re.compile(r"(?i)further\s+exercises?\s+[56]\b")


@pytest.mark.parametrize("path", NOTEBOOKS + PAGES, ids=name)
def test_no_text_refers_to_a_further_exercise_by_the_number_of_a_course_exercise(path):
    """'Further exercises 5 and 6' read as the course's Exercises 5 and 6 (new operators, the bug hunt): outside
    their own headings, the further exercises on ReLU and GELU are named by their topic."""
    text = "\n".join(line for line in markdown(path).splitlines() if not line.startswith("#"))
    assert not FURTHER_5_OR_6.findall(text), name(path)

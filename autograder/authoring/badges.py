"""The "Open in Colab" badge tables of the READMEs, built from the one repository address.

``python -m autograder.authoring.badges`` rewrites the table between the ``<!-- colab-badges -->`` markers of every
page in ``PAGES``; the tests fail when one is stale. After forking the course: docs/maintaining.md.
"""

import os
import re
import sys
from pathlib import Path

from ..common.links import BRANCH, COURSE_DIR, COURSE_ROOT, colab_url, repository_url

RELEASE_DIR = COURSE_ROOT / "release" / "backprop_ninja"
PAGES = [COURSE_ROOT / "README.md", COURSE_ROOT / "course" / "README.md"]
START, END = "<!-- colab-badges -->", "<!-- /colab-badges -->"
BADGE = "https://colab.research.google.com/assets/colab-badge.svg"


def notebooks() -> list:
    """Every notebook a student opens: the optional warm-ups first, then the release."""
    return sorted(COURSE_DIR.glob("*.ipynb")) + sorted(RELEASE_DIR.glob("*.ipynb"))


def badge_table(page: Path, repository: str) -> str:
    """The table of every notebook, with links relative to ``page`` and a Colab badge each."""
    rows = ["| notebook | open it in Colab |", "|---|---|"]
    for notebook in notebooks():
        relative = Path(os.path.relpath(notebook, page.parent)).as_posix()
        rows.append(
            f"| [{notebook.name}]({relative}) | [![Open In Colab]({BADGE})]({colab_url(repository, notebook)}) |"
        )
    return "\n".join(rows)


def rewritten(page: Path, repository: str) -> str:
    """The page's text with its badge table up to date (markers kept; an end marker added if missing)."""
    text = page.read_text()
    if START not in text:
        raise ValueError(f"{page} has no {START} marker: put one where the badge table belongs")
    block = f"{START}\n{badge_table(page, repository)}\n{END}"
    if END in text:
        return re.sub(re.escape(START) + r".*?" + re.escape(END), lambda _: block, text, count=1, flags=re.S)
    return text.replace(START, block, 1)


def stale_pages(pages=PAGES) -> list:
    """The pages whose badge table is not what ``python -m autograder.authoring.badges`` would write."""
    repository = repository_url()
    return [page for page in pages if page.read_text() != rewritten(page, repository)]


def main() -> None:
    repository = repository_url()
    for page in PAGES:
        new = rewritten(page, repository)
        if new != page.read_text():
            page.write_text(new)
            print(f"updated {page.relative_to(COURSE_ROOT)}")
    print(f"badges point to {repository} (branch {BRANCH})", file=sys.stderr)


if __name__ == "__main__":
    main()

"""``python -m autograder.authoring``: rewrite everything generated from the English sources, in order.

1. the generated cells of the source and warm-up notebooks: the shared setup cells, the lecture cells, the course
   links, Exercises 1 and 5's graded cells (``graded_cells``), the check cells' guard (``guarded_checks``);
2. release/, with ``nbgrader generate_assignment`` (not while a solution cell of source/ has no solution region:
   nbgrader would release it as its stub alone; the command stops, naming each such cell);
3. course/glossary.md, from the editions' term lists (``glossary``);
4. the catalogs' templates, merged into every edition's catalog (``catalogs``);
5. the editions, from release/, course/ and the catalogs (``editions``).

It ends by saying how many messages of each catalog are still to translate or mend (``catalog_checks``): until they
are, the edition shows their English and the fast tier fails.
"""

import subprocess
import sys

from ..common.links import repository_url
from ..common.tools import python_module
from . import catalog_checks, catalogs, editions, glossary, graded_cells, guarded_checks
from .notebooks import COURSE_ROOT, SOURCE_DIR, authored_notebooks, sync, unmarked_solutions


def _release_files() -> dict:
    """release/'s files and their bytes: what generate_assignment rewrote is said as the other updates are."""
    folder = COURSE_ROOT / "release" / "backprop_ninja"
    return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()} if folder.exists() else {}


def main() -> str | None:
    """Regenerate what follows from source/; what stopped it, for the command line to say (None: nothing did)."""
    for path in sync(authored_notebooks(), graded_cells.sync, guarded_checks.sync):
        print(f"updated {path.relative_to(COURSE_ROOT)}")
    unmarked = [line for path in sorted(SOURCE_DIR.glob("*.ipynb")) for line in unmarked_solutions(path)]
    if unmarked:
        return "\n".join(unmarked)  # before release/: it would lose the cell's words
    release = python_module("nbgrader", "generate_assignment", "backprop_ninja", "--force")
    before = _release_files()
    done = subprocess.run(release, cwd=COURSE_ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader generate_assignment failed:\n{done.stdout}{done.stderr}")
    for path in sorted(set(before) | set(after := _release_files())):
        if before.get(path) != after.get(path):
            print(f"updated {path.relative_to(COURSE_ROOT)}")
    if glossary.write():
        print(f"updated {glossary.PAGE.relative_to(COURSE_ROOT)}")
    changed = catalogs.stale_catalogs(write=True) + editions.stale_files(repository_url(), write=True)
    for path in changed:
        print(f"updated {path.relative_to(COURSE_ROOT)}")
    _say_what_is_left_to_translate()
    return None


def _say_what_is_left_to_translate() -> None:
    """The catalogs' open messages, with the next commands: the editions are written, but show their English."""
    counts = {
        f"autograder/locale/{code}/{domain}.po": len(catalog_checks.problems(code, domain))
        for code in catalog_checks.TRANSLATED
        for domain in catalog_checks.DOMAINS
    }
    left = {path: n for path, n in counts.items() if n}
    if not left:
        return
    for path, n in left.items():
        print(f"to translate or mend: {n} messages in {path}")
    print(
        "Until they are translated, the editions show the English and the fast tier fails. List them with "
        ".venv/bin/python -m autograder.authoring.catalog_checks, translate them in the .po files "
        "(docs/translating.md), then run .venv/bin/python -m autograder.authoring again."
    )


if __name__ == "__main__":
    sys.exit(main())  # a message: printed, exit status 1

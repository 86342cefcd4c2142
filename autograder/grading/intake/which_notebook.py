"""Which of the assignment's notebooks a file handed in is: by its name, after removing what Colab and LMSs add
(``match_notebook``); a script, web page or PDF export by the notebook it is named after (``export_of``); a notebook
named after none (Untitled0.ipynb) by the course's own cells it holds (``by_cells``)."""

import json
import re
from pathlib import Path

from ...common.errors import GradingError
from .download import MAX_ENTRY_BYTES, Entry
from .student_zip import read_or_none


def _normal(text: str) -> str:
    text = text.lower()
    text = re.sub(r"copy of\s+", "", text)
    text = re.sub(r"\s*\(\d+\)\s*$", "", text)  # "name (1)"
    text = re.sub(r"-\d+$", "", text)  # Canvas: "name-1"
    text = re.sub(r"exercise[\s_-]*(\d)", r"ex\1", text)
    return re.sub(r"[\s.\-]+", "_", text).strip("_")


def match_notebook(filename: str, notebooks) -> str | None:
    """The notebook (a name from source/) that ``filename`` is a copy of, or None."""
    if not filename.lower().endswith(".ipynb"):
        return None
    stem = _normal(filename[: -len(".ipynb")])
    found = [n for n in notebooks if _normal(n) in stem]
    if found:
        longest = max(len(n) for n in found)
        found = [n for n in found if len(n) == longest]
        return found[0] if len(found) == 1 else None
    tokens = set(stem.split("_"))
    found = [n for n in notebooks if _normal(n).split("_")[0] in tokens]
    return found[0] if len(found) == 1 else None


def export_of(filename: str, notebooks) -> str | None:
    """The notebook a file that is no .ipynb is named after (``ex1_atomic_backward.py``, Jupyter's or Colab's export
    as a script, a web page or a PDF), or None: what its student handed in for that notebook, though no notebook."""
    stem, dot, _ = filename.rpartition(".")
    return match_notebook(f"{stem if dot else filename}.ipynb", notebooks)


def own_cells(course_root: Path, assignment: str, notebooks) -> dict:
    """notebook -> the grade_ids of its release that no other notebook of the course has (their setup cells share
    theirs); {} without a release."""
    ids = {}
    for notebook in notebooks:
        try:
            cells = json.loads((course_root / "release" / assignment / f"{notebook}.ipynb").read_bytes())["cells"]
        except (OSError, ValueError, KeyError):
            return {}
        ids[notebook] = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in cells} - {None}
    return {n: own - set().union(*(ids[m] for m in ids if m != n)) for n, own in ids.items()}


def by_cells(entry: Entry, download: Path, own: dict) -> str | None:
    """The one notebook most of whose own cells (``own_cells``) the notebook ``entry`` holds, or None (none, a tie, a
    file that is no notebook or cannot be read: it stays an unmatched_file)."""
    if entry.size > MAX_ENTRY_BYTES or not own:
        return None
    try:
        cells = json.loads(read_or_none(entry, download) or b"")["cells"]
        held = {c["metadata"]["nbgrader"]["grade_id"] for c in cells if "grade_id" in c["metadata"].get("nbgrader", {})}
    except (GradingError, ValueError, KeyError, TypeError, AttributeError):
        return None
    shares = {n: len(held & ids) / len(ids) for n, ids in own.items() if ids}
    best = max(shares.values(), default=0)
    found = [n for n, share in shares.items() if share == best]
    return found[0] if best > 0.5 and len(found) == 1 else None


def looks_like_notebook(data: bytes | None) -> bool:
    """Whether ``data`` is a notebook's JSON, cells and all (not empty, not cut short, not another kind of file)."""
    try:
        found = json.loads(data.decode("utf-8-sig")) if data else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(found, dict) and isinstance(found.get("cells", found.get("worksheets")), list)


def what_it_is(data: bytes) -> str:
    return "empty" if not data.strip() else "no notebook"

"""Check one submitted notebook against the release, and repair what stock nbgrader gets wrong.

Each finding is a ``Problem`` (not_a_notebook, too_large, duplicated_cell, deleted_cell, metadata_stripped,
unknown_cell, wrong_notebook); what is repaired is rebuilt from the release in a staged copy, and submitted/ keeps
what the student handed in. What each kind does, and why: docs/design/class-grading.md, "Repairing".
"""

import ast
import copy
import json
import warnings

import nbformat
from nbformat.corpus.words import generate_corpus_id as random_cell_id
from nbformat.v4 import new_notebook

from ...common.edition_text import edition_of, translated_cell_source
from ...common.editions import ENGLISH
from ...common.problems import Problem, tell_student
from ...common.words import say

MAX_BYTES = 100 * 2**20  # a notebook with a few plots is a few MB; outputs are dropped anyway
NOT_NOTEBOOKS = (  # what students hand in under a notebook's name instead: the first bytes, and what it is
    (b"pk\x03\x04", say("a zip archive")),
    (b"%pdf", say("a PDF document")),
    (b"<!doctype html", say("a web page (HTML)")),
    (b"<html", say("a web page (HTML)")),
)
# nbgrader's keys that change what a cell is; its points are the release's too, unreported: an older release's
# points are in every notebook handed in before the instructor changed them
MEANINGFUL = ("grade", "solution", "locked")


def _meta(cell) -> dict:
    """The cell's nbgrader metadata; none when its grade_id is not a name (a list of them stopped the class's run)."""
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) and isinstance(meta.get("grade_id", ""), str) else {}


def _gid(cell):
    return _meta(cell).get("grade_id")


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _same(a: str, b: str) -> bool:
    return [line.rstrip() for line in a.strip().splitlines()] == [line.rstrip() for line in b.strip().splitlines()]


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _looks_like(cell, want, code: str) -> bool:
    """Whether ``cell``, without nbgrader metadata, is the release cell ``want``: the same source (a locked cell) or
    first line (an answer cell), as English or as the edition ``code`` the student handed in shows it (Colab drops the
    metadata of a Russian or Chinese notebook too, and its comments are not the English release's)."""
    if cell.cell_type != want.cell_type:
        return False
    shown = [want.source] + ([translated_cell_source(want.cell_type, want.source, code)] if code != ENGLISH else [])
    if _meta(want).get("locked"):
        return any(_same(_source(cell), text) for text in shown)
    return any(_first_line(_source(cell)) == _first_line(text) for text in shown)


def load(raw: bytes):
    """The notebook in ``raw``, or (None, why: ``Words``) when it is not one."""
    if not raw.strip():
        return None, say("the file is empty")
    if len(raw) > MAX_BYTES:
        size, limit = len(raw) / 2**20, MAX_BYTES / 2**20
        return None, say("the file is {size:.0f} MB, over the {limit:.0f} MB limit", size=size, limit=limit)
    for magic, what in NOT_NOTEBOOKS:
        if raw.lstrip()[: len(magic)].lower() == magic:
            return None, say("{what}, not a Jupyter notebook: hand in the .ipynb file itself", what=what)
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:  # RecursionError: [[[[... nested 100,000 deep
        return None, say("not JSON ({error}): not a Jupyter notebook", error=str(error)[:80])
    if not isinstance(data, dict) or not isinstance(data.get("cells", data.get("worksheets")), list):
        return None, say("JSON without notebook cells: not a Jupyter notebook")
    try:
        with warnings.catch_warnings():  # duplicate cell ids and the like: the notebook is rebuilt anyway
            warnings.simplefilter("ignore")
            # a lone surrogate (\ud800, which JSON can spell) is no text: written out, it stopped the class's grading
            text = json.dumps(data, ensure_ascii=False).encode("utf-8", "replace").decode("utf-8")
            nb = nbformat.reads(text, as_version=4)
    except Exception as error:  # nbformat raises many kinds on odd input
        return None, say("not a readable notebook ({error})", error=f"{type(error).__name__}: {str(error)[:80]}")
    if not isinstance(nb.get("cells"), list) or not all(isinstance(c, dict) for c in nb.cells):
        return None, say("JSON without notebook cells: not a Jupyter notebook")
    return nb, None


def _rebuild(cell) -> nbformat.NotebookNode:
    kind = cell.get("cell_type") if cell.get("cell_type") in ("code", "markdown") else "raw"
    # what nbformat's new_*_cell(source) make, without their check of each new cell against the schema (0.6 ms a
    # cell): such a cell is always valid, and the notebook is checked whole (new_notebook)
    new = nbformat.from_dict({"id": random_cell_id(), "cell_type": kind, "metadata": {}, "source": _source(cell)})
    if kind == "code":
        new.update(execution_count=None, outputs=[])
    if kind == "markdown" and isinstance(cell.get("attachments"), dict):
        new.attachments = cell["attachments"]
    if _meta(cell):
        new.metadata["nbgrader"] = copy.deepcopy(_meta(cell))
        for flag in ("deletable", "editable"):
            if flag in cell.get("metadata", {}):
                new.metadata[flag] = cell["metadata"][flag]
    return new


def _cut_short(wanted: list, missing: set, others: int) -> bool:
    """Whether a notebook with fewer than half of the release's cells is this one cut short: the release's first
    cells, answers among them, and nothing of another notebook (a student who deleted the parts they did not do got
    wrong_notebook, "another notebook saved under this name?", for the parts they did). Another exercise shares only
    the setup cells with this one, or holds cells of its own."""
    kept = [_gid(w) not in missing for w in wanted]
    first = kept.index(False) if False in kept else len(kept)
    return not others and not any(kept[first:]) and any(_meta(w).get("solution") for w in wanted[:first])


def _names(cell) -> tuple | None:
    """(names the cell's code reads, names it assigns), ``x += ...`` both; None when it is no Python (a magic)."""
    try:
        tree = ast.parse(_source(cell))
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # nested too deep for the parser
        return None
    names = [n for n in ast.walk(tree) if isinstance(n, ast.Name)]
    changed = {n.target.id for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}
    reads = {n.id for n in names if isinstance(n.ctx, ast.Load)} | changed
    return reads, {n.id for n in names if isinstance(n.ctx, ast.Store)}


def _placed_first(answer, passed: list) -> bool:
    """Whether an answer cell above the step before it sits there on purpose: the student's code after it builds on
    what it assigns (the lecture's order: ``dlogits = dnorm_logits.clone()`` above dlogit_maxes's cell, whose
    ``dlogits += ...`` adds the other path), and it needs nothing they assign. Moved, that code ran before it."""
    own, names = _names(answer), [(_names(c), _meta(c).get("locked")) for c in passed]
    if own is None or any(n is None for n, locked in names if not locked):
        return False
    needs = own[0] & set().union(*(n[1] for n, _ in names if n is not None))
    return not needs and any(own[1] & n[0] for n, locked in names if not locked)


def _move_answers_above_their_tests(cells: list, release) -> list:
    """Put each answer cell that sits below the graded cell that follows it in the release, or above the cell that
    precedes it, back just above its graded cell (a cell dragged in Colab: dragged down, its test ran first and found
    no answer, "not answered yet", and every later step read it "changed after its check"; dragged up, it ran before
    the gradient it needs); the answers' grade_ids moved."""
    moved, order = [], [c for c in release.cells if _gid(c)]
    for before, answer, test in zip([None] + order, order, order[1:]):
        if not (_meta(answer).get("solution") and _meta(test).get("grade")):
            continue
        where = {_gid(c): i for i, c in enumerate(cells) if _gid(c)}
        a, t = where.get(_gid(answer)), where.get(_gid(test))
        b = where.get(_gid(before)) if before is not None else None
        if a is not None and t is not None and (a > t or b is not None and a < b < t):
            if a < t and _placed_first(cells[a], cells[a + 1 : t]):
                continue
            cells.insert(t - (a < t), cells.pop(a))
            moved.append(_gid(answer))
    return moved


def _which(foreign: set, course: dict) -> str | None:
    """The course's notebook whose own cells most of ``foreign`` (grade_ids the release lacks) are, as "name.ipynb"."""
    held = {name: len(foreign & {_gid(c) for c in nb.cells if _gid(c)}) for name, nb in course.items()}
    name = max(held, key=held.get, default=None)
    return f"{name}.ipynb" if name is not None and held[name] * 2 > len(foreign) else None


def repair(raw: bytes, release, notebook: str, student: str = "", course: dict | None = None):
    """(the notebook to grade or None, [Problem]) for the bytes ``raw`` that ``student`` handed in; ``course``: the
    course's other notebooks, {name: release}, which a wrong_notebook is named by."""
    problem = lambda kind, detail: Problem(student, notebook, kind, detail)
    nb, reason = load(raw)
    if nb is None:
        kind = "too_large" if len(raw) > MAX_BYTES else "not_a_notebook"
        return None, [Problem.said(student, notebook, kind, reason)]
    problems = []
    cells = [_rebuild(c) for c in nb.cells]
    known = {_gid(c): _meta(c) for c in release.cells if _gid(c)}
    foreign = [_gid(c) for c in cells if _gid(c) and _gid(c) not in known]
    changed = []  # the release's metadata is the course's: a cell made graded, or worth 100 points, stopped nbgrader
    for cell in cells:
        if _gid(cell) and _gid(cell) not in known:
            del cell.metadata["nbgrader"]
        elif _gid(cell):
            want = known[_gid(cell)]
            if any(_meta(cell).get(key) != want.get(key) for key in MEANINGFUL):
                changed.append(_gid(cell))
            cell.metadata["nbgrader"] = copy.deepcopy(want)
    if changed:
        problems.append(
            problem(
                "metadata_changed", f"graded with the release's nbgrader metadata: {', '.join(sorted(set(changed)))}"
            )
        )
    if foreign:
        problems.append(
            problem(
                "unknown_cell",
                f"grade_ids not in the release, run as ordinary cells: {', '.join(sorted(set(foreign))[:5])}",
            )
        )

    # 1. duplicated grade_ids: the first copy keeps its place
    seen, dropped, demoted = set(), [], []
    for cell in list(cells):
        gid = _gid(cell)
        if gid is None:
            continue
        if gid in seen:
            (dropped if _meta(cell).get("locked") else demoted).append(gid)
            if _meta(cell).get("locked"):
                cells.remove(cell)
            else:
                del cell.metadata["nbgrader"]
        seen.add(gid)
    if dropped or demoted:
        parts = ([f"extra copies of locked cells dropped: {', '.join(sorted(set(dropped)))}"] if dropped else []) + (
            [f"extra copies of answer cells kept as ordinary cells: {', '.join(sorted(set(demoted)))}"]
            if demoted
            else []
        )
        problems.append(problem("duplicated_cell", "; ".join(parts) + " (the first copy is graded)"))

    # 2. release cells that are missing: match a stripped copy, else put the locked ones back
    wanted = [c for c in release.cells if _gid(c)]
    stripped = not any(_gid(c) for c in cells)
    present = {_gid(c) for c in cells if _gid(c)}
    matched, restored, absent, anchor, code = [], [], [], -1, None
    for k, want in enumerate(wanted):
        gid = _gid(want)
        if gid in present:
            anchor = next(i for i, c in enumerate(cells) if _gid(c) == gid)
            continue
        # search up to the next release cell that is still in the submission
        later = [_gid(w) for w in wanted[k + 1 :] if _gid(w) in present]
        stop = next((i for i, c in enumerate(cells) if later and _gid(c) == later[0]), len(cells))
        is_locked = _meta(want).get("locked")
        code = code or edition_of(nb)  # once, and only when a cell is missing
        found = next(
            (i for i in range(anchor + 1, stop) if not _gid(cells[i]) and _looks_like(cells[i], want, code)), None
        )
        if found is not None:
            cells[found].metadata["nbgrader"] = copy.deepcopy(_meta(want))
            matched.append(gid)
            anchor = found
        elif is_locked or _meta(want).get("grade"):
            cells.insert(anchor + 1, _rebuild(want))  # in the student's language, as RestoreLockedCells compares it
            cells[anchor + 1].source = translated_cell_source(want.cell_type, want.source, code)
            restored.append(gid)
            anchor += 1
        else:  # a missing answer cell: nothing to grade in it, nothing to put back
            absent.append(gid)
            continue
        present.add(gid)
    found = len(wanted) - len(restored) - len(absent)
    others = len(set(foreign))  # cells of another notebook: the course's notebooks share their setup cells
    if (found < len(wanted) / 2 and not _cut_short(wanted, set(restored + absent), others)) or others > found:
        # not graded: its cells' repairs are beside the point
        words = say(
            "only {found} of the {wanted} answer and locked cells of {notebook} are in it{stripped}{others}: {which} "
            "saved under this name? Not graded",
            found=found,
            wanted=len(wanted),
            notebook=notebook,
            stripped=say(" (and no cell has nbgrader metadata)") if stripped else "",
            others=say(", and {cells} cells of another notebook", cells=others) if others > found else "",
            which=_which(set(foreign), course or {}) or say("another notebook"),
        )
        return None, [Problem.said(student, notebook, "wrong_notebook", words)]
    if matched:
        problems.append(
            problem(
                "metadata_stripped",
                f"{len(matched)} cells had lost their nbgrader metadata; matched to the release by their source "
                "and repaired" + (f" ({', '.join(matched)})" if len(matched) <= 5 else ""),
            )
        )
    if restored:
        ends = f"it ends after {_gid(wanted[found - 1])}, " if found < len(wanted) / 2 else ""  # _cut_short
        problems.append(problem("deleted_cell", f"{ends}put back from the release: {', '.join(restored)}"))

    if moved := _move_answers_above_their_tests(cells, release):
        problems.append(problem("moved_cell", "put back above the graded cell that checks it: " + ", ".join(moved)))

    out = new_notebook(cells=cells, metadata=copy.deepcopy(release.metadata))
    repaired = {"metadata_stripped": matched, "duplicated_cell": dropped + demoted, "deleted_cell": restored}
    repaired |= {"moved_cell": moved, "metadata_changed": sorted(set(changed)), "unknown_cell": foreign}
    for kind, gids in repaired.items():  # the student's own page says each (a foreign grade_id is theirs: not named)
        if gids:
            tell_student(out.metadata, kind, [] if kind == "unknown_cell" else gids)
    nbformat.validate(out)
    return out, problems

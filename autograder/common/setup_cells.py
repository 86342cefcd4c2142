"""Which of a notebook's setup cells need no seed: the same work for every student, so done once (a kernel parent
runs them ahead of its kernels, ``in_kernel.setup_ahead``; the grader's reference caches them, ``engine.reference``).
And the order autograde runs a notebook's cells in (``execution_order``).
"""

import ast
import re

from .naming import SETUP_PREFIX, grade_id

START_CELL = "self_check_helpers"  # the locked cell whose hidden tests start grading (in_kernel.start_grading)

SEED_DEFINED = re.compile(r"^SEED\s*=", re.M)


def _names(source: str, context) -> set:
    """The names ``source`` binds (``context`` ast.Store: assignments, imports, defs) or reads (ast.Load)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, context):
            names.add(node.id)
        elif context is ast.Store and isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif context is ast.Store and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def seed_free_cells(sources) -> range:
    """The setup cells, of ``sources`` in order, that give the same for every seed: those after the cell that defines
    ``SEED`` and before the next that mentions it (its environment variable included), if they read no name that the
    cells before them bind (the settings: they only bind names). Empty when there are none, or no cell defines SEED."""
    defines = next((i for i, s in enumerate(sources) if SEED_DEFINED.search(s)), None)
    if defines is None:
        return range(0)
    uses = next((i for i, s in enumerate(sources) if "SEED" in s and i > defines), len(sources))
    free = range(defines + 1, uses)
    try:
        bound = set().union(*(_names(s, ast.Store) for s in sources[: defines + 1]))
        read = set().union(*(_names(sources[i], ast.Load) for i in free))
    except SyntaxError:
        return range(0)
    return range(0) if bound & read else free


def setup_to_run_ahead(cells) -> dict | None:
    """What a kernel parent needs to do a notebook's same-for-everyone work ahead (``in_kernel.setup_ahead``), from its
    cells as nbgrader restored them from the gradebook (locked cells are the course's code, which the grader's
    reference runs too): its first code cells while they are locked setup cells, up to the last that needs no seed
    (``cells``), the indices of those (``ahead``), and the source of every locked code cell (``locked``, whose input
    transformations the parent computes); None when it has no locked code cell."""
    sources, locked, leading = [], [], True
    for cell in cells:
        if cell.cell_type != "code" or not cell.source.strip():  # (nbclient runs neither)
            continue
        nbgrader = cell.metadata.get("nbgrader", {})
        if nbgrader.get("locked"):
            locked.append(cell.source)
        leading = leading and nbgrader.get("locked") and nbgrader.get("grade_id", "").startswith(SETUP_PREFIX)
        if leading:
            sources.append(cell.source)
    free = seed_free_cells(sources)
    return {"cells": sources[: free.stop], "ahead": list(free), "locked": locked} if locked else None


def execution_order(cells) -> list:
    """The indices of ``cells`` (as nbgrader restored them) in the order autograde runs them: the locked setup cells,
    then the cell that starts grading, then every other cell, each group in the notebook's order; the notebook's own
    order when it has no start cell. Until the start cell has run, every ``.grad`` holds autograd's own gradient and
    autograd works: a cell of the student's above it (or the start cell moved below the answers) read them out of the
    static reading's sight (torch.optim's step reads ``.grad``) and earned every point. The course's notebooks, and any
    notebook whose added cells come after the start cell, run in their own order."""

    def course(cell) -> bool:
        return cell.cell_type == "code" and bool(cell.metadata.get("nbgrader", {}).get("locked"))

    start = next((i for i, cell in enumerate(cells) if course(cell) and grade_id(cell) == START_CELL), None)
    if start is None:
        return list(range(len(cells)))
    first = [i for i, cell in enumerate(cells) if course(cell) and grade_id(cell).startswith(SETUP_PREFIX)] + [start]
    taken = set(first)
    return first + [i for i in range(len(cells)) if i not in taken]


def due_at(order: list) -> dict:
    """For an executor that comes to the cells in the notebook's order (nbconvert's): at each, the cells of ``order``
    that can run by then (each once it has been come to), in ``order``; at the last, all that are left."""
    due, next_up = {}, 0
    for index in range(len(order)):
        due[index] = []
        while next_up < len(order) and order[next_up] <= index:
            due[index].append(order[next_up])
            next_up += 1
    return due

"""Which of a notebook's setup cells need no seed: the same work for every student, so done once (a kernel parent
runs them ahead of its kernels, ``in_kernel.setup_ahead``; the grader's reference caches them, ``engine.reference``).
"""

import ast
import re

from .naming import SETUP_PREFIX

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

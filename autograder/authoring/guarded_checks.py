"""Check cells that say in words when the notebook's checks are not defined, instead of raising NameError.

A student who restarts the kernel (or opens a notebook again) and runs one check cell would see
``NameError: name 'check_answer' is not defined``. Each cell of an exercise whose code is one call of a function
that a cell of the notebook defines (``check_answer(...)``, ``self_check(...)``, ``check_fix(1)``, ...), maybe after
assignments that prepare its arguments, runs only when the function is there, and otherwise prints what to run. A
hidden-tests region after the call stays as it is; while grading, every cell above has run, so the call always runs.

Exercises 1 and 5's graded cells are generated guarded (``graded_cells``); ``sync`` guards every other such cell.
"""

import ast

from .notebooks import SOURCE_DIR

HIDDEN = "### BEGIN HIDDEN TESTS"
NOT_RUN = "✘ Not checked yet: run the notebook from the top down to this cell first."  # one line: 30 cells repeat it


def guarded(call: str, function: str) -> str:
    """The lines of ``call`` (a call of ``function``, maybe over several lines) run only when ``function`` is
    defined."""
    body = "\n".join("    " + line if line.strip() else line for line in call.split("\n"))
    return f'if "{function}" in globals():\n{body}\nelse:\n    print("{NOT_RUN}")'


def _defined(nb) -> set:
    """The functions the notebook's cells define at their top level, the answer cells' aside."""
    names = set()
    for cell in nb.cells:
        if cell.cell_type != "code" or cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        try:
            body = ast.parse(cell.source).body
        except SyntaxError:
            continue
        names |= {node.name for node in body if isinstance(node, ast.FunctionDef)}
    return names


def _checked(body: list, lines: list):
    """(the function's name, the code's lines) of a cell's code that is a call of a function by name, maybe after
    assignments that prepare its arguments, or of such code already guarded (so that the guard is written anew, in
    its words of now); else None."""
    if len(body) == 1 and isinstance(body[0], ast.If) and ast.unparse(body[0].test).endswith(" in globals()"):
        found = _checked(body[0].body, lines)
        return found and (found[0], "\n".join(line[4:] for line in found[1].split("\n")))
    last = body[-1] if body else None
    if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and isinstance(last.value.func, ast.Name)):
        return None
    if not all(isinstance(statement, ast.Assign) for statement in body[:-1]):
        return None
    return last.value.func.id, "\n".join(lines[body[0].lineno - 1 : last.end_lineno])


def guard_cell(source: str, defined: set) -> str:
    """The cell with its visible code guarded when that is a call of a function of ``defined`` (maybe after
    assignments); any other cell as it is."""
    visible, hidden = source.split(HIDDEN, 1) if HIDDEN in source else (source, None)
    try:
        body = ast.parse(visible).body
    except SyntaxError:
        return source
    lines = visible.split("\n")
    found = _checked(body, lines)
    if found is None or found[0] not in defined:
        return source
    start, end = body[0].lineno - 1, body[-1].end_lineno
    text = "\n".join([*lines[:start], guarded(found[1], found[0]), *lines[end:]])
    return text if hidden is None else text + HIDDEN + hidden


def sync(nb, name: str) -> None:
    """Guard every check cell of an exercise's source notebook."""
    if not (SOURCE_DIR / f"{name}.ipynb").exists():
        return
    defined = _defined(nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = guard_cell(cell.source, defined)

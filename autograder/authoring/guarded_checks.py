"""Check cells that say in words when the notebook's checks are not defined, instead of raising NameError.

A student who restarts the kernel (or opens a notebook again) and runs one check cell would see
``NameError: name 'check_answer' is not defined``. Each cell of an exercise whose code is one call of a function
that a cell of the notebook defines (``check_answer(...)``, ``self_check(...)``, ``check_fix(1)``, ...) calls it only
when the function is there, and otherwise prints what to run. A hidden-tests region after the call stays as it is;
while grading, every cell above has run, so the call always runs.

Exercises 1 and 5's graded cells are generated guarded (``graded_cells``); ``sync`` guards every other such cell.
"""

import ast

from .notebooks import SOURCE_DIR

HIDDEN = "### BEGIN HIDDEN TESTS"
NOT_RUN = (  # the words the guard prints, in two lines of the cell
    "✘ The checks are not defined: the kernel has restarted, or the cells above have not run yet. Run the ",
    "notebook from the top down to this cell, in order: the setup cells, then the cell that defines the checks.",
)


def guarded(call: str, function: str) -> str:
    """The lines of ``call`` (a call of ``function``, maybe over several lines) run only when ``function`` is
    defined."""
    body = "\n".join("    " + line if line.strip() else line for line in call.split("\n"))
    first, second = NOT_RUN
    return f'if "{function}" in globals():\n{body}\nelse:\n    print("{first}"\n          "{second}")'


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


def _call(statement, lines: list):
    """(the function's name, the call's lines) of a statement that is a call of a function by name, or of such a call
    already guarded (so that the guard is written anew, in its words of now); else None."""
    if (
        isinstance(statement, ast.If)
        and len(statement.body) == 1
        and ast.unparse(statement.test).endswith(" in globals()")
    ):
        found = _call(statement.body[0], lines)
        return found and (found[0], "\n".join(line[4:] for line in found[1].split("\n")))
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        if isinstance(statement.value.func, ast.Name):
            return statement.value.func.id, "\n".join(lines[statement.lineno - 1 : statement.end_lineno])
    return None


def guard_cell(source: str, defined: set) -> str:
    """The cell with its one visible call of a function of ``defined`` guarded; any other cell as it is."""
    visible, hidden = source.split(HIDDEN, 1) if HIDDEN in source else (source, None)
    try:
        body = ast.parse(visible).body
    except SyntaxError:
        return source
    lines = visible.split("\n")
    found = _call(body[0], lines) if len(body) == 1 else None
    if found is None or found[0] not in defined:
        return source
    start, end = body[0].lineno - 1, body[0].end_lineno
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

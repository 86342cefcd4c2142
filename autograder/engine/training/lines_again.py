"""Exercise 4: a backward_pass that raised on the check batch, run again statement by statement, so that one line that
raises costs only the gradients computed from it (the kernel's report and the notebook's visible check both run it).

A statement that raises, and every later one that reads what it left without a value, is skipped; every other one
runs as the call ran it, on the same inputs, so each gradient it gives is the student's own, computed from values
the student's own lines computed. Nothing random stands in (unlike Exercise 6's run again): a gradient on the raising
line's way has no value, and loses its points with the line named.
"""

import ast

from ..honesty import assigned_names
from ..probes.snapshots import loaded_names


def run_line_by_line(body: list, space: dict) -> tuple:
    """(what the return statement gives, or None; the first statement that raised as {line, type, message}, or None;
    the names it and the statements that read them left without a value, which read as None in the return)."""
    failed, first = set(), None
    for statement in body:
        if isinstance(statement, ast.Raise):  # (the stub's `raise NotImplementedError()` left in: no line after it
            return None, first, failed  # ever runs, so none is judged)
        if isinstance(statement, ast.Return):
            try:
                value = eval(compile(ast.Expression(statement.value), "<backward_pass>", "eval"), space)
            except Exception:  # (a name never bound, read in the return: the call's error stands)
                value = None
            return value, first, failed
        writes = assigned_names(statement)
        if loaded_names(statement) & failed:
            failed |= writes
            space.update(dict.fromkeys(writes))
            continue
        try:
            exec(compile(ast.Module([statement], []), "<backward_pass, run again>", "exec"), space)
        except Exception as error:  # the student's line: it and what reads it have no value
            line = ast.unparse(statement).split("\n")[0][:160]
            first = first or {"line": line, "type": type(error).__name__, "message": str(error)[:300]}
            failed |= writes
            space.update(dict.fromkeys(writes))
    return None, first, failed

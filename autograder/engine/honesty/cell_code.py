"""A cell's code as the kernel runs it (IPython's magics turned into Python) and its statements, worked out once per
text: a class hands the grader the same cells many times. What is kept is bounded by the characters of the texts it
was worked out from (``common.kept.Kept``), so that a hostile submission cannot make a grading worker hold its megabytes
for later students.
"""

import ast

from ...common.kept import Kept

_AS_RUN, _STATEMENTS = Kept(4_000_000), Kept(1_000_000)  # the course's longest cell: 83,000 characters


def as_run(source: str) -> str | None:
    """What IPython's kernel compiles for ``source`` (what its history holds); None when IPython cannot transform it
    (the cell failed in the kernel too)."""
    if (code := _AS_RUN.get(source)) is None:
        from IPython.core.inputtransformer2 import TransformerManager

        try:
            code = TransformerManager().transform_cell(source)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        _AS_RUN.put(source, code)
    return code


def statements(source: str) -> tuple:
    """The statements of a cell as the kernel runs it; none if it does not parse. The same nodes for the same kept
    text: what the static reading works out about a node is kept on it."""
    if (kept := _STATEMENTS.get(source)) is None:
        code = as_run(source)
        try:
            kept = () if code is None else tuple(ast.parse(code).body)
        except (SyntaxError, ValueError, MemoryError, RecursionError):  # x = ------..1, 100,000 deep
            kept = ()  # the cell fails in the kernel too; nothing it assigns exists
        _STATEMENTS.put(source, kept)
    return kept

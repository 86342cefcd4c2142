"""A cell's code as the kernel runs it (IPython's magics turned into Python) and its statements, worked out once per
text: a class hands the grader the same cells many times."""

import ast
from functools import lru_cache


@lru_cache(maxsize=4096)
def as_run(source: str) -> str | None:
    """What IPython's kernel compiles for ``source`` (what its history holds); None when IPython cannot transform it
    (the cell failed in the kernel too)."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return TransformerManager().transform_cell(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


@lru_cache(maxsize=1024)  # the same nodes every time: what is worked out about one is kept on it (honesty)
def statements(source: str) -> tuple:
    """The statements of a cell as the kernel runs it; none if it does not parse."""
    code = as_run(source)
    try:
        return () if code is None else tuple(ast.parse(code).body)
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # x = ------..1, 100,000 deep
        return ()  # the cell fails in the kernel too; nothing it assigns exists

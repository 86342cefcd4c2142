"""The course's own cells known by their code, in any edition: what the notebook's visible checks leave out of their
reading of the student's cells (``self_check_helpers``), as the grader leaves out the locked cells nbgrader restores.

A cell's shape is its syntax tree with every string left out (messages, docstrings, f-strings: what an edition
translates; comments are not in the tree), so the English, Russian and Chinese copies of a locked cell have one shape.
The notebooks hold the shapes of the course's locked cells (``authoring.from_engine``). A student's cell of the same
shape is the course's code with other words; none of the course's cells runs a string as code, so that only a cell
made to look like one could hide a mark from the checks, never from the grader, which reads every unlocked cell.
"""

import ast
import hashlib


def cell_shape(source: str) -> str | None:
    """A short digest of the code of ``source`` without its strings; None when it does not parse."""
    try:
        tree = ast.parse(source)
        text = _shape(tree)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _shape(node) -> str:
    if isinstance(node, ast.JoinedStr) or isinstance(node, ast.Constant) and isinstance(node.value, str):
        return "''"
    if isinstance(node, list):
        return "[" + ",".join(_shape(item) for item in node) + "]"
    if isinstance(node, ast.AST):
        fields = (_shape(getattr(node, field, None)) for field in node._fields if field != "type_comment")
        return type(node).__name__ + "(" + ",".join(fields) + ")"
    return repr(node)

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


def as_def(node: ast.stmt) -> ast.stmt:
    """``f = lambda a, t: ..`` as ``def f(a, t): return ..``, which the static reading follows as a def (a check of the
    student's that reads ``.grad`` alone, ``close = lambda dt, t: torch.allclose(dt, t.grad)``, marks nothing it is
    called on); any other statement as it is. The same def for the same node: what is worked out is kept on it."""
    if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda) and len(node.targets) == 1):
        return node
    if not isinstance(node.targets[0], ast.Name):
        return node
    if getattr(node, "_as_def", None) is None:
        body = [ast.copy_location(ast.Return(node.value.body), node.value)]
        made = ast.FunctionDef(node.targets[0].id, node.value.args, body, [], None, None)
        node._as_def = ast.copy_location(made, node)
    return node._as_def


def written_as_a_literal(code: tuple, name: str) -> bool:
    """Whether the cells ``code`` write ``name`` with literals alone (`buggy = ["dW1", "bngain.grad"]`, and calls on
    it with literal arguments, `buggy.append("dC")`), and do write it: words and numbers, which read nothing from
    autograd whatever they say (the static reading marks a string that names an attribute, "grad" among them)."""
    literal, written = set(), set()
    for source in code:
        for node in (sub for statement in statements(source) for sub in ast.walk(statement)):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _literal(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                literal |= {id(t) for t in targets if isinstance(t, ast.Name) and t.id == name}
            elif isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
                written.add(id(node))
            elif isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
                written |= {id(node)} if getattr(node.value, "id", None) == name else set()  # buggy[0] = ..
            elif isinstance(node, ast.Call) and getattr(getattr(node.func, "value", None), "id", None) == name:
                arguments = [*node.args, *(k.value for k in node.keywords)]
                written |= set() if all(_literal(a) for a in arguments) else {id(node)}  # buggy.append(x)
    return bool(literal) and written <= literal


def _literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True

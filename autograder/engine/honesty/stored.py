"""``p.grad = grad``, then ``p.grad`` read in the same block: the read gets the value just stored, the student's own
(the lecture's "old" update ``p.data += -lr * p.grad`` kept after handing it one's own gradients). torch.optim's step
reads it so, out of sight, and is no autograd either (``honesty._stores_a_gradient``).
"""

import ast


def reads_of_a_store(node: ast.AST) -> set:
    """The ids of the ``X.grad`` reads (X a name) in ``node`` that follow, in the same block of statements, a statement
    that stores a value (not None) in ``X.grad``, with no statement between them, nor the one that reads, binding X
    anew. The store's own reads come before it (``p.grad = p.grad * 2``), and ``p.grad += g`` is no store: neither
    counts. A read in another block, or at a cell's top level (one statement at a time), is not one of them."""
    found = set()
    for block in _statement_blocks(node):
        stored = set()
        for statement in block:
            rebound = {s.id for s in ast.walk(statement) if isinstance(s, ast.Name) and isinstance(s.ctx, ast.Store)}
            for sub in ast.walk(statement):
                if _grad_owner(sub, ast.Load) in stored - rebound:
                    found.add(id(sub))
            stored -= rebound
            stored |= _grad_stores(statement)
    return found


def _statement_blocks(node: ast.AST):
    for sub in ast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(sub, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def _grad_owner(sub: ast.AST, ctx: type) -> str | None:
    """X for ``X.grad`` (X a name) in the context ``ctx``, else None."""
    if isinstance(sub, ast.Attribute) and sub.attr == "grad" and isinstance(sub.ctx, ctx):
        return getattr(sub.value, "id", None) if isinstance(sub.value, ast.Name) else None
    return None


def _grad_stores(statement: ast.stmt) -> set:
    """The names X whose ``X.grad`` this statement sets to a value: ``X.grad = v``, ``X.grad, Y.grad = v, w``."""
    if not isinstance(statement, ast.Assign):
        return set()
    if isinstance(statement.value, ast.Constant) and statement.value.value is None:
        return set()
    targets = [e for t in statement.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
    return {name for t in targets if (name := _grad_owner(t, ast.Store))}

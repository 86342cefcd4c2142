"""``p.grad = grad``, then ``p.grad`` read in the same block: the read gets the value just stored, the student's own
(the lecture's "old" update ``p.data += -lr * p.grad`` kept after handing it one's own gradients). torch.optim's step
reads it so, out of sight, and is no autograd either (``honesty._stores_a_gradient``).
"""

import ast


def reads_of_a_store(node: ast.AST) -> set:
    """The ids of the ``X.grad`` reads (X a name) in ``node`` that follow, in the same block of statements, a statement
    that stores a value (not None) in ``X.grad``, with no statement between them, nor the one that reads, binding X
    anew. The store's own reads come before it (``p.grad = p.grad * 2``), and ``p.grad += g`` is no store: neither
    counts. A read in another block, or at a cell's top level (one statement at a time), is not one of them.
    So are the reads of ``q.grad`` in a loop ``for q in E`` after a loop of the same block over the same E (by itself,
    or in a zip or an enumerate) that stores into each element's ``.grad`` on every turn, E not touched between."""
    found = set()
    for block in _statement_blocks(node):
        stored, every = set(), {}  # names whose .grad holds a store; collections whose every element's does: names
        for statement in block:
            kept = _loop_elements(statement) if isinstance(statement, ast.For) else {}
            body = statement.body if kept else [statement]
            held = {name for name, (over, _) in kept.items() if over in every} - _names_bound_in(body)
            rebound = _names_bound_in([statement])
            in_body = {id(sub) for b in body for sub in ast.walk(b)}
            for sub in ast.walk(statement):
                owner = _grad_owner(sub, ast.Load)
                if owner in stored - rebound or (owner in held and id(sub) in in_body):
                    found.add(id(sub))
            stored = (stored - rebound) | _grad_stores(statement)
            touched = {s.id for b in body for s in ast.walk(b) if isinstance(s, ast.Name)}
            every = {over: used for over, used in every.items() if not touched & used}
            if kept and not any(
                isinstance(s, (ast.Break, ast.Continue, ast.Return, ast.Raise)) for s in ast.walk(statement)
            ):
                every |= {kept[name][0]: kept[name][1] for b in body for name in _grad_stores(b) if name in kept}
    return found


def _loop_elements(loop: ast.For) -> dict:
    """name -> (the collection it runs over, as ast.dump, and the names in it): ``for q in E``, ``for q, g in zip(E,
    G)``, ``for i, q in enumerate(E)``."""
    target, over = loop.target, loop.iter
    call = getattr(over, "func", None)
    if isinstance(target, ast.Name):
        sources, targets = [over], [target]
    elif isinstance(target, ast.Tuple) and isinstance(call, ast.Name) and call.id in ("zip", "enumerate"):
        sources, targets = (over.args if call.id == "zip" else [None, *over.args[:1]]), target.elts
    else:
        return {}
    if len(sources) != len(targets) or getattr(over, "keywords", None):
        return {}
    return {
        t.id: (ast.dump(e), {n.id for n in ast.walk(e) if isinstance(n, ast.Name)})
        for t, e in zip(targets, sources)
        if isinstance(t, ast.Name) and e is not None
    }


def _names_bound_in(body: list) -> set:
    return {s.id for b in body for s in ast.walk(b) if isinstance(s, ast.Name) and isinstance(s.ctx, ast.Store)}


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

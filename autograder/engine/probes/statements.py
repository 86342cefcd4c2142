"""The statements of a cell as the probes read them (``parsed``), and what each writes, reads and rebinds, worked out
once per statement (and per cell, ``_rebound_in``): ``rerun.answer_code`` looks them up for every probe."""

import ast

from ...common.kept import kept_by_text, kept_on_node
from ..honesty import assigned_names
from .snapshots import loaded_names

RUN_IN_PLACE = ("time", "capture")  # magics that run their code once, in the notebook's namespace (not %%timeit)
MAGIC_DEPTH = 4  # magics over magics read through; deeper, a cell is its one call (30,000 of them took 17 s to read)
PARSES_KEPT = 2_000_000  # characters of cells whose parse is kept (the course's locked cells, every edition: 634,000)


@kept_by_text(PARSES_KEPT)  # a graded cell probes the whole history: each cell is parsed once per kernel
def parsed(source: str, depth: int = 0) -> tuple:
    """The statements of a cell, in the order they run (``flattened``): what a probe can re-run, and what takes a
    snapshot (the kernel's AST hook numbers them the same way). A cell that is one ``%%time`` or ``%%capture`` (the
    history holds ``get_ipython().run_cell_magic('time', '', code)``) has the statements of the code it ran."""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return ()  # it failed in the kernel too
    call = getattr(body[0], "value", None) if len(body) == 1 else None
    args = getattr(call, "args", None) or ()
    magic = getattr(getattr(call, "func", None), "attr", None) in ("run_line_magic", "run_cell_magic")
    if magic and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args) and len(args) > 1:
        if args[0].value in RUN_IN_PLACE and depth < MAGIC_DEPTH:
            return parsed(_as_ipython_runs_it(args[-1].value), depth + 1)
    return tuple(flattened(body))


def _as_ipython_runs_it(code: str) -> str:
    """The code a magic ran as IPython runs it: its own magics turned into Python (``%%time`` over ``%%capture``: the
    history holds the outer one, whose code starts with the inner one)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(code)
    except Exception:  # no IPython, or code it cannot transform: as it is
        return code


def flattened(body) -> list:
    """The statements of ``body``, each `with` block's own in its place (nested ones too): a probe re-runs them
    without the context manager (``torch.no_grad()`` changes no value). Other compound statements stay whole: a
    probe re-runs them whole (``_rebinds``; not a `while`, whose end may depend on the values a probe changes)."""
    return [leaf for s in body for leaf in (flattened(s.body) if isinstance(s, ast.With) else [s])]


@kept_on_node
def writes(node: ast.stmt) -> frozenset:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return frozenset({node.name})
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return frozenset((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(assigned_names(node))


@kept_on_node
def _may_change(node: ast.stmt) -> frozenset:
    """Names an expression statement that assigns none may change in place: the object whose method it calls
    (``bn.eval()``, ``model.train(False)``), the object it calls (``bn(x)``: a module in training mode updates its
    running statistics), the first argument of an in-place function (``nn.init.ones_(bn.weight)``). A probe keeps such
    a statement when it needs that object (``writes`` counts only the methods known to change their receiver)."""
    call = node.value if isinstance(node, ast.Expr) else None
    if not isinstance(call, ast.Call):
        return frozenset()
    bases = [call.func.value if isinstance(call.func, ast.Attribute) else call.func]
    if isinstance(call.func, ast.Attribute) and call.func.attr.endswith("_") and call.args:
        bases.append(call.args[0])
    names = set()
    for base in bases:
        while isinstance(base, (ast.Attribute, ast.Subscript)):
            base = base.value
        if isinstance(base, ast.Name):
            names.add(base.id)
    return frozenset(names)


def _without_pins(node: ast.stmt, pins) -> ast.stmt | None:
    """``node`` with its targets among ``pins`` renamed ``_``, when it assigns several names at once, a pin among them
    (`dlogits, dlogit_maxes = dnorm_logits.clone(), -dnorm_logits.sum(1, keepdim=True)`, `dhprebn, dbnmeani =
    sub_back(dbndiff)`): the pin stands for its own part, the others are the answer's code. None for any other
    statement, and when what is left still writes a pin (`dlogit_maxes[0], dlogits = ...`)."""
    if not (
        isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], (ast.Tuple, ast.List))
    ):
        return None

    def renamed(target):
        if isinstance(target, ast.Name) and target.id in pins:
            return ast.copy_location(ast.Name("_", ast.Store()), target)
        if isinstance(target, ast.Starred):
            return ast.copy_location(ast.Starred(renamed(target.value), ast.Store()), target)
        if isinstance(target, (ast.Tuple, ast.List)):
            return ast.copy_location(type(target)([renamed(e) for e in target.elts], ast.Store()), target)
        return target

    others = ast.fix_missing_locations(ast.copy_location(ast.Assign([renamed(node.targets[0])], node.value), node))
    return None if writes(others) & set(pins) else others


@kept_on_node
def _may_rebind(node: ast.stmt) -> frozenset:
    """Names the statement may give a new value as a whole: in a block, on any of its paths (a branch not taken, a
    loop that may not run, an `except` too)."""
    if isinstance(node, (ast.If, ast.For, ast.Try, ast.With)):
        blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])]
        blocks += [handler.body for handler in getattr(node, "handlers", [])]
        return frozenset().union(*(_may_rebind(statement) for block in blocks for statement in block))
    return _rebinds(node)


def _all_rebind(block: list) -> frozenset:
    return frozenset().union(*(_rebinds(statement) for statement in block))


@kept_on_node
def _rebinds(node: ast.stmt) -> frozenset:
    """Names the statement gives a new value as a whole (x = ..., def x, import x), not only changes; a block, on
    every path through it (both branches of an `if`, the `try` and each `except`; never a loop, which may not run):
    what it may rebind only (``_may_rebind``) keeps the value it had before, which the probe must compute too."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and getattr(node, "value", None) is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elements = [e for t in targets for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])]
        return frozenset(e.id for e in elements if isinstance(e, ast.Name))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
        return writes(node)
    if isinstance(node, ast.If):  # a block the probe re-runs whole: what it rebinds whichever way it goes
        return _all_rebind(node.body) & _all_rebind(node.orelse)
    if isinstance(node, ast.With):
        return _all_rebind(node.body)
    if isinstance(node, ast.Try):  # the `try` and its `else` ran, or an `except` did; the `finally` always
        done = _all_rebind(node.body) | _all_rebind(node.orelse)
        for handler in node.handlers:
            done &= _all_rebind(handler.body)
        return done | _all_rebind(node.finalbody)
    return frozenset()


@kept_on_node
def _reads(node: ast.stmt) -> frozenset:
    names = loaded_names(node)  # not the names a comprehension binds for itself: an earlier `for t in` is not read
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        names.add(node.target.id)  # x += y reads x
    return frozenset(names)


@kept_by_text(PARSES_KEPT)  # as ``parsed``: each cell is looked up once per kernel, not once per probe
def _rebound_in(source: str) -> dict:
    """name -> the positions in ``parsed(source)`` of the statements that may rebind it (``_may_rebind``), in order."""
    found = {}
    for k, statement in enumerate(parsed(source)):
        for name in _may_rebind(statement):
            found.setdefault(name, []).append(k)
    return found


def _latest(cells, name: str) -> tuple | None:
    """(cell, position) of the last statement of ``cells`` that may rebind ``name``; None if none may."""
    for i in reversed(range(len(cells))):
        found = _rebound_in(cells[i]).get(name)
        if found:
            return i, found[-1]
    return None

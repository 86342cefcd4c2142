"""While grading, a student's own check against autograd's gradients is skipped, as the notebook's ``cmp`` is.

Every ``.grad`` holds a decoy while grading (``switches.start_grading``), so ``assert torch.allclose(dW2, W2.grad)``,
``torch.testing.assert_close(dW2, W2.grad)`` or ``if not torch.allclose(dW2, W2.grad): raise ..`` fails there though it
passed in the student's notebook; in a cell of several answers it stopped the cell, and every answer after it was
missing. Such a statement (top-level, or in a `with` block) writes no name and reads ``.grad``: IPython's AST hook puts
a call that says self-checks are skipped in its place. It gives no value to anything: nothing to take from autograd.
So is ``loss.backward()`` as a statement of its own (the lecture's, to fill the ``.grad`` it compares with), which
autograd refuses while grading: written above the answers of its cell, it stopped them all. The hook calls it only
on what is not a tensor (a class of one's own with a method ``backward``); a tensor's gets the skipped note. And so is
a check that reads ``.grad`` through a function of the student's own that reads it (``assert compare('h', dh, h)``,
the lecture's ``cmp`` made to return its verdict): a function defined in the cell, or in an earlier one (``__main__``'s,
whose code reads an attribute ``grad``). Called as a statement of its own (``check('h', dh, h)``, which may raise
inside), in a ``print`` or in an ``if`` that writes nothing, it is skipped whatever its name, if the function changes
nothing beyond its own variables (``_a_reader``). The checks in a ``for`` loop's body are skipped as those in a
``with`` block are; the loop runs.
"""

import ast
import builtins
import copy
import dis
import functools
import re
import types
import unicodedata

from IPython import get_ipython

from ..common.kept import every_node
from ..engine.honesty.cell_code import comprehension_targets
from . import known_cells, located

SKIPPED_HOOK = "__backprop_ninja_skipped__"  # a builtin while grading: what stands for a skipped check
BACKWARD_HOOK = "__backprop_ninja_backward__"  # a builtin while grading: what stands for a statement x.backward(..)
GRAD = re.compile(r"\bgrad\b|\bbackward\b|\bassert|\braise\b")  # .grad, .backward(), a check by a function


def skip_self_checks(skipped) -> None:
    """From the next cell on, each check against ``.grad`` calls ``skipped()`` instead (after the snapshot hook, which
    numbers the statements as the student wrote them)."""
    shell = get_ipython()
    if shell is None:
        return
    builtins.__dict__[SKIPPED_HOOK] = skipped
    builtins.__dict__[BACKWARD_HOOK] = functools.partial(_backward_skipped, skipped)
    if not any(isinstance(t, _ChecksOff) for t in shell.ast_transformers):
        shell.ast_transformers.append(_ChecksOff())
    located.install(shell)


class _ChecksOff(ast.NodeTransformer):
    def visit(self, node):
        try:
            if isinstance(node, ast.Module) and not _reads_no_grad(node):
                node.body = _without_checks(node.body, _grad_readers(node.body))
        except Exception:  # the cell runs as it is
            pass
        return node


def _reads_no_grad(module: ast.Module) -> bool:
    """Whether no statement of ``module`` can read ``.grad``, told from the text the kernel parsed it from
    (``known_cells.parsed_from``) while every AST hook is the course's (the others put in no such read): an attribute
    ``grad`` is that word in the text (not ``no_grad``), or, in a text that is not ASCII, in its NFKC form (Python's
    form of a name; the characters beside a name are ASCII). A student's cell was walked node by node for it, statement
    by statement: about half of the hooks' CPU in a kernel. Nor ``backward`` (``loss.backward()``), nor ``assert`` or
    ``raise`` (a check by a function that reads ``.grad``)."""
    shell = get_ipython()
    if shell is None or not located.only_course_hooks(shell.ast_transformers):
        return False
    source = known_cells.parsed_from(shell, module)
    if source is None:
        return False
    source = source if source.isascii() else unicodedata.normalize("NFKC", source)
    if GRAD.search(source):
        return False
    readers = _readers_in(getattr(shell, "user_ns", None) or {})  # a call of one defined earlier: check(name, dh, h)
    return not any(re.search(rf"\b{re.escape(name)}\b", source) for name in readers)


def _readers_in(namespace: dict) -> list:
    """The names of the namespace's functions of ``__main__`` that read ``.grad`` and keep nothing (``_a_reader``)."""
    return [
        name
        for name, value in list(namespace.items())
        if type(value) is types.FunctionType and value.__module__ == "__main__" and _a_reader(value.__code__)
    ]


def _grad_readers(body: list) -> frozenset:
    """The functions of the student's that read ``.grad`` which the statements of ``body`` call by name: defined in
    ``body``, or earlier (the namespace's functions of ``__main__``, whose code, or a code nested in it, names
    ``grad``)."""
    defined = {
        name
        for s in body
        for name, code in _defined(s)
        if any(_loads_grad(sub) for sub in every_node(code)) and not any(_keeps(sub) for sub in every_node(code))
    }
    called = {
        sub.func.id
        for s in body
        if isinstance(s, (ast.Assert, ast.Expr, ast.If, ast.With, ast.For, ast.Assign))
        for sub in every_node(s)
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)
    }
    shell = get_ipython()
    namespace = getattr(shell, "user_ns", None) or {}
    earlier = {
        name
        for name in called - defined
        if type(namespace.get(name)) is types.FunctionType
        and namespace[name].__module__ == "__main__"
        and _a_reader(namespace[name].__code__)
    }
    return frozenset((defined & called) | earlier)


KEEPING = {"STORE_GLOBAL", "DELETE_GLOBAL", "STORE_ATTR", "DELETE_ATTR", "STORE_SUBSCR", "DELETE_SUBSCR"}


def _defined(statement: ast.stmt) -> list:
    """(name, its code) of a function a statement defines: ``def check(..)``, ``close = lambda a, t: ..``."""
    if isinstance(statement, ast.FunctionDef):
        return [(statement.name, statement)]
    if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Lambda):
        return [(t.id, statement.value) for t in statement.targets if isinstance(t, ast.Name)]
    return []


@functools.lru_cache(maxsize=256)
def _a_reader(code: types.CodeType) -> bool:
    """Whether a function's code (or one nested in it) reads an attribute ``grad`` and changes nothing beyond its own
    variables: it writes no global (``global x``), no attribute or item, and calls no in-place method (``copy_``,
    ``append``): skipped, it takes nothing away that the notebook keeps."""
    if not _names_grad(code):
        return False
    found = [(i.opname, i.argval) for c in _codes(code) for i in dis.get_instructions(c)]
    if not any(op in ("LOAD_ATTR", "LOAD_METHOD") and name == "grad" for op, name in found):
        return False
    return not any(op in KEEPING or op in ("LOAD_ATTR", "LOAD_METHOD") and _in_place(str(name)) for op, name in found)


def _codes(code: types.CodeType) -> list:
    return [code] + [inner for c in code.co_consts if isinstance(c, types.CodeType) for inner in _codes(c)]


def _keeps(node: ast.AST) -> bool:
    """Whether a node of a function's body may change what is not the function's own (``_a_reader``'s reading of
    its source)."""
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return True
    if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return True
    return isinstance(node, ast.Call) and _mutates(node)


def _in_place(name: str) -> bool:
    return name.endswith("_") and not name.startswith("_") or name in ("append", "extend", "update", "insert", "pop")


def _loads_grad(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "grad" and isinstance(node.ctx, ast.Load)


def _names_grad(code: types.CodeType) -> bool:
    return "grad" in code.co_names or any(_names_grad(c) for c in code.co_consts if isinstance(c, types.CodeType))


def _without_checks(body: list, readers: frozenset = frozenset()) -> list:
    """``body`` without the checks; a statement is never changed in place (a `with` block is copied): the kernel's
    parse of a locked cell is its parent's, shared by every cell run of it (``known_cells.KnownParse``)."""
    new = []
    for statement in body:
        if isinstance(statement, (ast.With, ast.For)):
            inner = _without_checks(statement.body, readers) or [ast.copy_location(ast.Pass(), statement)]
            if inner != statement.body:
                statement = copy.copy(statement)
                statement.body = inner
        elif runs_backward(statement):  # x.backward(..) -> the hook's call on x, with the same arguments
            call = statement.value
            call = ast.Call(ast.Name(BACKWARD_HOOK, ast.Load()), [call.func.value, *call.args], call.keywords)
            statement = ast.fix_missing_locations(
                ast.copy_location(ast.Expr(ast.copy_location(call, statement)), statement)
            )
        elif checks_autograd(statement) or checks_through(statement, readers):
            call = ast.Call(ast.Name(SKIPPED_HOOK, ast.Load()), [], [])
            statement = ast.fix_missing_locations(ast.copy_location(ast.Expr(call), statement))
        new.append(statement)
    return new


def _backward_skipped(skipped, tensor, *args, **kwargs):
    """A statement ``tensor.backward(..)`` while grading: the skipped note for a tensor, the call for anything else."""
    import torch

    if isinstance(tensor, torch.Tensor):
        return skipped()
    return tensor.backward(*args, **kwargs)


def runs_backward(statement: ast.stmt) -> bool:
    """A statement that is one call ``x.backward(..)``, whose receiver and arguments call nothing else and bind nothing
    (``loss.backward()``, ``loss.backward(retain_graph=True)``); once per node, as ``checks_autograd``."""
    known = getattr(statement, "_runs_backward", None)
    if known is None:
        known = statement._runs_backward = _runs_backward(statement)
    return known


def _runs_backward(statement: ast.stmt) -> bool:
    call = getattr(statement, "value", None) if isinstance(statement, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "backward"):
        return False
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    inside = every_node(statement)
    return [s for s in inside if isinstance(s, ast.Call)] == [call] and not any(
        isinstance(s, (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom)) for s in inside
    )


def checks_autograd(statement: ast.stmt) -> bool:
    """An assert, a call of an assert function, or an `if` that raises, that reads ``.grad`` and writes no name (once
    per node: a locked cell's statements are its kernel parent's, worked out there, ``known_cells.transformed``)."""
    known = getattr(statement, "_checks_autograd", None)
    if known is None:
        known = statement._checks_autograd = _checks_autograd(statement)
    return known


def checks_through(statement: ast.stmt, readers: frozenset) -> bool:
    """A check as ``checks_autograd``'s that reads ``.grad`` through a call of one of ``readers`` (not kept on the node:
    what a name stands for changes from cell to cell)."""
    if not readers:
        return False
    subs = every_node(statement)
    if not any(isinstance(s, ast.Call) and getattr(s.func, "id", None) in readers for s in subs):
        return False
    if isinstance(statement, (ast.Expr, ast.If)):  # check(..), print(check(..)), if not check(..): ..., whatever
        return _changes_nothing(subs)  # the function's name: it reads .grad, and what it returns is not kept
    if isinstance(statement, ast.Assign) and all(getattr(t, "id", None) == "_" for t in statement.targets):
        return _changes_nothing(every_node(statement.value))  # _ = [check(n, d, t) for n, d, t in ..]: thrown away
    return _only_a_check(statement, subs)


def _checks_autograd(statement: ast.stmt) -> bool:
    subs = every_node(statement)
    if not any(_loads_grad(s) for s in subs):
        return False
    return _only_a_check(statement, subs)


def _only_a_check(statement: ast.stmt, subs: list) -> bool:
    """An assert, a call of an assert function, or an `if` that raises, that writes and changes nothing."""
    if not _changes_nothing(subs):
        return False
    if isinstance(statement, ast.Assert):
        return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        return "assert" in str(getattr(func, "attr", None) or getattr(func, "id", "")).lower()
    if isinstance(statement, ast.If):
        return any(isinstance(s, ast.Raise) for s in subs)
    return False


def _changes_nothing(subs: list) -> bool:
    """Whether a statement (``subs``: its nodes) writes no name, item or attribute, defines nothing and calls no method
    that changes its receiver."""
    own = {i for s in subs if isinstance(s, ast.comprehension) for i in comprehension_targets(s)}
    if any(isinstance(getattr(s, "ctx", None), (ast.Store, ast.Del)) and id(s) not in own for s in subs):
        return False  # it writes a name (or an item, an attribute), not one a comprehension binds: not only a check
    if any(isinstance(s, (ast.NamedExpr, ast.FunctionDef, ast.ClassDef, ast.Lambda)) for s in subs):
        return False
    return not any(isinstance(s, ast.Call) and _mutates(s) for s in subs)  # (skipped, a change the notebook made)


def _mutates(call: ast.Call) -> bool:
    """A call of an in-place method (``t.add_(..)``) or one that could change a value (``x.append(..)``)."""
    return _in_place(getattr(call.func, "attr", ""))

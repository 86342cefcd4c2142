"""Snapshots (see ``engine.probes.snapshots``): IPython's AST hook makes each statement of a cell (top-level, or in a
`with` block: ``rerun.parsed``) that writes a name take a snapshot of what it reads, right before it runs, for the
rule probes."""

import ast
import builtins
import copy
import functools

import torch
from IPython import get_ipython

from ..common.naming import full_width_hint
from ..engine.probes.rerun import _rebound_in, flattened, parsed, writes
from ..engine.probes.snapshots import evaluated_names, take
from . import located

SNAPSHOT_HOOK = "__backprop_ninja_snapshot__"  # a builtin while grading: the call put before each statement
snapshots = {}  # (history index of the cell, index of the statement) -> its snapshot
# (cell, statement) of the statements with a snapshot whose end is watched (by a call after them; the expression that
# ends a cell, whose value the cell shows, by the cell's outcome), and of those that ran to their end
watched, finished = set(), set()
_shown_last = set()  # (cell, statement) of the expression that ends the cell running now
raised = {}  # history index of a cell -> the error that stopped it, as "Type: message"
forward_shapes = {}  # name -> shape of each tensor when grading started: the pins' shapes, whatever came later
# name -> (the tensor, its version) of each tensor when grading started: what a probe puts back for a forward tensor
# that a student's cell rebound since (``probe_runner.rebound_forward``), unless it was changed in place
forward_values = {}
since = []  # the history index of the first cell whose statements take snapshots (the one after start_grading's)


def take_snapshots(namespace: dict) -> None:
    """From the next cell on, every statement that writes a name takes a snapshot of what it reads."""
    for name, value in namespace.items():
        if isinstance(value, torch.Tensor):
            forward_shapes.setdefault(name, value.shape)
            forward_values.setdefault(name, (value, value._version))
    shell = get_ipython()
    if shell is None:
        return
    for kept in (parsed.kept, _rebound_in.kept):  # a kernel reads one notebook: each cell is parsed once, however long
        kept.budget = float("inf")
    since[:] = since or [len(shell.history_manager.input_hist_parsed)]  # (the cell running now is the last entry)
    builtins.__dict__[SNAPSHOT_HOOK] = functools.partial(_snapshot, namespace)
    if not any(isinstance(t, _SnapshotCalls) for t in shell.ast_transformers):
        shell.ast_transformers.append(_SnapshotCalls())
    located.install(shell)
    if _after_the_cell not in shell.events.callbacks.get("post_run_cell", []):
        shell.events.register("post_run_cell", _after_the_cell)


def _after_the_cell(result) -> None:
    """IPython's event after a cell: the expression that ended it ran to its end if the cell did; else what stopped
    the cell."""
    watched.update(_shown_last)
    if getattr(result, "success", False):
        finished.update(_shown_last)
    _shown_last.clear()
    error = getattr(result, "error_before_exec", None) or getattr(result, "error_in_exec", None)
    if isinstance(error, BaseException):
        said = f"{type(error).__name__}: {error}"[:200] + full_width_hint(error)  # (an input method's ，: which)
        raised[len(get_ipython().history_manager.input_hist_parsed) - 1] = said


def stopped_before(name: str) -> str | None:
    """What stopped the newest cell that assigns ``name`` (or, if it cannot be parsed, names it), if that cell raised:
    why ``name`` is not defined though the student wrote it."""
    history = get_ipython().history_manager.input_hist_parsed
    for index in range(len(history) - 2, 0, -1):  # (not the cell running now)
        statements = parsed(history[index])  # none if it could not be parsed: then its text names it
        if any(name in writes(s) for s in statements) or (
            not statements and name in history[index] and index in raised
        ):
            return raised.get(index)
    return None


def cut_short(name: str) -> str | None:
    """What stopped the newest cell that assigns ``name`` after a statement of it had written ``name`` and before
    another one that writes it ran to its end (`dhprebn = ...` then `dhprebn += ... typo`): ``name`` holds only part
    of what that cell computes. None when that cell did not stop, or stopped elsewhere."""
    history = get_ipython().history_manager.input_hist_parsed
    for index in range(len(history) - 2, 0, -1):  # (not the cell running now)
        writing = [(index, k) for k, statement in enumerate(parsed(history[index])) if name in writes(statement)]
        if writing:
            done = [statement in finished for statement in writing if statement in watched]
            return raised.get(index) if True in done and False in done else None
    return None


def _snapshot(namespace: dict, cell: int, index: int, names: tuple | None) -> None:
    if names is None:  # called after the statement: it ran to its end
        finished.add((cell, index))
        return
    try:
        snapshots[(cell, index)] = take(namespace, names)
    except Exception:  # no snapshot: a probe that needs it says so
        pass


class _SnapshotCalls(ast.NodeTransformer):
    """IPython's AST hook: before each statement of a cell (top-level or in a `with` block, numbered as ``parsed``
    numbers them) that writes a name and reads some, ``__backprop_ninja_snapshot__(cell, index, names)``, and after it
    ``__backprop_ninja_snapshot__(cell, index, None)``: it did not raise (after the expression that ends a cell, whose
    value the cell shows, the cell's outcome says it). Each call is guarded so that it can never stop the student's
    code."""

    def visit(self, node):
        try:
            cell, statements = _in_history(node)
            if statements:
                _shown_last.clear()
                node.body = _with_snapshots(cell, node.body, iter(enumerate(statements)), top=True)
        except Exception:  # the cell runs as the student wrote it, without snapshots
            pass
        return node


def _with_snapshots(cell: int, body: list, numbered, top: bool = False) -> list:
    """``body`` with the snapshot calls, a `with` block's inside it (a copy: the module is changed only once all is
    done); ``numbered`` gives each statement of ``flattened(body)`` in turn, with its index, as the probes parse it;
    ``top``: the cell's own body, whose last statement, an expression, shows its value."""
    new = []
    for position, statement in enumerate(body):
        if isinstance(statement, ast.With):
            block = copy.copy(statement)
            block.body = _with_snapshots(cell, statement.body, numbered)
            new.append(block)
        else:
            index, as_parsed = next(numbered)
            shown = top and position == len(body) - 1 and isinstance(statement, ast.Expr)
            new += _with_snapshot(cell, index, statement, as_parsed, shown)
    return new


def _in_history(module) -> tuple:
    """(index, statements) of the newest cell of the input history, as the probes parse it, if ``module`` was parsed
    from it (the code `%%time` ran, too: ``parsed`` reads it); else (None, ()): a cell run without history."""
    shell = get_ipython()
    history = shell.history_manager.input_hist_parsed if shell is not None else []
    if not isinstance(module, ast.Module) or len(history) < 2:
        return None, ()
    statements = parsed(history[-1])
    layout = lambda body: [(type(s), s.lineno, s.col_offset, s.end_lineno, s.end_col_offset) for s in body]
    return (len(history) - 1, statements) if layout(statements) == layout(flattened(module.body)) else (None, ())


def _with_snapshot(cell: int, index: int, statement: ast.stmt, as_parsed: ast.stmt, shown: bool) -> list:
    """``statement`` between the call that takes its snapshot, if it needs one (judged on the probes' own parse of it,
    whose analysis they reuse), and the call that marks it finished, but for the expression that ends the cell
    (``shown``)."""
    names = evaluated_names(as_parsed)
    if not (names and writes(as_parsed)):
        return [statement]  # it cannot be in a probe's code, or it reads nothing
    before = _guarded(cell, index, tuple(sorted(names)), statement)
    if shown:  # `t.add_(1)` ending the cell shows its value: nothing may come after it
        _shown_last.add((cell, index))
        return [before, statement]
    watched.add((cell, index))
    return [before, statement, _guarded(cell, index, None, statement)]


def _guarded(cell: int, index: int, names: tuple | None, statement: ast.stmt) -> ast.stmt:
    """The guarded call, every node at ``statement``'s place (as ``ast.fix_missing_locations`` would put them: IPython
    then has nothing to fill in, ``located``)."""
    at = {key: getattr(statement, key) for key in ("lineno", "col_offset", "end_lineno", "end_col_offset")}
    arguments = [ast.Constant(cell, **at), ast.Constant(index, **at), ast.Constant(names, **at)]
    call = ast.Call(ast.Name(SNAPSHOT_HOOK, ast.Load(), **at), arguments, [], **at)
    handler = ast.ExceptHandler(ast.Name("Exception", ast.Load(), **at), None, [ast.Pass(**at)], **at)
    return ast.Try([ast.Expr(call, **at)], [handler], [], [], **at)

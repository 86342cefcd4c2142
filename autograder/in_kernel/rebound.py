"""Forward tensors a student's cell rebound (a temporary named ``x`` in an answer cell): which ones a probe's code
reads so, and where they were rebound. The probe then runs that code once more on them as the forward pass left them
(``probe_runner``), and the grader keeps the step's points when that run follows the rule (``kept_by_rule``)."""

import ast
import contextlib

import torch

from ..engine.probes.rerun import GRADIENTS, _may_rebind, _quoted, flattened, parsed, writes
from .snapshot_hook import forward_values


def rebound_forward(code, plan: list, cells: list, first: int) -> dict:
    """name -> (cell, position) of the statement that rebound it, for the forward tensors (the namespace's when grading
    started, not gradients) that the answer's code (``rerun.AnswerCode``, its ``plan``) reads rebound by a cell since
    ``first``: read with other values than they had then, the rebinding before the code; or rebound by an assignment
    of the code in a cell before the answer's own (the probe's code starts as far up as its pinned gradients do). A
    tensor changed in place since has lost those values: it is left as it was read."""
    found, own_cell = {}, code.origins[-1][0] if code.origins else None
    for statement, values, (cell, index) in zip(code.statements, plan, code.origins):
        for name, value in values.items():
            if name in found or not _intact(name):
                continue
            tensor = forward_values[name][0]
            if isinstance(value, torch.Tensor) and (value.shape, value.dtype) == (tensor.shape, tensor.dtype):
                if torch.equal(value, tensor):
                    continue
            for i in range(cell, first - 1, -1):  # the latest statement before this one that may rebind it
                positions = [k for k in _bound_at(cells[i], name) if i < cell or k < index]
                if positions:
                    found[name] = (i, positions[-1])
                    break
        if cell != own_cell and isinstance(statement, (ast.Assign, ast.AnnAssign)):  # not a loop's own variable
            found.update({name: (cell, index) for name in writes(statement) if name not in found and _intact(name)})
    return found


def _intact(name: str) -> bool:
    """Whether ``name`` is a forward tensor whose tensor of then still holds its values (not changed in place)."""
    if name in GRADIENTS or name not in forward_values:
        return False
    tensor, version = forward_values[name]
    return tensor._version == version


def _bound_at(source: str, name: str) -> list:
    """The positions in ``parsed(source)`` of the statements that may give ``name`` a new value as a whole: an
    assignment of any form (`x, s = ...`, `x: T = ...`), a loop's variable, a walrus's, a def or an import."""
    return [k for k, statement in enumerate(parsed(source)) if name in _may_rebind(statement) | _stored(statement)]


def _stored(statement: ast.stmt) -> set:
    """The names a statement stores as a whole in the notebook's namespace: not its comprehensions' variables, nor those
    of the functions and classes it defines (their own)."""
    found, todo = set(), [statement]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo += [child for child in ast.iter_child_nodes(node) if not isinstance(child, ast.comprehension)]
    return found


def as_written(source: str, index: int) -> str:
    """The first line of statement ``index`` of ``parsed(source)`` as the student wrote it (`x, s = hln, 2**0.5`, not
    `x, s = (hln, 2 ** 0.5)`), cut as ``_quoted`` cuts; as Python prints it when that cannot be told (a magic's
    cell)."""
    statement = parsed(source)[index]
    with contextlib.suppress(Exception):
        if ast.dump(flattened(ast.parse(source).body)[index]) == ast.dump(statement):
            text = source.splitlines()[statement.lineno - 1].strip()
            return text if len(text) <= 60 else text[:57] + "..."
    return _quoted(statement)

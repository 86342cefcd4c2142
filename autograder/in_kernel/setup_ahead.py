"""Setup cells run ahead: the seed-free ones (imports, names.txt, the dataset), run once in the kernel parent, and taken
by each kernel it forks instead of running them again (docs/design/sandbox.md, "Setup cells run ahead").

In the parent, ``run_ahead`` runs them (the course's locked cells as nbgrader restored them, never a student's) and
keeps what each bound, printed and left in the random generators. A kernel forked afterwards loads this module as an
IPython extension (``arm``). While every cell it has run is, in order, exactly one of the notebook's first cells it was
given, a cell that the parent ran is replaced by ``take``: the same names, output and generators, as if it had run.
From the first other cell on, the kernel runs everything itself.
"""

import ast
import builtins
import contextlib
import io
import random
import sys
import types
import warnings
from dataclasses import dataclass

import torch

from . import known_cells, located

FORBIDDEN = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Await, ast.Global, ast.Nonlocal)


@dataclass(frozen=True)
class CellAhead:
    """What one setup cell did when it ran ahead."""

    bound: tuple  # (name, value) of each name it bound anew, in the order it first bound them
    unbound: tuple  # the names it deleted
    printed: str  # what it printed
    random_state: tuple | None  # the state it left in ``random``, if it changed it
    torch_state: torch.Tensor | None  # the state it left in torch's default generator, if it changed it


@dataclass(frozen=True)
class RunAhead:
    """Setup cells run ahead, in order, in one namespace (the globals of the functions they defined)."""

    sources: tuple
    cells: tuple  # a CellAhead each
    namespace: dict


def runnable(source: str) -> bool:
    """Plain Python that binds names, whose run can be taken as it is: functions only as top-level ``def`` without
    decorators (made again in the kernel's namespace), no class, lambda, ``__future__`` import or ``await``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython's own syntax (magics), or none at all
        return False
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef):
            if statement.decorator_list:
                return False
            continue
        for node in ast.walk(statement):
            if isinstance(node, FORBIDDEN) or isinstance(node, ast.ImportFrom) and node.module == "__future__":
                return False
    return True


def _execute(source: str, namespace: dict, filename: str) -> None:
    """Run ``source`` as IPython runs a cell; ValueError if its last expression has a value (IPython would show it)."""
    body = ast.parse(source).body
    last = body.pop() if body and isinstance(body[-1], ast.Expr) else None
    exec(compile(ast.Module(body, []), filename, "exec"), namespace)
    if last is not None and eval(compile(ast.Expression(last.value), filename, "eval"), namespace) is not None:
        raise ValueError("the cell shows a value")


def run_ahead(sources) -> RunAhead | None:
    """Run ``sources`` in order in one new namespace and keep what each did; None when one of them cannot be taken
    as it ran: not ``runnable``, it raised, wrote to stderr or warned. The random generators are put back after."""
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    cells, kept = [], (random.getstate(), torch.get_rng_state())
    try:
        for i, source in enumerate(sources):
            if not runnable(source):
                return None
            before, printed, errors = dict(namespace), io.StringIO(), io.StringIO()
            states = random.getstate(), torch.get_rng_state()
            with (
                contextlib.redirect_stdout(printed),
                contextlib.redirect_stderr(errors),
                warnings.catch_warnings(record=True) as caught,
            ):
                warnings.simplefilter("always")
                _execute(source, namespace, f"<setup cell {i}, run ahead>")
            if errors.getvalue() or caught:
                return None
            after = random.getstate(), torch.get_rng_state()
            cells.append(
                CellAhead(
                    bound=tuple((k, v) for k, v in namespace.items() if k not in before or before[k] is not v),
                    unbound=tuple(k for k in before if k not in namespace),
                    printed=printed.getvalue(),
                    random_state=after[0] if after[0] != states[0] else None,
                    torch_state=after[1] if not torch.equal(after[1], states[1]) else None,
                )
            )
    except (Exception, SystemExit):  # noqa: BLE001 (the kernel runs the cell itself, and shows why)
        return None
    finally:
        random.setstate(kept[0])
        torch.set_rng_state(kept[1])
    return RunAhead(tuple(sources), tuple(cells), namespace)


_armed = None  # in a kernel forked with something run ahead: its Armed
_made = {}  # id of a function run ahead -> the same function made in the kernel's namespace


@dataclass(frozen=True)
class Armed:
    """What a kernel takes from its parent: ``cells[i]`` (the notebook's first code cells) for each i in ``ahead`` was
    ``run``'s next cell; ``transforms`` are its locked cells' input transformations."""

    cells: tuple
    ahead: dict  # index -> CellAhead
    run: RunAhead | None
    transforms: dict


def arm(cells, ahead, run: RunAhead | None, transforms: dict) -> list:
    """In a kernel forked after ``run`` (None: nothing run ahead) and ``transformed``, before IPython starts. Returns
    the kernel's extra arguments: this module, loaded as an IPython extension."""
    global _armed
    _armed = Armed(tuple(cells), dict(zip(ahead, run.cells)) if run else {}, run, transforms)
    return [f"--IPKernelApp.extensions={__name__}"]


def load_ipython_extension(shell) -> None:
    if _armed is None:
        return
    if _armed.ahead:
        shell.ast_transformers = [TakeAhead(shell), *shell.ast_transformers]
        located.install(shell)
    known_cells.install(shell, _armed.transforms)


class TakeAhead(ast.NodeTransformer):
    """IPython's AST hook: a cell run ahead is replaced by ``take`` while every cell run so far is the one expected;
    it removes itself at the first other cell (or one run without history), and after the last cell run ahead."""

    def __init__(self, shell):
        self.shell, self.count = shell, shell.execution_count

    def visit(self, node):
        cells, ahead = _armed.cells, _armed.ahead
        stored, self.count = self.shell.execution_count != self.count, self.shell.execution_count
        ran = self.shell.history_manager.input_hist_raw[1:]  # every cell run with history, this one last
        index = len(ran) - 1
        if not stored or not isinstance(node, ast.Module) or list(ran) != list(cells[: index + 1]):
            self.remove()
            return node
        if index >= max(ahead):
            self.remove()
        if index not in ahead:
            return node
        call = ast.parse(f"__import__({__name__!r}, fromlist=['take']).take({index})").body
        return ast.fix_missing_locations(ast.Module(call, []))

    def remove(self) -> None:
        self.shell.ast_transformers = [t for t in self.shell.ast_transformers if t is not self]


def take(index: int) -> None:
    """In the kernel, in place of cell ``index``: what it bound, printed and left in the random generators."""
    from IPython import get_ipython

    cell, namespace = _armed.ahead[index], get_ipython().user_ns
    for name, value in cell.bound:
        namespace[name] = _made_here(value, namespace)
    for name in cell.unbound:
        namespace.pop(name, None)
    if cell.random_state is not None:
        random.setstate(cell.random_state)
    if cell.torch_state is not None:
        torch.set_rng_state(cell.torch_state)
    if cell.printed:
        sys.stdout.write(cell.printed)


def _made_here(value, namespace: dict):
    """A function run ahead, made again with ``namespace`` as its globals, as its ``def`` would have made it there;
    any other value as it is."""
    if not isinstance(value, types.FunctionType) or value.__globals__ is not _armed.run.namespace:
        return value
    if id(value) not in _made:
        made = types.FunctionType(value.__code__, namespace, value.__name__, value.__defaults__, value.__closure__)
        made.__kwdefaults__, made.__qualname__, made.__doc__ = value.__kwdefaults__, value.__qualname__, value.__doc__
        made.__annotations__ = dict(value.__annotations__)
        made.__dict__.update(value.__dict__)
        _made[id(value)] = made
    return _made[id(value)]

"""What a statement read when it ran: taken in the student's kernel at autograde, for the rule probes.

Right before each statement of a cell (``rerun.parsed``) that writes a name, the names it reads are copied
(``take``), so that a probe re-runs it on those values, not on what later lines left (docs/design/probes.md). What
cannot be copied faithfully is ``Uncopied``, and a probe that needs it says it cannot judge.
"""

import ast
import types
from dataclasses import dataclass

import torch

from ...common.kept import kept_on_node

MAX_BYTES = 2**24  # a tensor above 16 MB is not copied (Exercise 4's whole-set hprebn is 146 MB; Xtr is 4.4 MB)
MAX_ITEMS = 100_000  # items of a container (the 32,033 names fit)
MAX_DEPTH = 4  # containers inside containers

_ATOMS = (int, float, complex, bool, str, bytes, type(None), range, slice, type(Ellipsis))
_ATOMS += (torch.dtype, torch.device, torch.Size, torch.layout, torch.memory_format)
_KEPT = (types.ModuleType, type, types.MethodDescriptorType, types.WrapperDescriptorType)
_CONTAINERS = (list, tuple, dict, set, frozenset)


class Unbound:
    """The name had no value in the namespace: a builtin, or not defined yet."""


UNBOUND = Unbound()


@dataclass(frozen=True)
class Uncopied:
    """A value the snapshot could not copy: what it was, in words."""

    what: str


@dataclass(frozen=True)
class Helper:
    """A function defined in the notebook: given back reading the probe's namespace instead of the kernel's."""

    function: types.FunctionType
    defaults: tuple  # copies of its default values, as they were
    kwdefaults: dict


def loaded_names(node: ast.AST) -> set:
    """The names ``node`` reads from the namespace it runs in, not those a comprehension or a lambda binds for
    itself: ``[t * 2 for t in x]`` reads x, not t (a t bound earlier in the notebook is not what it reads)."""
    found = set()

    def visit(sub, local):
        if isinstance(sub, ast.Name):
            if isinstance(sub.ctx, ast.Load) and sub.id not in local:
                found.add(sub.id)
        elif isinstance(sub, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = set(local)
            for i, generator in enumerate(sub.generators):
                visit(generator.iter, local if i == 0 else inner)  # the first iterable is read outside
                inner |= {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
                for condition in generator.ifs:
                    visit(condition, inner)
            for part in [sub.key, sub.value] if isinstance(sub, ast.DictComp) else [sub.elt]:
                visit(part, inner)
        elif isinstance(sub, ast.Lambda):
            a = sub.args
            for default in [*a.defaults, *(d for d in a.kw_defaults if d is not None)]:
                visit(default, local)
            own = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x is not None}
            visit(sub.body, set(local) | own)
        else:
            for child in ast.iter_child_nodes(sub):
                visit(child, local)

    visit(node, set())
    return found


@kept_on_node  # the statements of the probes' kept parse: each is looked at once
def evaluated_names(node: ast.stmt) -> frozenset:
    """The names a statement of a cell reads when it runs (a ``def`` only its decorators and defaults)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return frozenset()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        parts = [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    else:
        parts = [node]
    names = {name for p in parts for name in loaded_names(p)}
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        names.add(node.target.id)  # x += y reads x
    return frozenset(names)


def take(namespace: dict, names) -> dict:
    """name -> a copy of its value in ``namespace`` now (UNBOUND, an Uncopied or a Helper where no copy is made)."""
    seen, pending = {}, list(names)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        if name not in namespace:
            seen[name] = UNBOUND
            continue
        value = namespace[name]
        seen[name] = _notebooks_own(value, namespace) or copy(value)
        if isinstance(seen[name], Helper):
            pending += [n for n in _global_names(value.__code__) if n in namespace]  # what it reads when called
    return seen


def _notebooks_own(value, namespace: dict):
    """A Helper for a function defined in the notebook; an Uncopied for anything else of the notebook's own that
    reads its namespace when used (a class, a function with a closure or behind a decorator); None otherwise."""
    kind = type(value)
    if issubclass(kind, type) and value.__module__ == namespace.get("__name__"):
        return Uncopied("a class defined in the notebook")
    if kind is not types.FunctionType:
        return None
    inner = value
    while type(getattr(inner, "__wrapped__", None)) is types.FunctionType:
        inner = inner.__wrapped__
    if inner.__globals__ is not namespace:
        return None
    if inner is not value or value.__closure__:
        return Uncopied("a function of the notebook behind a decorator or with a closure")
    defaults, kwdefaults = copy(value.__defaults__ or ()), copy(value.__kwdefaults__ or {})
    if isinstance(defaults, Uncopied) or isinstance(kwdefaults, Uncopied):
        return Uncopied("a function of the notebook with defaults that cannot be copied")
    return Helper(value, defaults, kwdefaults)


def _global_names(code: types.CodeType) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)  # nested functions, comprehensions
    return names


def copy(value, depth: int = 0):
    """A copy of ``value`` that nothing done to ``value`` later can change, or an Uncopied saying why not."""
    try:
        kind = type(value)
        if kind in _ATOMS or issubclass(kind, _KEPT):
            return value
        if kind in (torch.Tensor, torch.nn.Parameter):
            size = value.element_size() * value.nelement()
            if size > MAX_BYTES:
                return Uncopied(f"a tensor of {size:,} bytes")
            return value.detach().clone()
        if kind.__name__ == "ndarray" and kind.__module__ == "numpy" and value.dtype != object:
            return value.copy() if value.nbytes <= MAX_BYTES else Uncopied(f"an array of {value.nbytes:,} bytes")
        if kind is torch.Generator:
            return torch.Generator().set_state(value.get_state())
        if kind in (types.BuiltinFunctionType, types.FunctionType):
            owner = getattr(value, "__self__", None)
            if owner is None or issubclass(type(owner), (types.ModuleType, type)):
                return value  # torch.tanh, F.softmax: not the notebook's, nothing to copy
            return Uncopied(f"a method bound to a {type(owner).__name__}")
        if kind in _CONTAINERS or kind.__module__ == "torch.return_types":
            return _copy_container(value, depth)
        return Uncopied(f"a {kind.__name__}")
    except Exception as error:  # whatever the student's objects do: no copy, and the probe says so
        return Uncopied(f"a {type(value).__name__} that could not be copied ({type(error).__name__})")


def _copy_container(value, depth: int):
    if depth >= MAX_DEPTH or len(value) > MAX_ITEMS:
        return Uncopied(f"a {type(value).__name__} too large or too deep to copy")
    if isinstance(value, dict):
        items = {k: copy(v, depth + 1) for k, v in value.items() if type(k) in _ATOMS}
        if len(items) < len(value):
            return Uncopied("a dict with keys that cannot be copied")
        parts = list(items.values())
    else:
        parts = [copy(v, depth + 1) for v in value]
    bad = next((p for p in parts if isinstance(p, Uncopied)), None)
    if bad is not None:
        return Uncopied(f"a {type(value).__name__} holding {bad.what}")
    return items if isinstance(value, dict) else type(value)(parts)


def given_back(value, namespace: dict):
    """A snapshot's value as a probe gets it: a fresh copy (the probe may change it in place), a notebook function
    reading ``namespace``."""
    if isinstance(value, Helper):
        f = value.function
        given = types.FunctionType(f.__code__, namespace, f.__name__, copy(value.defaults) or None)
        given.__kwdefaults__ = copy(value.kwdefaults) or None
        return given
    return copy(value)

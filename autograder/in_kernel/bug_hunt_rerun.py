"""Exercise 6 in the kernel: a backward_pass that raised, or returned a gradient that is not finite, run again statement
by statement, so that one line that raises (or makes NaN or infinite values) costs only the fix whose part of the pass
holds it (docs/design/bug-hunt.md).

The statements of the function's body run one after the other, in one namespace, as the call ran them. When one
raises, the gradients it writes stand for nothing the student computed: each is given a random tensor of its shape,
drawn from the grading seed (``pin_value``, the probes' draw, which the grader draws again), and the rest of the
pass runs on. A line further down that is right turns that random gradient into what its rule gives for it, which
the grader checks as it checks a gradient computed from a wrong one (error carried forward): never autograd's values,
so nothing here hands out an answer. When a statement raised because a gradient it reads cannot feed it (not defined,
or not of its shape and dtype: a slip further up), it runs again with a random one of the right shape in that
gradient's place, which later lines read too; the gradient's own step is judged on the student's own value. So is a
gradient that a line makes NaN or infinite from finite ones (``** -1.5`` of a negative number): every later line would
give NaN, the bug's line as the right one, and tell no fix (``not_finite``).
"""

import ast

import torch

from ..engine.bug_hunt.catalogue import GRADIENTS
from ..engine.bug_hunt.rerun import PINS
from ..engine.honesty import assigned_names
from ..engine.probes.rerun import flattened, pin_value
from ..engine.probes.snapshots import loaded_names
from .capture import own_source
from .probe_runner import STUDENT_ERRORS
from .switches import AutogradIsOff

MAX_LINE = 160


def parsed_body(function):
    """(its parameter's name, the statements of its body, a with block's own in its place), or None when the
    function cannot be read as one plain function of one argument (a closure, a decorator, no source)."""
    code = getattr(function, "__code__", None)
    if code is None or code.co_freevars or not isinstance(getattr(function, "__globals__", None), dict):
        return None
    tree = own_source(function)  # (None: no source, or one linecache was told that is not the function's)
    if tree is None or len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        return None
    definition, arguments = tree.body[0], tree.body[0].args
    plain = not (definition.decorator_list or arguments.vararg or arguments.kwarg or arguments.kwonlyargs)
    if not plain or len(arguments.posonlyargs + arguments.args) != 1:
        return None
    return (arguments.posonlyargs + arguments.args)[0].arg, flattened(definition.body)


def _fits(value, shape) -> bool:
    return isinstance(value, torch.Tensor) and tuple(value.shape) == shape and value.dtype == torch.float32


def not_finite(value) -> bool:
    """Whether ``value`` is a tensor of floats with a NaN or infinite entry: a gradient that can feed no later line."""
    try:
        return isinstance(value, torch.Tensor) and value.is_floating_point() and not bool(torch.isfinite(value).all())
    except Exception:  # a tensor of the student's own kind: then judged as it is
        return False


def _same(value, pin) -> bool:
    try:
        return value.shape == pin.shape and bool(torch.equal(value, pin))
    except Exception:  # a tensor of the student's own kind: then not the random one
        return False


def _run(statement, space: dict):
    """None, or the error the statement raised."""
    try:
        exec(compile(ast.Module([statement], []), "<backward_pass, run again>", "exec"), space)
    except STUDENT_ERRORS as error:
        return error
    return None


def _line(statement, error) -> dict:
    return {
        "line": ast.unparse(statement).split("\n")[0][:MAX_LINE],
        "type": type(error).__name__,
        "message": str(error)[:300],
    }


def run_again(function, point: dict, seed: int):
    """(the gradients, the RERUN entry) of ``function`` at ``point`` (a fresh copy), or None when it cannot be run
    statement by statement, or its return statement does not give a dict then (the call's error then stands for every
    gradient, as before)."""
    parsed = parsed_body(function)
    if parsed is None:
        return None
    parameter, body = parsed
    shapes = {g: tuple(point[g[1:]].shape) for g in GRADIENTS if isinstance(point.get(g[1:]), torch.Tensor)}
    space = {**function.__globals__, parameter: point}
    raised, pinned, own, failed = {}, [], {}, {}  # failed: a name a statement that raised would have written
    result, returned = None, False
    for statement in body:
        if isinstance(statement, ast.Raise):  # (a raise of the body itself: no call gets past it, none is judged)
            return None
        if isinstance(statement, ast.Return):
            try:
                result = eval(compile(ast.Expression(statement.value), "<backward_pass>", "eval"), space)
                returned = True
            except STUDENT_ERRORS:
                pass
            break
        finite = not any(not_finite(space.get(g)) for g in loaded_names(statement) if g in shapes)
        error = _run(statement, space)
        if error is None:
            made = [g for g in assigned_names(statement) if g in shapes and g not in pinned] if finite else []
            for g in (g for g in made if not_finite(space.get(g))):  # NaN from finite gradients: this line's own
                own[g], space[g] = space[g], pin_value(seed, PINS, g, shapes[g])
                pinned.append(g)
            continue
        if isinstance(error, AutogradIsOff):  # autograd refused: the grader says so of the whole pass
            return None
        reads, writes = loaded_names(statement), assigned_names(statement)
        broken = [  # (a gradient it also writes, dbndiff in `dbndiff += ...`, is its own line's: it raised there)
            g
            for g in shapes
            if g in reads and g not in writes and g not in pinned and not _fits(space.get(g), shapes[g])
        ]
        if broken:  # a gradient further up cannot feed it: again, with random ones of the right shape in its place
            saved = {g: space[g] for g in broken if g in space}
            space.update({g: pin_value(seed, PINS, g, shapes[g]) for g in broken})
            if _run(statement, space) is None:
                own.update({g: saved.get(g) for g in broken})
                pinned += broken
                continue
            for g in broken:
                space.pop(g) if g not in saved else space.__setitem__(g, saved[g])
        why = next((failed[name] for name in reads if name in failed), None) or _line(statement, error)
        for name in writes:
            if name in shapes:
                space[name], raised[name] = pin_value(seed, PINS, name, shapes[name]), why
            else:
                failed[name] = why
    if not returned or not isinstance(result, dict):  # (gradients under other names, a return inside a block)
        return None
    altered = [  # changed after its line, in place or anew (`dbndiff += ...` below a `dbndiff = ...` that raised)
        g
        for g in raised
        if isinstance(result.get(g), torch.Tensor) and not _same(result[g], pin_value(seed, PINS, g, shapes[g]))
    ]
    gradients = {k: v for k, v in result.items() if k not in raised or k in altered}  # altered: what later lines read
    gradients.update({g: v for g, v in own.items() if v is not None})
    for g, v in own.items():
        if v is None:
            gradients.pop(g, None)
    return gradients, {"raised": raised, "pinned": [g for g in pinned if g not in raised], "altered": altered}

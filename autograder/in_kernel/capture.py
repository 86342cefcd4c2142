"""A call of the student's function that keeps what the grader needs to tell what it did: its result or the error it
raised, its local variables when it ended, and the line of it that raised; and the function's source, read only when it
is the function's own."""

import ast
import inspect
import linecache
import sys
import textwrap
import types

import torch

from ..engine.probes.rerun import flattened
from ..engine.training.lines_again import run_line_by_line


def call_capturing(function, *args):
    """``function(*args)``: its result (or the exception it raised) and its local variables when it ended."""
    ended = {}
    code = getattr(function, "__code__", None)

    def profile(frame, event, arg):
        if event == "return" and frame.f_code is code:
            ended["locals"] = dict(frame.f_locals)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = function(*args)
    except Exception as error:  # the grader says which error it was
        result = error
    finally:
        sys.setprofile(previous)
    return result, ended.get("locals", {})


def raised_at(error: Exception, function) -> str:
    """The line of ``function`` that was running when ``error`` was raised (a call into a helper: the call), or ""."""
    code, line, tb = getattr(function, "__code__", None), "", error.__traceback__
    if own_source(function) is None:  # a line linecache was told, not the function's: where it raised is unknown
        return ""
    while tb is not None:
        if tb.tb_frame.f_code is code:
            line = linecache.getline(code.co_filename, tb.tb_lineno).strip()
        tb = tb.tb_next
    return line[:200]


def own_source(function):
    """The syntax tree of ``function``'s source, or None when there is none or it does not compile to the function's
    own code: inspect and linecache read the source from a cache that a cell can fill with any text."""
    code = getattr(function, "__code__", None)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
        made = compile(tree, code.co_filename, "exec", dont_inherit=True).co_consts
    except (OSError, TypeError, SyntaxError, ValueError, AttributeError):
        return None
    return tree if any(isinstance(c, types.CodeType) and _print(c) == _print(code) for c in made) else None


def _print(code) -> tuple:
    """What a function's code object does: its bytecode, names and constants, its nested functions' too."""
    consts = tuple(_print(c) if isinstance(c, types.CodeType) else (type(c), repr(c)) for c in code.co_consts)
    return code.co_code, code.co_names, code.co_varnames, consts


def lines_again(function, *args):
    """(the list ``function(*args)`` returns when its statements run again one by one, a line that raised and every
    line that reads what it left without a value skipped, with None for those; the line that raised; the namespace
    its lines ran in), or None when its source is not its own, it is no plain function of these arguments, no line
    raised, or it gives no list."""
    code, tree = getattr(function, "__code__", None), own_source(function)
    if tree is None or code.co_freevars or len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        return None
    definition, a = tree.body[0], tree.body[0].args
    names = [x.arg for x in a.posonlyargs + a.args]
    if definition.decorator_list or a.vararg or a.kwarg or a.kwonlyargs or len(names) != len(args):
        return None
    space = {**function.__globals__, **dict(zip(names, args))}
    value, first, _ = run_line_by_line(flattened(definition.body), space)
    return (list(value), first, space) if first is not None and isinstance(value, (list, tuple)) else None


def same_tensor_as(variables: dict, names) -> dict:
    """name -> the other local variables that are its very tensor (``dbnraw = dhpreact``, then ``dbnraw *= bngain``:
    a line that changes one in place changes the other), for each of ``names`` among ``variables``."""
    found = {}
    for name in names:
        a = variables.get(name)
        if not isinstance(a, torch.Tensor):
            continue
        try:
            key = (a.untyped_storage().data_ptr(), a.storage_offset(), a.shape, a.stride())
            found[name] = sorted(
                k
                for k, b in variables.items()
                if k != name
                and isinstance(b, torch.Tensor)
                and (b.untyped_storage().data_ptr(), b.storage_offset(), b.shape, b.stride()) == key
            )
        except Exception:  # a tensor of the student's own kind: no memory in common to tell
            continue
    return {k: v for k, v in found.items() if v}

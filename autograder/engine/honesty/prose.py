"""String constants that only talk: words such as "gradient" or "backward" in them read nothing from autograd.

A string that names an attribute or an operator (``getattr(t, "grad")``, an op named by a string) does; a message
shown to a person does not: a docstring, the text of an f-string, what print() prints, an assert's message, the
message of a built-in exception raised (``raise ValueError("the gradient has the wrong shape")``), with pieces of
text joined by ``+`` or ``%`` too; the key of a dict (``{"grad_b": db}``, ``grads["grad_b"]``). And switching autograd's
recording off or on (``@torch.autograd.no_grad()``), or batching with torch.func.vmap, reads nothing from it
(``HARMLESS``).
"""

import ast

# torch.autograd's switches of its recording, reached as torch.autograd.X (or .grad_mode.X), or imported from it
GRAD_MODES = frozenset({"no_grad", "enable_grad", "set_grad_enabled", "inference_mode"})
# what of a module that reads autograd does not: module -> those members (torch.func.vmap batches, it does not derive)
HARMLESS = {"autograd": GRAD_MODES, "grad_mode": GRAD_MODES, "func": frozenset({"vmap"})}

# exceptions whose arguments are only a message; the student's own thing of one of these names is not one of them
# (AutogradTaint marks the name, and a statement that binds it reads its message as any other string)
TEXT_EXCEPTIONS = frozenset(
    {"Exception", "ValueError", "TypeError", "RuntimeError", "AssertionError", "IndexError", "KeyError"}
    | {"NotImplementedError", "ArithmeticError", "ZeroDivisionError", "LookupError", "AttributeError"}
)


def _prose(node: ast.AST) -> set:
    """ids of the string constants in ``node`` that only talk: docstrings and bare strings, the text of f-strings,
    print()'s arguments, an assert's message, the arguments of a built-in exception raised (TEXT_EXCEPTIONS), the keys
    of a dict written out and a key read from one (``grads['grad_b']``: what reads a namespace, vars(t) or X.__dict__,
    is marked for that).

    A function whose docstring says "returns the gradients", or that raises ValueError("gradient shape mismatch"),
    must not count as reading ``.grad``.
    """
    ids, own = set(), _own_names(node)
    for sub in ast.walk(node):
        said = ()
        if isinstance(sub, ast.Expr) and isinstance(sub.value, ast.Constant):
            ids.add(id(sub.value))
        elif isinstance(sub, ast.JoinedStr):
            ids.update(id(v) for v in sub.values if isinstance(v, ast.Constant))
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "print":
            said = [*sub.args, *(k.value for k in sub.keywords)]
        elif isinstance(sub, ast.Assert) and sub.msg is not None:
            said = [sub.msg]
        elif isinstance(sub, ast.Raise) and isinstance(sub.exc, ast.Call):
            if getattr(sub.exc.func, "id", None) in TEXT_EXCEPTIONS - own:
                said = [*sub.exc.args, *(k.value for k in sub.exc.keywords)]
        elif isinstance(sub, ast.Dict):  # {'grad_b': db}: a key names no attribute
            said = [k for k in sub.keys if k is not None]
        elif isinstance(sub, ast.Subscript):  # grads['grad_b']: a namespace (vars(t), X.__dict__) is marked for itself
            said = [sub.slice]
        for expression in said:
            ids.update(_text(expression))
    return ids


def _text(expression: ast.AST) -> list:
    """ids of the string constants a message is made of: the string itself, or the pieces of text that ``+`` and
    ``%`` join (not a call's arguments: getattr(t, "gr" + "ad") is no message)."""
    if isinstance(expression, ast.Constant):
        return [id(expression)]
    if isinstance(expression, ast.BinOp) and isinstance(expression.op, (ast.Add, ast.Mod)):
        return _text(expression.left) + _text(expression.right)
    if isinstance(expression, ast.Tuple):
        return [i for element in expression.elts for i in _text(element)]
    return []


def _own_names(node: ast.AST) -> set:
    """The names ``node`` binds anywhere in it: assigned, a function's or a class's, an argument, imported."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
            names.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(sub.name)
        elif isinstance(sub, ast.arg):
            names.add(sub.arg)
        elif isinstance(sub, ast.alias):
            names.add((sub.asname or sub.name).split(".")[0])
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            names.add(sub.name)
    return names


def _grad_modes(node: ast.AST) -> set:
    """ids of the ``torch.autograd`` (``.grad_mode``, ``torch.func``) in ``torch.autograd.no_grad()``,
    ``torch.func.vmap`` and the other members of HARMLESS: what reaches only them, which give no gradient."""
    ids = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute):
            base = sub.value
            if isinstance(base, ast.Attribute) and base.attr == "grad_mode" and sub.attr in GRAD_MODES:
                ids.add(id(base))
                base = base.value
            module = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
            if sub.attr in HARMLESS.get(module, ()):
                ids.add(id(base))
    return ids


def names_asked_for(node: ast.AST) -> set:
    """ids of the namespace and the name in ``"grads" not in globals()`` (``in``; locals(), vars()): a namespace asked
    whether it holds a name written out reads nothing of it, whatever the name says ("grads" too). Its keys read, or
    a name made at run time, still mark the statement (unread_code)."""
    ids = set()
    for sub in ast.walk(node):
        if not (isinstance(sub, ast.Compare) and len(sub.ops) == 1 and isinstance(sub.ops[0], (ast.In, ast.NotIn))):
            continue
        call, name = sub.comparators[0], sub.left
        if isinstance(call, ast.Call) and not call.args and not call.keywords and isinstance(call.func, ast.Name):
            if (
                call.func.id in ("globals", "locals", "vars")
                and isinstance(name, ast.Constant)
                and isinstance(name.value, str)
            ):
                ids |= {id(call.func), id(name)}
    return ids

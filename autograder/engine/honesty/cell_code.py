"""A cell's code as the kernel runs it (IPython's magics turned into Python) and its statements, worked out once per
text: a class hands the grader the same cells many times. What is kept is bounded by the characters of the texts it
was worked out from (``common.kept.Kept``), so that a hostile submission cannot make a grading worker hold its megabytes
for later students.
"""

import ast
import copy
import keyword

from ...common.kept import Kept

_AS_RUN, _STATEMENTS = Kept(4_000_000), Kept(1_000_000)  # the course's longest cell: 83,000 characters


def as_run(source: str) -> str | None:
    """What IPython's kernel compiles for ``source`` (what its history holds); None when IPython cannot transform it
    (the cell failed in the kernel too)."""
    if (code := _AS_RUN.get(source)) is None:
        from IPython.core.inputtransformer2 import TransformerManager

        try:
            code = TransformerManager().transform_cell(source)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        _AS_RUN.put(source, code)
    return code


def statements(source: str) -> tuple:
    """The statements of a cell as the kernel runs it; none if it does not parse. The same nodes for the same kept
    text: what the static reading works out about a node is kept on it."""
    if (kept := _STATEMENTS.get(source)) is None:
        code = as_run(source)
        try:
            kept = () if code is None else tuple(ast.parse(code).body)
        except (SyntaxError, ValueError, MemoryError, RecursionError):  # x = ------..1, 100,000 deep
            kept = ()  # the cell fails in the kernel too; nothing it assigns exists
        _STATEMENTS.put(source, kept)
    return kept


def as_def(node: ast.stmt) -> ast.stmt:
    """``f = lambda a, t: ..`` as ``def f(a, t): return ..``, which the static reading follows as a def (a check of the
    student's that reads ``.grad`` alone, ``close = lambda dt, t: torch.allclose(dt, t.grad)``, marks nothing it is
    called on); any other statement as it is. The same def for the same node: what is worked out is kept on it."""
    if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda) and len(node.targets) == 1):
        return node
    if not isinstance(node.targets[0], ast.Name):
        return node
    if getattr(node, "_as_def", None) is None:
        body = [ast.copy_location(ast.Return(node.value.body), node.value)]
        made = ast.FunctionDef(node.targets[0].id, node.value.args, body, [], None, None)
        node._as_def = ast.copy_location(made, node)
    return node._as_def


NAMESPACES = ("globals", "vars", "locals")
UNROLLED = 100  # a loop over more literal strings than this is read as it is
_OWN_SCOPE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp)
_OWN_SCOPE += (ast.GeneratorExp,)


def readable(node: ast.stmt) -> ast.stmt:
    """``node`` as the static reading follows it: a lambda assigned as a def (``as_def``); a name read from the
    namespace by a key made of string literals as that name (``globals()['dW' + '2']``: dW2), in a loop over literal
    strings too, each turn in its place (``for name in ['W2', 'b2']: cmp(name, globals()['d' + name], globals()[name])``
    reads dW2, W2, db2, b2). Where a key is made otherwise, the statement as it is (code the grader cannot read)."""
    known = getattr(node, "_readable", None)
    if known is None:
        known = node._readable = _readable(as_def(node))
    return known


def _readable(node: ast.stmt) -> ast.stmt:
    if not _reads_a_namespace(node):
        return node
    turns = [node]
    if isinstance(node, ast.For) and _over_literal_strings(node):
        name, values = node.target.id, _literal_strings(node.iter)
        body = [_Substituted(name, value).visit(copy.deepcopy(s)) for value in values for s in node.body]
        last = ast.Assign([ast.Name(name, ast.Store())], ast.Constant(values[-1]))
        turns = [ast.copy_location(s, node) for s in [*body, last]]
    turns = [_Resolved().visit(copy.deepcopy(s)) for s in turns]
    if any(_reads_a_namespace(s) for s in turns):
        return node
    if len(turns) == 1:
        return turns[0]
    return ast.fix_missing_locations(ast.copy_location(ast.If(ast.Constant(True), turns, []), node))


def _reads_a_namespace(node: ast.AST) -> bool:
    return any(isinstance(sub, ast.Name) and sub.id in NAMESPACES for sub in ast.walk(node))


def _over_literal_strings(loop: ast.For) -> bool:
    """A `for name in [..]:` over string literals, whose body neither rebinds name nor leaves the loop early."""
    if loop.orelse or not isinstance(loop.target, ast.Name) or not 0 < len(_literal_strings(loop.iter)) <= UNROLLED:
        return False
    subs = [sub for s in loop.body for sub in ast.walk(s)]
    if any(isinstance(sub, (ast.Break, ast.Continue, ast.Global, ast.Nonlocal)) for sub in subs):
        return False
    return not any(
        isinstance(sub, ast.Name) and sub.id == loop.target.id and not isinstance(sub.ctx, ast.Load) for sub in subs
    )


def _literal_strings(node: ast.AST) -> list:
    """The strings of a list or tuple of string literals, or of ``'W2 b2'.split()``; [] for anything else."""
    if isinstance(node, (ast.List, ast.Tuple)) and all(_a_str(e) for e in node.elts):
        return [e.value for e in node.elts]
    call = node.func if isinstance(node, ast.Call) and not node.args and not node.keywords else None
    if isinstance(call, ast.Attribute) and call.attr == "split" and _a_str(call.value):
        return call.value.value.split()
    return []


def _a_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


class _Substituted(ast.NodeTransformer):
    """The loop's name read as the string of one turn (not in a scope of its own, which may bind it)."""

    def __init__(self, name: str, value: str):
        self.name, self.value = name, value

    def visit(self, node):
        if isinstance(node, _OWN_SCOPE):
            return node
        if isinstance(node, ast.Name) and node.id == self.name and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Constant(self.value), node)
        return self.generic_visit(node)


class _Resolved(ast.NodeTransformer):
    """Strings of literals joined (`'d' + 'W2'`, f'd{"W2"}') as one, and ``globals()[<that string>]`` read (not
    written) as the name it holds, outside a scope of the function's own (its globals() is the module's)."""

    def visit(self, node):
        if isinstance(node, _OWN_SCOPE):
            return node
        node = self.generic_visit(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _a_str(node.left) and _a_str(node.right):
            return ast.copy_location(ast.Constant(node.left.value + node.right.value), node)
        if isinstance(node, ast.JoinedStr) and all(_a_str(_part(v)) for v in node.values):
            return ast.copy_location(ast.Constant("".join(_part(v).value for v in node.values)), node)
        call = getattr(node, "value", None) if isinstance(node, ast.Subscript) else None
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) in NAMESPACES and not call.args:
            key = node.slice
            if isinstance(node.ctx, ast.Load) and not call.keywords and _a_str(key) and key.value.isidentifier():
                if not keyword.iskeyword(key.value) and not key.value.startswith("_"):  # (not __builtins__)
                    return ast.copy_location(ast.Name(key.value, ast.Load()), node)
        return node


def _part(value: ast.AST) -> ast.AST:
    """A part of an f-string as a string literal, if it is one (`{"W2"}` without a conversion or a format)."""
    if isinstance(value, ast.FormattedValue) and value.conversion == -1 and value.format_spec is None:
        return value.value
    return value


def comprehension_targets(node: ast.AST) -> set:
    """The ids of the names the comprehensions in ``node`` bind for themselves (``[check(n, d, t) for n, d, t in ..]``):
    they write nothing of the namespace (the batch size n stays as it was)."""
    comprehensions = [c for c in ast.walk(node) if isinstance(c, ast.comprehension)]
    names = (ast.Name, ast.Tuple, ast.List, ast.Starred)  # (not an item or an attribute: those change an object)
    return {id(sub) for c in comprehensions for sub in _unpacked(c.target) if isinstance(sub, names)}


def _unpacked(target: ast.AST) -> list:
    """A target and the targets it unpacks into (``n, (d, t)``), not what an item's or an attribute's target reads."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [target] + [sub for element in target.elts for sub in _unpacked(element)]
    return [target] + (_unpacked(target.value) if isinstance(target, ast.Starred) else [])


def written_as_a_literal(code: tuple, name: str) -> bool:
    """Whether the cells ``code`` write ``name`` with literals alone (`buggy = ["dW1", "bngain.grad"]`, and calls on
    it with literal arguments, `buggy.append("dC")`), and do write it: words and numbers, which read nothing from
    autograd whatever they say (the static reading marks a string that names an attribute, "grad" among them)."""
    literal, written = set(), set()
    for source in code:
        for node in (sub for statement in statements(source) for sub in ast.walk(statement)):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _literal(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                literal |= {id(t) for t in targets if isinstance(t, ast.Name) and t.id == name}
            elif isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
                written.add(id(node))
            elif isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
                written |= {id(node)} if getattr(node.value, "id", None) == name else set()  # buggy[0] = ..
            elif isinstance(node, ast.Call) and getattr(getattr(node.func, "value", None), "id", None) == name:
                arguments = [*node.args, *(k.value for k in node.keywords)]
                written |= set() if all(_literal(a) for a in arguments) else {id(node)}  # buggy.append(x)
    return bool(literal) and written <= literal


def _literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True

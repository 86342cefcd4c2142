"""Answers taken from autograd earn nothing: how the grader tells, outside the student's kernel.

Two independent signs: the student's code parsed for values that flow from autograd, the grader's own package or
code it cannot read (static), and a decoy in every ``.grad`` while grading (dynamic). See docs/design/engine.md.
"""

import ast

from .cell_code import Kept, comprehension_targets, readable, statements
from .prose import HARMLESS, TEXT_EXCEPTIONS, _grad_modes, _prose, names_asked_for
from .stored import reads_of_a_store
from .unread_code import (
    RUNS_CODE,
    STRING_RUNNERS,
    UNREAD,
    UNREAD_ATTRIBUTES,
    _binds,
    _runs_a_file,
    changed_by,
    changes_its_receiver,
    defines_code_in_annotations,
    magic_code,
    makes_text,
    passes_code,
    resolves_names,
    runs_unread_code,
    set_by_def,
    unknown_module,
)

FORBIDDEN_ATTRIBUTES = {"grad", "backward", "autograd", "grad_fn", "_grad", "func", "retain_grad", "vjp", "jacobian"}
# autograd's engine, and forward-mode differentiation, reached without torch.autograd: torch._C._ImperativeEngine()
FORBIDDEN_ATTRIBUTES |= {"_ImperativeEngine", "ImperativeEngine", "_execution_engine", "jvp", "forward_ad"}
FORBIDDEN_ATTRIBUTES |= {"_enter_dual_level", "dual_level", "_make_dual", "make_dual", "_unpack_dual", "unpack_dual"}
# a node of autograd's graph called by hand runs torch's derivative formula; torch._decomp writes them in Python
FORBIDDEN_ATTRIBUTES |= {"_grad_fn", "next_functions", "_decomp", "decomposition_table"}
FORBIDDEN_ATTRIBUTES |= {"_jit_differentiate"}  # TorchScript's own differentiation of a scripted function
# attributes by a computed name (attrgetter, reduce(getattr, ..), X.__dict__[..]), objects around names (gc, frames)
FORBIDDEN_ATTRIBUTES |= {"attrgetter", "methodcaller", "getattr_static", "getmembers", "resolve_name", "locate"}
FORBIDDEN_ATTRIBUTES |= {"get_field", "_dot_lookup", "_importer", "import_item", "_import_dotted_name"}  # by a string
FORBIDDEN_ATTRIBUTES |= {"__dict__", "__getattribute__", "__getattr__", "__subclasses__", "__mro__", "__bases__"}
FORBIDDEN_ATTRIBUTES |= {"__globals__", "__closure__", "__builtins__", "__code__", "_getframe", "f_globals"}
FORBIDDEN_ATTRIBUTES |= {"f_locals", "get_objects", "get_referents", "get_referrers", "_get_operation_overload"}
FORBIDDEN_ATTRIBUTES |= RUNS_CODE  # code run from a string or a file (unread_code)
FORBIDDEN_NAMES = {"autograd", "functorch", "eval", "exec", "compile", "__import__", "vars", "globals", "locals"}
FORBIDDEN_NAMES |= {"autograder", "importlib", "__builtins__"}  # the grader's code, modules by a computed name
FORBIDDEN_NAMES |= {"attrgetter", "methodcaller", "getattr_static", "resolve_name", "locate", "import_item"}
FORBIDDEN_MODULES = ("autograd", "functorch", "torch.func", "autograder", "importlib")  # an import of one marks it
FORBIDDEN_MODULES += ("Engine", "_dual", "dual_level", "backward")  # from torch._C import _ImperativeEngine
FORBIDDEN_MODULES += ("sys.modules", "_decomp", "ctypes", "pickle", "marshal", "copyreg", "runpy", "pkgutil")
FORBIDDEN_MODULES += ("builtins",)  # builtins.eval, builtins.getattr: the forbidden names under another one
FORBIDDEN_WORDS = ("grad", "backward")  # in string constants: getattr(t, "grad")
GRADER = __name__.split(".")[0]  # the grader's own package
_AFTER_CELL, _KEPT_NAMES = Kept(1_000_000, lambda key: key[1]), 200  # (state, cell) -> state after it (add_cell)


def _uses_autograd(node: ast.AST, tainted: set) -> bool:
    reads_autograd, loads = _autograd_facts(node)
    return reads_autograd or not loads.isdisjoint(tainted)


def _autograd_facts(node: ast.AST) -> tuple:
    """Whether ``node`` reads autograd whatever the variables hold, and the names it loads; worked out once per node
    (the statements of a cell are cached, and a class hands in the same cells many times)."""
    known = getattr(node, "_autograd_facts", None)
    if known is None:
        known = node._autograd_facts = (_reads_autograd(node), frozenset(_loaded_names(node)))
    return known


def _loaded_names(node: ast.AST):
    return (sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load))


def _reads_autograd(node: ast.AST, skip_grad: bool = False) -> bool:
    prose, modes = _prose(node), _grad_modes(node) | reads_of_a_store(node) | names_asked_for(node)  # p.grad = g
    added_to = {id(sub.target) for sub in ast.walk(node) if isinstance(sub, ast.AugAssign)}  # p.grad += g reads it
    called = {id(sub.func) for sub in ast.walk(node) if isinstance(sub, ast.Call)}
    for sub in ast.walk(node):
        if id(sub) in modes:
            continue
        if isinstance(sub, ast.Attribute) and (sub.attr in FORBIDDEN_ATTRIBUTES or "backward" in sub.attr):
            skipped = skip_grad and sub.attr == "grad" and isinstance(sub.ctx, ast.Load)
            if not skipped and not (_stores_a_gradient(sub) and id(sub) not in added_to):  # run_backward, tanh_backward
                return True
        # attributes read by a name written out elsewhere: a class pattern (case object(modules=m)), getattr(t, "x")
        named = sub.kwd_attrs if isinstance(sub, ast.MatchClass) else ()
        if isinstance(sub, ast.Call) and getattr(sub.func, "id", None) in ("getattr", "hasattr") and len(sub.args) > 1:
            named = [getattr(sub.args[1], "value", "")]
        if any(isinstance(a, str) and (a in FORBIDDEN_ATTRIBUTES or "backward" in a or a == "modules") for a in named):
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == "modules" and id(sub) not in called:
            return True  # sys.modules (import sys as s: s.modules) reaches every module imported, the grader's too
        if isinstance(sub, ast.Name) and sub.id in ("getattr", "setattr", "delattr") and id(sub) not in called:
            return True  # functools.reduce(getattr, names, t): getattr with computed names
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in FORBIDDEN_NAMES:
            return True
        if (
            isinstance(sub, ast.Constant)
            and isinstance(sub.value, str)
            and id(sub) not in prose
            and any(w in sub.value for w in FORBIDDEN_WORDS)
        ):
            return True
        if _runs_a_file(sub):
            return True
        if isinstance(sub, ast.Call) and getattr(sub.func, "id", None) in ("getattr", "setattr", "delattr"):
            if len(sub.args) < 2 or not isinstance(sub.args[1], ast.Constant):
                return True
    return False


def _stores_a_gradient(attribute: ast.Attribute) -> bool:
    """``p.grad = g`` (one's own gradients handed to ``torch.optim``) reads nothing; the value is judged on its own."""
    return attribute.attr == "grad" and isinstance(attribute.ctx, (ast.Store, ast.Del))


def _clears_gradient(node: ast.stmt) -> bool:
    """``p.grad = None`` or ``p.grad.zero_()``: resetting a gradient, as the lecture's loop does, reads nothing."""
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is None:
        return all(isinstance(t, ast.Attribute) and t.attr == "grad" for t in node.targets)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and not node.value.args:
        func = node.value.func
        return isinstance(func, ast.Attribute) and func.attr == "zero_" and getattr(func.value, "attr", "") == "grad"
    return False


def assigned_names(node: ast.AST) -> frozenset:
    """The variables a statement writes: x = .., x[i] = .., x += .., x.index_add_(..), for x in .. (once per node)."""
    known = getattr(node, "_assigns", None)
    if known is None:
        known = node._assigns = frozenset(_assigned_names(node))
    return known


def _assigned_names(node: ast.AST) -> set:
    names, own = set(), comprehension_targets(node)  # (a comprehension's names are its own)
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and id(sub) not in own:
            names.add(sub.id)
        elif isinstance(sub, (ast.Subscript, ast.Attribute)) and isinstance(sub.ctx, ast.Store):
            base = sub.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                names.add(base.id)
        elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:  # case object(modules=m): m
            names.add(sub.name)
        elif isinstance(sub, ast.MatchMapping) and sub.rest:
            names.add(sub.rest)
        elif isinstance(sub, ast.Call) and changes_its_receiver(sub.func):
            base = sub.func.value  # an in-place method: dC.index_add_(0, ix, demb), parts.append(dx)
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                names.add(base.id)
    return names


def _names(state: tuple) -> int:
    return sum(len(value) for value in state if isinstance(value, frozenset))


class AutogradTaint:
    """Follows, statement by statement, which variables carry a value obtained from autograd. ``answers`` are the
    graded variables: each is judged on its own, so one computed by hand from a copied answer is the student's work
    and is not marked (error carried forward)."""

    def __init__(self, answers=()):
        self.tainted = set()
        self.answers = set(answers)
        self.runners = set()  # functions that run code from a string or a file (exec, %run); import __main__
        self.string_runners = set()  # modules that run code handed over as a string (timeit, pdb)
        self.texts = set()  # names that hold a string made in the cells: code a string runner may be handed
        self.refused = set()  # what cells stopped by the kernel's autograd switch assign (``refuse``)
        self.unread = False  # code it cannot read ran: it may rewrite any later answer (a hook), so all stay marked
        self.graders = set()  # what the locked cells' hidden tests imported from the grader's package (report, ...)
        self.grad_readers = set()  # defs that reach autograd by reading .grad only (a decoy while grading: cmp(..))

    def _carries(self, body: list) -> bool:
        return any(_uses_autograd(statement, self.tainted) for statement in body)

    def _hands_over_code(self, node: ast.AST, names) -> bool:
        if self.string_runners.isdisjoint(names):
            return False
        return passes_code(node) or not self.texts.isdisjoint(names)  # code = 'dW2 = ..'; timeit.timeit(code)

    def refuse(self, source: str) -> None:
        """A cell the kernel's switch stopped (AutogradIsOff) reached autograd by a way the static reading does not
        follow: what it assigns counts as autograd's where it is missing (not where it was made before)."""
        self.refused |= {name for statement in statements(source) for name in assigned_names(statement)}

    def _runners(self) -> set:
        return self.runners | self.graders

    def graders_cell(self, source: str) -> None:
        """A locked cell, restored with its hidden tests: the names they import from the grader's own package (its
        reporting, its seed) stay in the kernel's namespace. The student's code that uses one reaches the grader's
        machinery in the kernel, which can undo its switches: it counts as code the grader cannot read."""
        for statement in statements(source):
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                for alias in statement.names:
                    if (getattr(statement, "module", None) or alias.name).split(".")[0] == GRADER:
                        self.graders.add((alias.asname or alias.name).split(".")[0])

    def add_cell(self, source: str) -> None:
        """Follow the student's cell ``source``. What it leaves depends only on the state before it and its text:
        remembered, since a class hands in the same cells in the same states many times (not a long cell's, nor a
        state of many names: a hostile submission must not make the worker hold its megabytes for later students)."""
        before = self._state()
        after = _AFTER_CELL.get((before, source))
        if after is None:
            self._follow_cell(source)
            after = self._state()
            if _names(before) + _names(after) <= _KEPT_NAMES:
                _AFTER_CELL.put((before, source), after)
        for name, value in zip(vars(self), after):
            setattr(self, name, set(value) if isinstance(value, frozenset) else value)

    def _state(self) -> tuple:  # (what add_cell remembers)
        return tuple(frozenset(value) if isinstance(value, set) else value for value in vars(self).values())

    def _follow_cell(self, source: str) -> None:
        for _ in range(2):  # twice, so that a loop carries taint backwards too
            for statement in statements(source):
                self._statement(statement)
                self.graders -= _binds(statement)  # a name the student binds (x = .., def x): no longer the grader's
        if self.unread:
            self.tainted |= self.answers | {UNREAD}

    def _statement(self, node: ast.stmt) -> None:
        self._follow(readable(node))
        # the student's own ValueError (def, class, =): a message raised with it may be more than words (prose)
        self.tainted |= (_binds(node) | assigned_names(node)) & TEXT_EXCEPTIONS

    def _follow(self, node: ast.stmt) -> None:
        if _clears_gradient(node):
            return
        code = magic_code(node)
        if code is not None:
            for statement in statements(code):
                self._statement(statement)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = _autograd_facts(node)[1]
            if defines_code_in_annotations(node):
                self.unread, self.tainted = True, self.tainted | self.answers
            if runs_unread_code(node) or not self._runners().isdisjoint(names) or self._hands_over_code(node, names):
                self.runners.add(node.name)  # calling it runs code the grader cannot read
            if _uses_autograd(node, self.tainted):
                self.tainted |= {node.name} | set_by_def(node)  # global x in it, (x := ..) in its defaults
            only_grad = not _reads_autograd(node, skip_grad=True) and names.isdisjoint(self.tainted - {node.name})
            self.grad_readers = (self.grad_readers | {node.name}) if only_grad else self.grad_readers - {node.name}
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = getattr(node, "module", None) or ""
            for alias in node.names:
                full = f"{module}.{alias.name}"
                if alias.name in HARMLESS.get(module.split(".")[-1], ()) and module.startswith("torch."):
                    pass  # from torch.autograd import no_grad, from torch.func import vmap: no gradient
                elif any(word in full for word in FORBIDDEN_MODULES) or unknown_module(module or alias.name):
                    self.tainted.add((alias.asname or alias.name).split(".")[0])
                if alias.name in UNREAD_ATTRIBUTES | RUNS_CODE or resolves_names(module or alias.name):
                    self.runners.add((alias.asname or alias.name).split(".")[0])  # from string import Formatter
                if "__main__" in full:
                    self.runners.add((alias.asname or alias.name).split(".")[0])
                elif (module or alias.name).split(".")[0] in STRING_RUNNERS:
                    self.string_runners.add((alias.asname or alias.name).split(".")[0])
            return
        if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))) and self._carries(node.body):
            self.tainted |= {handler.name for handler in node.handlers if handler.name}  # raise ValueError(x): e.args
        if isinstance(node, (ast.For, ast.While, ast.If, ast.With, ast.Try)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    self._statement(child)
                elif isinstance(child, ast.excepthandler):  # except ..: its statements run as any others
                    self._statement(ast.If(test=child.type or ast.Constant(True), body=child.body, orelse=[]))
                elif isinstance(child, (ast.expr, ast.withitem)):  # the loop's iterable, the test, with .. as ..
                    if runs_unread_code(child) or not self._runners().isdisjoint(_autograd_facts(child)[1]):
                        self.unread = True
                        self.tainted |= self.answers | assigned_names(node)
                    elif _uses_autograd(child, self.tainted):
                        self.tainted |= assigned_names(node)  # for x in t.grad: ...
            return
        targets, names = assigned_names(node), _autograd_facts(node)[1]
        if isinstance(node, ast.Assign):
            self.texts = (self.texts | targets) if makes_text(node.value) else (self.texts - targets)
        if runs_unread_code(node) or not self._runners().isdisjoint(names) or self._hands_over_code(node, names):
            self.unread = True
            self.tainted |= self.answers | targets
            return
        if not targets:  # box.append(x), f(box), setattr(ns, 'x', ..): what it may change carries what it reads
            changed = changed_by(node, self.tainted - self.grad_readers)  # (cmp(s, dt, t) puts a decoy at most)
            self.tainted |= changed if _uses_autograd(node, self.tainted - self.answers) else set()
            return
        if _uses_autograd(node, self.tainted - self.answers):
            self.tainted |= targets
        elif _uses_autograd(node, self.tainted & targets):  # x = f(x), x += ...: x keeps its mark
            pass
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            self.tainted -= targets  # a plain re-assignment from clean values cleans the name

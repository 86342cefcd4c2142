"""Code a student's cell runs where the grader cannot read it: from a string or a file, through the shell's hooks,
in a module the grader does not have. What such code assigns may be any answer (docs/design/engine.md, Honesty)."""

import ast
import importlib.util
import sys

from ...common.kept import kept_by_text

# in a set of tainted names: code it cannot read ran, and every answer from its cell on is marked (not a name)
UNREAD = "<code the grader cannot read>"

# code run from a string or a file, where the grader cannot read it: get_ipython().ev(..), runpy.run_path(..) (not
# .eval: a module's eval() is no code)
RUNS_CODE = {"ev", "ex", "run_cell", "run_cell_async", "run_code", "runcode", "runsource", "run_ast_nodes"}
RUNS_CODE |= {"safe_execfile", "safe_execfile_ipy", "safe_run_module", "run_path", "run_module", "exec"}
# torch's own runners of code from a string or a file: torch.fx's, torch.hub's (a hubconf.py one wrote), torch.package
RUNS_CODE |= {"_exec_with_source", "_forward_from_src", "_method_from_src", "_import_module", "hub", "PackageImporter"}
# native code from a file: a shared library the cell wrote runs its initialisers as it is loaded, Python's C API with
# them (torch.ops.load_library(..), torch.classes'; ctypes reached through torch._ops.ctypes.CDLL)
RUNS_CODE |= {"load_library", "CDLL", "PyDLL", "LoadLibrary", "cdll", "pydll", "dlopen"}
# TorchScript from a string or a graph written as text, and its operators by name (aten::backward is one of them)
RUNS_CODE |= {"CompilationUnit", "parse_ir", "_create_function_from_graph", "_jit_interpret_graph", "import_ir_module"}
RUNS_CODE |= {"import_ir_module_from_buffer", "_jit_get_operation"}


def _runs_a_file(node: ast.AST) -> bool:
    """``%run helper.py`` (``get_ipython().run_line_magic("run", ..)``): code the grader cannot read."""
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("run_line_magic", "run_cell_magic"):
        return bool(node.args) and getattr(node.args[0], "value", None) in ("run", "load", "loadpy")
    return False


MAGICS = ("run_line_magic", "run_cell_magic")
SHELL = ("system", "getoutput")  # !cmd, x = !cmd: not run while grading (in_kernel.switches._no_shell_commands)
# modules that run code handed over as a string (timeit.timeit("..."), pdb.run, code.interact): a statement that
# hands one code marks every answer, as exec does (and import __main__, the namespace itself, any use of it)
STRING_RUNNERS = {"timeit", "cProfile", "profile", "pdb", "bdb", "code", "codeop", "doctest", "imp", "zipimport"}
STRING_RUNNERS |= {"trace"}  # trace.Trace().run("dW2 = ..") runs it in __main__, the kernel's namespace
# the kernel's own hooks: code run before or after a cell, or values put into the namespace, out of the cells' sight
SHELL_HOOKS = {"events", "push", "user_ns", "user_global_ns", "input_transformers_cleanup", "input_transformers_post"}
SHELL_HOOKS |= {"ast_transformers", "settrace", "setprofile", "addaudithook", "displayhook"}
# the shell reached around get_ipython (exit._ip), and its magics called as functions with code made as the cell runs
SHELL_HOOKS |= {"_ip", "shell", "kernel", "magics_manager", "find_magic", "find_line_magic", "find_cell_magic"}
# the interpreter's own functions and any module, reached through an attribute around the names above: the builtins
# module (inspect.builtins.eval, print.__self__.getattr), importlib (inspect.importlib.import_module), a module of a
# function (inspect.getmodule(f): the grader's, from a name its hidden cells left), code built from bytes
# (types.CodeType), a pickle (torch.load(.., weights_only=False) calls what it names), and what keeps the kernel's
# refusals alive (weakref.finalize._registry). With them any name is reached and any code runs, and the kernel's
# switches can be undone: every answer from then on may be autograd's
AROUND = {"builtins", "__self__", "importlib", "import_module", "__import__", "reload", "getmodule", "__loader__"}
AROUND |= {"exec_module", "load_module", "getmembers_static", "CodeType", "FunctionType", "pickle", "_pickle"}
# the import system itself, which keeps the kernel's refusal of modules written while grading (in_kernel.switches)
AROUND |= {"meta_path", "path_hooks", "path_importer_cache"}
# a namespace read by keys, the interpreter's builtins, a class pattern's attribute names: any function by a name made
# at run time, exec too (getattr(torch, '__bui' + 'ltins__')['ex' + 'ec'](code) assigned dW2 out of sight, from the
# grader's own rules: 34 of 34 until 2026-12-07)
AROUND |= {"__dict__", "__builtins__", "__getattribute__", "__match_args__"}
SELF_MATCHING = {"bool", "bytearray", "bytes", "dict", "float", "frozenset", "int", "list", "set", "str", "tuple"}
AROUND |= {
    "_registry",
    "currentframe",
    "f_back",
    "f_builtins",
    "getclosurevars",
    "__annotations__",
}  # tb_frame.f_builtins['__import__']
# what reaches any module or attribute by a name in a string, as importlib does: a Formatter's fields
# ("{0.sys.modules[..]}" captured by its format_field), logging.config's resolver, pydoc.safeimport, unittest.mock's
# patch target, annotations evaluated from strings (typing.get_type_hints, inspect.get_annotations(eval_str=True))
RESOLVERS = {"Formatter", "BaseConfigurator", "DictConfigurator", "dictConfig", "fileConfig", "_resolve", "importer"}
RESOLVERS |= {"safeimport", "importfile", "locate", "getter", "_get_target", "patch", "mock", "ForkingPickler"}
RESOLVERS |= {"get_type_hints", "ForwardRef", "_eval_type", "_evaluate", "get_annotations"}
RESOLVER_MODULES = ("pydoc", "logging.config", "unittest.mock", "shelve")  # an import of one: every use of it
RESOLVER_MODULES += ("site",)  # site.addsitedir(d) runs each `import` line of d's .pth files: code from a file
# what loads a serialised object calls whatever it names, builtins.exec with a string too: code the grader cannot read
# (yaml.unsafe_load of `!!python/object/apply:builtins.exec [...]`, cloudpickle.loads: dhprebn by the grader's rules)
RESOLVER_MODULES += ("yaml", "pickle", "_pickle", "cloudpickle", "dill", "joblib", "jsonpickle", "marshal", "copyreg")
# modules of the environment that reach a module by a name in a string (distributed.utils.import_term, dask.utils's
# import_required, tornado.util.import_object, pytest.importorskip, a test loader's loadTestsFromName) or run a string
# as code (a mako template's <% .. %>, jinja2's expressions): the grader's rules table by 'auto' + 'gra' + 'der...', 34
# of Exercise 1's 34 points (until 2026-12-07), or code it cannot read. Not sympy (marked until 2026-12-08, and with it
# an honest student's `import sympy`): the kernel refuses whatever code is made from a string on behalf of a student's
# cell (engine.honesty.code_from_strings), the string its sympify evaluates too
RESOLVER_MODULES += ("distributed", "dask", "tornado", "pytest", "_pytest", "mako", "jinja2")
# pydantic's ImportString ('builtins.ex' + 'ec', '__main__.__dict__': exec and the namespace; the grader's rules rebuilt
# from the package's own source, which the kernel reads), alembic's and traitlets' loaders of a Python file
RESOLVER_MODULES += ("pydantic", "pydantic_core", "alembic")
RESOLVERS |= {"ImportString", "PyFileConfigLoader", "load_python_file", "load_module_py"}
RESOLVERS |= {"import_term", "import_required", "import_object", "importorskip", "loadTestsFromName"}
RESOLVERS |= {"loadTestsFromNames", "compile_expression", "from_string"}
UNREAD_ATTRIBUTES = SHELL_HOOKS | AROUND | RESOLVERS


def resolves_names(module: str) -> bool:
    """A module whose functions reach modules and attributes by names in strings (``RESOLVER_MODULES``)."""
    return any(module == m or module.startswith(m + ".") for m in RESOLVER_MODULES)


def runs_unread_code(node: ast.AST) -> bool:
    """exec(..), %run, get_ipython() for anything but a magic, the shell's hooks: what it assigns cannot be read, so
    every answer may be among it. Worked out once per node (a class hands in the same cells many times)."""
    known = getattr(node, "_runs_unread_code", None)
    if known is None:
        known = node._runs_unread_code = _runs_unread_code(node)
    return known


def _runs_unread_code(node: ast.AST) -> bool:
    subs = list(ast.walk(node))
    magics = {id(sub.value) for sub in subs if isinstance(sub, ast.Attribute) and sub.attr in MAGICS}
    magics |= {id(c.func.value) for c in subs if getattr(getattr(c, "func", None), "attr", None) in SHELL}
    shells = {id(c.func) for c in subs if isinstance(c, ast.Call) and id(c) in magics}  # get_ipython in get_ipython()
    functions = {id(c.func) for c in subs if isinstance(c, ast.Call)}
    asked = {id(c.func) for c in _asked_whether_in(subs)}  # "check" in globals(): only a name looked for
    for sub in subs:
        called = sub.func if isinstance(sub, ast.Call) else None
        if _computes_a_name(sub, called, functions, asked):
            return True
        if getattr(called, "id", None) in ("exec", "eval") or getattr(called, "attr", None) in RUNS_CODE:
            return True
        if _runs_a_file(sub) or (isinstance(sub, ast.Attribute) and sub.attr in UNREAD_ATTRIBUTES):
            return True
        if getattr(called, "attr", None) in MAGICS and not all(_a_string(a) for a in sub.args):
            return True  # get_ipython().run_cell_magic('time', '', code): code made as the cell runs
        if code_in_annotation(sub):
            return True
        if isinstance(sub, (ast.Import, ast.ImportFrom)):  # import __main__ (in a def too): the namespace itself
            if any("__main__" in f"{getattr(sub, 'module', None)}.{alias.name}" for alias in sub.names):
                return True
        if isinstance(sub, ast.MatchClass) and not UNREAD_ATTRIBUTES.isdisjoint(sub.kwd_attrs):
            return True  # case object(__self__=b): an attribute read by a class pattern
        if getattr(called, "id", None) in ("getattr", "hasattr") and len(sub.args) > 1:
            if getattr(sub.args[1], "value", None) in UNREAD_ATTRIBUTES:
                return True  # getattr(inspect, "builtins")
        if isinstance(sub, ast.keyword) and sub.arg in ("eval_str", "allow_pickle") and not _false(sub.value):
            return True  # inspect.get_annotations(f, eval_str=True), numpy.load(.., allow_pickle=True)
        if called is not None and any(k.arg == "weights_only" and not _true(k.value) for k in sub.keywords):
            return True  # torch.load(.., weights_only=False): a pickle runs what it names
        if isinstance(sub, ast.Name) and sub.id == "get_ipython" and id(sub) not in shells:
            return True
    return False


def _computes_a_name(sub: ast.AST, called, functions: set, asked: set) -> bool:
    """An attribute read by a name made at run time reaches any function, exec among them: getattr, setattr or delattr
    with a name that is not written out (or passed as a value, to reduce), a namespace (vars(), globals(), locals(),
    but for asking whether it holds a name), a class pattern's positional captures (``case Pick(x)``: Pick's
    ``__match_args__`` names the attribute read)."""
    if getattr(called, "id", None) in ("getattr", "setattr", "delattr") and len(sub.args) > 1:
        return not _a_string(sub.args[1])
    if isinstance(sub, ast.Name) and sub.id in ("getattr", "setattr", "delattr") and id(sub) not in functions:
        return True
    if isinstance(sub, ast.Name) and sub.id in ("vars", "globals", "locals") and id(sub) not in asked:
        return True  # a namespace by keys: globals()['dW' + '2'] = .. assigned an answer no statement names
    return isinstance(sub, ast.MatchClass) and bool(sub.patterns) and getattr(sub.cls, "id", None) not in SELF_MATCHING


def _asked_whether_in(subs: list) -> list:
    """The calls of ``"name" in globals()`` (or ``not in``): the namespace only asked whether it holds a name."""
    tests = [sub for sub in subs if isinstance(sub, ast.Compare) and len(sub.ops) == 1]
    tests = [t for t in tests if isinstance(t.ops[0], (ast.In, ast.NotIn)) and isinstance(t.comparators[0], ast.Call)]
    return [t.comparators[0] for t in tests if not t.comparators[0].args and _a_string(t.left)]


TYPE_NODES = (ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Constant, ast.BinOp, ast.BitOr)
TYPE_NODES += (ast.Load, ast.Expression)


def code_in_annotation(node: ast.AST) -> bool:
    """An annotation written as a string that is more than a type ('torch.Tensor', 'list[int] | None'): typing,
    functools.singledispatch or dataclasses may evaluate it, and "(rules := ..) and int" assigns out of sight."""
    if isinstance(node, ast.arg):
        annotation = node.annotation
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        annotation = node.returns
    elif isinstance(node, ast.AnnAssign):
        annotation = node.annotation
    else:
        return False
    if isinstance(annotation, ast.JoinedStr):
        return True
    if not _a_string(annotation):
        return False
    try:
        parsed = ast.parse(annotation.value.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # too deep to read: more than a type
        return True
    return not all(isinstance(sub, TYPE_NODES) for sub in ast.walk(parsed))


MUTATORS = {"append", "extend", "insert", "update", "add", "setdefault", "appendleft", "extendleft", "put", "push"}
MUTATORS |= {"__setitem__", "__setattr__", "put_nowait", "send"}


def changes_its_receiver(func: ast.expr) -> bool:
    """Whether a call of ``func`` changes the object it is a method of: torch's in-place methods (``dC.index_add_``),
    a container's (``parts.append(dx)``, ``d.update(..)``); not ``x.add(y)``, which makes a new tensor."""
    in_place = ("append", "extend", "insert", "update", "setdefault", "appendleft", "extendleft")
    return isinstance(func, ast.Attribute) and (func.attr.endswith("_") or func.attr in in_place)


def changed_by(node: ast.AST, tainted: set) -> set:
    """The names a statement that assigns none may change: the receiver of a method that changes it (box.append(..)),
    the Name arguments of setattr and of a function already marked (f(box))."""
    names = set()
    for call in (sub for sub in ast.walk(node) if isinstance(sub, ast.Call)):
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in MUTATORS:
            base = func.value
            while isinstance(base, (ast.Attribute, ast.Subscript, ast.Call)):
                base = base.func if isinstance(base, ast.Call) else base.value
            names |= {base.id} if isinstance(base, ast.Name) else set()
        if getattr(func, "id", None) == "setattr" or getattr(func, "id", None) in tainted:
            names |= {a.id for a in call.args if isinstance(a, ast.Name)}
    return names


def set_by_def(node: ast.AST) -> set:
    """The namespace's names a def or a class may set: those it declares global, and (x := ..) anywhere in it (its
    defaults, decorators and annotations run as it is defined, a class's body too)."""
    names = {name for sub in ast.walk(node) if isinstance(sub, ast.Global) for name in sub.names}
    return names | {sub.target.id for sub in ast.walk(node) if isinstance(sub, ast.NamedExpr)}


def defines_code_in_annotations(node: ast.AST) -> bool:
    """A def whose annotations hold code: a decorator may evaluate them as it is defined (functools.singledispatch)."""
    return hasattr(node, "args") and any(code_in_annotation(sub) for sub in [node, *ast.walk(node.args)])


def _a_string(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _false(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _true(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def makes_text(node: ast.AST) -> bool:
    """A string written or built: 'dW2 = ..', f'..', pieces joined by + or %, ''.join(..), '..'.format(..), str(..)."""
    if isinstance(node, (ast.JoinedStr, ast.Constant)):
        return isinstance(node, ast.JoinedStr) or isinstance(node.value, str)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return makes_text(node.left) or makes_text(node.right)
    if isinstance(node, ast.Call):
        return (
            getattr(node.func, "attr", None) in ("join", "format", "replace") or getattr(node.func, "id", "") == "str"
        )
    return False


def passes_code(node: ast.AST) -> bool:
    """A call that hands code over as a string, or a namespace: timeit.timeit("dW2 = ..", globals=..), pdb.run(".."),
    not timeit.default_timer() or pdb.set_trace()."""
    calls = [sub for sub in ast.walk(node) if isinstance(sub, ast.Call)]
    strings = (makes_text(a) for c in calls for a in c.args)  # timeit.timeit('dW2' + ' = ..')
    return any(strings) or any(k.arg in ("globals", "locals", "local") for c in calls for k in c.keywords)


def magic_code(node: ast.stmt):
    """The Python that ``%%time``, ``%time ..``, ``%%capture`` run (``get_ipython().run_cell_magic('time', '', code)``),
    so that what it assigns is read as any other code; None for anything else."""
    call = getattr(node, "value", None)
    if not isinstance(call, ast.Call) or getattr(call.func, "attr", None) not in MAGICS:
        return None
    if not call.args or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args):
        return None
    if call.args[0].value in ("run", "load", "loadpy"):
        return None
    return call.args[-1].value


@kept_by_text(100_000)  # names in a student's imports: one of millions of characters is not kept
def unknown_module(name: str) -> bool:
    """A module the grader does not have, such as one the student wrote to a file: its code cannot be read."""
    top = name.split(".")[0]
    if not top or top in sys.stdlib_module_names:
        return False
    try:
        return importlib.util.find_spec(top) is None
    except (ImportError, ValueError):
        return True


def _binds(node: ast.stmt) -> set:
    """The names a top-level statement itself binds (x = .., def x, import x): not those bound inside a function."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return (
        {t.id for t in targets if isinstance(t, ast.Name)} if isinstance(node, (ast.Assign, ast.AnnAssign)) else set()
    )

"""The course's locked cells, prepared once in a kernel parent for every kernel it forks (docs/design/sandbox.md,
"Setup cells run ahead"): what IPython and ipykernel compute from a cell's text alone, before it runs, and the
grader's own parse of it. A kernel takes each for a locked cell and computes it as before for any other cell.

For each locked cell the parent keeps:
- IPython's input transformation (it tokenizes the whole cell, twice a run: 31 ms for the self-check helpers' cell);
- IPython's parse of that, with the compiler flags a kernel starts with;
- the bytecode of each of its statements, as IPython compiles them one by one (``KnownCompile``: the locked cells of a
  student's six notebooks, 97 % of their code, took IPython 45 ms to compile, and take a kernel 5 ms);
- the probes' parse of it (``rerun.parsed``, which the snapshot hook and the rule probes read), and what they work out
  about each statement (``_read_ahead``);
- the hash ipykernel names the cell's file by (``murmur2_x86``, in pure Python: 2.4 ms for the 20 KB of the
  self-check helpers' cell, 43 ms for a student's six notebooks).
"""

import __future__

import ast
import types

from .located import only_course_hooks

_transformed = {}  # in the parent: a locked cell's source -> IPython's input transformation of it
_parsed = {}  # in the parent: a transformation -> (the compiler flags, IPython's parse of it with them)
_hashes = {}  # in the parent: (a locked cell's source, seed) -> ipykernel's murmur2 hash of it
_compiled = {}  # in the parent: (id of a statement of _parsed, mode, flags) -> (the statement, its code)
LIMIT = 4096  # cells kept of each kind (more than the course's notebooks have, in three editions)


def transformed(sources) -> dict:
    """In the parent: each of ``sources`` (the notebook's locked cells) prepared, once for all kernels; returns
    IPython's input transformation of each, which ``arm`` hands to a kernel."""
    from IPython.core.compilerop import CachingCompiler
    from IPython.core.inputtransformer2 import TransformerManager

    if len(_transformed) > LIMIT:
        for kept in (_transformed, _parsed, _hashes, _compiled):
            kept.clear()
    _remember_hashes()
    flags = CachingCompiler().flags  # (a kernel's, until a cell imports from __future__)
    for source in sources:
        if source in _transformed:
            continue
        _transformed[source] = cell = TransformerManager().transform_cell(source)
        try:
            _parsed[cell] = flags, compile(cell, "<locked cell>", "exec", flags | ast.PyCF_ONLY_AST, 1)
            for awaits in (0, TOP_LEVEL_AWAIT):  # autoawait on (IPython's default) or off (the grading kernels')
                _compile_statements(_parsed[cell][1].body, flags | awaits)
        except SyntaxError:  # (the kernel raises it as it runs the cell)
            pass
        _read_ahead(cell)
        _hashes[source, HASH_SEED] = _murmur2_x86(source, HASH_SEED)
    return {source: _transformed[source] for source in sources}


def _read_ahead(cell: str) -> None:
    """What the AST hooks and the probes work out about each statement of a locked cell, from its text alone, kept on
    the statements (or in the kept parses) that the kernels inherit: the probes' parse of the cell as IPython's
    history has it, what each statement writes, reads and rebinds; whether one of IPython's parse is a check against
    autograd (``self_checks_off``)."""
    from ..engine.probes import rerun
    from ..engine.probes.snapshots import evaluated_names
    from .self_checks_off import checks_autograd, runs_backward

    if cell in _parsed:
        for statement in rerun.flattened(_parsed[cell][1].body):
            checks_autograd(statement)
            runs_backward(statement)
    for statement in rerun.parsed(cell.rstrip("\n")):  # (kept: ``common.kept``)
        for reading in (rerun.writes, evaluated_names, rerun._may_rebind, rerun._rebinds, rerun._reads):
            reading(statement)


TOP_LEVEL_AWAIT = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)  # (IPython's, as it compiles with autoawait on)


def _compile_statements(body: list, flags: int) -> None:
    """Each statement as ``run_ast_nodes`` compiles it: alone, in "exec" mode, and a last expression in "single" mode
    too (IPython shows its value). Compiled with a placeholder file name, which a kernel replaces with its own."""
    modes = [(s, "exec") for s in body] + ([(body[-1], "single")] if body and isinstance(body[-1], ast.Expr) else [])
    for statement, mode in modes:
        module = ast.Module([statement], []) if mode == "exec" else ast.Interactive([statement])
        try:
            _compiled[id(statement), mode, flags] = statement, compile(module, "<locked cell>", mode, flags, True)
        except (SyntaxError, ValueError):  # (it parsed but does not compile: the kernel shows why)
            pass


def _renamed(code, filename: str):
    """``code`` and the code objects it holds (functions, classes, comprehensions) in the file ``filename``."""
    consts = tuple(_renamed(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


class KnownCompile:
    """Mixed into the kernel's compiler class (``install``): a statement the parent compiled, with the same flags and
    mode, is its code in the kernel's file name; anything else is compiled. ``__future__`` features it turns on are
    remembered as ``codeop.Compile`` does."""

    def __call__(self, source, filename, symbol, *args, **kwargs):
        body = source.body if isinstance(source, (ast.Module, ast.Interactive)) else ()
        known = _compiled.get((id(body[0]), symbol, self.flags)) if len(body) == 1 and not args and not kwargs else None
        if known is None or known[0] is not body[0]:
            return super().__call__(source, filename, symbol, *args, **kwargs)
        code = _renamed(known[1], filename)
        for feature in __future__.all_feature_names:
            if code.co_flags & getattr(__future__, feature).compiler_flag:
                self.flags |= getattr(__future__, feature).compiler_flag
        return code


_compilers = {}  # a compiler class -> its KnownCompile subclass


def _known_compiler(base: type) -> type:
    if base not in _compilers:
        _compilers[base] = type(f"Known{base.__name__}", (KnownCompile, base), {})
    return _compilers[base]


HASH_SEED = 0xC70F6907  # ipykernel.compiler.get_tmp_hash_seed()
_murmur2_x86 = None  # ipykernel's own


def murmur2_x86(data, seed):
    """ipykernel's hash of a cell's code (its file name): the parent's for a locked cell, else computed."""
    known = _hashes.get((data, seed)) if isinstance(data, str) else None
    return known if known is not None else _murmur2_x86(data, seed)


def _remember_hashes() -> None:
    """ipykernel names a cell's file by ``compiler.murmur2_x86``, which it looks up as it names each one."""
    global _murmur2_x86
    from ipykernel import compiler

    if _murmur2_x86 is None:
        _murmur2_x86 = compiler.murmur2_x86
    if compiler.get_tmp_hash_seed() == HASH_SEED:  # (the seed of the hashes kept)
        compiler.murmur2_x86 = murmur2_x86


def install(shell, transforms: dict) -> None:
    """In a kernel forked after ``transformed``: its input transformation and parse take the parent's for the locked
    cells ``transforms``, while IPython's own transformations are the only ones."""
    from IPython.core.inputtransformer2 import TransformerManager

    manager = shell.input_transformer_manager
    if transforms and KnownTransforms.lists(manager) == KnownTransforms.lists(TransformerManager()):
        manager.transform_cell = KnownTransforms(manager, transforms)
    if _parsed and not isinstance(shell.compile.ast_parse, KnownParse):
        shell.compile.ast_parse = KnownParse(shell)
    if _compiled and not isinstance(shell.compile, KnownCompile):  # (the same object: IPython holds it in places)
        shell.compile.__class__ = _known_compiler(type(shell.compile))


class KnownTransforms:
    """The kernel's input transformation (``TransformerManager.transform_cell``, a function of the cell's text and the
    transformations' lists): of a locked cell, as the parent computed it; of the cell transformed last, as it was
    then; of any other, computed. Only while the lists are IPython's own (a student's cell may change them)."""

    def __init__(self, manager, known: dict):
        self.manager, self.known, self.transform = manager, known, manager.transform_cell
        self.own, self.last = self.lists(manager), (None, None)

    @staticmethod
    def lists(manager) -> tuple:
        return tuple(manager.cleanup_transforms), tuple(manager.line_transforms), tuple(manager.token_transformers)

    def __call__(self, cell):
        if not isinstance(cell, str) or self.lists(self.manager) != self.own:
            return self.transform(cell)
        if cell in self.known:
            return self.known[cell]
        if cell != self.last[0]:
            self.last = cell, _untokenized(self.manager, cell) or self.transform(cell)
        return self.last[1]


_TOKEN_SYNTAX = ("%", "!", "?")  # what IPython's token transformations look for, with `,;/` at a line's start


def _untokenized(manager, cell: str) -> str | None:
    """``TransformerManager.transform_cell(cell)`` without its token transformations (the whole cell tokenized in pure
    Python: 0.25 ms for a student's answer cell), when none of them can find anything: IPython's four (a = %magic,
    a = !cmd, an escaped line %x !x ?x ,x ;x /x, x?) each need a token `%`, `!` or `?`, or one of `,;/` first on a line;
    else None (then IPython transforms it)."""
    from IPython.core.inputtransformer2 import EscapedCommand, HelpEnd, MagicAssign, SystemAssign

    if tuple(manager.token_transformers) != (MagicAssign, SystemAssign, EscapedCommand, HelpEnd):
        return None
    lines = (cell if cell.endswith("\n") else cell + "\n").splitlines(keepends=True)
    for transform in manager.cleanup_transforms + manager.line_transforms:
        lines = transform(lines)
    text = "".join(lines)
    if any(mark in text for mark in _TOKEN_SYNTAX):
        return None
    if any(line.lstrip()[:1] in (",", ";", "/") for line in text.splitlines()):
        return None
    return text


class KnownParse:
    """The kernel's ``CachingCompiler.ast_parse``: of a locked cell's transformation, a new module holding the
    statements the parent parsed, when the compiler's flags are those it parsed with and every AST hook of the kernel is
    the course's (``located.course_hooks``: they replace a module's statements, never change one); else IPython's own
    parse."""

    def __init__(self, shell):
        self.shell, self.parse = shell, shell.compile.ast_parse
        self.last = None, None  # (the text, the module) of the last parse: what ``parsed_from`` tells the hooks

    def __call__(self, source, filename="<unknown>", symbol="exec"):
        known = _parsed.get(source) if isinstance(source, str) and symbol == "exec" else None
        hooks = self.shell.ast_transformers
        if known is None or known[0] != self.shell.compile.flags or not only_course_hooks(hooks):
            module = self.parse(source, filename, symbol)
        else:
            module = ast.Module(list(known[1].body), list(known[1].type_ignores))
        self.last = (source, module) if isinstance(source, str) else (None, None)
        return module


def parsed_from(shell, module) -> str | None:
    """The text the kernel's parse made ``module`` from, when it is that parse's last module (the one an AST hook is
    handed next, IPython's or a magic's that runs its code in place); else None."""
    parse = getattr(getattr(shell, "compile", None), "ast_parse", None)
    return parse.last[0] if isinstance(parse, KnownParse) and parse.last[1] is module else None

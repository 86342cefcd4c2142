"""While grading, no code is made from a string, or from bytes, on behalf of a student's cell (docs/security.md).

The static reading of the cells (``engine.honesty``) marks what it knows to run a string as code: exec, eval, compile
and a list of modules. The environment has more than any list names: an expression evaluated by IPython's
``FullEvalFormatter`` or ``user_expressions``, ``torch.utils.benchmark.Timer``'s statement, sqlalchemy's
``eval_expression``, a pickle loaded by a ``multiprocessing`` pipe, ``PyRun_SimpleString`` through
``numpy.ctypeslib.ctypes.pythonapi``, ... each ran code nobody read, which rebuilt the grader's rules from the
package's own source and earned their points (until 2026-12-08).

So the kernel asks Python itself (an audit hook, which nothing can remove): whenever code is compiled or run from a
string or bytes, a code object or a function made by hand, a function's code swapped, a pickle names a global, ctypes
is used, or the garbage collector is asked for objects, the stack says on whose behalf. Code of the student's (a
cell, or code made from a string) anywhere between the event and the nearest frame that may do it refuses it, with
the kernel's switch's own error (``AutogradIsOff``: what such a cell assigns counts as autograd's). What may do it:
the grader's own package; the import system loading a module from where the kernel's modules were; ``namedtuple``
and ``dataclass`` making their methods from identifiers; ``typing``'s and ``ast``'s parses, which run nothing; and
IPython compiling and running the cell itself, with no code of the student's under it. Anything else with code of the
student's on its stack is refused, however it was reached; nothing the student's code can change decides it.
"""

import _thread
import keyword
import os
import sys
from importlib.machinery import ModuleSpec

import IPython

# what the hook watches: code made or run, native code, a pickle's globals, every object by the garbage collector
EVENTS = frozenset({"compile", "exec", "code.__new__", "function.__new__", "marshal.loads", "marshal.load"})
EVENTS |= frozenset({"pickle.find_class", "gc.get_objects", "gc.get_referrers", "gc.get_referents"})
_CODE_SET = "object.__setattr__"  # (only when it sets a function's __code__)
_CTYPES = "ctypes."
# the stdlib's own makers of code, by the end of their file's path and their name: each makes it from what it checked,
# or runs nothing
_MAKERS = {
    ("collections/__init__.py", "namedtuple"),  # field names it checked to be identifiers
    ("ast.py", "parse"),  # a tree, no code
    ("typing.py", "__init__"),  # ForwardRef compiles an annotation; evaluating it is another event
}
_DATACLASS = ("dataclasses.py", "_process_class")  # its methods, from the class's annotations (checked here)
_IMPORT = ("<frozen importlib._bootstrap>", "_load_unlocked")  # a module's own code, from where modules were
# IPython compiling and running the cell it was handed (only when no code of the student's is under it)
_CELL_RUNNERS = {
    ("IPython/core/compilerop.py", "__call__"),
    ("IPython/core/compilerop.py", "ast_parse"),
    ("IPython/core/interactiveshell.py", "run_code"),
    ("IPython/core/interactiveshell.py", "run_ast_nodes"),
    ("IPython/core/interactiveshell.py", "transform_ast"),
    ("IPython/core/interactiveshell.py", "should_run_async"),
    ("IPython/core/async_helpers.py", "_should_be_async"),
}
# ... and the stdlib's compiler under IPython's, which a kernel that compiles its cells itself calls (a cold kernel's:
# a forked one's compiler is the grader's, in_kernel/known_cells.py)
_STDLIB_CELL_RUNNERS = {("codeop.py", "__call__")}
# a magic that runs the code it is handed in place (%%time, %time, %%timeit, %%capture), as the static reading reads it:
# only code the cell holds written out, as a constant of its own, with nothing of the student's under the cell
_MAGIC_RUNNERS = {
    ("IPython/core/interactiveshell.py", "run_cell_magic"),
    ("IPython/core/interactiveshell.py", "run_line_magic"),
}
_IN_PLACE = frozenset({"time", "timeit", "capture"})
# the grader's own code in the kernel (its probes, its switches), not the sandbox's, under every kernel's stack
_GRADERS = ("in_kernel", "engine")


def _in(folder: str, places) -> tuple:
    """``places`` (a file's path below ``folder``, a function's name) with the file's path in full, as code names it."""
    return tuple((os.path.join(folder, *file.split("/")), name) for file, name in places)


def make_hook(roots: tuple, refusal):
    """The audit hook: ``roots`` are the folders modules were imported from when grading started (the student's folder
    and the temporary ones left out), ``refusal()`` raises the kernel's switch's error. It reads only values bound
    now, in its closure: no module's attribute nor a builtin that a cell may replace later decides anything."""
    roots = tuple(sorted({r.rstrip(os.sep) + os.sep for r in roots if r and r != os.sep}))
    frame_of, thread, main = sys._getframe, _thread.get_ident, _thread.get_ident()
    isidentifier, iskeyword, spec_type, type_, str_, dict_ = (
        str.isidentifier,
        keyword.iskeyword,
        ModuleSpec,
        type,
        str,
        dict,
    )
    namespace_of, getattr_, len_, refused, isinstance_ = (
        type.__dict__["__dict__"].__get__,
        getattr,
        len,
        PermissionError,
        isinstance,
    )
    events, code_set, ctypes_, up = EVENTS, _CODE_SET, _CTYPES, os.sep + ".." + os.sep
    stdlib, ipython = os.path.dirname(os.__file__), os.path.dirname(os.path.dirname(IPython.__file__))
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    graders = tuple(os.path.join(package, part) + os.sep for part in _GRADERS)
    makers, (dataclass,), imports = _in(stdlib, _MAKERS), _in(stdlib, [_DATACLASS]), _IMPORT
    cell_runners = _in(ipython, _CELL_RUNNERS) + _in(stdlib, _STDLIB_CELL_RUNNERS)
    magic_runners = _in(ipython, _MAGIC_RUNNERS)
    none_of_these = ("built-in", "frozen")
    in_place = _IN_PLACE

    def one_of(code, places) -> bool:
        for file, name in places:
            if code.co_name == name and code.co_filename == file:
                return True
        return False

    # the frames grading started under (the kernel's loop, down to the bottom of its stack) are the kernel's, whatever
    # their files (a harness's may be made from strings): kept, so that their ids stay theirs
    codes, frame = [], frame_of(0)
    while frame is not None:
        codes.append(frame.f_code)
        frame = frame.f_back
    beneath = (frozenset(id(code) for code in codes), tuple(codes))

    def course(code) -> bool:
        name = code.co_filename
        return id(code) in beneath[0] or name.startswith("<frozen ") or name.startswith(roots) and up not in name

    def identifiers(frame) -> bool:
        cls = frame.f_locals.get("cls")
        if not isinstance_(cls, type_):  # (its namespace is read by type's own descriptor, whatever its metaclass)
            return False
        names = namespace_of(cls).get("__annotations__", {})
        if type_(names) is not dict_:
            return False
        for name in names:
            if type_(name) is not str_ or not isidentifier(name) or iskeyword(name):
                return False
        return True

    def from_where_modules_are(frame) -> bool:
        spec = frame.f_locals.get("spec")
        if type_(spec) is not spec_type:
            return False
        for place in (spec.origin, getattr_(spec.loader, "path", None)):
            if place is not None and place not in none_of_these:
                if type_(place) is not str_ or not place.startswith(roots):
                    return False
        return True

    def lawful_below(frame) -> bool:
        """Whether what runs the cell (from ``frame`` down) is the kernel's, in its main thread, or a magic the cell
        called with code it holds written out."""
        while frame is not None:
            code = frame.f_code
            if not course(code):
                return False
            if one_of(code, magic_runners):
                return written_out(frame)
            frame = frame.f_back
        return thread() == main

    def written_out(frame) -> bool:
        """A magic's call (``run_cell_magic``, ``run_line_magic``), whose code is a constant of the cell that called
        it, a cell itself run by the kernel (or by such a magic: %%time over %%capture)."""
        local = frame.f_locals
        text = local.get("cell") if frame.f_code.co_name == "run_cell_magic" else local.get("line")
        cell, name = frame.f_back, local.get("magic_name")
        if cell is None or course(cell.f_code) or type_(text) is not str_ or type_(name) is not str_:
            return False
        return name in in_place and text in cell.f_code.co_consts and lawful_below(cell.f_back)

    def graders_own(code) -> bool:
        return code.co_filename.startswith(graders)

    def decide(frame) -> bool:
        """Whether the event may happen, from the frame that caused it up the stack."""
        first = frame
        while frame is not None:
            code = frame.f_code
            if not course(code):
                return False  # the student's cell, or code made from a string: between the event and any maker
            if graders_own(code) or one_of(code, makers):
                return True
            if one_of(code, (dataclass,)):
                return identifiers(frame)
            if code.co_filename == imports[0] and code.co_name == imports[1]:
                return from_where_modules_are(frame)
            if one_of(code, magic_runners):
                return written_out(frame)
            if frame is first and one_of(code, cell_runners):
                return lawful_below(frame.f_back)
            frame = frame.f_back
        return False  # no maker on a stack of the environment's code alone: a thread or a callback of theirs

    def hook(event, args):
        if event in events:
            pass
        elif event == code_set:
            name = args[1] if len_(args) > 1 else None
            if type_(name) is str_ and name != "__code__":  # (a subclass of str may compare as it likes: decided)
                return
        elif not event.startswith(ctypes_):
            return
        try:
            frame = frame_of(1)
        except ValueError:  # (no Python frame: nothing of the student's either)
            return
        if not decide(frame):
            refusal()
            raise refused("code made on behalf of a student's cell while grading")  # (whatever refusal did)

    return hook


_installed = []


def refuse_code_from_strings(roots, refusal) -> None:
    """Install the hook, once per kernel (a hook cannot be removed: it lasts as long as the kernel)."""
    if not _installed:
        sys.addaudithook(make_hook(tuple(roots), refusal))
        _installed.append(True)

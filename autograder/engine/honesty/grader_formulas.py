"""The grader's own formulas refuse in a grading kernel, however they are reached (docs/design/engine.md, Honesty).

The kernel holds the grader's package: the hidden tests report through it. Its rules table computes every gradient
(``backward_rules.local_gradient``), ``training.network.manual_backward`` Exercise 4's whole backward pass, and the
operators' and fused steps' rules the rest. The static reading marks the package's names, but not every way to a
module by a name in a string: ``distributed.utils.import_term('auto' + 'gra' + 'der.engine...')`` (or dask's
``import_required``) took the rules table, and Exercise 1's 26 gradients earned 34 of 34 points with none written
(until 2026-12-07). So while grading, every function of the grader's package refuses but those the kernel itself
runs (``KERNEL_RUNS``, by module and top-level name): a new module's functions refuse until the kernel needs them.
A refused function's code is swapped in place, so that every reference to it refuses, whoever kept one.
"""

import contextlib
import functools
import sys
import types

PACKAGE = __name__.split(".")[0]
# what the kernel runs while grading: its own modules, the words, the sandbox's code (the kernel is a fork of it)
KERNEL_PACKAGES = tuple(f"{PACKAGE}.{name}" for name in ("in_kernel", "sandbox", "common", "data"))
# module -> the top-level names of the functions the kernel runs from it (None: all of them); none computes a gradient
KERNEL_RUNS = {
    "engine.wire": None,  # the reports' encoding
    "engine.honesty": None,  # the static reading (assigned_names), a decoy, this module
    "engine.probes": ("__init__",),
    "engine.probes.rerun": None,  # a step's code run again on pinned upstreams, the student's own
    "engine.probes.snapshots": None,
    "engine.probes.statements": None,
    "engine.probes.pins": None,
    "engine.training.lines_again": None,  # a function's lines run one by one, the student's own
    "engine.training.network": ("forward", "learning_rate", "minibatches", "other_batch", "thin_neuron", "one_thread"),
    "engine.bug_hunt.catalogue": ("bug_keys", "normalised_id", "planted", "section"),
    "engine.bug_hunt.checker": ("cases", "run_case"),
    "engine.bug_hunt.rerun": ("changed_after_their_lines",),
    "engine.backward_rules": ("Step",),  # a step's upstream names (Exercise 6's report); its terms refuse
}
KERNEL_RUNS = {f"{PACKAGE}.{module}": names for module, names in KERNEL_RUNS.items()}
# what the kernel runs itself at one moment only: the replay of Exercise 4's training_step with the right gradients
FOR_THE_REPLAY = {f"{PACKAGE}.engine.training.network": ("manual_backward",)}


def _runs_in_the_kernel(function: types.FunctionType, allowed: dict) -> bool:
    if function.__code__.co_filename.startswith("<"):
        return True  # made from a string, by dataclasses or namedtuple (a class's __init__, __new__, __eq__): no rule
    module = function.__module__
    if module.startswith(KERNEL_PACKAGES) or module.startswith(f"{PACKAGE}.engine.honesty"):
        return True
    names = allowed.get(module, ())
    return names is None or function.__qualname__.split(".")[0] in names


def _ours(value) -> bool:
    return isinstance(getattr(value, "__module__", None), str) and value.__module__.startswith(PACKAGE + ".")


def _within(value) -> list:
    """What a value of the grader's holds that may be or hold a function: a container's items, a function's closure,
    defaults and wrapped function, a class's or an instance's namespace, a property's or a partial's functions."""
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(value)
    if isinstance(value, types.FunctionType):
        cells = [c.cell_contents for c in value.__closure__ or () if c.cell_contents is not c]  # (a cell may be empty)
        return [*cells, *(value.__defaults__ or ()), getattr(value, "__wrapped__", None)]
    if isinstance(value, property):
        return [value.fget, value.fset, value.fdel]
    if isinstance(value, (staticmethod, classmethod)):
        return [value.__func__]
    if isinstance(value, functools.partial):
        return [value.func, *value.args, *value.keywords.values()]
    if isinstance(value, type) and _ours(value) or _ours(type(value)):
        slots = [getattr(value, name, None) for name in getattr(type(value), "__slots__", ())]
        return [*getattr(value, "__dict__", {}).values(), *slots]
    try:  # a cache's wrapper (functools.cache) keeps the function it calls
        return [getattr(value, "__wrapped__", None)]
    except Exception:  # (whatever an object's own __getattr__ raises)
        return []


def functions_of(modules) -> list:
    """The grader's functions that the given modules of its package hold, however deep in their tables (a step's
    terms in STEPS), but for those the kernel runs."""
    seen, found, left = set(), [], [value for module in modules for value in list(vars(module).values())]
    while left:
        value = left.pop()
        if id(value) in seen or isinstance(value, (str, bytes, int, float, types.ModuleType)):
            continue
        seen.add(id(value))
        if isinstance(value, types.FunctionType) and _ours(value) and not _runs_in_the_kernel(value, KERNEL_RUNS):
            found.append(value)
        with contextlib.suppress(ValueError):  # (an empty cell)
            left.extend(_within(value))
    return found


def _package_modules() -> list:
    return [m for name, m in list(sys.modules.items()) if name.startswith(PACKAGE + ".") and m is not None]


def kernel_modules_loaded() -> None:
    """Every module of the kernel's own package imported now, before anything refuses: a hidden test imports its
    module when it runs (Exercise 6's ``in_kernel.bug_hunt``), and a module loaded while grading refuses as soon as it
    has run, though the package that imports it may still call it at its top level (``engine.bug_hunt``'s table of
    checks: the bug hunt's setup cell stopped with AutogradIsOff in a kernel that had not loaded it before)."""
    import importlib
    import pkgutil

    kernel = importlib.import_module(f"{PACKAGE}.in_kernel")
    for module in pkgutil.iter_modules(kernel.__path__, f"{kernel.__name__}."):
        importlib.import_module(module.name)


@functools.cache
def grader_functions() -> tuple:
    """(the grader's modules loaded, every function of theirs that the kernel does not run while grading): once per
    process (a kernel parent's warm-up works it out for the kernels it forks). A module loaded later:
    ``module_refuses``."""
    kernel_modules_loaded()
    modules = _package_modules()
    return frozenset(m.__name__ for m in modules), tuple(functions_of(modules))


def _refusal_code(free: int) -> types.CodeType:
    """The code of a function that refuses, with ``free`` free variables (a function's code can only be swapped for
    one of as many as its closure holds); it runs with the refused function's globals, so it imports what refuses."""
    names = [f"free_{i}" for i in range(free)]
    text = "def outer():\n" + "".join(f"    {name} = None\n" for name in names)
    text += f"    def refused(*args, **kwargs):\n        from {__name__} import refuse\n\n        return refuse()\n"
    text += "".join(f"        {name}\n" for name in names)  # (unreached: free variables all the same)
    text += "    return refused\n"
    namespace = {}
    exec(compile(text, "<refused>", "exec"), namespace)  # the grader's own text, no student's
    return namespace["outer"]().__code__


_REFUSAL = []  # what a refused function raises: the kernel's switch's own error


def refuse():
    if not _REFUSAL:  # (not grading: nothing was refused)
        raise RuntimeError("the grader's formulas are refused only while grading")
    _REFUSAL[0]()


def formulas_refuse(refusal) -> None:
    """Every function in ``grader_functions()``, and in the package's modules loaded since it was worked out, refuses
    from now on, with ``refusal()``'s error. The replay's own (``FOR_THE_REPLAY``) runs within ``for_the_replay()``."""
    known, functions = grader_functions()  # (first: the kernel's modules are loaded before anything refuses)
    _REFUSAL[:] = [refusal]
    later = [m for m in _package_modules() if m.__name__ not in known]
    _refused(functions)
    for module in later:
        module_refuses(module)


def module_refuses(module) -> None:
    """A module of the grader's package loaded while grading (by the kernel's own lazy import, or the student's by a
    name in a string): its functions refuse as the others do, but for those the kernel runs."""
    if _REFUSAL and module.__name__.startswith(PACKAGE + "."):
        _refused(functions_of([module]))


_CODES = {}  # number of free variables -> the code of a refused function


def _refused(functions) -> None:
    for function in functions:
        if function.__code__.co_filename == "<refused>":
            continue
        free = len(function.__closure__ or ())
        if free not in _CODES:
            _CODES[free] = _refusal_code(free)
        if function.__qualname__ in FOR_THE_REPLAY.get(function.__module__, ()):
            _keep(function)
        function.__code__ = _CODES[free]


def _the_replays_own():
    """(keep a function of FOR_THE_REPLAY, hand the right gradients out, whether they were, for_the_replay), their
    state out of reach of a name (a module's attributes are the student's to read and set by a name in a string)."""
    kept, spent = [], []

    def keep(function) -> None:
        kept.append((function, function.__code__))

    def hand_out() -> None:
        spent.append(True)

    @contextlib.contextmanager
    def for_the_replay():
        """Exercise 4's replay of training_step with the right gradients: the kernel's own call of manual_backward,
        which works within it only, once they were handed out (``in_kernel.training``: no backward_pass is judged
        after that). The student's training_step, which the replay runs, is handed those gradients anyway."""
        if not spent:
            refuse()
        refused = [(f, f.__code__) for f, _ in kept]
        for function, code in kept:
            function.__code__ = code
        try:
            yield
        finally:
            for function, code in refused:
                function.__code__ = code

    return keep, hand_out, lambda: bool(spent), for_the_replay


_keep, hand_out, handed_out, for_the_replay = _the_replays_own()


class _Refusing:
    """The loader of a module of the grader's package imported while grading: its functions refuse once it has run."""

    def __init__(self, loader):
        self.loader = loader

    def __getattr__(self, name):  # (get_source for tracebacks, ...)
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        module_refuses(module)


def refusing(spec):
    """``spec``, whose module refuses as it is loaded when it is one of the grader's (``module_refuses``)."""
    if spec.name.startswith(PACKAGE + ".") and hasattr(spec.loader, "exec_module"):
        spec.loader = _Refusing(spec.loader)
    return spec

"""Whether this kernel is being autograded, and what changes when it is: the seed, and autograd taken away."""

import contextlib
import ctypes
import functools
import gc
import os
import sys
import tempfile
import threading
import warnings

import torch
from IPython import get_ipython
from IPython.utils.text import SList

from ..common.editions import EDITION_VARIABLE
from ..common.words import say
from ..data import SEED_VARIABLE
from ..engine.honesty.code_from_strings import refuse_code_from_strings
from ..engine.honesty.decoy import decoy
from ..engine.honesty.grader_formulas import formulas_refuse, refusing
from .self_checks_off import skip_self_checks
from .snapshot_hook import take_snapshots

_started = []  # start_grading ran in this kernel


def grading() -> bool:
    return os.environ.get("NBGRADER_EXECUTION") == "autograde" and SEED_VARIABLE in os.environ


def started() -> bool:
    """Whether start_grading ran: before it, every ``.grad`` holds autograd's own gradient and autograd works."""
    return bool(_started)


def grading_seed(default: int) -> int:
    """The seed of this run: the notebook's own, or at autograde one the student never saw."""
    return int(os.environ[SEED_VARIABLE]) if grading() else default


class AutogradIsOff(RuntimeError):
    pass


def edition() -> str | None:
    """The edition being graded (its language is that of what the kernel prints), None outside grading."""
    return os.environ.get(EDITION_VARIABLE)


def _refusal():
    """What autograd's entry points do while grading. A function of their own each: torch._dynamo, which
    torch.optim imports, refuses to start when one function stands for two of torch's."""

    def refuse(*args, **kwargs):
        words = say("autograd is switched off while grading: every gradient must be written by hand.")
        raise AutogradIsOff(words.render(edition()))

    return refuse


def _no_code_from_strings():
    """What code made from a string on behalf of a student's cell does while grading (``code_from_strings``): refuse,
    with the switch's own error, so that what its cell assigns earns nothing."""

    def refuse(*args, **kwargs):
        words = say("code made from a string does not run while grading: write every gradient in the cell itself.")
        raise AutogradIsOff(words.render(edition()))

    return refuse


class _NoEngine:
    """autograd's engine while grading: whatever it is asked to do refuses."""

    def __getattr__(self, name):
        return _refusal()


def _take_autograd_away() -> None:
    """Every entry to autograd refuses: backward and autograd.grad, the engine they call (torch._C's, under each name
    torch keeps it by), and forward-mode differentiation's levels."""
    torch.Tensor.backward = _refusal()
    torch.autograd.backward = _refusal()
    torch.autograd.grad = _refusal()
    torch._C._ImperativeEngine = torch.autograd.variable.ImperativeEngine = _NoEngine
    torch.autograd.variable.Variable._execution_engine = _NoEngine()
    torch._C._enter_dual_level = _refusal()
    # a node of the graph called by hand (t.grad_fn(g)) runs its derivative without the engine; printing still works
    torch.Tensor.grad_fn = torch.Tensor._grad_fn = property(lambda tensor: None)
    _hide_nodes()
    torch._C._jit_differentiate = _refusal()  # TorchScript's symbolic derivatives, run without the engine
    _no_engine_runs()
    _no_recording()
    _take_backward_kernels_away()
    formulas_refuse(_refusal())  # the grader's own rules, reached by any name (a module's name in a string)


class _EngineRefuses:
    """What autograd's engine in C++ runs instead of a backward pass while grading. Torch hands every run of its engine
    to a compiled-autograd compiler when one is set, however the run was reached: the Python names above are only
    some of the ways in. TorchScript compiled from a string (``torch.jit.CompilationUnit(code)``, whose
    ``torch.set_grad_enabled(True)`` and ``.backward()`` are ops of its own), ``torch._C._jit_get_operation`` of
    ``aten::backward``, and a thread of one's own, whose recording starts on, ran it whole: autograd's own gradients,
    bit-exact, for any answer (until 2026-12-07)."""

    def __getattr__(self, name):
        return (lambda *args, **kwargs: None) if name == "close" else _refusal()  # close: its clean-up


def _no_engine_runs() -> None:
    hooks = torch._C._dynamo.compiled_autograd
    hooks.set_autograd_compiler(lambda *args, **kwargs: _EngineRefuses(), False)
    # and it stays: torch.compile's own code sets it aside while it compiles, which now changes nothing
    hooks.set_autograd_compiler = lambda *args, **kwargs: (None, False)


def _hide_nodes() -> None:
    """No node of a graph is within reach: not through torch.Tensor's grad_fn (hidden above), nor through the C types
    under it, whose own descriptors of it (``torch._C.TensorBase``'s ``grad_fn``, and ``next_functions``, which a
    custom autograd Function's ``ctx`` holds) outlived that property. A graph is still recorded where recording is
    on (a thread of one's own starts with it on, TorchScript switches it on by an op of its own): a node reached by a
    class pattern, whose ``__match_args__`` names an attribute the static reading never sees, and called by hand
    ran torch's derivative formulas, 33 of Exercise 1's 34 points (until 2026-12-07). Those types cannot be set
    attributes on, so their namespaces are changed in place and the interpreter told (``PyType_Modified``)."""
    hidden = property(lambda holder: None)
    for owner, names in ((torch._C.TensorBase, ("grad_fn", "_grad_fn")), (torch._C._FunctionBase, ("next_functions",))):
        namespace = gc.get_referents(owner.__dict__)[0]
        namespace.update(dict.fromkeys(names, hidden))
        ctypes.pythonapi.PyType_Modified(ctypes.py_object(owner))


def _no_recording() -> None:
    """autograd records no graph in the kernel's own thread while grading, and switching it on (torch.enable_grad(),
    set_grad_enabled(True), aten's set_grad_enabled, inference_mode(False)) leaves it off: nothing needs a graph while
    autograd refuses. Not the only guard: a thread of one's own starts with recording on, and TorchScript switches it
    on by an op of its own; no node of what they record can be reached (``_hide_nodes``) or run
    (``_no_engine_runs``)."""
    switch = torch._C._set_grad_enabled
    switch(False)
    torch._C._set_grad_enabled = lambda mode: switch(False)
    torch.ops.aten.set_grad_enabled = lambda mode: switch(False)
    inference = torch._C._InferenceMode  # inference_mode(False) switched recording on
    torch._C._InferenceMode = lambda mode=True: inference(True) if mode else contextlib.nullcontext()


# where ATen keeps backward kernels that compute (Meta's give shapes alone): a sparse or nested tensor reaches its own
_KERNELS = ("CPU", "CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
_KERNELS += ("SparseCPU", "SparseCsrCPU", "MkldnnCPU", "NestedTensorCPU")
_kept = []  # the library that holds the refusals: they last as long as it does


def _take_backward_kernels_away() -> None:
    """torch's own derivative formulas refuse too, however they are reached (torch.ops.aten.tanh_backward by a
    computed name, or a module of one's own): ATen's backward kernels in the dispatcher, and torch._decomp's."""
    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Overriding a previously registered kernel"
        for key in _KERNELS:
            for op in torch._C._dispatch_get_registrations_for_dispatch_key(key):
                if "backward" in op and op.startswith("aten::"):
                    library.impl(op.removeprefix("aten::"), _refusal(), key)
    _kept.append(library)
    decompositions = sys.modules.get("torch._decomp")
    if decompositions is not None:
        for table in decompositions.global_decomposition_table.values():
            for op in [op for op in table if "backward" in str(op)]:
                table[op] = _refusal()
        module = sys.modules["torch._decomp.decompositions"]
        for name in [name for name in vars(module) if "backward" in name and callable(vars(module)[name])]:
            setattr(module, name, _refusal())
    predispatch = sys.modules.get("torch._functorch.predispatch")  # keeps its own name for it, once imported
    if predispatch is not None:
        predispatch._enter_dual_level_impl = torch._C._enter_dual_level


class _ImportsFromWhereTheyWere:
    """While grading, a module is imported only from where the kernel's modules were when grading started (the
    standard library, the environment's packages, the grader's own), never from a file the student's code wrote (into
    /tmp, through sys.path): the grader cannot read such a module, and its code, run by a plain ``import``, put
    answers into the notebook's namespace out of the static reading's sight (``engine.honesty``, which takes an
    import of a module it cannot find for code that did not run). A module that is nowhere fails as before."""

    def __init__(self, roots: tuple):
        self.roots, self.asking = roots, threading.local()

    def _known(self, place: str) -> bool:
        place = os.path.realpath(place)
        return any(place == root or place.startswith(root + os.sep) for root in self.roots)

    def find_spec(self, name, path=None, target=None):
        if getattr(self.asking, "now", False):  # asked again by a finder that asks the others: they answer
            return None
        self.asking.now = True
        try:
            found = (
                f.find_spec(name, path, target) for f in sys.meta_path if f is not self and hasattr(f, "find_spec")
            )
            spec = next((spec for spec in found if spec is not None), None)
        finally:
            self.asking.now = False
        if spec is None:
            return None
        places = [spec.origin] if spec.has_location and isinstance(spec.origin, str) else []
        places += [p for p in spec.submodule_search_locations or () if isinstance(p, str)]
        if all(self._known(place) for place in places):
            return refusing(spec)  # (a module of the grader's refuses as the others do: grader_formulas)
        words = say("a module written while grading is not imported: {name}", name=repr(name))
        raise ModuleNotFoundError(words.render(edition()), name=name)


@functools.cache
def module_places() -> frozenset:
    """sys.path's folders and those of the modules loaded, resolved: once per process. A kernel parent's warm-up
    works it out for every kernel it forks (``sandbox.warm_up``), which the kernel's own modules, loaded from the same
    places, do not change: a kernel resolving some 300 folders itself took 28 ms of each notebook."""
    places = {p for p in sys.path if p and os.path.exists(p)}
    places |= {
        os.path.dirname(m.__file__) for m in list(sys.modules.values()) if isinstance(getattr(m, "__file__", None), str)
    }
    return frozenset(os.path.realpath(p) for p in places)


def _roots() -> frozenset:
    """Where the kernel's modules are: never the student's folder, nor one a cell may write into."""
    here = os.path.realpath(os.getcwd())  # the student's folder: nothing of it is a module
    return module_places() - {here, os.sep, os.path.realpath(tempfile.gettempdir()), "/dev/shm"}


def _roots_as_named() -> frozenset:
    """``_roots()``, and the folders of sys.path that are one of them as they are named, unresolved: a code object
    names its file as it was imported, through a link in the path too (a virtual environment's)."""
    roots = _roots()
    return roots | {p for p in sys.path if p and os.path.isabs(p) and os.path.realpath(p) in roots}


def _imports_from_where_they_were() -> None:
    roots = _roots()
    if not any(isinstance(f, _ImportsFromWhereTheyWere) for f in sys.meta_path):
        sys.meta_path.insert(0, _ImportsFromWhereTheyWere(tuple(sorted(roots))))


def _no_shell_commands() -> None:
    """``!pip install ..`` and ``files = !ls`` say that they do not run instead of failing: a grading kernel starts no
    program (``process_guards.refuse_exec``), and the rest of their cell, answers included, must still run."""
    shell = get_ipython()
    if shell is None:
        return

    def not_run(command, *args, **kwargs):
        print(say("(shell commands do not run while grading: !{command})", command=command).render(edition()))
        return SList()  # (what ``files = !ls`` gets)

    shell.system = shell.system_piped = shell.system_raw = shell.getoutput = not_run


def _skipped(*args, **kwargs):
    """What a visible self-check does while grading: say that it is skipped."""
    print(say("(self-checks are skipped while grading: see the graded cells)").render(edition()))


def start_grading(namespace: dict, self_checks=("cmp", "self_check")) -> None:
    """After the setup's own ``loss.backward()``: hide autograd's answers from the student.

    Every ``.grad`` becomes a decoy (seeded noise at the gradient's scale, which the grader
    recognises), and autograd's entries and torch's backward formulas refuse to run. The visible
    self-checks compare with ``.grad``, so they are switched off rather than left to mislead, and so are the student's
    own (``assert torch.allclose(dW2, W2.grad)``: ``self_checks_off``).
    From the next cell on, statements take snapshots of what they read, for the rule probes.
    """
    if not grading():
        return
    seed = int(os.environ[SEED_VARIABLE])
    # (only leaves and retained tensors hold a .grad: reading another's warns, in the feedback of a kernel that had not)
    held = [(name, value) for name, value in list(namespace.items()) if isinstance(value, torch.Tensor)]
    held = [(name, value) for name, value in held if value.is_leaf or value.retains_grad]
    decoys = [(value, decoy(value.grad, seed, name)) for name, value in held if value.grad is not None]
    with torch.no_grad():
        for value, fake in decoys:  # in place too: what holds the gradient itself (the helper cell's _AT_SETUP) ...
            value.grad.copy_(fake)
    for value, fake in decoys:  # ... and each .grad its own decoy, whatever storage two gradients shared
        value.grad = fake
    _take_autograd_away()
    _no_shell_commands()
    _imports_from_where_they_were()
    refuse_code_from_strings(_roots_as_named(), _no_code_from_strings())
    for name in self_checks:
        if name in namespace:
            namespace[name] = _skipped
    take_snapshots(namespace)
    skip_self_checks(_skipped)  # the student's own asserts against .grad, as cmp
    _started.append(True)

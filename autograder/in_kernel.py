"""What runs inside the student's kernel, and only while nbgrader autogrades.

The hidden regions of the locked cells call these functions. They never grade: they pick the unseen seed, take
autograd out of reach and report the student's tensors (``engine.wire``), with the rule probes' re-runs and
Exercise 4's training replay; the grader judges them in its own process. Outside autograde they change nothing.
"""

import ast
import builtins
import contextlib
import functools
import os
import random
import signal
import sys
import threading
import warnings

import torch
from IPython import get_ipython
from IPython.display import display
from IPython.utils.capture import capture_output

from .data import SEED_VARIABLE
from .engine import wire
from .engine.honesty import decoy
from .engine.probes import (
    TIME_LIMIT,
    NoAnswerCode,
    answer_code,
    parsed,
    pinned_inputs,
    probe_namespace,
    put_back,
    replay,
    writes,
)
from .engine.snapshots import evaluated_names, take


def grading() -> bool:
    return os.environ.get("NBGRADER_EXECUTION") == "autograde" and SEED_VARIABLE in os.environ


def grading_seed(default: int) -> int:
    """The seed of this run: the notebook's own, or at autograde one the student never saw."""
    return int(os.environ[SEED_VARIABLE]) if grading() else default


class AutogradIsOff(RuntimeError):
    pass


def _refuse(*args, **kwargs):
    raise AutogradIsOff("autograd is switched off while grading: every gradient must be written by hand.")


def start_grading(namespace: dict, self_checks=("cmp", "self_check")) -> None:
    """After the setup's own ``loss.backward()``: hide autograd's answers from the student.

    Every ``.grad`` becomes a decoy (the right gradient plus seeded noise, which the grader
    recognises), and ``backward`` / ``torch.autograd.grad`` refuse to run. The visible
    self-checks compare with ``.grad``, so they are switched off rather than left to mislead.
    From the next cell on, statements take snapshots of what they read, for the rule probes.
    """
    if not grading():
        return
    seed = int(os.environ[SEED_VARIABLE])
    for name, value in list(namespace.items()):
        if isinstance(value, torch.Tensor) and value.grad is not None:
            value.grad = decoy(value.grad, seed, name)
    torch.Tensor.backward = _refuse
    torch.autograd.backward = _refuse
    torch.autograd.grad = _refuse

    def skipped(*args, **kwargs):
        print("(self-checks are skipped while grading: see the graded cells)")

    for name in self_checks:
        if name in namespace:
            namespace[name] = skipped
    _take_snapshots(namespace)


def report(namespace: dict, *names: str, probe: tuple = ()) -> None:
    """Send the named variables, as they are now, to the grader (at autograde only).

    ``probe``: names that the student's code for ``names[0]`` reads (its upstream gradients, or the input of
    a forward value); that code is re-run with them pinned to random tensors, and its result is sent too.
    """
    if not grading():
        print("This cell is graded by the autograder.")
        return
    payload = {name: wire.encode(namespace.get(name), name in namespace) for name in names}
    if probe:
        try:
            payload[wire.PROBE] = _probe(namespace, names[0], probe)
        except Exception as error:  # whatever the student's namespace holds, the answer itself is still reported
            payload[wire.PROBE] = {"answer": names[0], "pins": {}, "status": "failed", "reason": repr(error)[:200]}
    _send(payload)


# A rule probe (see engine.probes): the student's code for one answer, run again on random inputs.


class ProbeTimeLimit(Exception):
    pass


def _probe(namespace: dict, answer: str, names: tuple) -> dict:
    """What the student's code for ``answer`` computes with ``names`` pinned to random tensors of their shapes."""
    shell = get_ipython()
    cells = list(shell.history_manager.input_hist_parsed[:-1]) if shell is not None else []  # [:-1]: this cell
    found = {"answer": answer, "pins": {}, "status": "could_not_run"}
    try:
        shapes = {name: v.shape for name, v in namespace.items() if isinstance(v, torch.Tensor)} | _forward_shapes
        pins = pinned_inputs(namespace, int(os.environ[SEED_VARIABLE]), answer, names, shapes)
        found["pins"] = {name: {"zero": not pin.any(), "shape": list(pin.shape)} for name, pin in pins.items()}
        code = answer_code(cells, answer, names)
        plan = replay(code, _snapshots, pins)
    except NoAnswerCode as error:
        found["reason"] = str(error)
        return found
    found.update(pins_read=sorted(code.pins_read), further_up=list(code.further_up))
    found["reads"] = sorted(n for n in code.reads if any(isinstance(p.get(n), torch.Tensor) for p in plan))
    apart = probe_namespace(namespace, pins)
    try:
        with _apart_from_the_kernel():
            for statement, values in zip(code.statements, plan):
                put_back(apart, values)
                module = ast.Module(body=[statement], type_ignores=[])
                exec(compile(module, "<your code, run again by the grader>", "exec"), apart)
    except (Exception, SystemExit) as error:  # the student's code, on other inputs: say what went wrong
        found["reason"] = f"{type(error).__name__}: {error}"[:300]
        return found
    found["status"] = "ran"
    found["result"] = wire.encode(apart.get(answer), answer in apart)
    return found


# Snapshots (see engine.snapshots): what each top-level statement read when it ran, for the probes.

SNAPSHOT_HOOK = "__backprop_ninja_snapshot__"  # a builtin while grading: the call put before each statement
_snapshots = {}  # (history index of the cell, index of the statement) -> its snapshot
_forward_shapes = {}  # name -> shape of each tensor when grading started: the pins' shapes, whatever came later


def _take_snapshots(namespace: dict) -> None:
    """From the next cell on, every top-level statement that writes a name takes a snapshot of what it reads."""
    for name, value in namespace.items():
        if isinstance(value, torch.Tensor):
            _forward_shapes.setdefault(name, value.shape)
    shell = get_ipython()
    if shell is None:
        return
    builtins.__dict__[SNAPSHOT_HOOK] = functools.partial(_snapshot, namespace)
    if not any(isinstance(t, _SnapshotCalls) for t in shell.ast_transformers):
        shell.ast_transformers.append(_SnapshotCalls())


def _snapshot(namespace: dict, cell: int, index: int, names: tuple) -> None:
    try:
        _snapshots[(cell, index)] = take(namespace, names)
    except Exception:  # no snapshot: a probe that needs it says so
        pass


class _SnapshotCalls(ast.NodeTransformer):
    """IPython's AST hook: before each top-level statement of a cell that writes a name and reads some,
    ``__backprop_ninja_snapshot__(cell, index, names)``, guarded so that it can never stop the student's code."""

    def visit(self, node):
        try:
            cell, statements = _in_history(node)
            if statements:
                node.body = [new for k, s in enumerate(node.body) for new in _with_snapshot(cell, k, s, statements[k])]
        except Exception:  # the cell runs as the student wrote it, without snapshots
            pass
        return node


def _in_history(module) -> tuple:
    """(index, statements) of the newest cell of the input history, as the probes parse it, if ``module`` was parsed
    from it; else (None, ()): a magic's inner code, a cell run without history."""
    shell = get_ipython()
    history = shell.history_manager.input_hist_parsed if shell is not None else []
    if not isinstance(module, ast.Module) or len(history) < 2:
        return None, ()
    statements = parsed(history[-1])
    layout = lambda body: [(type(s), s.lineno, s.col_offset, s.end_lineno, s.end_col_offset) for s in body]
    return (len(history) - 1, statements) if layout(statements) == layout(module.body) else (None, ())


def _with_snapshot(cell: int, index: int, statement: ast.stmt, as_parsed: ast.stmt) -> list:
    """``statement``, after the call that takes its snapshot if it needs one (judged on the probes' own parse of it,
    whose analysis they reuse)."""
    names = evaluated_names(as_parsed)
    if not (names and writes(as_parsed)):
        return [statement]  # it cannot be in a probe's code, or it reads nothing
    call = ast.Call(
        ast.Name(SNAPSHOT_HOOK, ast.Load()),
        [ast.Constant(cell), ast.Constant(index), ast.Constant(tuple(sorted(names)))],
        [],
    )
    handler = ast.ExceptHandler(ast.Name("Exception", ast.Load()), None, [ast.Pass()])
    guard = ast.Try([ast.Expr(call)], [handler], [], [])
    return [ast.fix_missing_locations(ast.copy_location(guard, statement)), statement]


@contextlib.contextmanager
def _apart_from_the_kernel():
    """No output, no warning, no autograd graph, the random generators as they were, and at most TIME_LIMIT s."""
    states = torch.get_rng_state(), random.getstate()
    timed = threading.current_thread() is threading.main_thread()
    if timed:

        def stop(signum, frame):
            raise ProbeTimeLimit(f"it ran over {TIME_LIMIT:g} s")

        before = signal.signal(signal.SIGALRM, stop)
        remaining, _ = signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
    try:
        with capture_output(), warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            yield
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, remaining)  # 0 when no timer ran: it stays off
            signal.signal(signal.SIGALRM, before)
        torch.set_rng_state(states[0])
        random.setstate(states[1])


def _send(payload: dict) -> None:
    display({wire.MIME: payload, "text/plain": "(answer reported to the grader)"}, raw=True)


# Exercise 4: the student's backward pass is a function, and the notebook trains with it.

BACKWARD_CHAIN = ("dlogits", "dh", "dhpreact", "dhprebn", "dembcat", "demb")  # backward_pass's locals, reported
_backward_calls = {}  # backward_pass -> what it gave on the check batch (it runs once per definition)


def graded_steps(default):
    """The length of the training run: the student's own, or at autograde a short fixed one on one thread."""
    if not grading():
        return default
    from .engine.training.network import GRADED_STEPS

    torch.set_num_threads(1)
    return GRADED_STEPS


class ExtraTrainingStopped(RuntimeError):
    pass


def limit_forward(namespace: dict, calls: int) -> None:
    """At autograde: ``forward`` may run ``calls`` more times, then refuses.

    The graded training run gets its own allowance; a training loop of the student's own
    (a leftover ``for i in range(200000)`` cell) is stopped early instead of eating the
    grading time.
    """
    if not grading() or not callable(namespace.get("forward")):
        return
    original = getattr(namespace["forward"], "__wrapped__", namespace["forward"])
    left = [calls]

    def forward(*args, **kwargs):
        if left[0] <= 0:
            raise ExtraTrainingStopped(
                "while grading, only the graded training run may train: this extra training "
                "was stopped (it does not cost points)"
            )
        left[0] -= 1
        return original(*args, **kwargs)

    forward.__wrapped__ = original
    namespace["forward"] = forward


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


def _backward_on_check_batch(namespace: dict) -> dict:
    """backward_pass(Xb, Yb, cache) on copies of the setup's check batch, at the initial parameters.

    The parameters are put back as they were afterwards. The payload holds d<parameter> by
    position in the returned list, the intermediate gradients of BACKWARD_CHAIN found among
    its local variables, and how the call went ("backward_pass").
    """
    from .engine.training.network import PARAMETER_NAMES

    function = namespace.get("backward_pass")
    if not callable(function):
        return {"backward_pass": {"kind": "missing"}}
    if function in _backward_calls:
        return _backward_calls[function]
    parameters, initial = namespace["parameters"], namespace["initial_parameters"]
    Xb, Yb, cache = namespace["check_batch"]
    with torch.no_grad():
        now = [p.detach().clone() for p in parameters]
        for p, p0 in zip(parameters, initial):
            p.copy_(p0)
        result, variables = call_capturing(function, Xb.clone(), Yb.clone(), {k: v.clone() for k, v in cache.items()})
        for p, p1 in zip(parameters, now):
            p.copy_(p1)
    if isinstance(result, Exception):
        status = {"kind": "raised", "type": type(result).__name__, "message": str(result)[:300]}
    else:
        status = {
            "kind": "returned",
            "type": type(result).__name__,
            "length": len(result) if isinstance(result, (list, tuple)) else None,
        }
    payload = {"backward_pass": status}
    values = list(result) if isinstance(result, (list, tuple)) else []
    for i, name in enumerate(PARAMETER_NAMES):
        payload["d" + name] = wire.encode(values[i] if i < len(values) else None, i < len(values))
    for name in BACKWARD_CHAIN:
        payload[name] = wire.encode(variables.get(name), name in variables)
    _backward_calls[function] = payload
    return payload


def report_backward(namespace: dict) -> None:
    """Exercise 4: report what the student's backward_pass returns for the check batch (every graded gradient)."""
    if not grading():
        print("This cell is graded by the autograder.")
        return
    _send(_backward_on_check_batch(namespace))


def _replay_training_step(namespace: dict) -> dict:
    """training_step for the graded run's steps again, from the initial parameters, with the course's own
    gradients in place of the student's backward_pass: the run that judges training_step alone.

    The payload holds the losses ("replay_losses"), how it ended ("replay") and the parameters it reached
    ("replay_<name>"). The notebook's parameters, backward_pass and forward are put back as they were.
    """
    from .engine.training.network import GRADED_STEPS, PARAMETER_NAMES, manual_backward, minibatches

    step = namespace.get("training_step")
    if not callable(step):
        return {"replay": {"kind": "missing"}}
    parameters, X, Y = namespace["parameters"], namespace["Xtr"], namespace["Ytr"]
    saved = {name: namespace[name] for name in ("backward_pass", "forward") if name in namespace}
    namespace["backward_pass"] = lambda Xb, Yb, cache: manual_backward(parameters, Xb, Yb, cache)
    forward = namespace.get("forward")
    namespace["forward"] = getattr(forward, "__wrapped__", forward)  # not counted by limit_forward
    losses, status = [], {"kind": "returned"}
    with torch.no_grad():
        trained = [p.detach().clone() for p in parameters]
        for p, p0 in zip(parameters, namespace["initial_parameters"]):
            p.copy_(p0)
        try:
            for ix, lr in minibatches(X, namespace["SEED"], GRADED_STEPS, namespace["batch_size"]):
                losses.append(float(step(X[ix], Y[ix], lr)))
        except Exception as error:  # the grader says which error it was, and at which step
            status = {"kind": "raised", "type": type(error).__name__, "message": str(error)[:300]}
        payload = {f"replay_{name}": wire.encode(p) for name, p in zip(PARAMETER_NAMES, parameters)}
        for p, p1 in zip(parameters, trained):
            p.copy_(p1)
    namespace.pop("backward_pass")
    namespace.update(saved)
    return {**payload, "replay": status, "replay_losses": wire.encode(torch.tensor(losses, dtype=torch.float64))}


def report_training(namespace: dict) -> None:
    """Exercise 4: the loss of every step of the notebook's training run and the parameters it reached, the
    same for training_step driven by the right gradients, and the gradients on the check batch."""
    from .engine.training.network import PARAMETER_NAMES

    if not grading():
        print("This cell is graded by the autograder.")
        return
    losses = namespace.get("lossi")
    try:
        losses = wire.encode(torch.tensor([float(x) for x in losses], dtype=torch.float64))
    except (TypeError, ValueError, RuntimeError):
        losses = wire.encode(losses, "lossi" in namespace)
    payload = {"losses": losses}
    for name, p in zip(PARAMETER_NAMES, namespace.get("parameters") or []):
        payload[name] = wire.encode(p)
    _send({**_backward_on_check_batch(namespace), **payload, **_replay_training_step(namespace)})

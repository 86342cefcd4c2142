"""A rule probe (see ``engine.probes``): the student's code for one answer, run again on random inputs, apart from
the kernel (no output, no graph, the random generators put back, a time limit)."""

import ast
import contextlib
import dataclasses
import io
import os
import random
import signal
import sys
import threading
import warnings

import torch
from IPython import get_ipython

from ..data import SEED_VARIABLE
from ..engine import wire
from ..engine.fast_forwards import FAST_FORWARD_BY_NAME
from ..engine.probes.rerun import (
    GRADIENTS,
    TIME_LIMIT,
    NoAnswerCode,
    _reads,
    _rebinds,
    answer_code,
    parsed,
    pinned_inputs,
    probe_namespace,
    put_back,
    replay,
    writes,
)
from .rebound import as_written, rebound_forward
from .snapshot_hook import finished, forward_shapes, forward_values, since, snapshots, watched


class ProbeTimeLimit(BaseException):
    """Not an Exception: the student's own `except Exception:` (in a `try` a probe re-runs) does not pass it over."""


STUDENT_ERRORS = (Exception, SystemExit, ProbeTimeLimit)  # what the student's code run apart may end with


def run_probe(namespace: dict, answer: str, names: tuple) -> dict:
    """What the student's code for ``answer`` computes with ``names`` pinned to random tensors of their shapes."""
    shell = get_ipython()
    cells = list(shell.history_manager.input_hist_parsed[:-1]) if shell is not None else []  # [:-1]: this cell
    found = {"answer": answer, "pins": {}, "status": "could_not_run"}
    seed = int(os.environ[SEED_VARIABLE])
    try:
        shapes = _shapes(namespace, names)
        pins = pinned_inputs(namespace, seed, answer, names, shapes)
        found["pins"] = {name: {"zero": not pin.any(), "shape": list(pin.shape)} for name, pin in pins.items()}
        for name, pin in pins.items():  # exact zeros of the student's own gradient, entry by entry (probes.pins)
            if pin.any() and not pin.all():
                found["pins"][name]["kept"] = wire.encode(pin != 0)
        first = since[0] if since else 0
        code = answer_code(cells, answer, names, first)  # the course's cells before it stay as they ran
        plan = replay(code, snapshots, pins, cells)
    except NoAnswerCode as error:
        found["reason"] = str(error)
        return found
    found.update(pins_read=sorted(code.pins_read), further_up=list(code.further_up))
    found["reads"] = sorted(n for n in code.reads if any(isinstance(p.get(n), torch.Tensor) for p in plan))
    with contextlib.suppress(Exception):  # (whatever the namespace holds, the probe itself still runs)
        rebound = rebound_forward(code, plan, cells, first)
        if rebound:
            found["as_set_up"] = _as_set_up(code, plan, namespace, pins, answer, rebound, cells)
    apart, error, failed = _rerun(code, plan, namespace, pins)
    right = pinned_inputs(namespace, seed, answer, names, shapes, own_shapes=False) if error is not None else pins
    if any(right[name].shape != pin.shape for name, pin in pins.items()):
        # pinned in the shape of the student's own gradient (a dropped keepdim), it may be what broke the code
        # written for the right shape: run it again on the right shapes (the same values)
        apart, error, failed = _rerun(code, plan, namespace, right)
        found["pins"] = {name: {**found["pins"][name], "shape": list(pin.shape)} for name, pin in right.items()}
        pins = right
    raised = error is not None and _raised_in_the_kernel(code.origins[failed])
    block = raised and _a_block(code.statements[failed])
    shorter = _before(code, plan, failed, keep=block) if raised else None
    if shorter is not None and any(answer in writes(s) for s in shorter[0].statements):
        # it raised with every input right too, as in the kernel (a typo of the answer's own: `.indeces`): the
        # answer is what the code before it computed, there as here; a block (a loop that raised at its last turn)
        # stays, its raise passed over: what it changed before it raised is the answer's, there as here
        if not block:
            line = ast.unparse(code.statements[failed]).split("\n")[0]
            found["left_out"] = {"line": line[:120], "error": f"{type(error).__name__}: {error}"[:200]}
        passed_over = shorter[0].origins.index(code.origins[failed]) if block else -1
        code, plan = shorter
        apart, error, _ = _rerun(code, plan, namespace, pins, passed_over)
    if error is not None:  # the student's code, on other inputs: say what went wrong
        found["reason"] = f"{type(error).__name__}: {error}"[:300]
        return found
    found["status"] = "ran"
    found["result"] = wire.encode(apart.get(answer), answer in apart)
    return found


def _as_set_up(code, plan: list, namespace: dict, pins: dict, answer: str, rebound: dict, cells: list) -> dict:
    """What the answer's code gives on the pins with the ``rebound`` forward tensors as grading started (the statements
    of its code that rebound them left out), and where each was rebound: its line, and the gradients its cell assigns
    (the answer cell it is a temporary of)."""
    start = {name: forward_values[name][0] for name in rebound}
    kept, needed = [], {answer}  # without those statements, only the ones that still make the answer
    for k in reversed(range(len(code.statements))):
        statement = code.statements[k]
        if code.origins[k] not in rebound.values() and writes(statement) & needed:
            kept.insert(0, k)
            needed = (needed - _rebinds(statement)) | _reads(statement)
    read = {name for k in kept for name in _reads(code.statements[k])}
    code = dataclasses.replace(
        code, statements=tuple(code.statements[k] for k in kept), origins=tuple(code.origins[k] for k in kept)
    )
    plan = [{**plan[k], **{name: start[name] for name in plan[k] if name in start}} for k in kept]
    where = {}
    for name, (cell, index) in rebound.items():
        statements = parsed(cells[cell])
        answers = sorted({n for s in statements for n in writes(s)} & (GRADIENTS | set(FAST_FORWARD_BY_NAME)))
        where[name] = {"line": as_written(cells[cell], index)[:120], "answers": answers[:5]}
    inputs = {**pins, **{name: tensor.detach().clone() for name, tensor in start.items()}}
    apart, error, _ = _rerun(code, plan, namespace, inputs)
    if error is not None:
        return {"rebound": where, "status": "could_not_run", "reason": f"{type(error).__name__}: {error}"[:300]}
    found = {"rebound": where, "status": "ran", "result": wire.encode(apart.get(answer), answer in apart)}
    return {**found, "pins_read": sorted(read & code.pins_read), "further_up": sorted(read & set(code.further_up))}


def _shapes(namespace: dict, names) -> dict:
    """The shapes ``pinned_inputs`` reads for ``names`` (d<x>: x's): the tensor's when grading started
    (``forward_shapes``), else the namespace's now (the namespace's tensors are not all looked at: it holds hundreds of
    names)."""
    shapes = {}
    for key in (name[1:] if name in GRADIENTS else name for name in names):
        if key in forward_shapes:
            shapes[key] = forward_shapes[key]
        elif isinstance(namespace.get(key), torch.Tensor):
            shapes[key] = namespace[key].shape
    return shapes


def _a_block(statement: ast.stmt) -> bool:
    """Whether ``statement`` holds statements of its own, which may have changed the answer before one raised."""
    return hasattr(statement, "body") or hasattr(statement, "cases")


def _raised_in_the_kernel(origin: tuple) -> bool:
    """Whether the statement at ``origin`` started in the kernel (it took its snapshot) and did not run to its end."""
    return origin in snapshots and origin in watched and origin not in finished


def _before(code, plan: list, failed: int, keep: bool = False) -> tuple:
    """``code`` and its ``plan`` without the statement ``failed`` (with ``keep``: with it) and those of its cell that it
    kept from running."""
    cell, index = code.origins[failed]
    kept = [
        k
        for k, origin in enumerate(code.origins)
        if k < failed
        or (keep and k == failed)
        or not (origin[0] == cell and (origin[1] == index or origin not in snapshots))
    ]
    statements, origins = (tuple(items[k] for k in kept) for items in (code.statements, code.origins))
    return dataclasses.replace(code, statements=statements, origins=origins), [plan[k] for k in kept]


def _rerun(code, plan: list, namespace: dict, pins: dict, passed_over: int = -1) -> tuple:
    """(the probe's namespace after the answer's code ran in it on ``pins``, None or what it raised, the position in
    ``code`` of the statement that raised); what the statement at ``passed_over`` raises ends it, as it ended its cell
    in the kernel."""
    apart, position = probe_namespace(namespace, pins), 0
    try:
        with apart_from_the_kernel():
            for position, (statement, values) in enumerate(zip(code.statements, plan)):
                put_back(apart, values)
                module = ast.Module(body=[statement], type_ignores=[])
                try:
                    exec(compile(module, "<your code, run again by the grader>", "exec"), apart)
                except Exception:
                    if position != passed_over:
                        raise
    except STUDENT_ERRORS as error:
        return apart, error, position
    return apart, None, position


@contextlib.contextmanager
def apart_from_the_kernel():
    """No output, no warning, no autograd graph, the random generators as they were, and at most TIME_LIMIT s."""
    states = torch.get_rng_state(), random.getstate()
    timed = threading.current_thread() is threading.main_thread()
    if timed:

        def stop(signum, frame):
            raise ProbeTimeLimit(f"it ran over {TIME_LIMIT:g} s")

        before = signal.signal(signal.SIGALRM, stop)
        remaining, _ = signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
    try:
        with _captured(), warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            yield
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, remaining)  # 0 when no timer ran: it stays off
            signal.signal(signal.SIGALRM, before)
        torch.set_rng_state(states[0])
        random.setstate(states[1])


_publishers = []  # the kernel's capturing display publisher, made at its first probe


@contextlib.contextmanager
def _captured():
    """IPython's ``capture_output``: stdout, stderr, displays and the display hook kept apart and dropped, with one
    capturing display publisher for all of the kernel's probes (making one, a traitlets object, was a third of the CPU
    of a probe's run of the student's code: 0.19 ms of 0.65)."""
    from IPython.core.displayhook import CapturingDisplayHook
    from IPython.core.displaypub import CapturingDisplayPublisher

    shell = get_ipython()
    out, err, hook = sys.stdout, sys.stderr, sys.displayhook
    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    if shell is not None:
        if not _publishers:
            _publishers.append(CapturingDisplayPublisher())
        publisher = _publishers[0]
        publisher.outputs.clear()
        shown, shell.display_pub = shell.display_pub, publisher
        sys.displayhook = CapturingDisplayHook(shell=shell, outputs=publisher.outputs)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
        if shell is not None:
            shell.display_pub, sys.displayhook = shown, hook
            publisher.outputs.clear()

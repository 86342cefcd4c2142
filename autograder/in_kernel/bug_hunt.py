"""Exercise 6 in the kernel: the grading point kept before the student's code runs, the student's backward_pass called
on it, the gradients they name as buggy, and their numerical_gradient run on the grader's functions."""

import torch

from ..engine import wire
from ..engine.backward_rules import STEP_BY_NAME
from ..engine.bug_hunt.catalogue import FUNCTION, GRADIENTS, ID, NAMED, TENSORS, planted, section
from ..engine.bug_hunt.checker import FUNCTION as CHECKER
from ..engine.bug_hunt.checker import cases, run_case
from ..engine.bug_hunt.rerun import RERUN, SHARED, changed_after_their_lines
from .bug_hunt_rerun import not_finite, parsed_body, run_again
from .probe_runner import STUDENT_ERRORS, apart_from_the_kernel
from .reports import send
from .switches import AutogradIsOff, grading, grading_seed

_point = {}  # the forward pass's tensors as the setup made them for the grading seed (keep_grading_point)
_calls = {}  # id(backward_pass) -> (it, how the call went, the gradients it returned at the grading point)
_left_alone = {}  # id(backward_pass) -> gradients returned as a later one's tensor that no later line changed


def keep_grading_point(namespace: dict) -> None:
    """At autograde, right after the setup: a copy of the tensors backward_pass is graded on, which later cells of the
    student's (trying another initialisation, say) cannot change."""
    if not grading():
        return
    _point.clear()
    _point.update({name: namespace[name].detach().clone() for name in TENSORS})
    _point.update(n=namespace["n"], Xb=namespace["Xb"].clone(), Yb=namespace["Yb"].clone())


def _raised(error: BaseException) -> dict:
    return {"kind": "raised", "type": type(error).__name__, "message": str(error)[:300]}


def _call(namespace: dict) -> tuple:
    """(the call's status, the gradients) of the student's backward_pass at the grading point, once per definition."""
    function = namespace.get(FUNCTION)
    if not callable(function):
        return {"kind": "missing"}, {}
    if id(function) not in _calls:
        point = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in _point.items()}
        try:
            with apart_from_the_kernel():
                result = function(point)
            ok = isinstance(result, dict)
            status = {"kind": "returned"} if ok else {"kind": "other", "type": type(result).__name__}
            _calls[id(function)] = function, status, result if ok else {}
            _left_alone[id(function)] = _not_changed_later(function, result) if ok else set()
            if ok and any(not_finite(result.get(g)) for g in GRADIENTS):  # NaN from one line: that line's fix only
                again = _again(function)
                if again is not None and again[1]["pinned"]:
                    _calls[id(function)] = function, {"kind": "returned", RERUN: again[1]}, again[0]
        except STUDENT_ERRORS as error:  # the student's code: the grader says which error it was
            _calls[id(function)] = function, _raised(error), {}
            if isinstance(error, AutogradIsOff):  # autograd refused: every gradient is autograd's (the grader says)
                return _calls[id(function)][1:]
            again = _again(function)
            if again is not None:  # one line that raised costs the fix whose part holds it, no other
                _calls[id(function)] = function, {"kind": "returned", RERUN: again[1]}, again[0]
    return _calls[id(function)][1:]


def _again(function):
    """``run_again``'s (gradients, entry) of the student's backward_pass at a copy of the grading point, or None."""
    point = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in _point.items()}
    try:
        with apart_from_the_kernel():
            return run_again(function, point, grading_seed(0))
    except STUDENT_ERRORS:
        return None


def _not_changed_later(function, gradients: dict) -> set:
    """The gradients the pass returned as the very tensor of a later one (``dhprebn = dbndiff``) whose entries no
    later line changed (its `dhprebn += ...` deleted): those hold what the lines that read them read."""
    shared = shared_later(gradients, GRADIENTS)
    parsed = parsed_body(function) if shared else None
    if parsed is None:
        return set()
    point = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in _point.items()}
    try:
        with apart_from_the_kernel():
            changed = changed_after_their_lines(parsed[0], parsed[1], function.__globals__, point, shared)
    except STUDENT_ERRORS:
        changed = None
    return set() if changed is None else set(shared) - changed


def _same_memory(a, b) -> bool:
    """Whether two tensors are one set of entries (``dhprebn = dbndiff``, .float() of a float32 one, [:], .view_as)."""
    try:
        return (
            a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
            and a.storage_offset() == b.storage_offset()
            and a.shape == b.shape
            and a.stride() == b.stride()
        )
    except Exception:  # a tensor of the student's own kind: then no memory in common
        return False


def shared_later(gradients: dict, names) -> dict:
    """name -> the gradients computed after it that the pass returned as its very tensor, for each of ``names``: its
    entries are theirs, so a later line that changes them in place changed it too."""
    tensors = {g: gradients[g] for g in GRADIENTS if isinstance(gradients.get(g), torch.Tensor)}
    order = list(tensors)
    shared = {}
    for name in names:
        if name in tensors:
            later = [g for g in order[order.index(name) + 1 :] if _same_memory(tensors[name], tensors[g])]
            if later:
                shared[name] = later
    return shared


def _with_id(namespace: dict) -> dict:
    return {ID: wire.encode_text(namespace.get(ID), ID in namespace)}


def report_fix(namespace: dict, slot: int) -> None:
    """The gradients of the student's ``slot``-th fix's part of the pass (its bug's among them), and those they are
    computed from, from their backward_pass."""
    if not grading():
        print("This cell is graded by the autograder.")
        return
    payload, bugs = _with_id(namespace), planted(namespace.get(ID))
    if len(bugs) >= slot:
        status, gradients = _call(namespace)
        part = section([bug.gradient for bug in bugs], slot, GRADIENTS)  # the bug's gradient among them
        names = list(dict.fromkeys(d for g in part for d in [g, *("d" + u for u in STEP_BY_NAME[g[1:]].upstream)]))
        alone = _left_alone.get(id(namespace.get(FUNCTION)), set())
        shared = {name: later for name, later in shared_later(gradients, names).items() if name not in alone}
        payload[FUNCTION] = {**status, SHARED: shared}
        for name in names:
            payload[name] = wire.encode(gradients.get(name), name in gradients)
    send(payload)


def report_found(namespace: dict) -> None:
    """The gradients the student names as buggy."""
    if not grading():
        print("This cell is graded by the autograder.")
        return
    send({**_with_id(namespace), NAMED: wire.encode_text(namespace.get(NAMED), NAMED in namespace)})


def report_checker(namespace: dict) -> None:
    """What the student's numerical_gradient gives for each of the grader's functions (apart, with a time limit)."""
    if not grading():
        print("This cell is graded by the autograder.")
        return
    function = namespace.get(CHECKER)
    payload = {CHECKER: {"kind": "function" if callable(function) else "missing"}}
    for case in cases(grading_seed(0)) if callable(function) else ():
        try:
            with apart_from_the_kernel():
                payload[case.name] = wire.encode(run_case(function, case))
        except STUDENT_ERRORS as error:  # the student's code: the grader says which error it was
            payload[case.name] = _raised(error)
    send(payload)

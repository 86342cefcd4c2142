"""Exercise 4 in the kernel: the student's backward pass is a function and the notebook trains with it. A short fixed
run, extra training stopped, and backward_pass and training_step each called on the grader's own inputs."""

import torch

from ..engine import wire
from ..engine.honesty.grader_formulas import for_the_replay, hand_out, handed_out, refuse
from .capture import call_capturing, lines_again, same_tensor_as
from .other_inputs import on_other_inputs
from .reports import send
from .switches import AutogradIsOff, grading

BACKWARD_CHAIN = ("dlogits", "dh", "dhpreact", "dhprebn", "dembcat", "demb")  # backward_pass's locals, reported
# backward_pass judged once the right gradients were out (the replay ran): autograd's, as the grader takes it
HANDED_OUT = {"kind": "raised", "type": "AutogradIsOff", "message": "judged after the right gradients were handed out"}


def graded_steps(default):
    """The length of the training run: the student's own, or at autograde a short fixed one on one thread."""
    if not grading():
        return default
    from ..engine.training.network import GRADED_STEPS

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


def _judged_once():
    """(the check batch's payload of the notebook's backward_pass, worked out once per definition; the hand-out of
    the right gradients to the replay; whether they were handed out), their state out of the namespace's reach.

    The replay hands the student's training_step the course's own gradients, for whatever batch and cache it asks.
    It ran before the check batch's judgment (called by its module's name, which the static reading does not see,
    with a namespace of the student's making) or within it: a backward_pass that returned what the replay gave
    earned Exercise 4's 14 points with no gradient written (until 2026-12-07). So the right gradients are handed out
    once, and no backward_pass is judged after that, nor while it happened: such a judgment is autograd's."""
    judging, judged = [], {}

    def judged_once(namespace: dict) -> dict:
        function = namespace.get("backward_pass")
        if not callable(function):
            return {"backward_pass": {"kind": "missing"}}
        if id(function) in judged:
            return judged[id(function)][1]
        if handed_out():
            return {"backward_pass": HANDED_OUT}
        judging.append(function)
        try:
            payload = _backward_on_check_batch(namespace, function)
        finally:
            judging.pop()
        payload = {"backward_pass": HANDED_OUT} if handed_out() else payload
        judged[id(function)] = (function, payload)  # (the function kept: its id is no other's)
        return payload

    def hand_out_once() -> None:
        refused = handed_out() or bool(judging)
        hand_out()
        if refused:
            refuse()  # (the switch's own words: autograd is switched off while grading)

    return judged_once, hand_out_once


def _backward_on_check_batch(namespace: dict, function) -> dict:
    """backward_pass(Xb, Yb, cache) on copies of the setup's check batch, at the initial parameters, twice.

    The parameters are put back as they were afterwards. The payload holds d<parameter> by
    position in the returned list, the intermediate gradients of BACKWARD_CHAIN found among
    its local variables, and how the call went ("backward_pass"), all of the first call; and
    how far each d<parameter> of a second call on new copies of the same batch lies from the
    first's ("again"): a backward_pass that keeps a tensor from call to call (a dC made once
    outside it and added into) is right on its first call only.
    """
    from ..engine.training.network import PARAMETER_NAMES

    parameters, initial = namespace["parameters"], namespace["initial_parameters"]
    Xb, Yb, cache = namespace["check_batch"]

    def inputs():
        return Xb.clone(), Yb.clone(), {k: v.clone() for k, v in cache.items()}

    with torch.no_grad():
        now = [p.detach().clone() for p in parameters]
        for p, p0 in zip(parameters, initial):
            p.copy_(p0)
        result, ended = call_capturing(function, *inputs())
        shared, (result, variables) = same_tensor_as(ended, BACKWARD_CHAIN), _kept(result, ended)
        # raised: its lines run again one by one, each gradient that the raising line did not feed judged on its own
        raised = isinstance(result, Exception) and not isinstance(result, AutogradIsOff)
        lines = lines_again(function, *inputs()) if raised else None
        again = None if isinstance(result, Exception) else call_capturing(function, *inputs())[0]
        again = (lines_again(function, *inputs()) or [None])[0] if lines else again
        values = lines[0] if lines else list(result) if isinstance(result, (list, tuple)) else []
        # (before the call on another batch, which may change in place what the second call returned)
        again = _differences(values[: len(PARAMETER_NAMES)], again)
        other = {} if isinstance(result, Exception) and not lines else on_other_inputs(namespace, function)
        for p, p1 in zip(parameters, now):
            p.copy_(p1)
    if isinstance(result, Exception):
        status = {"kind": "raised", "type": type(result).__name__, "message": str(result)[:300]}
        if lines:  # (the gradients computed without the raising line's values: judged as any)
            computed = [n for n, v in zip(PARAMETER_NAMES, values) if isinstance(v, torch.Tensor)]
            status.update(line=lines[1]["line"], computed=computed)
    else:
        status = {
            "kind": "returned",
            "type": type(result).__name__,
            "length": len(result) if isinstance(result, (list, tuple)) else None,
        }
    payload = {"backward_pass": {**status, "shared": shared}}
    for i, name in enumerate(PARAMETER_NAMES):
        payload["d" + name] = wire.encode(values[i] if i < len(values) else None, i < len(values))
    for name in BACKWARD_CHAIN:
        payload[name] = wire.encode(variables.get(name), name in variables)
    payload["again"] = wire.encode(again)
    payload.update(other)
    return payload


_judged, _hand_out = _judged_once()


def _kept(result, variables: dict):
    """The first call's gradients and intermediates as they are now, before a second call can change them in place."""

    def kept(value):
        return value.detach().clone() if isinstance(value, torch.Tensor) else value

    if isinstance(result, (list, tuple)):
        result = (tuple if isinstance(result, tuple) else list)(kept(v) for v in result)
    return result, {name: kept(variables[name]) for name in BACKWARD_CHAIN if name in variables}


def _differences(first: list, again) -> torch.Tensor:
    """max |second - first| of each gradient of the first call: infinite where the second call gave no tensor of
    the same shape (it raised, or returned something else)."""
    second = list(again) if isinstance(again, (list, tuple)) else []
    found = []
    for i, a in enumerate(first):
        b = second[i] if i < len(second) else None
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or a.shape != b.shape:
            found.append(float("inf"))
            continue
        try:
            found.append((b.detach().double() - a.detach().double()).abs().max().item() if a.numel() else 0.0)
        except (RuntimeError, TypeError):  # not numbers (a tensor of another kind)
            found.append(float("inf"))
    return torch.tensor(found, dtype=torch.float64)


def report_backward(namespace: dict) -> None:
    """Exercise 4: report what the student's backward_pass returns for the check batch (every graded gradient)."""
    if not grading():
        print("This cell is graded by the autograder.")
        return
    send(_judged(namespace))


def _replay_training_step(namespace: dict) -> dict:
    """training_step for the graded run's steps again, from the initial parameters, with the course's own
    gradients in place of the student's backward_pass: the run that judges training_step alone.

    The payload holds the losses ("replay_losses"), how it ended, how often training_step asked for the gradients and
    the first step after which ``parameters`` held other tensors than before, if it did ("replay", "rebound_at": new
    tensors put into the list leave the notebook's C, W1, ... behind), the parameters after the first step
    ("first_<name>") and the parameters it reached ("replay_<name>").
    The notebook's parameters (the list and its tensors), backward_pass and forward are put back as they were.
    """
    from ..engine.training.network import GRADED_STEPS, PARAMETER_NAMES, manual_backward, minibatches

    step = namespace.get("training_step")
    if not callable(step):
        return {"replay": {"kind": "missing"}}
    _hand_out()
    parameters, X, Y = namespace["parameters"], namespace["Xtr"], namespace["Ytr"]
    saved = {name: namespace[name] for name in ("backward_pass", "forward") if name in namespace}
    calls = []

    def right_gradients(Xb, Yb, cache):
        calls.append(1)
        with for_the_replay():  # (the grader's formulas refuse in the kernel but for this call)
            return manual_backward(parameters, Xb, Yb, cache)

    namespace["backward_pass"] = right_gradients
    forward = namespace.get("forward")
    namespace["forward"] = getattr(forward, "__wrapped__", forward)  # not counted by limit_forward
    losses, status, rebound, first = [], {"kind": "returned"}, None, []
    tensors = list(parameters)  # the objects themselves: training_step must change them, not replace them

    def replaced():
        now = namespace.get("parameters")
        return now is not parameters or len(now) != len(tensors) or any(a is not b for a, b in zip(now, tensors))

    with torch.no_grad():
        trained = [p.detach().clone() for p in parameters]
        for p, p0 in zip(parameters, namespace["initial_parameters"]):
            p.copy_(p0)
        try:
            for ix, lr in minibatches(X, namespace["SEED"], GRADED_STEPS, namespace["batch_size"]):
                losses.append(float(step(X[ix], Y[ix], lr)))
                rebound = rebound or (len(losses) if replaced() else None)
                if len(losses) == 1:  # where the first update took each parameter: which one went astray
                    now = namespace.get("parameters")
                    first = [p.detach().clone() for p in now] if isinstance(now, list) else []
                    first = first if all(isinstance(p, torch.Tensor) for p in first) else []
        except Exception as error:  # the grader says which error it was, and at which step
            status = {"kind": "raised", "type": type(error).__name__, "message": str(error)[:300]}
        reached = namespace.get("parameters") if isinstance(namespace.get("parameters"), list) else parameters
        payload = {f"replay_{name}": wire.encode(p) for name, p in zip(PARAMETER_NAMES, reached)}
        payload.update({f"first_{name}": wire.encode(p) for name, p in zip(PARAMETER_NAMES, first)})
        namespace["parameters"], parameters[:] = parameters, tensors
        for p, p1 in zip(parameters, trained):
            p.copy_(p1)
    namespace.pop("backward_pass")
    namespace.update(saved)
    status["backward_calls"], status["rebound_at"] = len(calls), rebound
    return {**payload, "replay": status, "replay_losses": wire.encode(torch.tensor(losses, dtype=torch.float64))}


def report_training(namespace: dict) -> None:
    """Exercise 4: the loss of every step of the notebook's training run and the parameters it reached, the
    same for training_step driven by the right gradients, and the gradients on the check batch."""
    from ..engine.training.network import PARAMETER_NAMES

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
    before = handed_out()  # (by the student's code: the replay below is the kernel's)
    payload = {**_judged(namespace), **payload}
    if before:
        payload.update(backward_pass=HANDED_OUT, replay={**HANDED_OUT, "backward_calls": 0, "rebound_at": None})
    send({**payload, **({} if before else _replay_training_step(namespace))})

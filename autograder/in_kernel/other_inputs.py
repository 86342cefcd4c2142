"""Exercise 4 in the kernel: backward_pass called on other inputs than the check batch, each a way a gradient right
there can still be wrong (``training._backward_on_check_batch`` calls them, the parameters reset to their start)."""

import contextlib
import io

import torch

from ..engine import wire
from .capture import call_capturing, raised_at


def on_other_inputs(namespace: dict, function) -> dict:
    """What backward_pass gives on a batch of another size and on the graded run's first batches (at the parameters
    as they are), then on the check batch with neuron 0 thinned (the parameters are changed in place: the caller puts
    them back)."""
    return {**_on_another_batch(namespace, function), **_with_a_thin_neuron(namespace, function)}


def _with_a_thin_neuron(namespace: dict, function) -> dict:
    """backward_pass on the check batch, neuron 0 given a batch variance of BatchNorm's epsilon there
    (``network.thin_neuron``): "thin_d<name>" of the gradients that show it (``THIN_NEURON_SHOWS``), by position in the
    list it returned (nothing when it raised: the check batch's call says why)."""
    from ..engine.training.network import PARAMETER_NAMES, THIN_NEURON_SHOWS, forward, thin_neuron

    Xb, Yb, _ = namespace["check_batch"]
    try:
        thin_neuron(namespace["parameters"], Xb)
        cache = {k: v.detach() for k, v in forward(namespace["parameters"], Xb, Yb)[1].items()}
    except Exception:  # parameters the notebook's forward pass cannot take: the check batch's verdicts say so
        return {}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # (its prints)
        result, _ = call_capturing(function, Xb.clone(), Yb.clone(), cache)
    values = list(result) if isinstance(result, (list, tuple)) else []
    return {f"thin_d{n}": wire.encode(value) for n, value in zip(PARAMETER_NAMES, values) if n in THIN_NEURON_SHOWS}


def _on_another_batch(namespace: dict, function) -> dict:
    """backward_pass on a batch of another size (``network.other_batch``), at the parameters as they are, with the
    notebook's batch_size, and n when it is the batch size, set to that size for the call (the lecture reads them).

    The payload holds d<parameter> of that call ("other_d<name>": by position in the list it returned, or, when it
    raised, its local variable d<name> as it was then) and how the call went ("other_size": when it raised, the line
    of backward_pass that raised); and how the calls on the graded run's first batches went ("some_batch")."""
    from ..engine.training.network import OTHER_BATCH_SIZE, PARAMETER_NAMES, forward, other_batch

    try:
        Xb, Yb = other_batch(namespace["Xtr"], namespace["Ytr"], namespace["SEED"])
        cache = {k: v.detach() for k, v in forward(namespace["parameters"], Xb, Yb)[1].items()}
    except Exception:  # parameters the notebook's forward pass cannot take: the check batch's verdicts say so
        return {}
    size = namespace.get("batch_size")
    saved = {k: namespace[k] for k in ("batch_size", "n") if type(namespace.get(k)) is int and namespace[k] == size}
    namespace.update(dict.fromkeys(saved, OTHER_BATCH_SIZE))
    try:
        result, variables = call_capturing(function, Xb, Yb, cache)
    finally:
        namespace.update(saved)
    if isinstance(result, Exception):
        status = {"kind": "raised", "type": type(result).__name__, "message": str(result)[:300]}
        status["line"] = raised_at(result, function)
        values = [variables.get("d" + name) for name in PARAMETER_NAMES]
    else:
        status = {"kind": "returned"}
        values = list(result) if isinstance(result, (list, tuple)) else []
    status.update(size=OTHER_BATCH_SIZE, rebound=sorted(saved))
    payload = {f"other_d{name}": wire.encode(v) for name, v in zip(PARAMETER_NAMES, values)}
    return {**payload, "other_size": status, "some_batch": _on_the_runs_batches(namespace, function)}


def _on_the_runs_batches(namespace: dict, function) -> dict:
    """backward_pass on the graded run's first TRAINING_BATCHES batches, at the parameters as they are, until one
    raises: how that call went, its step, the line that raised and the gradients d<parameter> it had computed by then
    ("computed"). A line right on some batches only (F.one_hot(Yb) without num_classes, which a batch without the
    last character shortens) raises on one of them, at the batch size of the check batch; or, when nothing raises,
    the first of them whose gradients do not all have their parameters' shapes ("shape": d<name> -> its shape there,
    F.one_hot(Xb) without num_classes in dC's product)."""
    from ..engine.training.network import PARAMETER_NAMES, TRAINING_BATCHES, forward, minibatches

    X, Y, parameters = namespace["Xtr"], namespace["Ytr"], namespace["parameters"]
    for step, (ix, _) in enumerate(minibatches(X, namespace["SEED"], TRAINING_BATCHES, namespace["batch_size"]), 1):
        try:
            cache = {k: v.detach() for k, v in forward(parameters, X[ix], Y[ix])[1].items()}
        except Exception:  # parameters the notebook's forward pass cannot take: the check batch's verdicts say so
            return {"kind": "returned"}
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # (its prints)
            result, variables = call_capturing(function, X[ix], Y[ix], cache)
        if isinstance(result, Exception):
            computed = [name for name in PARAMETER_NAMES if isinstance(variables.get("d" + name), torch.Tensor)]
            status = {"kind": "raised", "type": type(result).__name__, "message": str(result)[:300]}
            return {**status, "line": raised_at(result, function), "step": step, "computed": computed}
        values = list(result) if isinstance(result, (list, tuple)) else []
        shapes = {}
        for name, value, p in zip(PARAMETER_NAMES, values, parameters):
            try:
                if isinstance(value, torch.Tensor) and value.shape != p.shape:
                    shapes[name] = [int(k) for k in value.shape]
            except Exception:  # a tensor of its own kind whose shape cannot be read: the check batch's verdicts say so
                pass
        if shapes:  # a size read from the batch's values (F.one_hot(Xb) without num_classes) that raised nothing
            return {"kind": "shape", "step": step, "shapes": shapes}
    return {"kind": "returned"}

"""**Another batch size.** backward_pass is also called on a batch of ``network.OTHER_BATCH_SIZE`` examples, the
notebook's batch_size (and n) set to that size for the call: a gradient right on the check batch of 32 must be right
there too; then on the graded run's first ``network.TRAINING_BATCHES`` batches, where it must not raise. A size
written in as a number (n = 32, / 32, torch.ones(32, 1)), or the notebook's own batch read instead of the function's
arguments, is right at one batch size only; F.one_hot(Yb) without num_classes, on the batches that hold the last
character only (it raises on the others, and F.one_hot(Xb) returns dC in another shape there).
"""

import re

from ...common.diagnoses import NOTE, Reason
from ...common.words import say
from ..backward_rules import STEP_BY_NAME
from ..explain import constant_factor
from ..tolerance import FACTOR_MATCH, close, magnitude, max_difference, step_scale
from ..wire import Report
from . import network
from .reference_runs import CHAIN, PATHS, other_size_reference


def _advice(size: int):
    return say(
        "Read the size from the batch, n = Xb.shape[0] (the first line of backward_pass), never a number written in "
        "(n = {size}, / {size}, torch.ones({size}, 1)), and compute from the arguments Xb, Yb and cache, not from "
        "the notebook's own batch",
        size=size,
    )


def _computed_by(line: str) -> str:
    """The gradient d<name> that a line of backward_pass computes (``db2 = ...``, ``dC.index_add_(...)``), when it is
    a parameter's or an intermediate's of the chain, whose place on each parameter's way back is known; or ""."""
    match = re.match(r"(d[A-Za-z_]\w*)\b", line)
    return match.group(1) if match and match.group(1)[1:] in (*network.PARAMETER_NAMES, *CHAIN) else ""


def _raised(name: str, status: dict) -> tuple:
    """How a call of backward_pass that raised reads for d<name>: (where, error, message, line, computes), where is
    "own" (d<name>'s own line), "on its way" (a line on d<name>'s way back from the loss), "elsewhere" (a line
    d<name> does not depend on) or "" (a line that computes no gradient of the chain)."""
    error, message = str(status.get("type")), str(status.get("message", "")).rstrip(": ").removesuffix(".")
    line = str(status.get("line") or "")
    computes = _computed_by(line)
    if not computes:
        where = ""
    elif computes == "d" + name:
        where = "own"
    else:
        where = "on its way" if computes[1:] in PATHS[name] else "elsewhere"
    return where, error, message, line, computes


def _on_a_training_batch(name: str, status: dict) -> Reason:
    """Why d<name>, right on the check batch, is not right on every batch: backward_pass raised on the batch of a
    step of the graded run before it computed d<name>, in d<name>'s own line or one on its way back from the loss (a
    NOTE when the line is one it does not depend on)."""
    where, error, message, line, computes = _raised(name, status)
    step = status.get("step")
    if where == "elsewhere":
        return Reason(
            NOTE,
            say(
                "(d{name} could not be checked on the batch of step {step} of the graded training run: backward_pass "
                "raised {error} there before it computed d{name}, in a line d{name} does not depend on, `{line}`; "
                "that line's gradient loses its points, not d{name})",
                name=name,
                step=step,
                error=error,
                line=line,
            ),
        )
    if where == "own":
        words = say(
            "d{name} is right on the check batch, but backward_pass raised {error} on the batch of step {step} of "
            "the graded training run, in d{name}'s own line `{line}`: {message}. It must work on every batch",
            name=name,
            error=error,
            step=step,
            line=line,
            message=message,
        )
    elif where == "on its way":
        words = say(
            "d{name} is right on the check batch, but backward_pass raised {error} on the batch of step {step} of "
            "the graded training run, in the line of {computes}, on d{name}'s way back from the loss, `{line}`: "
            "{message}. It must work on every batch",
            name=name,
            error=error,
            step=step,
            computes=computes,
            line=line,
            message=message,
        )
    else:
        words = say(
            "d{name} is right on the check batch, but backward_pass raised {error} on the batch of step {step} of "
            "the graded training run, before it computed d{name}: {message}. It must work on every batch",
            name=name,
            error=error,
            step=step,
            message=message,
        )
    return Reason("raised_error", words)


def gradient_scale(name: str, forward: dict, grads: dict) -> float:
    """The scale d<name> is judged at on inputs other than the check batch (``forward``, autograd's ``grads``): its
    largest value, or its step's scale (``tolerance.step_scale``) when that is larger."""
    step = STEP_BY_NAME[name]
    return max(magnitude(grads[name]), step_scale(step, forward, {c: grads[c] for c in step.upstream}))


def at_another_size(name: str, report: Report, namespace: dict) -> Reason | None:
    """Why d<name>, right on the check batch, is not right on the batch of another size; None when it is (or when
    the kernel did not call backward_pass there: the check batch's call raised). A NOTE when it could not be checked
    there because a line it does not depend on raised first: that line's own gradient loses the points."""
    status, some = report.info("other_size"), report.info("some_batch")
    if status.get("kind") not in ("returned", "raised"):
        return None
    on_run = None  # raised on a batch of the graded run: a raise at 50 too is then no matter of its size, unless
    if some.get("kind") == "raised" and name not in some.get("computed", ()):  # in a line d<name> does not depend on
        on_run = _on_a_training_batch(name, some)
        if on_run.kind != NOTE:
            return on_run
    forward, grads = other_size_reference(namespace)
    shapes = some.get("shapes") if some.get("kind") == "shape" else None
    if isinstance(shapes, dict) and isinstance(shapes.get(name), list):  # returned in another shape there
        return Reason(
            "wrong_shape",
            say(
                "d{name} is right on the check batch, but on the batch of step {step} of the graded training run "
                "backward_pass returned it in shape {got}, not {want}: a size taken from the batch's values "
                "(F.one_hot without num_classes is as wide as the largest index the batch holds) changes from batch "
                "to batch. It must work on every batch",
                name=name,
                step=some.get("step"),
                got=tuple(int(k) for k in shapes[name] if isinstance(k, int))[:4],
                want=tuple(grads[name].shape),
            ),
        )
    want, got = grads[name], report.tensor("other_d" + name)
    size, other = namespace["batch_size"], network.OTHER_BATCH_SIZE
    scale = gradient_scale(name, forward, grads)
    if got is not None and got.is_floating_point() and got.shape == want.shape:
        got = got.double()
        if close(got, want.double(), scale):
            return on_run
        factor = constant_factor(got, want.double(), scale)
        if factor is not None and abs(factor - other / size) <= FACTOR_MATCH * other / size:
            wrong = say(
                "it is {other}/{size} times autograd's, as if divided by {size} where the batch has {other} examples",
                other=other,
                size=size,
            )
        else:
            wrong = say(
                "it is wrong there (largest difference {error:.3g}, largest value {scale:.3g})",
                error=max_difference(got, want),
                scale=magnitude(want),
            )
    elif got is not None and got.is_floating_point():
        wrong = say("it has shape {got} there, not {want}", got=tuple(got.shape), want=tuple(want.shape))
    elif status.get("kind") == "raised":
        where, error, message, line, computes = _raised(name, status)
        if where == "elsewhere":
            return Reason(  # another gradient's line: d<name>, right on the check batch, is not on its way
                NOTE,
                say(
                    "(d{name} could not be checked on a batch of {other} examples: backward_pass raised {error} "
                    "there before it computed d{name}, in a line d{name} does not depend on, `{line}`; that line's "
                    "gradient loses its points, not d{name})",
                    name=name,
                    other=other,
                    error=error,
                    line=line,
                ),
            )
        if where == "own":
            wrong = say(
                "backward_pass raised {error} there, in d{name}'s own line `{line}`: {message}",
                error=error,
                name=name,
                line=line,
                message=message,
            )
        elif where == "on its way":
            wrong = say(
                "backward_pass raised {error} there, in the line of {computes}, on d{name}'s way back from the loss, "
                "`{line}`: {message}",
                error=error,
                computes=computes,
                name=name,
                line=line,
                message=message,
            )
        else:
            wrong = say("backward_pass raised {error} there: {message}", error=error, message=message)
    else:
        wrong = say("backward_pass gave no d{name} there", name=name)
    return Reason(
        "one_batch_size",
        say(
            "d{name} is right on the check batch of {size} examples, but not on a batch of {other}: {wrong}. It "
            "works at one batch size only. {advice}",
            name=name,
            size=size,
            other=other,
            wrong=wrong,
            advice=_advice(size),
        ),
    )

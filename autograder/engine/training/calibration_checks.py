"""**Calibration.** ``bnmean`` and ``bnvar`` must be the statistics of ``hprebn`` over the whole
training set, for the student's own trained parameters (so a training mistake does not cost
the calibration).
"""

import math

import torch

from ...common.diagnoses import NOTE, Reason
from ...common.words import say
from ..diagnosis.shapes import only_size_one_dims_differ, shape_only_share
from ..explain import difference, not_a_tensor
from ..tolerance import close, magnitude, max_difference
from ..verdict import Verdict
from ..wire import Report
from . import network
from .reference_runs import POINTS, reference_run, validation_loss


def _statistics(parameters, X) -> dict:
    return dict(zip(("bnmean", "bnvar"), network.calibrate(parameters, X)))


TITLE = say("BatchNorm calibration")  # what the feedback calls this check

# What the student reads of each statistic: right, the statistic of other data (each saying what to do instead),
# or wrong; one sentence each, the statistic named in it.
WORDS = {
    "bnmean": {
        "right": lambda difference: say(
            "bnmean is the mean of hprebn over the training set (max difference {difference:.2g})",
            difference=difference,
        ),
        "initial": lambda: say(
            "bnmean is the mean of hprebn over the initial parameters, before training: calibrate after training"
        ),
        "validation": lambda: say(
            "bnmean is the mean of hprebn over the validation set: calibrate on the training set, Xtr"
        ),
        "test": lambda: say("bnmean is the mean of hprebn over the test set: calibrate on the training set, Xtr"),
        "minibatch": lambda: say(
            "bnmean is the mean of hprebn over one minibatch: calibrate on the whole training set, Xtr"
        ),
        "without_b1": lambda: say(
            "bnmean is the mean of C[Xtr] viewed as rows, times W1, without b1: hprebn is that plus b1, and its mean "
            "has b1 in it"
        ),
        "wrong": lambda error, scale, examples: say(
            "bnmean is not the mean of hprebn over the training set: largest difference {error:.3g} (values up to "
            "{scale:.3g}). hprebn is C[Xtr] viewed as ({examples}, 3 * n_embd), times W1, plus b1",
            error=error,
            scale=scale,
            examples=examples,
        ),
    },
    "bnvar": {
        "right": lambda difference: say(
            "bnvar is the variance of hprebn over the training set (max difference {difference:.2g})",
            difference=difference,
        ),
        "initial": lambda: say(
            "bnvar is the variance of hprebn over the initial parameters, before training: calibrate after training"
        ),
        "validation": lambda: say(
            "bnvar is the variance of hprebn over the validation set: calibrate on the training set, Xtr"
        ),
        "test": lambda: say("bnvar is the variance of hprebn over the test set: calibrate on the training set, Xtr"),
        "minibatch": lambda: say(
            "bnvar is the variance of hprebn over one minibatch: calibrate on the whole training set, Xtr"
        ),
        "wrong": lambda error, scale, examples: say(
            "bnvar is not the variance of hprebn over the training set: largest difference {error:.3g} (values up "
            "to {scale:.3g}). hprebn is C[Xtr] viewed as ({examples}, 3 * n_embd), times W1, plus b1",
            error=error,
            scale=scale,
            examples=examples,
        ),
    },
}


INVERSE_STD = say(
    "bnvar is (variance + 1e-5) ** -0.5, what forward calls bnvar_inv: it must be the variance itself, as "
    "hprebn.var(0, keepdim=True) gives it (the evaluation adds 1e-5 and takes ** -0.5 itself)"
)


def not_finite(name: str):
    """The line of a statistic that is NaN where the statistic of parameters that are not finite is (and right
    elsewhere): a calibration cannot be told right or wrong on such parameters, and keeps its point."""
    return say(
        "{name} is not a number (NaN) wherever the statistic of your trained parameters is: they are not finite "
        "themselves, so the calibration cannot be checked on them and keeps its point. Check it again once your "
        "training run stays finite",
        name=name,
    )


def not_float32(name: str, dtype: str):
    """The note under a statistic that is right but not float32."""
    return say(
        "but {name} is {dtype}: the notebook's evaluation and sampling mix it with the float32 parameters and stop "
        '("expected m1 and m2 to have the same dtype"). Make it float32 with .float()',
        name=name,
        dtype=dtype,
    )


def _problem(name: str, info: dict, answer, tainted: set) -> Reason | None:
    """Why the reported ``name`` is no statistic to judge, if it is not."""
    problem = not_a_tensor(name, info)
    if name in tainted:
        return Reason("autograd", say("{name} is computed with autograd, so it earns nothing", name=name))
    if problem and info.get("kind", "missing") in ("missing", "none"):
        return Reason(
            "not_answered",
            say(
                "not calibrated yet: {name} is not defined (did the calibration cell run without an error?)",
                name=name,
            ),
        )
    if problem is None and (answer is None or not answer.is_floating_point()):
        return Reason("not_a_float32_tensor", say("{name} must be a tensor of floats", name=name))
    return problem


def _shape_problem(name: str, got: tuple, want: tuple) -> Reason:
    if got == want[1:]:
        return Reason(
            "keepdim",
            say(
                "{name} has shape {got}, but it must be {want}, one value per neuron, like bngain: keep dimension 0 "
                "(keepdim=True)",
                name=name,
                got=got,
                want=want,
            ),
        )
    return Reason(
        "wrong_shape",
        say(
            "{name} has shape {got}, but it must be {want}, one value per neuron, like bngain",
            name=name,
            got=got,
            want=want,
        ),
    )


def judge_calibration(report: Report, namespace: dict, seed: int, tainted: set) -> Verdict:
    verdict = Verdict(TITLE, 0, POINTS["calibration"])
    parameters = [report.tensor(name) for name in ("C", "W1", "b1")]
    initial = namespace["initial_parameters"]
    if any(p is None or p.shape != p0.shape or not p.is_floating_point() for p, p0 in zip(parameters, initial)):
        verdict.lines.append(Reason("unreadable", say("the parameters C, W1, b1 could not be read")))
        return verdict
    Xtr = namespace["Xtr"]
    expected = _statistics(parameters, Xtr)
    # What the student's float32 sums add up: hprebn's values (its root mean square) and their squares.
    # (Of the finite entries: parameters that a diverged run left not finite make statistics of NaN, which a right
    # calibration matches entry by entry, as close asks; a NaN scale would fail every statistic, right ones too.)
    second_moment = magnitude(expected["bnvar"] + expected["bnmean"] ** 2)
    scale = {"bnmean": second_moment**0.5, "bnvar": second_moment}
    others = {
        "initial": lambda: _statistics(initial, Xtr),
        "validation": lambda: _statistics(parameters, namespace["Xdev"]),
        "test": lambda: _statistics(parameters, namespace["Xte"]),
        "minibatch": lambda: _statistics(parameters, Xtr[reference_run(namespace)["last_batch"]]),
    }
    # b1 left out moves the mean alone: bnmean's own other statistic
    without_b1 = {"bnmean": {"without_b1": lambda: {"bnmean": expected["bnmean"] - parameters[2].double()}}}
    for name in ("bnmean", "bnvar"):
        info = report.info(name)
        answer = report.tensor(name) if not_a_tensor(name, info) is None else None
        problem = _problem(name, info, answer, tainted)
        if problem:
            verdict.lines.append(problem)
            continue
        want = tuple(expected[name].shape)
        if tuple(answer.shape) != want:
            verdict.lines.append(_shape_problem(name, tuple(answer.shape), want))
            if only_size_one_dims_differ(answer.shape, want) and close(  # right values: half, as any step's shape
                answer.double().reshape(want), expected[name], scale[name]
            ):
                verdict.points += 0.5
                verdict.lines.append(shape_only_share(0.5, 1))
            continue
        dtype, answer = answer.dtype, answer.double()
        if close(answer, expected[name], scale[name]):
            verdict.points += 1
            if torch.isfinite(expected[name]).all():
                verdict.lines.append(Reason(NOTE, WORDS[name]["right"](max_difference(answer, expected[name]))))
            else:
                verdict.lines.append(Reason(NOTE, not_finite(name=name)))
            if dtype != torch.float32:  # right, but the notebook's evaluation and sampling stop on it
                verdict.lines.append(Reason(NOTE, not_float32(name=name, dtype=str(dtype).removeprefix("torch."))))
            continue
        for other, statistics in {**others, **without_b1.get(name, {})}.items():
            if close(answer, statistics()[name], scale[name]):
                verdict.lines.append(Reason("wrong_statistics", WORDS[name][other]()))
                break
        else:
            if name == "bnvar" and close(answer, expected[name].sqrt(), scale[name] ** 0.5):
                verdict.lines.append(
                    Reason("variance_for_std", say("bnvar is the standard deviation: it must be the variance"))
                )
            elif name == "bnvar" and close(answer, inverse := (expected[name] + 1e-5) ** -0.5, magnitude(inverse)):
                verdict.lines.append(Reason("variance_for_std", INVERSE_STD))
            else:
                off = difference(answer, expected[name], magnitude(expected[name]))
                words = WORDS[name]["wrong"](off.largest_error, off.scale, len(Xtr))
                verdict.lines.append(Reason("wrong_statistics", words))
    diverged = _diverged(report, namespace)
    if diverged:
        verdict.lines.append(Reason(NOTE, diverged))
    return verdict


def _diverged(report: Report, namespace: dict):
    """Words for a training run that diverged (its parameters not finite, or their validation loss far above a
    uniform guess's): the statistics of parameters that predict nothing mean nothing either. None when it did not."""
    parameters = [report.tensor(name) for name in network.PARAMETER_NAMES]
    initial = namespace["initial_parameters"]
    if any(p is None or p.shape != p0.shape or not p.is_floating_point() for p, p0 in zip(parameters, initial)):
        return None  # (the parameters could not be read: said above)
    uniform = math.log(namespace["vocab_size"])
    finite = all(torch.isfinite(p).all() for p in parameters)
    loss = validation_loss(parameters, namespace) if finite else float("nan")
    if finite and loss <= 2 * uniform:
        return None
    return say(
        "But the training run that reached these parameters diverged (their validation loss is {loss:.4g}, where a "
        "network that gives every character the same chance has {uniform:.2f}): statistics of parameters that "
        "predict nothing mean nothing either. A run diverges when its steps are too big: a learning rate too big, or "
        "a gradient with the wrong sign or scale (see the training run's cell and the gradients' cells)",
        loss=loss,
        uniform=uniform,
    )

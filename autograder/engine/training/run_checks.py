"""**Training.** The run of the student's ``training_step``, with the course's gradients in place of theirs, must
follow autograd's run and reach the goal loss; training that uses autograd earns nothing (docs/design/engine.md).
"""

import torch

from ...common.diagnoses import NOTE, Reason, kind_of
from ..backward_rules import STEP_BY_NAME
from ..tolerance import close, step_scale
from ..verdict import Verdict
from ..wire import Report
from .gradient_checks import call_problem
from .network import GRADED_STEPS, PARAMETER_NAMES
from .reference_runs import (
    FOLLOW_POINTS,
    LOSS_TOLERANCE,
    POINTS,
    REACH_LOSS,
    RETURNED,
    check_batch_reference,
    reference_run,
    validation_loss,
)


def _autograd_in_training(tainted: set) -> str | None:
    for function in ("backward_pass", "training_step"):  # training_step is tainted by a tainted backward_pass too
        if function in tainted:
            return Reason(
                "autograd",
                f"{function} uses autograd (.grad, backward or torch.autograd): the training run must be driven "
                "by the gradients of your backward_pass alone, so it earns nothing. Remove every .backward() and "
                ".grad from it",
            )
    return None


def _wrong_gradients(report: Report, namespace: dict) -> list:
    """The parameter gradients backward_pass got wrong on the check batch (as their graded cells judge them)."""
    forward, grads = check_batch_reference(namespace)
    wrong = []
    for name in PARAMETER_NAMES:
        step, answer = STEP_BY_NAME[name], report.tensor("d" + name)
        scale = step_scale(step, forward, {c: grads[c] for c in step.upstream})
        if answer is None or not answer.is_floating_point() or not close(answer.double(), grads[name].double(), scale):
            wrong.append("d" + name)
    return wrong


def _losses(report: Report, key: str):
    losses = report.tensor(key)
    return losses.double() if losses is not None and losses.dim() == 1 and losses.is_floating_point() else None


def _parameters(report: Report, namespace: dict, prefix: str):
    """The seven parameters report as <prefix><name>, or None when one is missing or has the wrong shape."""
    found = [report.tensor(prefix + name) for name in PARAMETER_NAMES]
    ok = all(
        t is not None and t.shape == p0.shape and t.is_floating_point()
        for t, p0 in zip(found, namespace["initial_parameters"])
    )
    return [t.float() for t in found] if ok else None


def _first_departure(losses, expected):
    """The first step whose loss is not within LOSS_TOLERANCE of autograd's (None if none), and the largest
    difference."""
    differences = (losses[:GRADED_STEPS] - expected).abs()
    differences[~torch.isfinite(differences)] = float("inf")
    departed = (differences > LOSS_TOLERANCE).nonzero()
    return (departed[0].item() if len(departed) else None), differences.max().item()


def _why_it_departs(losses, trained, namespace, first: int) -> str:
    """Why training_step, given the right gradients, leaves autograd's run at step ``first``."""
    if trained is not None and all(torch.equal(t, p0) for t, p0 in zip(trained, namespace["initial_parameters"])):
        return Reason(
            "not_updated_in_place",
            "the parameters never changed: training_step must update them in place (p += -lr * grad, or "
            "p.data += ...); p = p - lr * grad only gives the name p a new tensor",
        )
    if first == 0:
        return Reason(
            "wrong_update",
            "the very first loss differs: training_step must return the loss of forward(Xb, Yb) before the update",
        )
    if len(losses) >= 20 and losses[-10:].mean() > losses[:10].mean():
        return Reason("wrong_sign", "the loss goes up: each parameter must move against its gradient, p += -lr * grad")
    if first == GRADED_STEPS // 2 + 1:
        return Reason(
            "wrong_update",
            "the run departs when the learning rate drops to 0.01: training_step must use the lr it is given",
        )
    return Reason(
        "wrong_update",
        "check that training_step updates every parameter once per step, by -lr times its own gradient "
        f"(the gradients come in the order of parameters, {RETURNED})",
    )


def _own_run(report: Report, namespace: dict, expected) -> str | None:
    """What the notebook's own run, driven by the student's backward_pass, did when it did not follow autograd's:
    which gradients made it differ."""
    losses = _losses(report, "losses")
    wrong = _wrong_gradients(report, namespace)
    status = report.info("backward_pass")
    if status.get("kind") in ("raised", "missing"):
        because = call_problem(report, 0)
    elif wrong:
        many = len(wrong) > 1
        because = (
            f"your {', '.join(wrong)} {'are' if many else 'is'} wrong (see {'their cells' if many else 'its cell'})"
        )
    else:
        because = None
    if losses is None:
        what = "your own training run did not run (lossi is missing)"
    elif len(losses) < GRADED_STEPS:
        what = f"your own training run stopped after {len(losses)} of {GRADED_STEPS} steps"
        because = because or "training_step or backward_pass raised an error (see the training cell)"
    else:
        first, _ = _first_departure(losses, expected)
        if first is None:
            return None
        what = f"your own training run, with your backward_pass, leaves autograd's at step {first + 1}"
    return f"{what}: {because}" if because else what


def _training_step_failed(status: dict, steps: int) -> str:
    if status.get("kind") == "missing":
        return Reason(
            "not_answered", "not answered yet: training_step is not defined (did its cell run without an error?)"
        )
    if status.get("type") == "NotImplementedError":
        return Reason(
            "not_answered",
            f"training stopped after 0 of {GRADED_STEPS} steps: training_step still raises NotImplementedError",
        )
    return Reason(
        "raised_error",
        f"training stopped after {steps} of {GRADED_STEPS} steps, with the right gradients: training_step raised "
        f"{status.get('type')}: {status.get('message', '')}",
    )


def judge_training(report: Report, namespace: dict, seed: int, tainted: set) -> Verdict:
    """training_step, judged on a replay of the graded run in which the right gradients stand in for the
    student's backward_pass (``in_kernel.report_training``): a wrong gradient costs its own cell, not this one.
    The notebook's own run, with the student's gradients, only says which gradient made it differ."""
    verdict = Verdict("training run", 0, POINTS["training"])
    cheat = _autograd_in_training(tainted)
    if cheat:
        verdict.lines.append(cheat)
        return verdict
    run = reference_run(namespace)
    expected = run["losses"].double()
    replay = _losses(report, "replay_losses")
    status = report.info("replay")
    if replay is None or status.get("kind") != "returned" or len(replay) < GRADED_STEPS:
        verdict.lines.append(_training_step_failed(status, 0 if replay is None else len(replay)))
        return verdict
    first, largest = _first_departure(replay, expected)
    trained = _parameters(report, namespace, "replay_")
    if first is None:
        verdict.points += FOLLOW_POINTS
        verdict.lines.append(
            Reason(
                NOTE,
                f"with the right gradients, your training_step follows autograd's run: the loss of every one of the "
                f"{GRADED_STEPS} steps within {largest:.1g} of autograd's (tolerance {LOSS_TOLERANCE:g})",
            )
        )
    else:
        why = _why_it_departs(replay, trained, namespace, first)
        verdict.lines.append(
            Reason(
                kind_of(why),
                f"with the right gradients, your training_step leaves autograd's run at step {first + 1}: loss "
                f"{replay[first].item():.4f}, autograd's {expected[first].item():.4f} (tolerance {LOSS_TOLERANCE:g}); "
                + why,
            )
        )
    if trained is None:
        verdict.lines.append(Reason("unreadable", "the trained parameters could not be read"))
    else:
        reached = validation_loss(trained, namespace)
        goal = f"(goal: below {REACH_LOSS:g}; autograd's run: {run['val_loss']:.4f})"
        if reached < REACH_LOSS:
            verdict.points += POINTS["training"] - FOLLOW_POINTS
            verdict.lines.append(
                Reason(NOTE, f"reaches a validation loss of {reached:.4f} after {GRADED_STEPS} steps {goal}")
            )
        else:
            verdict.lines.append(
                Reason("goal_not_reached", f"the validation loss after {GRADED_STEPS} steps is {reached:.4f} {goal}")
            )
    own = _own_run(report, namespace, expected)
    if own:  # what the student's own gradients did: it explains, it costs this cell nothing
        verdict.lines.append(Reason(NOTE, f"{own}; that costs the cells of the gradients, not the training run"))
    return verdict

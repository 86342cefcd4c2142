"""**Training.** The run of the student's ``training_step``, with the course's gradients in place of theirs, must
follow autograd's run and reach the goal loss; training that uses autograd earns nothing (docs/design/engine.md).
"""

import torch

from ...common.diagnoses import NOTE, Reason, kind_of
from ...common.words import Words, say, say_n
from ..backward_rules import STEP_BY_NAME
from ..explain import comma_list
from ..tolerance import close, step_scale
from ..verdict import Verdict
from ..wire import Report
from .departures import why_it_departs
from .gradient_checks import call_problem, changed_on_second_call
from .network import GRADED_STEPS, PARAMETER_NAMES
from .reference_runs import (
    FOLLOW_POINTS,
    LOSS_TOLERANCE,
    POINTS,
    REACH_LOSS,
    check_batch_reference,
    reference_run,
    validation_loss,
)


def _autograd_in_training(tainted: set, report: Report) -> Reason | None:
    if report.info("backward_pass").get("type") == "AutogradIsOff":  # autograd reached where static reading cannot see
        tainted = tainted | {"backward_pass"}
    for function in ("backward_pass", "training_step"):  # training_step is tainted by a tainted backward_pass too
        if function in tainted:
            return Reason(
                "autograd",
                say(
                    "{function} uses autograd (.grad, backward or torch.autograd): the training run must be driven "
                    "by the gradients of your backward_pass alone, so it earns nothing. Remove every .backward() and "
                    ".grad from it",
                    function=function,
                ),
            )
    return None


def _wrong_gradients(report: Report, namespace: dict) -> list:
    """The parameter gradients backward_pass got wrong on the check batch (as their graded cells judge them)."""
    forward, grads = check_batch_reference(namespace)
    wrong = []
    for name in PARAMETER_NAMES:
        step, answer = STEP_BY_NAME[name], report.tensor("d" + name)
        scale = step_scale(step, forward, {c: grads[c] for c in step.upstream})
        right = (
            answer is not None and answer.is_floating_point() and close(answer.double(), grads[name].double(), scale)
        )
        if not right or changed_on_second_call(name, report, forward, grads):
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


def _own_run(report: Report, namespace: dict, expected, replay_followed: bool) -> Words | None:
    """What the notebook's own run, driven by the student's backward_pass, did when it did not follow autograd's:
    which gradients made it differ, and that this costs the training run nothing. Nothing when every gradient is
    right and the replay departed too: training_step is why, and the replay's line says so."""
    losses = _losses(report, "losses")
    wrong = _wrong_gradients(report, namespace)
    status = report.info("backward_pass")
    if status.get("kind") in ("raised", "missing"):
        because = call_problem(report, 0, on_check_batch=False)
    elif wrong:
        because = say_n(
            "your {names} is wrong (see its cell)",
            "your {names} are wrong (see their cells)",
            len(wrong),
            names=comma_list(wrong),
        )
    else:
        because = None
    if losses is None:
        what = say("your own training run did not run (lossi is missing)")
    elif len(losses) < GRADED_STEPS:
        what = say("your own training run stopped after {done} of {steps} steps", done=len(losses), steps=GRADED_STEPS)
        because = because or say("training_step or backward_pass raised an error (see the training cell)")
    else:
        first, _ = _first_departure(losses, expected)
        if first is None or (because is None and not replay_followed):
            return None
        what = say(
            "your own training run, with your backward_pass, leaves autograd's at step {step} of {steps}",
            step=first + 1,
            steps=GRADED_STEPS,
        )
    if because:
        return say(
            "{what}: {because}; that costs points in the wrong gradients' own cells, not here",
            what=what,
            because=because,
        )
    return say("{what}; that costs points in the wrong gradients' own cells, not here", what=what)


def _rebound(step: int) -> Reason:
    """training_step put new tensors into ``parameters``: the replay (which reads the list) followed, the notebook's
    named parameters, which backward_pass and every later cell read, stayed behind."""
    return Reason(
        "not_updated_in_place",
        say(
            "with the right gradients, your training_step puts new tensors into the list parameters (parameters[i] "
            "= ..., first at step {step} of {steps}) instead of changing the tensors themselves: the loss goes down "
            "only through that list, while your C, W1, b1, W2, b2, bngain, bnbias keep their initial values, and "
            "your backward_pass, the calibration, the evaluation and the sampling read those. Update each parameter "
            "in place, p += -lr * grad (or p.data -= lr * grad), and never assign to parameters[i]",
            step=step,
            steps=GRADED_STEPS,
        ),
    )


def _training_step_failed(status: dict, steps: int) -> Reason:
    if status.get("kind") == "missing":
        return Reason(
            "not_answered",
            say("not answered yet: training_step is not defined (did its cell run without an error?)"),
        )
    if status.get("type") == "NotImplementedError":
        return Reason(
            "not_answered",
            say(
                "training stopped after 0 of {steps} steps: training_step still raises NotImplementedError",
                steps=GRADED_STEPS,
            ),
        )
    return Reason(
        "raised_error",
        say(
            "training stopped after {done} of {steps} steps, with the right gradients: training_step raised "
            "{error}: {message}",
            done=steps,
            steps=GRADED_STEPS,
            error=str(status.get("type")),
            message=str(status.get("message", "")),
        ),
    )


TITLE = say("training run")  # what the feedback calls this check


def judge_training(report: Report, namespace: dict, seed: int, tainted: set) -> Verdict:
    """training_step, judged on a replay of the graded run in which the right gradients stand in for the
    student's backward_pass (``in_kernel.report_training``): a wrong gradient costs its own cell, not this one.
    The notebook's own run, with the student's gradients, only says which gradient made it differ."""
    verdict = Verdict(TITLE, 0, POINTS["training"])
    cheat = _autograd_in_training(tainted, report)
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
    rebound = status.get("rebound_at")
    if rebound:  # whatever its losses, the run moved the list's tensors, not the notebook's parameters
        verdict.lines.append(_rebound(rebound))
    elif first is None:
        verdict.points += FOLLOW_POINTS
        verdict.lines.append(
            Reason(
                NOTE,
                say(
                    "with the right gradients, your training_step follows autograd's run: the loss of every one of "
                    "the {steps} steps within {largest:.1g} of autograd's (tolerance {tolerance:g})",
                    steps=GRADED_STEPS,
                    largest=largest,
                    tolerance=LOSS_TOLERANCE,
                ),
            )
        )
    else:
        after_first = _parameters(report, namespace, "first_")
        why = why_it_departs(replay, trained, namespace, first, status.get("backward_calls"), after_first)
        verdict.lines.append(
            Reason(
                kind_of(why),
                say(
                    "with the right gradients, your training_step leaves autograd's run at step {step} of {steps}: "
                    "loss {loss:.4f}, autograd's {expected:.4f} (tolerance {tolerance:g}); {why}",
                    step=first + 1,
                    steps=GRADED_STEPS,
                    loss=replay[first].item(),
                    expected=expected[first].item(),
                    tolerance=LOSS_TOLERANCE,
                    why=why,
                ),
            )
        )
    if trained is None:
        verdict.lines.append(Reason("unreadable", say("the trained parameters could not be read")))
    else:
        reached = validation_loss(trained, namespace)
        if reached < REACH_LOSS:
            verdict.points += POINTS["training"] - FOLLOW_POINTS
            words = say(
                "with the right gradients, it reaches a validation loss of {reached:.4f} after {steps} steps (goal: "
                "below {goal:g}; autograd's run: {autograd:.4f})",
                reached=reached,
                steps=GRADED_STEPS,
                goal=REACH_LOSS,
                autograd=run["val_loss"],
            )
            verdict.lines.append(Reason(NOTE, words))
        else:
            words = say(
                "with the right gradients, the validation loss after {steps} steps is {reached:.4f} (goal: below "
                "{goal:g}; autograd's run: {autograd:.4f})",
                steps=GRADED_STEPS,
                reached=reached,
                goal=REACH_LOSS,
                autograd=run["val_loss"],
            )
            verdict.lines.append(Reason("goal_not_reached", words))
    own = _own_run(report, namespace, expected, replay_followed=first is None and not rebound)
    if own:  # what the student's own gradients did: it explains, it costs this cell nothing
        verdict.lines.append(Reason(NOTE, own))
    return verdict

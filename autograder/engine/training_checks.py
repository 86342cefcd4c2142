"""Exercise 4's verdicts: the gradients backward_pass returns, the training run, the BatchNorm calibration.

**Gradients.** Each of the 7 parameter gradients that the student's ``backward_pass`` returns
for the check batch (setup cell ``setup_check``, at the initial parameters of the grading
seed) is judged by the engine (``judge.judge_gradient``: autograd, the tolerance, shapes, the
diagnostics). The intermediate gradients (``dlogits`` ... ``demb``) are not graded in this
notebook, so a parameter gradient earns its points only when it is right, never for being
right for a wrong intermediate; the error carried forward becomes the diagnosis instead: the
feedback names the first wrong intermediate on the parameter's path (read from the function's
local variables when it returned) and what is wrong with it.

**Training.** The training run judges what the student wrote for it, ``training_step``, not the
gradients (they have their own cells). The kernel runs the notebook's loop for ``GRADED_STEPS``
steps, then runs ``training_step`` for the same steps again from the initial parameters with the
course's gradients in place of the student's ``backward_pass`` (``in_kernel.report_training``),
and reports both runs. The grader replays the run with autograd's gradients
(``training.autograd_run``). The replay *follows* when every loss is within ``LOSS_TOLERANCE`` of
autograd's; it *reaches* the goal when its trained parameters give a validation loss below
``REACH_LOSS`` (BatchNorm calibrated on the training set, as the notebook's ``split_loss`` does).
The notebook's own run only tells the student which of their gradients made it differ.
Training whose ``training_step`` or ``backward_pass`` uses autograd earns nothing.

**Calibration.** ``bnmean`` and ``bnvar`` must be the statistics of ``hprebn`` over the whole
training set, for the student's own trained parameters (so a training mistake does not cost
the calibration).
"""

import torch

from . import training
from .backward_rules import FUSED_STEP_BY_NAME, STEP_BY_NAME, local_gradient
from .diagnose import diagnose
from .explain import difference
from .judge import judge_gradient, not_a_tensor
from .tolerance import close, magnitude, max_difference, step_scale
from .training import GRADED_STEPS, PARAMETER_NAMES
from .verdict import Check, Verdict
from .wire import Report

# Per step. Correct gradients (any formula) stay within 7e-7 of autograd's losses over GRADED_STEPS steps
# (3 float32 ulps; measured over 12 seeds); the smallest real mistake known, BatchNorm's n/(n-1) missing
# (3% of dW1 and dC), departs by 1.7e-4 to 3e-4. The tolerance sits about 14 times from each.
LOSS_TOLERANCE = 1e-5
REACH_LOSS = 2.75  # validation loss after GRADED_STEPS steps (autograd's runs reach about 2.58; untrained: 3.3)
POINTS = {"gradients": 8, "training": 4, "calibration": 2}
FOLLOW_POINTS = 3  # of the training's 4; the last one is for reaching REACH_LOSS

# The intermediate gradients between the loss and each parameter, in backward order, with the step
# that computes each one (the fused cross-entropy and BatchNorm steps of Exercises 2 and 3).
CHAIN = {
    "logits": FUSED_STEP_BY_NAME["logits"],
    "h": STEP_BY_NAME["h"],
    "hpreact": STEP_BY_NAME["hpreact"],
    "hprebn": FUSED_STEP_BY_NAME["hprebn"],
    "embcat": STEP_BY_NAME["embcat"],
    "emb": STEP_BY_NAME["emb"],
}
PATHS = {
    "W2": ("logits",),
    "b2": ("logits",),
    "bngain": ("logits", "h", "hpreact"),
    "bnbias": ("logits", "h", "hpreact"),
    "W1": ("logits", "h", "hpreact", "hprebn"),
    "b1": ("logits", "h", "hpreact", "hprebn"),
    "C": tuple(CHAIN),
}
RETURNED = "[" + ", ".join("d" + name for name in PARAMETER_NAMES) + "]"


def _memo(namespace: dict, key: str, compute):
    """Computed once per grading run: the setup namespace is cached per seed (``reference.run_setup``)."""
    store = namespace.setdefault("__ex4_reference__", {})
    if key not in store:
        store[key] = compute()
    return store[key]


def check_batch_reference(namespace: dict):
    """Forward values and autograd's gradients (parameters and intermediates) on the check batch."""

    def compute():
        Xb, Yb, _ = namespace["check_batch"]
        parameters = [p.detach().clone().requires_grad_() for p in namespace["initial_parameters"]]
        loss, cache = training.forward(parameters, Xb, Yb)
        for t in cache.values():
            t.retain_grad()
        loss.backward()
        forward = {
            "Xb": Xb,
            "Yb": Yb,
            **{k: v.detach() for k, v in cache.items()},
            **{name: p.detach() for name, p in zip(PARAMETER_NAMES, parameters)},
        }
        grads = {
            **{k: v.grad for k, v in cache.items()},
            **{name: p.grad for name, p in zip(PARAMETER_NAMES, parameters)},
        }
        return forward, grads

    return _memo(namespace, "check_batch", compute)


def reference_run(namespace: dict) -> dict:
    """Autograd's training run from this seed's start, and what its parameters reach."""

    def compute():
        run = training.autograd_run(
            namespace["initial_parameters"],
            namespace["Xtr"],
            namespace["Ytr"],
            namespace["SEED"],
            GRADED_STEPS,
            namespace["batch_size"],
        )
        run["val_loss"] = validation_loss(run["parameters"], namespace)
        return run

    return _memo(namespace, "run", compute)


def validation_loss(parameters, namespace: dict) -> float:
    """The notebook's split_loss(Xdev, Ydev): BatchNorm calibrated on the whole training set."""
    mean, var = training.calibrate(parameters, namespace["Xtr"])
    return training.split_loss(parameters, mean, var, namespace["Xdev"], namespace["Ydev"])


# ------------------------------------------------------------------------------------------------ gradients


def _call_problem(report: Report, position: int) -> str | None:
    """Why backward_pass gave no d<parameter> at this position, if it did not."""
    status = report.info("backward_pass")
    if status.get("kind") == "missing":
        return "not answered yet: backward_pass is not defined (did its cell run without an error?)"
    if status.get("kind") == "raised":
        if status.get("type") == "NotImplementedError":
            return "not answered yet: backward_pass still raises NotImplementedError"
        return (
            f"backward_pass raised {status.get('type')} on the check batch: {status.get('message', '')}".rstrip(": ")
            + ". Run Step 1 (your gradients beside autograd's) to see where"
        )
    length = status.get("length")
    if length is None:
        return f"backward_pass returned a {status.get('type')}; it must return the list {RETURNED}"
    if length <= position:
        return (
            f"backward_pass returned {length} gradient{'s' if length != 1 else ''}; "
            f"d{PARAMETER_NAMES[position]} is number {position + 1} of {RETURNED}"
        )
    return None


def _first_wrong_intermediate(name: str, report: Report, forward: dict, grads: dict):
    """(intermediate, what is wrong with it) for the first wrong gradient on the way back from the loss to
    ``name``, or (None, the intermediates the student's backward_pass did not name as expected)."""
    unknown = []
    for inter in PATHS[name]:
        got = report.tensor("d" + inter)
        if got is None or not got.is_floating_point():
            unknown.append("d" + inter)
            continue
        step = CHAIN[inter]
        upstream = {c: grads[c] for c in step.upstream}
        if close(got.double(), grads[inter].double(), step_scale(step, forward, upstream)):
            continue
        if tuple(got.shape) != tuple(grads[inter].shape):
            return inter, f"it has shape {tuple(got.shape)}, but {inter} has shape {tuple(grads[inter].shape)}"
        return inter, diagnose(got.double(), grads[inter].double(), step, forward, upstream)
    return None, unknown


def _right_for_own_upstream(step, answer, report: Report, forward: dict, grads: dict) -> bool:
    upstream = {}
    for c in step.upstream:
        up = report.tensor("d" + c)
        if up is None or not up.is_floating_point() or up.shape != grads[c].shape:
            return False
        upstream[c] = up.double()
    try:
        carried = local_gradient(
            step, {k: v.double() if v.is_floating_point() else v for k, v in forward.items()}, upstream
        )
    except RuntimeError:
        return False
    return close(answer.double(), carried, step_scale(step, forward, upstream))


def judge_parameter_gradient(name: str, report: Report, namespace: dict, seed: int, tainted: set) -> Verdict:
    """d<name> as backward_pass returned it for the check batch, against autograd."""
    step = STEP_BY_NAME[name]
    position = PARAMETER_NAMES.index(name)
    if "backward_pass" in tainted:
        return Verdict(
            "d" + name,
            0,
            step.points,
            [
                "backward_pass uses autograd (.grad, backward or torch.autograd), so none of its gradients count: "
                "compute every gradient by hand"
            ],
        )
    problem = _call_problem(report, position)
    if problem:
        return Verdict("d" + name, 0, step.points, [problem])
    forward, grads = check_batch_reference(namespace)
    # Judged against autograd alone: the upstream gradients are the reference's, so no credit is carried forward.
    given = report.with_values(**{"d" + c: grads[c] for c in step.upstream})
    verdict = judge_gradient(step, given, forward, grads, seed, set())
    if verdict.passed:
        return verdict
    answer = report.tensor("d" + name)
    if answer is not None and answer.is_floating_point():
        for other in PARAMETER_NAMES:
            if (
                other != name
                and answer.shape == grads[other].shape
                and close(answer.double(), grads[other].double(), magnitude(grads[other]))
            ):
                verdict.lines.append(
                    f"it is d{other}: backward_pass must return the gradients in the order of parameters, {RETURNED}"
                )
                return verdict
        inter, why = _first_wrong_intermediate(name, report, forward, grads)
        if inter is None:
            if why:
                verdict.lines.append(
                    f"(if you name your intermediate gradients {', '.join(why)}, this feedback "
                    "can tell which of them is the first wrong one)"
                )
            return verdict
        where = f"the first wrong gradient on the way back from the loss is your d{inter}: {why}"
        upstream = " and ".join("d" + c for c in step.upstream)
        if _right_for_own_upstream(step, answer, report, forward, grads):
            verdict.lines = [f"d{name} is right for your {upstream}, but {where}"]
        else:
            verdict.lines.append(where[0].upper() + where[1:])
    return verdict


def gradient_check(name: str) -> Check:
    def judge(report, namespace, seed, tainted):
        return judge_parameter_gradient(name, report, namespace, seed, tainted)

    return Check("d" + name, STEP_BY_NAME[name].points, judge)


# ------------------------------------------------------------------------------------------------- training


def _autograd_in_training(tainted: set) -> str | None:
    for function in ("backward_pass", "training_step"):  # training_step is tainted by a tainted backward_pass too
        if function in tainted:
            return (
                f"{function} uses autograd (.grad, backward or torch.autograd): the training run must be driven "
                "by the gradients of your backward_pass alone, so it earns nothing. Remove every .backward() and "
                ".grad from it"
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
        return (
            "the parameters never changed: training_step must update them in place (p += -lr * grad, or "
            "p.data += ...); p = p - lr * grad only gives the name p a new tensor"
        )
    if first == 0:
        return "the very first loss differs: training_step must return the loss of forward(Xb, Yb) before the update"
    if len(losses) >= 20 and losses[-10:].mean() > losses[:10].mean():
        return "the loss goes up: each parameter must move against its gradient, p += -lr * grad"
    if first == GRADED_STEPS // 2 + 1:
        return "the run departs when the learning rate drops to 0.01: training_step must use the lr it is given"
    return (
        "check that training_step updates every parameter once per step, by -lr times its own gradient "
        f"(the gradients come in the order of parameters, {RETURNED})"
    )


def _own_run(report: Report, namespace: dict, expected) -> str | None:
    """What the notebook's own run, driven by the student's backward_pass, did when it did not follow autograd's:
    which gradients made it differ."""
    losses = _losses(report, "losses")
    wrong = _wrong_gradients(report, namespace)
    status = report.info("backward_pass")
    if status.get("kind") in ("raised", "missing"):
        because = _call_problem(report, 0)
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
        return "not answered yet: training_step is not defined (did its cell run without an error?)"
    if status.get("type") == "NotImplementedError":
        return f"training stopped after 0 of {GRADED_STEPS} steps: training_step still raises NotImplementedError"
    return (
        f"training stopped after {steps} of {GRADED_STEPS} steps, with the right gradients: training_step raised "
        f"{status.get('type')}: {status.get('message', '')}"
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
            f"with the right gradients, your training_step follows autograd's run: the loss of every one of the "
            f"{GRADED_STEPS} steps within {largest:.1g} of autograd's (tolerance {LOSS_TOLERANCE:g})"
        )
    else:
        verdict.lines.append(
            f"with the right gradients, your training_step leaves autograd's run at step {first + 1}: loss "
            f"{replay[first].item():.4f}, autograd's {expected[first].item():.4f} (tolerance {LOSS_TOLERANCE:g}); "
            + _why_it_departs(replay, trained, namespace, first)
        )
    if trained is None:
        verdict.lines.append("the trained parameters could not be read")
    else:
        reached = validation_loss(trained, namespace)
        goal = f"(goal: below {REACH_LOSS:g}; autograd's run: {run['val_loss']:.4f})"
        if reached < REACH_LOSS:
            verdict.points += POINTS["training"] - FOLLOW_POINTS
            verdict.lines.append(f"reaches a validation loss of {reached:.4f} after {GRADED_STEPS} steps {goal}")
        else:
            verdict.lines.append(f"the validation loss after {GRADED_STEPS} steps is {reached:.4f} {goal}")
    own = _own_run(report, namespace, expected)
    if own:
        verdict.lines.append(f"{own}; that costs the cells of the gradients, not the training run")
    return verdict


# ---------------------------------------------------------------------------------------------- calibration


def _statistics(parameters, X) -> dict:
    return dict(zip(("bnmean", "bnvar"), training.calibrate(parameters, X)))


def judge_calibration(report: Report, namespace: dict, seed: int, tainted: set) -> Verdict:
    verdict = Verdict("BatchNorm calibration", 0, POINTS["calibration"])
    parameters = [report.tensor(name) for name in ("C", "W1", "b1")]
    initial = namespace["initial_parameters"]
    if any(p is None or p.shape != p0.shape or not p.is_floating_point() for p, p0 in zip(parameters, initial)):
        verdict.lines.append("the parameters C, W1, b1 could not be read")
        return verdict
    Xtr = namespace["Xtr"]
    expected = _statistics(parameters, Xtr)
    # What the student's float32 sums add up: hprebn's values (its root mean square) and their squares.
    second_moment = (expected["bnvar"] + expected["bnmean"] ** 2).max().item()
    scale = {"bnmean": second_moment**0.5, "bnvar": second_moment}
    what = {"bnmean": "mean", "bnvar": "variance"}
    others = [
        ("the initial parameters, before training: calibrate after training", lambda: _statistics(initial, Xtr)),
        ("the validation set: calibrate on the training set, Xtr", lambda: _statistics(parameters, namespace["Xdev"])),
        (
            "one minibatch: calibrate on the whole training set, Xtr",
            lambda: _statistics(parameters, Xtr[reference_run(namespace)["last_batch"]]),
        ),
    ]
    for name in ("bnmean", "bnvar"):
        info = report.info(name)
        problem = not_a_tensor(name, info)
        answer = report.tensor(name) if problem is None else None
        if name in tainted:
            problem = f"{name} is computed with autograd, so it earns nothing"
        elif problem and info.get("kind", "missing") in ("missing", "none"):
            problem = f"not calibrated yet: {name} is not defined (did the calibration cell run without an error?)"
        elif problem is None and (answer is None or not answer.is_floating_point()):
            problem = f"{name} must be a tensor of floats"
        if problem:
            verdict.lines.append(problem)
            continue
        want = tuple(expected[name].shape)
        if tuple(answer.shape) != want:
            hint = ": keep dimension 0 (keepdim=True)" if tuple(answer.shape) == want[1:] else ""
            verdict.lines.append(
                f"{name} has shape {tuple(answer.shape)}, but it must be {want}, one value per "
                f"neuron, like bngain{hint}"
            )
            continue
        answer = answer.double()
        if close(answer, expected[name], scale[name]):
            verdict.points += 1
            verdict.lines.append(
                f"{name} is the {what[name]} of hprebn over the training set "
                f"(max difference {max_difference(answer, expected[name]):.2g})"
            )
            continue
        for description, statistics in others:
            if close(answer, statistics()[name], scale[name]):
                verdict.lines.append(f"{name} is the {what[name]} of hprebn over {description}")
                break
        else:
            if name == "bnvar" and close(answer, expected[name].sqrt(), scale[name] ** 0.5):
                verdict.lines.append("bnvar is the standard deviation: it must be the variance")
            else:
                off = difference(answer, expected[name], magnitude(expected[name]))
                verdict.lines.append(
                    f"{name} is not the {what[name]} of hprebn over the training set: largest difference "
                    f"{off.largest_error:.3g} (values up to {off.scale:.3g}). "
                    f"hprebn is C[Xtr] viewed as ({len(Xtr)}, 3 * n_embd), times W1, plus b1"
                )
    return verdict


CHECKS = {
    **{f"test_d{name}": gradient_check(name) for name in PARAMETER_NAMES},
    "test_training": Check("training run", POINTS["training"], judge_training),
    "test_calibration": Check("BatchNorm calibration", POINTS["calibration"], judge_calibration),
}

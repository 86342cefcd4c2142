"""**Gradients.** The 7 parameter gradients the student's ``backward_pass`` returns for the check batch, each judged by
the engine; a wrong one is diagnosed by the first wrong intermediate on its path (docs/design/engine.md).
"""

from ...common.diagnoses import NOTE, Reason, kind_of
from ...common.words import say, say_n
from ..backward_rules import STEP_BY_NAME, local_gradient
from ..diagnosis.chain_rule import known_gradients
from ..diagnosis.diagnose import diagnose
from ..explain import and_list, comma_list
from ..judge import judge_gradient
from ..tolerance import RTOL, close, magnitude, step_scale
from ..verdict import Check, Verdict
from ..wire import Report
from .batch_size_checks import at_another_size
from .network import PARAMETER_NAMES, THIN_NEURON_SHOWS
from .reference_runs import CHAIN, PATHS, RETURNED, check_batch_reference
from .thin_neuron_checks import at_a_thin_neuron

USES_AUTOGRAD = say(
    "backward_pass uses autograd (.grad, backward or torch.autograd), so none of its gradients count: compute every "
    "gradient by hand"
)


def call_problem(report: Report, position: int, on_check_batch: bool = True) -> Reason | None:
    """Why backward_pass gave no d<parameter> at this position, if it did not; ``on_check_batch`` False: said of the
    training run (whose batches are not the check batch, though the error is the one the check batch met)."""
    status = report.info("backward_pass")
    if status.get("kind") == "missing":
        return Reason(
            "not_answered", say("not answered yet: backward_pass is not defined (did its cell run without an error?)")
        )
    if status.get("kind") == "raised":
        if status.get("type") == "NotImplementedError" and not status.get("message"):  # the blank stub's
            return Reason("not_answered", say("not answered yet: backward_pass still raises NotImplementedError"))
        if status.get("type") == "AutogradIsOff":  # autograd reached through code the static reading does not follow
            return Reason("autograd", USES_AUTOGRAD)
        # the error's own message without its last full stop: the sentence goes on after it
        error, message = str(status.get("type")), str(status.get("message", "")).rstrip(": ").removesuffix(".")
        if not on_check_batch:
            return Reason("raised_error", _raised(error, message))
        computed, line = status.get("computed"), status.get("line")
        if isinstance(computed, list) and isinstance(line, str) and line:  # its lines run again one by one
            if PARAMETER_NAMES[position] in computed and report.tensor("d" + PARAMETER_NAMES[position]) is not None:
                return None  # computed without the raising line's values: judged as any gradient
            return Reason(
                "raised_error",
                say(
                    "backward_pass raised {error} on the check batch, at `{line}`: {message}. Every gradient "
                    "computed from that line has no value and loses its points; the grader ran the other lines "
                    "again and judged their gradients on their own",
                    error=error,
                    line=line[:160],
                    message=message,
                ),
            )
        if message:  # the student's error message, as their code raised it
            return Reason(
                "raised_error",
                say(
                    "backward_pass raised {error} on the check batch: {message}. Run Step 1 (your gradients beside "
                    "autograd's) to see where",
                    error=error,
                    message=message,
                ),
            )
        return Reason(
            "raised_error",
            say(
                "backward_pass raised {error} on the check batch. Run Step 1 (your gradients beside autograd's) to "
                "see where",
                error=error,
            ),
        )
    length = status.get("length")
    if length is None:
        return Reason(
            "wrong_return",
            say(
                "backward_pass returned a {type}; it must return the list {returned}",
                type=status.get("type"),
                returned=RETURNED,
            ),
        )
    if length <= position:
        return Reason(
            "wrong_return",
            say_n(
                "backward_pass returned {count} gradient; d{name} is number {number} of {returned}",
                "backward_pass returned {count} gradients; d{name} is number {number} of {returned}",
                length,
                name=PARAMETER_NAMES[position],
                number=position + 1,
                returned=RETURNED,
            ),
        )
    return None


def _raised(error: str, message: str):
    """backward_pass's error, said of the training run."""
    if message:
        return say(
            "backward_pass raised {error}: {message}. Run Step 1 (your gradients beside autograd's) to see where",
            error=error,
            message=message,
        )
    return say("backward_pass raised {error}. Run Step 1 (your gradients beside autograd's) to see where", error=error)


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
        others = _same_tensor(report, "d" + inter)
        if others:  # changed in place under another name after its own line: that line may well be right
            return inter, Reason(
                "aliased",
                say(
                    "it is the very tensor of {other} (`{other} = d{inter}` makes no copy), so a line that changed "
                    "{other} in place changed d{inter} too, after d{inter}'s own line: the lines that read d{inter} "
                    "after that read another value than its line made. Make {other} a tensor of its own (.clone())",
                    other=others[0],
                    inter=inter,
                ),
            )
        if tuple(got.shape) != tuple(grads[inter].shape):
            return inter, Reason(
                "wrong_shape",
                say(
                    "it has shape {got}, but {name} has shape {want}",
                    got=tuple(got.shape),
                    name=inter,
                    want=tuple(grads[inter].shape),
                ),
            )
        known = known_gradients(report, grads, step)  # the other gradients its line could have read
        return inter, diagnose(got.double(), grads[inter].double(), step, forward, upstream, known=known)
    return None, unknown


def _same_tensor(report: Report, name: str) -> list:
    """The other local variables of backward_pass that were ``name``'s very tensor when it ended (the kernel's word,
    read without trusting it)."""
    shared = report.info("backward_pass").get("shared")
    others = shared.get(name) if isinstance(shared, dict) else None
    return [str(o)[:40] for o in others if isinstance(o, str)] if isinstance(others, list) else []


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


def changed_on_second_call(name: str, report: Report, forward: dict, grads: dict) -> bool:
    """backward_pass gave another d<name> when it was called again on the same batch, beyond the step's tolerance
    (``in_kernel.training``: "again"): a tensor kept from call to call, right on the first call only."""
    again, position = report.tensor("again"), PARAMETER_NAMES.index(name)
    if again is None or again.dim() != 1 or len(again) <= position or not again.is_floating_point():
        return False
    step = STEP_BY_NAME[name]
    scale = max(step_scale(step, forward, {c: grads[c] for c in step.upstream}), magnitude(grads[name]))
    return not again[position].item() <= RTOL * scale  # NaN too


def _another_on_second_call(name: str) -> Reason:
    return Reason(
        "wrong_batch",
        say(
            "backward_pass gave another d{name} when it was called a second time on the same batch: right on the "
            "first call only, it would be wrong at every later step of training. Compute every gradient afresh at "
            "each call (a tensor made outside backward_pass and added into, dC = torch.zeros_like(C) in another "
            "cell, keeps what earlier calls added)",
            name=name,
        ),
    )


def judge_parameter_gradient(name: str, report: Report, namespace: dict, seed: int, tainted: set) -> Verdict:
    """d<name> as backward_pass returned it for the check batch, against autograd."""
    step = STEP_BY_NAME[name]
    position = PARAMETER_NAMES.index(name)
    if "backward_pass" in tainted:
        return Verdict(
            "d" + name,
            0,
            step.points,
            [Reason("autograd", USES_AUTOGRAD)],
        )
    problem = call_problem(report, position)
    if problem:
        return Verdict("d" + name, 0, step.points, [problem])
    forward, grads = check_batch_reference(namespace)
    # Judged against autograd alone: the upstream gradients are the reference's, so no credit is carried forward.
    given = report.with_values(**{"d" + c: grads[c] for c in step.upstream})
    verdict = judge_gradient(step, given, forward, grads, seed, set())
    if verdict.passed and changed_on_second_call(name, report, forward, grads):
        return Verdict("d" + name, 0, step.points, [_another_on_second_call(name)])
    other_size = at_another_size(name, report, namespace) if verdict.passed else None
    if other_size is not None and other_size.kind == NOTE:
        verdict.lines.append(other_size)
    elif other_size:
        return Verdict("d" + name, 0, step.points, [other_size])
    thin = at_a_thin_neuron(name, report, namespace) if verdict.passed and name in THIN_NEURON_SHOWS else None
    if thin:
        return Verdict("d" + name, 0, step.points, [thin])
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
                    Reason(
                        "wrong_return",
                        say(
                            "it is d{other}: backward_pass must return the gradients in the order of parameters, "
                            "{returned}",
                            other=other,
                            returned=RETURNED,
                        ),
                    )
                )
                return verdict
        inter, why = _first_wrong_intermediate(name, report, forward, grads)
        if inter is None:
            if why:
                words = say(
                    "(if you name your intermediate gradients {names}, this feedback can tell which of them is the "
                    "first wrong one)",
                    names=comma_list(why),
                )
            else:  # every one on its path is right (the notebook promises to name the first wrong one)
                words = say_n(
                    "(your {names} on the way back from the loss is right: the mistake is in d{name}'s own line)",
                    "(your {names} on the way back from the loss are right: the mistake is in d{name}'s own line)",
                    len(PATHS[name]),
                    names=comma_list("d" + c for c in PATHS[name]),
                    name=name,
                )
            verdict.lines.append(Reason(NOTE, words))
            return verdict
        if _right_for_own_upstream(step, answer, report, forward, grads):
            words = say(
                "d{name} is right for your {upstream}, but the first wrong gradient on the way back from the loss is "
                "your d{inter}: {why}",
                name=name,
                upstream=and_list("d" + c for c in step.upstream),
                inter=inter,
                why=why,
            )
            verdict.lines = [Reason(kind_of(why), words)]
        else:
            words = say(
                "The first wrong gradient on the way back from the loss is your d{inter}: {why}", inter=inter, why=why
            )
            verdict.lines.append(Reason(kind_of(why), words))
    return verdict


def gradient_check(name: str) -> Check:
    def judge(report, namespace, seed, tainted):
        return judge_parameter_gradient(name, report, namespace, seed, tainted)

    return Check("d" + name, STEP_BY_NAME[name].points, judge)

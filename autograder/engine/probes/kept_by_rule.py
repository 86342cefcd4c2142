"""A step kept by its rule: one whose answer is missing or wrong, not by its own code's fault but by what it was
handed (an upstream gradient a slip further up broke, a forward tensor an earlier cell rebound), keeps its points when
the rule probe finds its code right on inputs as they should have been."""

from ...common.diagnoses import NOTE, Reason
from ...common.words import say, say_n
from ..backward_rules import SHAPE_ONLY_SHARE, Step, local_gradient
from ..diagnosis.shapes import only_size_one_dims_differ, shape_only_share, shape_problem
from ..explain import and_list, wrong_dtype
from ..tolerance import close, magnitude, step_scale
from .judge_rule import judge_rule


def carried_forward(wrong: list, first: list | None = None) -> Reason:
    """The line of an answer right for the student's own ``wrong`` upstream gradients; ``first``: the wrong steps
    further up that make them wrong, when the notebook's other verdicts show it (``first_to_fix``)."""
    names = lambda steps: and_list("d" + s for s in steps)
    if first and set(first) != set(wrong):
        words = say_n(
            "correct for your {wrong}, which is wrong because of {first} above: this step keeps its points; "
            "fix {fix} first",
            "correct for your {wrong}, which are wrong because of {first} above: this step keeps its points; "
            "fix {fix} first",
            len(wrong),
            wrong=names(wrong),
            first=names(first),
            fix=names(first),
        )
    else:
        words = say_n(
            "correct for your {wrong}, which is wrong: this step keeps its points; fix {fix} first",
            "correct for your {wrong}, which are wrong: this step keeps its points; fix {fix} first",
            len(wrong),
            wrong=names(wrong),
            fix=names(first or wrong),
        )
    return Reason(NOTE, words)


def kept_by_its_rule(verdict, step: Step, report, forward: dict, grads: dict, seed: int, answer: str) -> bool:
    """A step whose answer is missing, or wrong, where the student's own upstream gradients could not feed its code
    (``broken_upstream``: a slip further up): when the probe finds that code right on upstream gradients of the right
    shape, the step gets what its code gave there (all its points in its shape, its share when only size-1 dimensions
    differ: a keepdim dropped in its own code is its own slip) and True; False, the verdict as it was, otherwise (with
    the dtype its code gives when that is not float32: its own slip too). A mistake costs its own step, not every later
    step whose cell raised because of it."""
    broken = broken_upstream(step, report, grads)
    stopped = not broken and stopped_on_wrong_upstream(step, report, grads, answer)
    broken = broken or stopped
    if not broken or judge_rule(step, report, forward, seed, answer).verdict != "right":
        return False
    result = report.probe_result()  # (a tensor: the probe found the rule right)
    shape, got = grads[step.name].shape, result.shape
    if result.dtype != grads[step.name].dtype:  # float32 in, another dtype out: its own code's slip (a .double())
        dtype = str(result.dtype).removeprefix("torch.")
        verdict.lines.append(wrong_dtype(answer, dtype, say("gradients here are float32")))
        return False
    line = kept_line(answer, broken, stopped=bool(stopped))
    if tuple(got) == tuple(shape):
        verdict.points, verdict.lines = step.points, [line]
    elif only_size_one_dims_differ(got, shape):
        verdict.points = step.points * SHAPE_ONLY_SHARE
        verdict.lines = [shape_problem(got, shape, step.name), shape_only_share(verdict.points, step.points), line]
    else:
        return False
    verdict.carried_from = tuple(broken)  # (``judge.first_to_fix`` follows them up to the step to fix)
    return True


def kept_as_set_up(verdict, step: Step, report, forward: dict, grads: dict, seed: int, answer: str) -> bool:
    """A step whose answer is missing or wrong because an earlier cell rebound a forward tensor that its code reads (a
    temporary named ``x`` in another answer cell): when the probe's run with those tensors as the forward pass left
    them (``in_kernel.rebound``) follows the rule in the right shape and dtype, the step keeps its points
    and True, its words naming the line that rebound them; False, the verdict as it was, otherwise."""
    probe = report.probe or {}
    again = probe.get("as_set_up")
    rebound = _rebound(again)
    if not rebound:
        return False
    lists = {k: again[k] for k in ("pins_read", "further_up") if isinstance(again.get(k), list)}  # its own code's
    alternative = report.with_probe({**probe, **{k: again.get(k) for k in ("status", "result", "reason")}, **lists})
    result = alternative.probe_result()
    if judge_rule(step, alternative, forward, seed, answer).verdict != "right" or result is None:
        return False
    if (tuple(result.shape), result.dtype) != (tuple(grads[step.name].shape), grads[step.name].dtype):
        return False
    verdict.points, verdict.lines = step.points, [rebound_line(answer, name, *where) for name, where in rebound]
    verdict.wrong_in_notebook = True
    return True


def kept_with_given_changed(
    verdict, step: Step, report, forward: dict, grads: dict, seed: int, answer: str, given: dict
) -> bool:
    """A step whose answer is wrong because a cell changed an upstream gradient the notebook hands out (``given``:
    upstream -> the student's own copy; `dbnraw = dhpreact` without .clone(), then `dbnraw *= bngain`, changes
    dhpreact too): when the answer is the step's rule applied to those changed values, and the probe finds its code
    right on random ones (so code that reads nothing, or zeros for zeros, earns nothing), the step keeps its points
    and True, its words naming the changed gradient; False, the verdict as it was, otherwise."""
    changed = [
        u
        for u, own in given.items()
        if own is not None
        and (own.shape, own.dtype) == (grads[u].shape, grads[u].dtype)
        and not close(own.double(), grads[u].double(), magnitude(grads[u]))
    ]
    if not changed:
        return False
    own = {u: given[u] if u in changed else report.floats("d" + u) for u in step.upstream}
    if any(t is None or t.shape != grads[u].shape for u, t in own.items()):
        return False
    answer_value = report.floats(answer)
    try:
        rule = local_gradient(step, forward, own).double()
    except RuntimeError:
        return False
    if answer_value is None or answer_value.shape != rule.shape:
        return False
    if not close(answer_value.double(), rule, step_scale(step, forward, own)):
        return False
    if judge_rule(step, report, forward, seed, answer).verdict != "right":
        return False
    verdict.points, verdict.lines = step.points, [given_changed_line(answer, changed)]
    verdict.wrong_in_notebook = True
    return True


def given_changed_line(answer: str, changed: list) -> Reason:
    """The line of a step kept by its rule, whose upstream gradient ``changed`` (handed out by the notebook) a cell
    changed."""
    return Reason(
        NOTE,
        say_n(
            "your {changed}, which the notebook gives you, no longer holds the values its setup cell gave it: a cell "
            "changed it (`{first} = ...`, or in place, through another name too: `x = {first}` without .clone(), then "
            "`x *= ...`). "
            "Your code for {answer} is right for the changed values and follows the backward rule, so this step keeps "
            "its points; leave {changed} as the notebook gives it",
            "your {changed}, which the notebook gives you, no longer hold the values their setup cell gave them: a "
            "cell changed them (`{first} = ...`, or in place, through another name too: `x = {first}` without "
            ".clone(), then `x *= ...`). Your code for {answer} is right for the changed values and follows the "
            "backward rule, so this "
            "step keeps its points; leave {changed} as the notebook gives them",
            len(changed),
            changed=and_list("d" + u for u in changed),
            first="d" + changed[0],
            answer=answer,
        ),
    )


def _rebound(again) -> list:
    """[(name, (line, answers))] of a probe's run as set up, read without trusting it; [] when it is none."""
    if not isinstance(again, dict) or not isinstance(again.get("rebound"), dict):
        return []
    found = []
    for name, where in list(again["rebound"].items())[:5]:
        if not (isinstance(name, str) and name.isidentifier() and isinstance(where, dict)):
            return []
        line, answers = where.get("line"), where.get("answers")
        if not isinstance(line, str) or not isinstance(answers, list):
            return []
        if not all(isinstance(a, str) and a.isidentifier() for a in answers):
            return []
        found.append((name[:40], (where["line"][:120], [a[:40] for a in answers[:5]])))
    return found


def rebound_line(answer: str, name: str, line: str, answers: list) -> Reason:
    """The line of a step kept by its code run on the forward pass's ``name``, which the cell of ``answers`` rebound."""
    where = say("your cell of {answers}", answers=and_list(answers)) if answers else say("an earlier cell")
    return Reason(
        NOTE,
        say(
            "your code for {answer} read {name} after {where} rebound it (`{line}`), so in your notebook {answer} is "
            "not the gradient; run again on the forward pass's {name}, your code follows the backward rule, and this "
            "step keeps its points. Give that temporary another name",
            answer=answer,
            name=name,
            where=where,
            line=line,
        ),
    )


def kept_line(answer: str, broken: list, first: list | None = None, stopped: bool = False) -> Reason:
    """The line of a step kept by its rule; ``first``: the steps further up that broke ``broken``, when the notebook's
    other verdicts show it (``judge.first_to_fix``); ``stopped``: its cell stopped on ``broken``, which are wrong
    (``stopped_on_wrong_upstream``)."""
    if stopped:
        return Reason(
            NOTE,
            say(
                "your code for {answer} stopped with an error on your own {broken}, which differ from autograd's (a "
                "layout its .view cannot take, say), so the grader ran it again on random {broken} of the right "
                "shape: it follows the backward rule, and this step keeps its points; fix {fix} first",
                answer=answer,
                broken=and_list("d" + u for u in broken),
                fix=and_list("d" + u for u in first or broken),
            ),
        )
    return Reason(
        NOTE,
        say(
            "your code for {answer} could not run as it should on your own {broken} (not defined, or not of the "
            "shape and dtype of autograd's), so the grader ran it again on random {broken} of the right shape: it "
            "follows the backward rule, and this step keeps its points; fix {fix} first",
            answer=answer,
            broken=and_list("d" + u for u in broken),
            fix=and_list("d" + u for u in first or broken),
        ),
    )


def stopped_on_wrong_upstream(step: Step, report, grads: dict, answer: str) -> list:
    """The step's upstream gradients that differ from autograd's, when the answer's cell stopped with an error (before
    its answer, or after a part of it): code right for autograd's may raise on them (`demb.view(-1, n_embd)` on a
    transposed demb); the probe, on random ones, tells whether it was the code's own fault."""
    if not (report.cut_short or report.info(answer).get("raised")):
        return []
    own = {u: report.floats("d" + u) for u in step.upstream}
    differ = lambda u, t: not close(t.double(), grads[u].double(), magnitude(grads[u]))
    return [u for u, t in own.items() if t is not None and t.shape == grads[u].shape and differ(u, t)]


def broken_upstream(step: Step, report, grads: dict) -> list:
    """The step's upstream gradients that the student's own cannot stand for in code written for autograd's: not
    defined, or not of its shape and dtype."""
    own = {u: report.floats("d" + u) for u in step.upstream}
    return [u for u, t in own.items() if t is None or (t.shape, t.dtype) != (grads[u].shape, grads[u].dtype)]

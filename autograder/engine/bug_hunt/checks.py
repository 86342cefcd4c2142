"""Exercise 6's verdicts on the bugs: each planted bug's fix, judged as any gradient step is (the rules table, error
carried forward, the diagnoses, honesty), with the bug's own words first when a fix still has it; and the gradients
the student names as buggy.
"""

import dataclasses

import torch

from ...common.diagnoses import NOTE, Reason
from ...common.words import say, say_n
from ..backward_rules import STEP_BY_NAME, batch_size, local_gradient
from ..explain import comma_list
from ..honesty.cell_code import written_as_a_literal
from ..judge import judge_gradient
from ..probes.kept_by_rule import carried_forward
from ..reference import autograd_gradients, forward_values
from ..verdict import Check, Verdict
from ..wire import Report
from .catalogue import FUNCTION, GRADIENTS, ID, NAMED, PER_STUDENT, gradient_named, normalised_id, planted
from .own_upstream import changed_in_place_as_the_bug, fix_unseen
from .rerun import autograd_used, call_problem, rerun_of, with_pins
from .untouched import broken_lines

POINTS_PER_FIX = 2
FOUND_POINTS = PER_STUDENT  # a point for each bug named, less one for each gradient named that has none


def _clipped(f, d):
    n = batch_size(f)
    grad = torch.zeros_like(f["logprobs"])
    grad[range(n), f["Yb"]] = -1.0 / n * (-f["logprobs"][range(n), f["Yb"]] < 3.5)
    return grad


def _aliased(f, d):
    """dbndiff as dhprebn = dbndiff; dhprebn += ... leaves it: dhprebn's value."""
    dbndiff = local_gradient(STEP_BY_NAME["bndiff"], f, d)
    return dbndiff - dbndiff.sum(0, keepdim=True) / batch_size(f)


def _not_accumulated(f, d):
    grad = torch.zeros_like(f["C"])
    grad[f["Xb"]] += d["emb"]
    return grad


# bug -> (what a fix that still has it gives, from the forward values f and the student's upstream gradients d;
# what the student reads)
STILL = {
    "clipped_loss": (
        _clipped,
        say(
            "dlogprobs still clips the loss, not the gradient: the examples whose loss is above 3.5 send back no "
            "gradient at all, and they are the ones that most need a push. The forward pass does not clip the loss, "
            "so its gradient may not either"
        ),
    ),
    "zero_bias": (
        lambda f, d: (f["hpreact"] * d["hpreact"]).sum(0, keepdim=True),
        say(
            "dbngain still reads hpreact where bnraw belongs: the two are equal only while bngain is 1 and bnbias "
            "is 0, the initialisation where your colleague checked it"
        ),
    ),
    "aliased": (
        _aliased,
        say(
            "dbndiff still holds the values of dhprebn: dhprebn still shares dbndiff's memory (as it does after `=`, "
            ".detach(), [:], .view, or .float() of a tensor that is float32 already), so adding to dhprebn in place "
            "changes dbndiff too. Make dhprebn a tensor of its own (.clone())"
        ),
    ),
    "epsilon": (
        lambda f, d: -0.5 * f["bnvar"] ** -1.5 * d["bnvar_inv"],
        say(
            "dbnvar still leaves out BatchNorm's epsilon: the forward pass adds 1e-5 to the variance before the "
            "square root, and it matters where a neuron's batch variance is small, as neuron 0's is here"
        ),
    ),
    "bessel": (
        lambda f, d: torch.ones_like(f["bndiff2"]) / batch_size(f) * d["bnvar"],
        say("dbndiff2 still divides by n, where the forward pass's variance divides by n-1 (Bessel's correction)"),
    ),
    "not_accumulated": (
        _not_accumulated,
        say(
            "dC still does not add up repeated indices: with `dC[Xb] += demb` a character that appears several times "
            "in the batch keeps only one of its contributions. Accumulate every occurrence (index_add_, a loop, or a "
            "one-hot matrix product)"
        ),
    ),
}


def step_of(bug):
    """The rules-table step of the gradient the bug makes wrong, with the bug's own words as its first mistake."""
    step = STEP_BY_NAME[bug.gradient[1:]]
    variant, words = STILL[bug.key]
    return dataclasses.replace(step, mistakes={Reason(bug.key, words): variant, **step.mistakes})


def no_id() -> Reason:
    return Reason(
        "not_answered",
        say(
            "not answered yet: BUG_HUNT_ID is not set as a string, so the grader cannot tell which bugs were yours. "
            "Write the id your instructor asked for in its cell, in quotes"
        ),
    )


def judge_fix(slot: int, report: Report, namespace: dict, seed: int, tainted: set) -> Verdict:
    """The gradient of the student's ``slot``-th bug (in the order of the pass), from their fixed backward_pass."""
    text = report.text(ID)
    bugs = planted(text)
    if not bugs:
        return Verdict(say("bug {slot}", slot=slot), 0, POINTS_PER_FIX, [no_id()])
    bug = bugs[slot - 1]
    title, facts = say("bug {slot}: {gradient}", slot=slot, gradient=bug.gradient), {"bug_hunt_id": normalised_id(text)}
    raised, replaced = rerun_of(report)  # a line of the pass that raised: its own gradients lose, no others
    problem = autograd_used() if FUNCTION in tainted else call_problem(report, bug.gradient, raised)
    if problem:
        return Verdict(title, 0, POINTS_PER_FIX, [problem], facts=facts)
    step, forward, grads = step_of(bug), forward_values(namespace), autograd_gradients(namespace)
    view = with_pins(report, step.upstream, replaced, forward, seed)
    verdict = judge_gradient(step, view, forward, grads, seed, set())
    verdict.title, verdict.max_points, verdict.facts = title, POINTS_PER_FIX, facts
    verdict.points = verdict.points * POINTS_PER_FIX / step.points
    variant, words = STILL[bug.key]
    if verdict.points and changed_in_place_as_the_bug(bug.gradient, variant, view, forward):
        verdict.points, verdict.lines = 0, [Reason(bug.key, words)]
    elif verdict.points and (unseen := fix_unseen(bug.gradient, variant, view, forward, verdict.carried_from)):
        verdict.points, verdict.lines = 0, [unseen]
    share, broken = broken_lines(slot, bugs, report, forward, grads, seed)  # a right line of its part made wrong
    carried = carried_forward(list(verdict.wrong_from or verdict.carried_from)) if verdict.carried_from else None
    if carried in verdict.lines:  # right for upstream gradients that a bug further up made wrong: say so
        names = comma_list("d" + name for name in verdict.carried_from)
        verdict.lines[verdict.lines.index(carried)] = Reason(
            NOTE,
            say(
                "right for the gradients it is computed from ({names}), which differ from autograd's because of a "
                "bug further up: this fix keeps its points",
                names=names,
            )
            if not broken
            else say(
                "{name} itself is right for the gradients it is computed from ({names})", name=bug.gradient, names=names
            ),
        )
    verdict.carried_from = verdict.wrong_from = ()  # the fix's own verdict: nothing further up to point to
    verdict.points, verdict.lines = min(verdict.points, POINTS_PER_FIX * share), verdict.lines + broken
    return verdict


def _named(names: list) -> tuple:
    """(the gradients named, as d<name>, in the order of the pass; the names that are no gradient of the pass)."""
    found, unknown = set(), []
    for name in names:
        gradient = gradient_named(name, GRADIENTS)
        if gradient:
            found.add(gradient)
        elif name.strip() not in unknown:
            unknown.append(name.strip())
    return sorted(found, key=GRADIENTS.index), unknown


def judge_found(report: Report, namespace: dict, seed: int, tainted: set, code: tuple = ()) -> Verdict:
    """``buggy``, the gradients the student names: a point for each planted bug named, less one for each other.
    ``code``: the cells before its graded one; a list written out in them is words, whatever it says ("bngain.grad")."""
    text = report.text(ID)
    bugs = planted(text)
    verdict = Verdict(FOUND_CHECK.title, 0, FOUND_POINTS)
    if not bugs:
        verdict.lines.append(no_id())
        return verdict
    verdict.facts = {"bug_hunt_id": normalised_id(text)}
    if NAMED in tainted and not written_as_a_literal(code, NAMED):
        verdict.lines.append(
            Reason("autograd", say("buggy is computed with autograd, so it earns nothing: name the gradients yourself"))
        )
        return verdict
    names = report.texts(NAMED)
    if names is None:
        missing = report.info(NAMED).get("kind", "missing") in ("missing", "none")
        verdict.lines.append(
            Reason("not_answered", say("not answered yet: buggy is not defined (did its cell run without an error?)"))
            if missing
            else Reason("wrong_return", say('buggy must be a list of the names of gradients, like ["dprobs", "dW1"]'))
        )
        return verdict
    named, unknown = _named(names)
    planted_names = [bug.gradient for bug in bugs]
    hits = [name for name in named if name in planted_names]
    missed = [name for name in planted_names if name not in named]
    lines = {bug.binds: bug for bug in bugs if bug.binds != bug.gradient}  # a bug's line, not its wrong gradient
    wrong = [name for name in named if name not in planted_names]
    verdict.points = max(0, len(hits) - len(wrong) - len(unknown))
    beside, wrong = [lines[name] for name in wrong if name in lines], [name for name in wrong if name not in lines]
    if missed:
        verdict.lines.append(
            Reason(
                "bugs_missed",
                say_n(
                    "{names} had a planted bug that you did not name",
                    "{names} had planted bugs that you did not name",
                    len(missed),
                    names=comma_list(missed),
                ),
            )
        )
    if wrong:
        verdict.lines.append(
            Reason(
                "not_a_bug",
                say_n(
                    "{names} had no bug of its own: its line is right, and at most it inherits the error of a gradient "
                    "it is computed from",
                    "{names} had no bugs of their own: their lines are right, and at most they inherit the error of a "
                    "gradient they are computed from",
                    len(wrong),
                    names=comma_list(wrong),
                ),
            )
        )
    for bug in beside:
        verdict.lines.append(
            Reason(
                "not_a_bug",
                say(
                    "{name}'s values were right: the bug is on its line, `{line}`, but what it makes wrong is "
                    "{gradient}, and buggy names the gradients a bug made wrong",
                    name=bug.binds,
                    line=bug.wrong,
                    gradient=bug.gradient,
                ),
            )
        )
    if unknown:
        verdict.lines.append(
            Reason(
                "not_a_bug",
                say(
                    "{names}: not the name of a gradient that backward_pass returns (like dprobs or dW1)",
                    names=comma_list(unknown),
                ),
            )
        )
    verdict.lines.append(
        Reason(
            NOTE,
            say(
                "your bugs were {names}; each one named earns a point, each other name costs one",
                names=comma_list(planted_names),
            )
            if verdict.lines
            else say("correct: your bugs were {names}", names=comma_list(planted_names)),
        )
    )
    return verdict


def fix_check(slot: int) -> Check:
    def judge(report, namespace, seed, tainted):
        return judge_fix(slot, report, namespace, seed, tainted)

    return Check(say("bug {slot}", slot=slot), POINTS_PER_FIX, judge)


FOUND_CHECK = Check(say("the gradients your bugs made wrong"), FOUND_POINTS, judge_found, reads_code=True)

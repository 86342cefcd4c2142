"""What each notebook grades: for every graded cell (by grade_id), the ``Check`` that judges it.

A check reads the cell's ``wire.Report`` from the student's kernel, the grader's own setup
namespace (forward values and autograd's gradients for this run's seed), the seed, and the set
of variables computed with autograd, and returns a ``Verdict``.
"""

from .backward_rules import STEP_BY_NAME, STEPS, WRITTEN_WITH, Step, WrittenWith
from .bug_hunt import CHECKS as BUG_HUNT_CHECKS
from .fast_forwards import FAST_FORWARD_BY_NAME, Value
from .fused_rules import FUSED_STEP_BY_NAME
from .judge import judge_gradient, judge_written_with
from .operators import GIVEN, NOTEBOOK, OPERATOR_STEPS
from .reference import autograd_gradients, forward_values
from .training import CHECKS as TRAINING_CHECKS
from .value_checks import judge_rows_sum_to_zero, judge_value, rows_title
from .verdict import Check


def gradient_check(step: Step, given: tuple = ()) -> Check:
    """``given``: upstream gradients the notebook hands out (a locked setup cell), so they are taken
    from the grader's reference, never from the student's copy (which could be changed); that copy, when the cell
    sends it, only tells whether a cell changed it (``kept_by_rule.kept_with_given_changed``)."""

    def judge(report, namespace, seed, tainted):
        grads = autograd_gradients(namespace)
        own = {name: report.floats("d" + name) for name in given}  # the student's copy: changed in the notebook?
        report = report.with_values(**{"d" + name: grads[name] for name in given})
        return judge_gradient(step, report, forward_values(namespace), grads, seed, tainted, given=own)

    return Check("d" + step.name, step.points, judge, **_sent(step, "d" + step.name, given))


def _sent(step: Step, answer: str, given: tuple = ()) -> dict:
    """What a gradient step's hidden test must send: ``report(globals(), answer, *upstream, probe=upstream)``, the
    given upstream gradients aside (the grader takes those from its reference), so that a slip further up is carried
    forward and the rule probe can judge the code (tests/fast/test_engine.py holds every notebook to it)."""
    upstream = [f"d{u}" for u in step.upstream]
    return {"reports": (answer, *(u for u in upstream if u[1:] not in given)), "probes": tuple(upstream)}


def written_with_check(written: WrittenWith) -> Check:
    """A step asked for again with a given function (``dC_index_add``): judged as the step is, its code read too."""
    step = STEP_BY_NAME[written.step]

    def judge(report, namespace, seed, tainted, code):
        forward, grads = forward_values(namespace), autograd_gradients(namespace)
        return judge_written_with(step, written, report, forward, grads, seed, tainted, code)

    return Check(written.answer, written.points, judge, reads_code=True, **_sent(step, written.answer))


def value_check(value: Value) -> Check:
    def judge(report, namespace, seed, tainted, code):
        return judge_value(value, report, forward_values(namespace), seed, tainted, code)

    return Check(value.name, value.points, judge, reads_code=True)


def rows_sum_to_zero_check(name: str, points: int) -> Check:
    def judge(report, namespace, seed, tainted):
        return judge_rows_sum_to_zero(
            name, points, report, forward_values(namespace), autograd_gradients(namespace), seed, tainted
        )

    return Check(rows_title(name), points, judge)


CHECKS = {
    "ex1_atomic_backward": {
        **{f"test_d{step.name}": gradient_check(step) for step in STEPS},
        **{f"test_{written.answer}": written_with_check(written) for written in WRITTEN_WITH},
    },
    "ex2_cross_entropy_backward": {
        "test_loss_fast": value_check(FAST_FORWARD_BY_NAME["loss_fast"]),
        "test_dlogits": gradient_check(FUSED_STEP_BY_NAME["logits"]),
        "test_dlogits_rows": rows_sum_to_zero_check("logits", points=1),
    },
    "ex3_batchnorm_backward": {  # dhpreact is given in the locked cell setup_upstream
        "test_hpreact_fast": value_check(FAST_FORWARD_BY_NAME["hpreact_fast"]),
        "test_dbngain": gradient_check(STEP_BY_NAME["bngain"], given=("hpreact",)),
        "test_dbnbias": gradient_check(STEP_BY_NAME["bnbias"], given=("hpreact",)),
        "test_dhprebn": gradient_check(FUSED_STEP_BY_NAME["hprebn"], given=("hpreact",)),
        # Part 4: the forward pass of setup_biased, whose variance divides by n; dhpreact_biased is given there
        "test_dhprebn_biased": gradient_check(FUSED_STEP_BY_NAME["hprebn_biased"], given=("hpreact_biased",)),
    },
}

# Exercise 4: backward_pass's gradients, the training run and the calibration (see training).
CHECKS["ex4_manual_training"] = TRAINING_CHECKS

# Exercise 5: every operator of its table, in backward order; dhdrop, drelu_out, dleaky_out are given (setup_upstream)
CHECKS[NOTEBOOK] = {
    f"test_d{step.name}": gradient_check(step, given=tuple(u for u in step.upstream if u in GIVEN))
    for step in OPERATOR_STEPS
}

# Exercise 6: the gradient checker, the bugs named, the fix of each planted bug (see bug_hunt).
CHECKS["ex6_bug_hunt"] = BUG_HUNT_CHECKS

# the gradient steps of each notebook in backward order, where it is not Exercise 1's (the feedback's table of steps)
BACKWARD_ORDER = {NOTEBOOK: OPERATOR_STEPS}


def steps_in_backward_order(notebook: str) -> list:
    """The steps whose graded cells a notebook's feedback lists in backward order: its own table's, or Exercise 1's
    (which Exercises 2 to 4 grade a few of)."""
    return BACKWARD_ORDER.get(notebook, STEPS)

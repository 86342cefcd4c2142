"""A ✔ in the notebook means the point: the visible checks judge a step with the grader's own code.

The self-check helpers carry the engine's rule probe and tolerance (generated into the cell from ``autograder/engine``),
so an answer with the right values but the wrong rule (``db1 = dhprebn.mean(0)``: b1 is cancelled by BatchNorm, so
its gradient is about zero either way) is ✘ under its cell, as at grading; and the "fix it first" hint names a
gradient above in the graph, never one that merely failed earlier in time.
"""

import ast
import re

import pytest
from support.cases_ex1 import PLUS_FOR_TIMES
from test_student_notebooks import EX1, EX3, HELPERS, hint, release, run_cells, source

from autograder.authoring import from_engine, shared_cell
from autograder.authoring.submissions import grade_id, solved
from autograder.common.naming import SETUP_PREFIX
from autograder.engine import tolerance
from autograder.engine.backward_rules import STEPS
from autograder.engine.operators import OPERATOR_STEPS
from autograder.engine.probes import judge_rule, rerun
from autograder.engine.reference import run_setup, strip_hidden
from autograder.engine.training.network import GRADED_STEPS
from autograder.engine.training.reference_runs import LOSS_TOLERANCE, REACH_LOSS


def test_the_helper_cell_holds_the_engines_code_not_a_copy():
    cell = shared_cell("self_check_helpers")
    assert from_engine.MARKER not in cell and from_engine.block() in cell
    defined = {n.name: ast.unparse(n) for n in ast.parse(strip_hidden(cell)).body if hasattr(n, "name")}
    for function in (rerun.answer_code, rerun.pin_value, judge_rule.consistent_pins, tolerance.close):
        engine = next(n for n in ast.parse(__import__("inspect").getsource(function)).body)
        assert defined[function.__name__] == ast.unparse(engine), function.__name__
    namespace = {"torch": __import__("torch")}  # the notebook's setup imports it
    exec(strip_hidden(cell).split("class Step:")[0], namespace)
    assert namespace["RTOL"] == tolerance.RTOL and namespace["LOSS_TOLERANCE"] == LOSS_TOLERANCE
    assert namespace["REACH_LOSS"] == REACH_LOSS and namespace["GRADED_STEPS"] == GRADED_STEPS  # Exercise 4's
    assert list(namespace["GRAPHS"]["atomic"]) == [s.name for s in STEPS]
    assert list(namespace["GRAPHS"]["operators"]) == [s.name for s in OPERATOR_STEPS]  # Exercise 5's (STEP_TABLE)


HELPER_CODE = compile(strip_hidden(HELPERS), "<string>", "exec")  # compiled once (12 ms each time)


@pytest.fixture(scope="module")
def ex1_up_to():
    """Exercise 1 with the course's answers and their checks run up to (not including) a step; the cells by id."""
    cells = {grade_id(c): c.source for c in solved(release(EX1), source(EX1)).cells}
    setup = tuple(c.source for c in source(EX1).cells if grade_id(c).startswith(SETUP_PREFIX))
    notebook_namespace = dict(run_setup(setup, 2147483647))  # the notebook's own SEED

    def run(stop):
        namespace = {**notebook_namespace}
        exec(HELPER_CODE, namespace)
        for step in STEPS[: [s.name for s in STEPS].index(stop)]:
            run_cells(namespace, cells[f"answer_d{step.name}"], cells[f"test_d{step.name}"])
        return namespace

    return run, cells


@pytest.mark.parametrize("answer", ["db1 = dhprebn.mean(0)", "with torch.no_grad():\n    db1 = dhprebn.mean(0)"])
def test_db1_as_a_mean_is_not_a_tick(ex1_up_to, answer):
    run, cells = ex1_up_to

    out = run_cells(run("b1"), answer, cells["test_db1"])
    assert out.startswith("✘ db1: the values are right on this batch, but not the backward rule"), out
    assert "gives no point" in out


@pytest.mark.parametrize(
    "answer",
    [
        "db1 = dhprebn.sum(0)",
        "db1 = torch.zeros_like(b1)",  # exactly zero is right for b1 (the grader says so too)
        "db1 = dhprebn.sum(0, keepdim=True).view(-1)",
        "tmp = dhprebn.clone()\ndb1 = tmp.sum(0)",
        "with torch.no_grad():\n    db1 = dhprebn.sum(0)",
    ],
)
def test_a_right_db1_is_a_tick(ex1_up_to, answer):
    run, cells = ex1_up_to

    out = run_cells(run("b1"), answer, cells["test_db1"])
    assert out.startswith("✔ db1"), out


def test_every_course_answer_follows_its_rule_under_its_cell(ex1_up_to):
    run, cells = ex1_up_to

    out = run_cells(run("C"), cells["answer_dC"], cells["test_dC"])
    assert out.startswith("✔ dC"), out  # and run() printed no ✘ on the way (it would have raised in the asserts)


@pytest.mark.parametrize(
    "answer", ["dlogits = dnorm_logits.clone()", "with torch.no_grad():\n    dlogits = dnorm_logits.clone()"]
)
def test_a_wrong_rule_whose_values_pass_is_named_for_dlogit_maxes_path(ex1_up_to, answer):
    """dlogits without the max's path: right values (dlogit_maxes is about zero), wrong rule: the grader's ✘."""
    run, cells = ex1_up_to

    out = run_cells(run("logits"), answer, cells["test_dlogits"])
    assert out.startswith(
        "✘ dlogits: the values are right on this batch, but your code for dlogits leaves out the path "
        "through logit_maxes"
    ), out
    assert "gives no point" in out


@pytest.mark.parametrize(
    "first, second, tick",
    [
        ("dlogits, dlogit_maxes = dnorm_logits.clone(), -dnorm_logits.sum(1, keepdim=True)", "dlogits += 0", False),
        (
            "dlogits, dlogit_maxes = dnorm_logits.clone(), -dnorm_logits.sum(1, keepdim=True)",
            "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes",
            True,
        ),
    ],
)
def test_the_first_path_assigned_beside_the_pinned_gradient_is_judged_as_the_grader_does(
    ex1_up_to, first, second, tick
):
    """One statement gives dlogit_maxes (pinned in dlogits's probe) and dlogits's first part: the check re-runs the
    statement with dlogit_maxes's part set aside, as the grader does (probes.statements._without_pins)."""
    run, cells = ex1_up_to
    namespace = run("logit_maxes")
    assert run_cells(namespace, first, cells["test_dlogit_maxes"]).startswith("✔ dlogit_maxes")
    out = run_cells(namespace, second, cells["test_dlogits"])
    assert out.startswith("✔ dlogits" if tick else "✘ dlogits: the values are right on this batch"), out


def test_a_typo_in_the_line_of_the_max_path_is_named_as_the_grader_does(ex1_up_to):
    """The += of the max's path raises on any values (a typo): dlogits is the clone alone, ✘ as at grading."""
    run, cells = ex1_up_to
    namespace, typo = run("logits"), "logits.max(1).indeces"
    with pytest.raises(AttributeError):
        run_cells(namespace, f"dlogits = dnorm_logits.clone()\ndlogits += F.one_hot({typo}, 27) * dlogit_maxes")
    out = run_cells(namespace, cells["test_dlogits"])
    assert out.startswith("✘ dlogits: the values are right on this batch, but your code for dlogits leaves out"), out


@pytest.mark.parametrize(
    "step, answer",
    [
        ("logprobs", "dlogprobs = logprobs.grad.clone()"),  # the first step: no rule probe to catch it
        ("W2", "dW2 = torch.zeros_like(W2)\ndW2 += W2.grad"),
        ("b1", "db1 = getattr(b1, 'grad').clone()"),
    ],
)
def test_an_answer_read_from_autograd_is_a_cross_as_at_grading(ex1_up_to, step, answer):
    """.grad holds autograd's values here; while grading it holds none, and the grader's reading of the code takes
    the point. The check under the cell reads the answer's own code (from its last assignment on) with the grader's
    function and says so; what only the grader sees (a name read from .grad in an earlier cell) it leaves to it."""
    run, cells = ex1_up_to

    out = run_cells(run(step), answer, cells[f"test_d{step}"])
    assert out.startswith(f"✘ d{step}: ") and f"your code for d{step} reads autograd" in out, out
    namespace = run(step)
    run_cells(namespace, answer)
    assert hint(run_cells(namespace, f"self_check({step!r})"), f"d{step}").startswith(f"your code for d{step} reads")


def test_above_means_upstream_in_the_graph_not_earlier_in_time(ex1_up_to):
    """A wrong dnorm_logits, then going back to a wrong dcounts: dnorm_logits is downstream, not 'above'."""
    run, cells = ex1_up_to

    namespace = run("counts")
    run_cells(namespace, "dcounts = counts_sum_inv * dprobs", cells["test_dcounts"])  # a branch missing
    run_cells(namespace, "dnorm_logits = 2 * counts * dcounts", cells["test_dnorm_logits"])
    again = run_cells(namespace, "dcounts = counts_sum_inv * dprobs", cells["test_dcounts"])
    assert again.startswith("✘ dcounts: values differ"), again
    assert "above is not right yet" not in again
    run_cells(namespace, "dcounts_sum = counts_sum", cells["test_dcounts_sum"])  # an upstream one wrong
    again = run_cells(namespace, "dcounts = counts_sum_inv * dprobs", cells["test_dcounts"])
    assert "dcounts_sum above is not right yet: fix it first" in again, again


@pytest.mark.parametrize(
    "step, answer, says",
    [
        (
            "probs",
            "dprobs = 1.0 / probs",
            "this is the local derivative alone: the chain rule multiplies it by dlogprobs",
        ),
        ("counts", "dcounts = counts_sum_inv * dprobs", "only the path through probs: counts also feeds counts_sum"),
    ],
    ids=["local-derivative-alone", "one-path-only"],
)
def test_a_usual_chain_rule_slip_is_named(ex1_up_to, step, answer, says):
    run, cells = ex1_up_to

    out = run_cells(run(step), answer, cells[f"test_d{step}"])
    assert out.startswith(f"✘ d{step}: ") and says in out and "above is not right yet" not in out, out


def test_the_check_counts_the_wrong_entries_as_the_grader_does(ex1_up_to):
    run, cells = ex1_up_to
    out = run_cells(run("bnvar"), PLUS_FOR_TIMES, cells["test_dbnvar"])
    wrong = int(re.search(r"(\d+) of 64 entries differ", out).group(1))
    assert wrong > 32, out


def test_fix_first_names_a_gradient_above_whose_values_are_off_not_one_failing_only_its_rule(ex1_up_to):
    """dlogits without its tiny path through logit_maxes has right values: a wrong dbnvar below it is its own."""
    run, cells = ex1_up_to

    namespace = run("logits")
    run_cells(namespace, "dlogits = dnorm_logits.clone()", cells["test_dlogits"])
    for step in ["h", "W2", "b2", "hpreact", "bngain", "bnbias", "bnraw", "bnvar_inv"]:
        run_cells(namespace, cells[f"answer_d{step}"], cells[f"test_d{step}"])
    out = run_cells(namespace, "dbnvar = -0.5 * (bnvar + 1e-5) ** -0.5 * dbnvar_inv", cells["test_dbnvar"])
    assert out.startswith("✘ dbnvar: values differ") and "above is not right yet" not in out, out
    out = run_cells(namespace, cells["answer_dbndiff2"], cells["test_dbndiff2"])
    assert "but dbnvar above is not right yet" in out, out


def test_a_step_right_for_its_own_wrong_upstream_gradient_is_told_so_as_the_grader_tells_it(ex1_up_to):
    """The grader gives such a step its points (error carried forward): its check says so, and names what to fix;
    a step with a mistake of its own below a wrong one still hears "fix it first, then this one"."""
    run, cells = ex1_up_to
    namespace = run("counts")
    run_cells(namespace, "dcounts = counts_sum_inv * dprobs", cells["test_dcounts"])  # one path only
    out = run_cells(namespace, cells["answer_dnorm_logits"], cells["test_dnorm_logits"])
    assert out == (
        "✘ dnorm_logits: right for the gradients it is computed from as you have them, but dcounts above is not "
        "right yet: this step keeps its points; fix dcounts first, then run this cell again\n"
    )
    table = run_cells(namespace, 'self_check("norm_logits")')
    assert hint(table, "dnorm_logits").startswith("right for the gradients it is computed from as you have them")
    out = run_cells(namespace, "dnorm_logits = norm_logits * dcounts", cells["test_dnorm_logits"])
    assert "dcounts above is not right yet: fix it first" in out and "keeps its points" not in out, out
    run_cells(namespace, "dcounts = torch.zeros_like(counts)", cells["test_dcounts"])  # any product of it is zeros
    out = run_cells(namespace, "dnorm_logits = norm_logits * dcounts", cells["test_dnorm_logits"])
    assert "keeps its points" not in out, out


def test_a_missing_epsilon_is_no_constant_factor(ex1_up_to):
    """Without BatchNorm's 1e-5, dbnvar is 2.8 times the right value at neuron 0 only (its batch variance is about
    1e-5) and right elsewhere: the grader names no factor there, nor does the check; it says where, and what."""
    run, cells = ex1_up_to
    out = run_cells(run("bnvar"), "dbnvar = -0.5 * bnvar**-1.5 * dbnvar_inv", cells["test_dbnvar"])
    assert "times the right values" not in out and "constant factor" not in out, out
    assert "all in column 0 of 64: the forward line adds 1e-5 (ε)" in out, out
    out = run_cells(run("bnvar"), "dbnvar = -1.0 * (bnvar + 1e-5) ** -1.5 * dbnvar_inv", cells["test_dbnvar"])
    assert "twice the right values" in out, out  # a factor of every entry is still named


def test_a_sum_in_the_forward_pass_asks_for_a_broadcast_not_another_sum(ex1_up_to):
    run, cells = ex1_up_to
    out = run_cells(run("bndiff2"), "dbndiff2 = 1.0 / (n - 1) * dbnvar", cells["test_dbndiff2"])
    assert "dimension 0 is 1 but must be 32: the forward pass sums bndiff2 over dimension 0" in out, out
    out = run_cells(run("counts"), "dcounts = dcounts_sum", cells["test_dcounts"])
    assert "dimension 1 is 1 but must be 27: the forward pass sums counts over dimension 1" in out, out
    out = run_cells(  # counts_sum_inv is summed over nowhere: its sum over the wrong dimension is named as before
        run("counts_sum_inv"), "dcounts_sum_inv = (counts * dprobs).sum(0, keepdim=True)", cells["test_dcounts_sum_inv"]
    )
    assert "dimension 0 is 1 but must be 32: summed over the wrong dimension" in out, out


def ran(namespace, *cells):
    """Run cells as IPython does, with the helpers' post_run_cell record (In, and each cell's error, if any)."""
    out = []
    for code in cells:
        error = None
        try:
            out.append(run_cells(namespace, code))
        except Exception as raised:
            error = raised
        namespace["_RAN"].append((code, error))
    return "".join(out)


def test_a_check_under_an_answer_cell_that_stopped_with_an_error_says_so(ex1_up_to):
    """The value a check sees is not the cell's when the cell stopped: not 'not answered yet', nor an old ✔."""
    run, cells = ex1_up_to
    namespace = run("h")
    out = ran(namespace, "# dh: ...\ndh = dlogits @ W2", cells["test_dh"])  # (the shapes do not multiply)
    assert out.startswith("✘ dh: the last cell that computes dh stopped with RuntimeError (see its output)"), out
    ran(namespace, cells["answer_dh"])
    assert ran(namespace, cells["test_dh"]).startswith("✔ dh: shape")
    out = ran(namespace, "# dh: ...\ndh = dlogits @ W2.T\nprint(dh.shape())", cells["test_dh"])  # an old ✔ no more
    assert out.startswith("✘ dh: the last cell that computes dh stopped with TypeError"), out
    out = ran(namespace, "# dh: ...\ndh = dlogits @ W2.T\nraise NotImplementedError()", cells["test_dh"])
    assert out.startswith("✘ dh: the cell that computes dh still raises NotImplementedError: delete its line"), out
    table = ran(namespace, 'self_check("h")')
    assert hint(table, "dh").startswith("the cell that computes dh still raises NotImplementedError")
    table = ran(namespace, "cmp('h', dh, h)")  # (Exercise 2's table under its one answer)
    assert hint(table, "dh").startswith("the cell that computes dh still raises NotImplementedError")


def test_an_answer_cell_that_assigns_nothing_is_told_so(ex1_up_to):
    run, cells = ex1_up_to
    namespace = run("W2")
    out = ran(namespace, "# dW2: the gradient of loss with respect to W2\nh.T @ dlogits", cells["test_dW2"])
    assert out == "✘ dW2: the cell for dW2 ran, but it assigns no dW2: write its answer as `dW2 = ...`\n", out
    out = ran(namespace, "# dW2：损失对 W2 的梯度\nh.T @ dlogits", cells["test_dW2"])  # (the Chinese edition's colon)
    assert "it assigns no dW2" in out, out
    out = ran(namespace, "# dW2_by_loop: not this answer's cell\nh.T @ dlogits", cells["test_dW2"])
    assert out == "✘ dW2: not answered yet\n", out
    out = ran(namespace, "# dW2: the gradient of loss with respect to W2\ndW2 = h.T @ dlogits", cells["test_dW2"])
    assert out.startswith("✔ dW2: shape (64, 27) ok"), out


def test_an_answer_name_with_a_cyrillic_lookalike_letter_is_told_apart(ex1_up_to):
    """A Russian student's `dhpreact` typed with a Cyrillic р and е: the same to the eye, another name to Python; "it
    assigns no dhpreact: write it as `dhpreact = ...`" leaves them staring at a line that seems to do just that."""
    run, cells = ex1_up_to
    namespace = run("hpreact")
    out = ran(namespace, "# dhpreact: ...\ndhрrеact = (1.0 - h**2) * dh", cells["test_dhpreact"])
    assert out.startswith("✘ dhpreact: the cell for dhpreact assigns dhрrеact, which looks like dhpreact but is"), out
    assert "letters that are not Latin (р (U+0440), е (U+0435))" in out, out
    out = ran(namespace, "# dhpreact: ...\nt, dhрrеact = h, (1.0 - h**2) * dh", cells["test_dhpreact"])  # a tuple's
    assert out.startswith("✘ dhpreact: the cell for dhpreact assigns dhрrеact, which looks like dhpreact but is"), out
    out = ran(namespace, "# dhpreact: ...\ndhpreact_tmp = (1.0 - h**2) * dh", cells["test_dhpreact"])
    assert "it assigns no dhpreact" in out, out  # another name, not a lookalike


@pytest.mark.parametrize(
    "answer, tick",
    [
        ("dC_index_add = torch.zeros_like(C).index_add(0, Xb.view(-1), demb.view(-1, n_embd))", True),
        ("dC_index_add = torch.zeros_like(C)\ndC_index_add.index_add_(0, Xb.flatten(), demb.flatten(0, 1))", True),
        (
            "dC_index_add = torch.zeros_like(C)\nfor i, ix in enumerate(Xb.view(-1).tolist()):\n"
            "    dC_index_add[ix] += demb.view(-1, n_embd)[i]",
            False,
        ),
        ("dC_index_add = F.one_hot(Xb.view(-1), vocab_size).float().T @ demb.view(-1, n_embd)", False),
    ],
    ids=["index_add", "index_add_", "loop", "one_hot"],
)
def test_dC_index_add_is_a_tick_only_when_its_code_calls_index_add(ex1_up_to, answer, tick):
    """The grader reads the answer's code, and so does the check under its cell, with the same function."""
    run, cells = ex1_up_to

    namespace = run("C")
    assert run_cells(namespace, cells["answer_dC"], cells["test_dC"]).startswith("✔ dC")
    out = run_cells(namespace, answer, cells["test_dC_index_add"])
    if tick:
        assert out.startswith("✔ dC_index_add: shape (27, 10) ok"), out
    else:
        assert out.startswith(
            "✘ dC_index_add: the values are right, but your code for dC_index_add does not call "
            "index_add_ (or index_add): this cell asks for dC computed with it"
        ), out


@pytest.fixture(scope="module")
def ex3_namespace():
    """Exercise 3's setup with its own seed, outside Jupyter; the solved notebook's cells by grade_id."""
    nb = source(EX3)
    namespace = dict(run_setup(tuple(c.source for c in nb.cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647))
    return namespace, {grade_id(c): c.source for c in solved(release(EX3), nb).cells}


def run_in_ex3(ex3_namespace, *cells) -> str:
    """The cells run in a copy of Exercise 3's setup, with the self-check helpers; what they print."""
    namespace = {**ex3_namespace[0]}
    exec(HELPER_CODE, namespace)  # the helpers read this copy
    return run_cells(namespace, *cells)


@pytest.mark.parametrize(
    "answer, shown",
    [
        (None, "✔ dhprebn_biased: shape (32, 64) ok"),
        (  # the atomic chain
            "dbnraw = bngain * dhpreact_biased\ndbnvar = -0.5 * (bnvar_biased + 1e-5) ** -1.5 * "
            "(bndiff_biased * dbnraw).sum(0, keepdim=True)\ndbndiff = bnvar_inv_biased * dbnraw + 2 * bndiff_biased "
            "/ n * dbnvar\ndhprebn_biased = dbndiff - dbndiff.sum(0, keepdim=True) / n",
            "✔ dhprebn_biased: shape (32, 64) ok",
        ),
        (  # Bessel's factor kept from the first answer
            "dhprebn_biased = bngain * bnvar_inv_biased / n * (n * dhpreact_biased - dhpreact_biased.sum(0) "
            "- n / (n - 1) * bnraw_biased * (dhpreact_biased * bnraw_biased).sum(0))",
            "✘ dhprebn_biased: values differ from autograd's",
        ),
    ],
    ids=["fused", "atomic", "bessel-kept"],
)
def test_the_check_under_dhprebn_biased_compares_with_the_biased_forward_pass(ex3_namespace, answer, shown):
    cells = ex3_namespace[1]
    out = run_in_ex3(ex3_namespace, answer or cells["answer_dhprebn_biased"], cells["test_dhprebn_biased"])
    assert out.startswith(shown), out


def test_logits_detached_in_the_answer_cell_is_still_checked_against_autograd():
    """`logits = logits.detach()` rebinds logits to a tensor without .grad: full marks at grading, so the checks under
    the cell and in the table compare with autograd's gradient as the helpers found it, not "autograd has none"."""
    ex2 = "ex2_cross_entropy_backward"
    cells = {grade_id(c): c.source for c in solved(release(ex2), source(ex2)).cells}
    setup = tuple(c.source for c in source(ex2).cells if grade_id(c).startswith(SETUP_PREFIX))
    namespace = dict(run_setup(setup, 2147483647))
    exec(HELPER_CODE, namespace)
    answer = "logits = logits.detach()\n" + cells["answer_dlogits"]
    out = run_cells(namespace, answer, cells["check_dlogits"], cells["test_dlogits"])
    assert "autograd has no gradient" not in out and "✔ dlogits: shape (32, 27) ok" in out, out
    assert hint(run_cells(namespace, "self_check('logits')"), "dlogits") == "", out


@pytest.mark.parametrize(
    "answer, verdict",
    [
        (None, "✔ both sums are zero"),
        (  # Bessel's factor left out: wrong only in neuron 0 by the tolerance, but the second sum is not zero
            "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - bnraw * (dhpreact * bnraw).sum(0))",
            "✘ the second sum is not zero",
        ),
        (  # the mean's path left out
            "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))",
            "✘ the first sum is not zero",
        ),
    ],
    ids=["right", "bessel-left-out", "mean-left-out"],
)
def test_the_two_sanity_sums_say_which_path_of_dhprebn_is_off(ex3_namespace, answer, verdict):
    cells = ex3_namespace[1]
    out = run_in_ex3(ex3_namespace, answer or cells["answer_dhprebn"], cells["check_dhprebn_sums"])
    assert out.splitlines()[-1].startswith(verdict), out


def test_hpreact_fast_with_the_biased_variance_is_told_which_factor_is_off(ex3_namespace):
    """Every column stretched by √(n/(n-1)) is named as the variance divided by n; a missing bngain (a factor of its
    own in each column) gets no such word."""
    check = ex3_namespace[1]["test_hpreact_fast"]
    normed = "(hprebn - hprebn.mean(0, keepdim=True)) / (hprebn.var(0, keepdim=True{}) + 1e-5) ** 0.5"
    out = run_in_ex3(ex3_namespace, f"hpreact_fast = bngain * {normed.format(', unbiased=False')} + bnbias", check)
    assert out.startswith("✘ hpreact_fast: max difference") and "√(n/(n-1))" in out and "Bessel" in out, out
    out = run_in_ex3(ex3_namespace, f"hpreact_fast = {normed.format('')} + bnbias", check)
    assert out.startswith("✘ hpreact_fast: max difference") and "spread" not in out, out


def test_a_one_formula_gradient_is_not_told_to_fix_earlier_gradients_it_has_none_of(ex3_namespace):
    """dhprebn in one formula: the hint names the two paths through hprebn, and no earlier gradient of the
    student's (Exercise 3 gives dhpreact)."""
    cells = ex3_namespace[1]
    wrong = "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - bnraw * (dhpreact * bnraw).sum(0))"
    out = run_in_ex3(ex3_namespace, wrong, cells["test_dhprebn"])
    assert "hprebn feeds 2 lines of the forward pass (bndiff, bnmeani)" in out and "earlier gradient" not in out, out


EX2 = "ex2_cross_entropy_backward"


@pytest.fixture(scope="module")
def ex2_namespace():
    """Exercise 2's setup with its own seed, outside Jupyter; the solved notebook's cells by grade_id."""
    nb = source(EX2)
    namespace = dict(run_setup(tuple(c.source for c in nb.cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647))
    return namespace, {grade_id(c): c.source for c in solved(release(EX2), nb).cells}


def test_an_all_zero_dlogits_does_not_pass_the_rows_check(ex2_namespace):
    """The grader gives the rows' point nothing for an all-zero dlogits (its rows sum to zero, but it is no gradient:
    value_checks' all_zeros); the line under the cell said '✔ dlogits_row_sums' for it, a zero within any tolerance."""
    out = run_in_ex3(ex2_namespace, "dlogits = torch.zeros_like(logits)", ex2_namespace[1]["test_dlogits_rows"])
    assert "✘ dlogits_row_sums" in out and "✔" not in out, out


def test_the_rows_check_after_a_dlogits_cell_that_stopped_says_so(ex2_namespace):
    """A dlogits cell that raised left the dlogits of an earlier run in the kernel, and the rows' check ticked it (a
    cold read, 2026-12-07), where the grader, which runs the notebook once, gives the point nothing. It now says the
    cell stopped, as the gradient checks do; with the cell run again without its error, the tick comes back."""
    cells = ex2_namespace[1]
    namespace = {**ex2_namespace[0]}
    exec(HELPER_CODE, namespace)
    run_cells(namespace, cells["answer_dlogits"])
    namespace["_RAN"].append((cells["answer_dlogits"], None))
    stopped = cells["answer_dlogits"] + "\nprint(dlogits.shape())"
    namespace["_RAN"].append((stopped, TypeError("'torch.Size' object is not callable")))
    out = run_cells(namespace, cells["test_dlogits_rows"])
    assert out.startswith("✘ dlogits_row_sums: the last cell that computes dlogits stopped with TypeError"), out
    namespace["_RAN"].append((cells["answer_dlogits"], None))
    assert run_cells(namespace, cells["test_dlogits_rows"]).startswith("✔ dlogits_row_sums"), out


def test_a_one_formula_dlogits_is_not_sent_down_the_path_through_logit_maxes(ex2_namespace):
    """Exercise 2 says the subtraction of logit_maxes is not in the formula: the hint must not ask for its path. The
    table of one gradient says its verdict in words for one, and the rows' check says the sums must be zero."""
    cells = ex2_namespace[1]
    checks = cells["check_dlogits"], cells["test_dlogits"], cells["test_dlogits_rows"]
    out = run_in_ex3(ex2_namespace, "dlogits = F.softmax(logits, 1) - F.one_hot(Yb, 27) / n", *checks)
    assert "864 of 864 entries differ" in out and "logit_maxes" not in out and "+=" not in out, out
    assert "dlogits does not match autograd yet." in out and "0 of 1" not in out, out
    assert "✘ dlogits_row_sums: entries up to 9.7e-01 in size, where every one must be zero" in out, out
    out = run_in_ex3(ex2_namespace, cells["answer_dlogits"], *checks)
    assert "dlogits matches autograd." in out and "All 1 gradients" not in out, out


@pytest.mark.parametrize("answer", [".item()", ".view(1)", "", "* torch.ones(n)"])
def test_the_loss_fast_print_runs_whatever_loss_fast_is(ex2_namespace, answer):
    """A float, or one loss per example: the locked line above the check must not stop Run All before the check
    says what is wrong."""
    cells = ex2_namespace[1]
    answer = f"loss_fast = F.cross_entropy(logits, Yb){answer}"
    out = run_in_ex3(ex2_namespace, answer, cells["check_loss_fast"], cells["test_loss_fast"])
    assert out.splitlines()[-1].startswith("✔ loss_fast" if answer.endswith("Yb)") else "✘ loss_fast"), out


def test_a_transposed_vector_gradient_is_not_sent_to_a_matrix_product(ex3_namespace):
    """dbngain is a sum over the batch: (64, 1) is .T or the wrong keepdim, and no matrix product is involved."""
    out = run_in_ex3(
        ex3_namespace, "dbngain = (bnraw * dhpreact).sum(0, keepdim=True).T", ex3_namespace[1]["test_dbngain"]
    )
    assert "transposed: dbngain must be (1, 64), like bngain (no .T" in out and "matrix product" not in out, out


def test_hpreact_fast_wrong_only_in_neuron_0_says_so(ex3_namespace):
    """The epsilon added to the standard deviation: wrong only where the variance is about 1e-5 (neuron 0)."""
    answer = "hpreact_fast = bngain * (hprebn - hprebn.mean(0)) / (hprebn.std(0) + 1e-5) + bnbias"
    out = run_in_ex3(ex3_namespace, answer, ex3_namespace[1]["test_hpreact_fast"])
    assert out.startswith("✘ hpreact_fast: max difference") and "all in column 0 of 64" in out, out


@pytest.mark.parametrize(
    "answer, says",
    [
        (  # the right constant with the first forward pass's tensors (the grader names this one too)
            "dhprebn_biased = bngain * bnvar_inv * (dhpreact - dhpreact.mean(0) - bnraw * (dhpreact * bnraw).mean(0))",
            "reads the first forward pass's bnraw, bnvar_inv, dhpreact: use this forward pass's own (bnraw_biased, "
            "bnvar_inv_biased, dhpreact_biased)",
        ),
        (  # one of them mixed in: it was "0.9921 times the right values: a constant factor is missing or wrong"
            "g = bngain * dhpreact_biased\n"
            "dhprebn_biased = bnvar_inv * (g - g.mean(0) - bnraw_biased * (g * bnraw_biased).mean(0))",
            "reads the first forward pass's bnvar_inv: use this forward pass's own (bnvar_inv_biased)",
        ),
        ("dhprebn_biased = dhprebn.clone()", "starts from dhprebn, the first forward pass's gradient"),
    ],
    ids=["first-tensors", "one-mixed-in", "copied"],
)
def test_dhprebn_biased_from_the_first_forward_pass_is_told_so(ex3_namespace, answer, says):
    cells = ex3_namespace[1]
    out = run_in_ex3(ex3_namespace, cells["answer_dhprebn"], answer, cells["test_dhprebn_biased"])
    assert out.startswith("✘ dhprebn_biased: values differ") and says in out, out


DROPPED_KEEPDIM = "dcounts_sum_inv = (counts * dprobs).sum(1)"  # (32,) where counts_sum_inv is (32, 1)


def test_a_step_right_for_its_own_upstream_of_the_wrong_shape_keeps_its_points_under_its_cell(ex1_up_to):
    """dcounts_sum_inv without keepdim=True: the right dcounts_sum from it is (32, 32). The grader applies the rule to
    the student's own dcounts_sum_inv, broadcast as in the student's code, and keeps the step's point ("fix
    dcounts_sum_inv first"); the check under dcounts_sum asked for a sum over dimension 1 instead, and a student who
    added it lost the point that the grader had given."""
    run, cells = ex1_up_to
    namespace = run("counts_sum_inv")
    run_cells(namespace, DROPPED_KEEPDIM, cells["test_dcounts_sum_inv"])
    out = run_cells(namespace, cells["answer_dcounts_sum"], cells["test_dcounts_sum"])
    assert out == (
        "✘ dcounts_sum: right for the gradients it is computed from as you have them, but dcounts_sum_inv above is "
        "not right yet: this step keeps its points; fix dcounts_sum_inv first, then run this cell again\n"
    ), out
    table = run_cells(namespace, 'self_check("counts_sum")')
    assert hint(table, "dcounts_sum").startswith("right for the gradients it is computed from as you have them")
    # the sum the old hint asked for: wrong for any dcounts_sum_inv, and the grader takes the point
    out = run_cells(namespace, "dcounts_sum = (-counts_sum**-2 * dcounts_sum_inv).sum(1, keepdim=True)")
    out = run_cells(namespace, cells["test_dcounts_sum"])
    assert out.startswith("✘ dcounts_sum: ") and "keeps its points" not in out, out


@pytest.mark.parametrize(
    "slip, first",
    [
        ({"counts_sum_inv": DROPPED_KEEPDIM}, "dcounts_sum_inv"),
        ({"counts_sum": "dcounts_sum = (-counts_sum**-2 * dcounts_sum_inv).squeeze()"}, "dcounts_sum"),
    ],
    ids=["two-up", "one-up"],
)
def test_a_cell_that_stopped_on_an_upstream_of_the_wrong_shape_is_sent_up_as_the_grader_sends_it(
    ex1_up_to, slip, first
):
    """dcounts's `dcounts += torch.ones_like(counts) * dcounts_sum` raises on a dcounts_sum of the wrong shape. The
    grader runs dcounts's code again on a dcounts_sum of the right shape, keeps its points and says to fix the step
    above; the check said to fix the error in dcounts's own cell."""
    run, cells = ex1_up_to
    (step, answer), *_ = slip.items()
    namespace = run(step)
    ran(namespace, answer, cells[f"test_d{step}"])
    if step == "counts_sum_inv":
        ran(namespace, cells["answer_dcounts_sum"], cells["test_dcounts_sum"])
    out = ran(namespace, cells["answer_dcounts"], cells["test_dcounts"])
    assert out == (
        "✘ dcounts: the last cell that computes dcounts stopped with RuntimeError on your own dcounts_sum (not "
        "defined, or not of the shape and dtype of autograd's). Run again on random dcounts_sum of the right shape, "
        "as the autograder does, your code for dcounts follows the backward rule: this step keeps its points; "
        f"fix {first} above first, then run this cell again\n"
    ), out
    assert hint(ran(namespace, 'self_check("counts")'), "dcounts").startswith("the last cell that computes dcounts")
    wrong = "dcounts = counts_sum_inv * dprobs\ndcounts += 2 * torch.ones_like(counts) * dcounts_sum"  # its own slip
    out = ran(namespace, wrong, cells["test_dcounts"])
    assert "stopped with RuntimeError (see its output)" in out and "keeps its points" not in out, out


def test_the_checks_of_a_dropped_keepdim_agree_with_the_grader():
    """The same slips, graded in process: the grader's verdicts the checks above repeat (and no step but the slip's
    own loses a point)."""
    from support.audit import release as audit_release
    from support.in_process import autograde, source_notebook

    answers = {
        "two_up": {"answer_dcounts_sum_inv": DROPPED_KEEPDIM},
        "summed": {
            "answer_dcounts_sum_inv": DROPPED_KEEPDIM,
            "answer_dcounts_sum": "dcounts_sum = (-counts_sum**-2 * dcounts_sum_inv).sum(1, keepdim=True)",
        },
    }
    graded = autograde(EX1, {k: solved(audit_release(EX1), source_notebook(EX1), v) for k, v in answers.items()})
    assert graded["two_up"].lost() == ["test_dcounts_sum_inv"]
    kept = graded["two_up"].messages
    assert "this step keeps its points; fix dcounts_sum_inv first" in kept["test_dcounts_sum"]
    assert "keeps its points; fix dcounts_sum_inv first" in kept["test_dcounts"]
    assert sorted(graded["summed"].lost()) == ["test_dcounts_sum", "test_dcounts_sum_inv"]


@pytest.mark.parametrize(
    "slip, step",
    [
        ("dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True).T", "bnvar"),  # entry by entry: (1, 64) * (64, 1)
        ("dnorm_logits = (counts * dcounts).T", "logit_maxes"),  # a constant: -dnorm_logits.sum(1, keepdim=True)
        ("dbndiff = (bndiff2 * 2 * dbndiff2 + bnvar_inv * dbnraw).T", "bnmeani"),  # the same through a sum over 0
        ("dlogits = (dnorm_logits + F.one_hot(logits.max(1).indices, 27) * dlogit_maxes).T", "b2"),  # b2 + (32, 27)
    ],
    ids=["times-entries", "minus", "minus-summed", "added-in-front"],
)
def test_a_step_below_a_transposed_upstream_keeps_its_points_under_its_cell(ex1_up_to, slip, step):
    """The grader's formula takes the student's own upstream gradient in its shape as the student's code does: a
    transposed one gives the same wrong shape in both, and the step keeps its points; its check says so."""
    run, cells = ex1_up_to
    upstream = slip.split(" =")[0]
    namespace = run(upstream[1:])
    run_cells(namespace, slip, cells[f"test_{upstream}"])
    out = run_cells(namespace, cells[f"answer_d{step}"], cells[f"test_d{step}"])
    assert f"this step keeps its points; fix {upstream} first" in out, out


@pytest.mark.parametrize(
    "code, line",
    [
        ("h = h.T\ndW2 = h @ dlogits", "h = h.T"),
        ("h, g = h.T, dlogits\ndW2 = h @ g", "h, g = h.T, dlogits"),
        ("h: torch.Tensor = h.T\ndW2 = h @ dlogits", "h: torch.Tensor = h.T"),
        ("dW2 = (h := h.T) @ dlogits", "dW2 = (h := h.T) @ dlogits"),
        ("for h in [h.T]:\n    dW2 = h @ dlogits", "for h in [h.T]:"),
    ],
)
def test_a_forward_tensor_that_an_earlier_cell_rebound_is_named_under_the_step_that_reads_it(ex1_up_to, code, line):
    """h = h.T in dW2's cell: dhpreact's right code then raises on it. The check under dhpreact names the line that
    rebound h, as the grader does (which keeps the step's points: its code is right for the forward pass's h); a
    tuple's, an annotated assignment, a walrus or a loop too (before, those read "a cell rebound it")."""
    run, cells = ex1_up_to
    namespace = run("W2")
    run_cells(namespace, code, cells["test_dW2"], cells["answer_db2"], cells["test_db2"])
    with pytest.raises(RuntimeError):
        run_cells(namespace, cells["answer_dhpreact"])
    shown = run_cells(namespace, cells["test_dhpreact"])
    assert f"✘ dhpreact: your code for dhpreact reads h, which is no longer the forward pass's h: `{line}`" in shown
    assert "fix" not in shown.split(line)[0], shown  # not sent to a step above

"""Exercise 1, every known case, graded in process (tests/in_process.py): the hidden tests run as at autograde,
the real JudgeAnswers judges their reports. tests/slow/test_ex1_pipeline.py runs a few of them through nbgrader."""

import re

import nbformat
import pytest
from support.cases_ex1 import (
    ALTERNATIVES,
    BELOW_A_SLIP,
    CHEATS,
    INDEX_ADD_MISTAKES,
    KEEPDIM,
    KINDS,
    LATER_LINES,
    MISTAKES,
    NB,
    ONE_CELL_SLIPS,
    RULE_MISTAKES,
    SLIPS_TOGETHER,
    WRONG_UPSTREAM,
    WRONG_VALUES_WRONG_SHAPE,
    submissions,
)
from support.course import REPO
from support.in_process import autograde, judge, selected, source_notebook
from support.words import PSEUDO, pseudo_translated, rendered, untranslated

from autograder.engine.backward_rules import SHAPE_ONLY_SHARE, STEP_BY_NAME, STEPS

ALL_STEPS = [s.name for s in STEPS]


@pytest.fixture(scope="module")
def graded(request):
    release = nbformat.read(REPO / "release" / "backprop_ninja" / f"{NB}.ipynb", as_version=4)
    return autograde(NB, selected(request, submissions(release, source_notebook(NB))))


def lost_steps(graded, student) -> list:
    return [g.removeprefix("test_d") for g in graded[student].lost()]


def test_solution_gets_full_marks(graded):
    assert lost_steps(graded, "solution") == []
    assert all(m.startswith("✔") for m in graded["solution"].messages.values() if m), graded["solution"].messages


def test_blank_release_gets_zero_without_crashing(graded):
    assert sum(graded["blank"].points.values()) == 0
    for step in ALL_STEPS:
        assert "not answered yet" in graded["blank"].messages[f"test_d{step}"]


@pytest.mark.parametrize("student", MISTAKES)
def test_a_mistake_costs_exactly_its_own_step(graded, student):
    _, step, words = MISTAKES[student]
    assert lost_steps(graded, student) == [step], graded[student].messages
    message = graded[student].messages[f"test_d{step}"]
    assert words in message, message


def test_the_count_of_wrong_entries_counts_those_small_beside_the_largest_too(graded):
    """Only neuron 0's entry of this dbnvar is off by more than the step's tolerance, and every entry is wrong: the
    count says most of them, not 1 of 64 (tolerance.wrong_entries)."""
    message = graded["m_bnvar_plus"].messages["test_dbnvar"]
    wrong, total = map(int, re.search(r"(\d+) of (\d+) entries wrong", message).groups())
    assert total == 64 and wrong > total // 2, message


@pytest.mark.parametrize(
    "student, later, first",
    [
        ("m_counts_sum_inv_keepdim", "counts", "counts_sum_inv"),  # dcounts's `+=` raised on a (32, 32) dcounts_sum
        ("m_counts_sum_squeezed", "counts", "counts_sum"),  # ... on a (32,) one: the probe tries the right shape too
        ("m_one_hot_no_classes", "probs", "logprobs"),  # dprobs's cell raised, and every cell after it
        ("m_one_hot_no_classes", "C", "logprobs"),  # the step to fix is named, not the demb its cell read
        ("m_logprobs_float64", "h", "logprobs"),  # float64 @ float32 raised; the float64 steps between are right
        ("m_logprobs_float64", "C", "logprobs"),  # ... and followed up to the one whose own check failed
        ("m_demb_transposed_after_a_view", "C", "emb"),  # demb.view(-1, n_embd) raised on a transposed demb
    ],
)
def test_a_cell_broken_by_an_earlier_slip_keeps_its_points_by_its_rule(graded, student, later, first):
    assert graded[student].points[f"test_d{later}"] == STEP_BY_NAME[later].points, graded[student].messages
    message = graded[student].messages[f"test_d{later}"]
    assert "so the grader ran it again on random" in message and "it follows the backward rule" in message, message
    assert f"fix d{first} first" in message, message


@pytest.mark.parametrize("student", INDEX_ADD_MISTAKES)
def test_dC_asked_for_with_index_add_loses_only_its_own_cell_with_its_kind(graded, student):
    """A loop or a one-hot product is right for dC, and dC keeps its points; dC_index_add asks for index_add_."""
    assert lost_steps(graded, student) == ["C_index_add"], graded[student].messages
    assert graded[student].diagnoses["test_dC_index_add"] == KINDS[student]
    assert graded[student].points["test_dC"] == STEP_BY_NAME["C"].points


def test_dC_index_add_is_judged_by_its_rule_and_names_what_it_is(graded):
    for student in ("solution", "alt_a", "alt_b"):
        message = graded[student].messages["test_dC_index_add"]
        assert message.startswith("✔ dC_index_add: 1 of 1 point\n") and probe_notes(message) == [], message
    message = graded["m_index_add_one_hot"].messages["test_dC_index_add"]
    assert message.startswith("✘ dC_index_add: 0 of 1 point\n") and "correct" not in message, message


@pytest.mark.parametrize("student", RULE_MISTAKES)
def test_a_rule_right_only_on_real_upstream_gradients_is_caught_by_its_probe(graded, student):
    """Issue 12: these give autograd's values (or nearly) on every batch; the step's rule says otherwise."""
    _, step, _ = RULE_MISTAKES[student]
    message = graded[student].messages[f"test_d{step}"]
    assert graded[student].points[f"test_d{step}"] == 0
    if step != "bnvar":  # the dropped epsilon is also visible in the values, on neuron 0
        assert "has the right values on this batch, but not its backward rule" in message, message


@pytest.mark.parametrize("student", KEEPDIM)
def test_right_values_in_a_keepdim_shape_earn_a_share_and_the_dimension_is_named(graded, student):
    step = KEEPDIM[student]
    assert graded[student].points[f"test_d{step}"] == SHAPE_ONLY_SHARE * STEP_BY_NAME[step].points
    message = graded[student].messages[f"test_d{step}"]
    assert "dimension" in message and "the values are right" in message, message


@pytest.mark.parametrize("student", ONE_CELL_SLIPS)
def test_a_slip_that_stops_a_cell_of_every_answer_costs_its_own_step(graded, student):
    assert lost_steps(graded, student) == sorted(ONE_CELL_SLIPS[student][1]), graded[student].messages


@pytest.mark.parametrize("student", BELOW_A_SLIP)
def test_a_slip_below_a_broken_upstream_costs_its_own_step_too(graded, student):
    """The rule probe that keeps a step's points when its upstream gradients are broken keeps no more than they
    would be with them right: a size-1 dimension dropped or added in the step's own code costs its share (KEEPDIM),
    a typo that stopped its cell before the answer the step, a dC_index_add without index_add_ its cell."""
    assert lost_steps(graded, student) == sorted(BELOW_A_SLIP[student][2]), graded[student].messages


@pytest.mark.parametrize("student", WRONG_UPSTREAM)
def test_a_gradient_from_another_upstream_gradient_is_named_as_such(graded, student):
    """`dW1 = embcat.T @ dhpreact`: the step's rule fed another gradient of the notebook. Before, its message was the
    generic "N of M entries wrong ... Re-derive the local derivative", which sent the student to the wrong place."""
    step = WRONG_UPSTREAM[student][1]
    assert graded[student].diagnoses[f"test_d{step}"] == "wrong_upstream", graded[student].messages


def test_a_gradient_from_another_upstream_gradient_below_a_slip_is_named_and_judged_from_the_students_own(graded):
    message = graded["m_wrong_upstream_below_a_slip"].messages["test_dW1"]
    assert "what dW1 would be if dhpreact were its upstream gradient" in message, message
    assert "(judged from your own dhprebn, which is wrong too)" in message, message


@pytest.mark.parametrize("student", SLIPS_TOGETHER)
def test_slips_beside_other_forms_cost_each_its_own_step_in_one_submission(graded, student):
    """Twenty slips in one notebook (einsum over the wrong axis, argmin, a mean for a sum, ...): each step after a slip
    is judged on the student's own upstream values (or, where its cell raised on them, by its rule) and keeps its
    points; a float64 of its own code costs its step there too. A helper whose assert says "gradient" is a slip, never
    autograd's; and a gradient that was not defined at its check, nor later, did not "change after its check"."""
    assert lost_steps(graded, student) == sorted(SLIPS_TOGETHER[student][1]), graded[student].messages
    messages = graded[student].messages.values()
    assert not any("computed with autograd" in m or "changed after its check" in m for m in messages), messages


@pytest.mark.parametrize("student", WRONG_VALUES_WRONG_SHAPE)
def test_wrong_values_in_a_wrong_shape_earn_nothing(graded, student):
    assert graded[student].points[f"test_d{WRONG_VALUES_WRONG_SHAPE[student]}"] == 0


def test_cell_magics_that_run_their_code_in_place_are_read_through(graded):
    """%%time, %%capture and %time hold the answer's code in a string (IPython's history has run_cell_magic): the rule
    probe and dC_index_add's check read the code it ran. Before, a wrong rule under %%time kept its points, and a
    right dC_index_add under it lost its point."""
    for right in ("alt_cell_magics", "alt_nested_cell_magics"):  # one magic over another too
        assert lost_steps(graded, right) == [], graded[right].messages
        assert all(probe_notes(m) == [] for m in graded[right].messages.values()), graded[right].messages
    for wrong in ("m_logits_max_path_timed", "m_logits_max_path_nested_magics"):
        assert lost_steps(graded, wrong) == ["logits"], graded[wrong].messages
        message = graded[wrong].messages["test_dlogits"]
        assert "has the right values on this batch, but not its backward rule" in message, message


def test_running_every_answer_cell_twice_grades_like_the_solution(graded):
    assert graded["alt_every_cell_twice"].points == graded["solution"].points
    assert all(m.startswith("✔") for m in graded["alt_every_cell_twice"].messages.values() if m)


def test_a_gradient_changed_in_place_after_its_check_is_named(graded):
    assert lost_steps(graded, "m_alias_dhprebn") == []
    message = graded["m_alias_dhprebn"].messages["test_dhprebn"]
    assert "dbndiff changed after its check: it now holds the values of dhprebn" in message, message


def test_error_carried_forward_names_the_upstream_gradient(graded):
    message = graded["m_probs_sign"].messages["test_dcounts_sum_inv"]
    assert "fix dprobs first" in message and "✔" in message


def test_a_carried_forward_step_calls_wrong_only_the_upstream_gradients_that_are(graded):
    # dbndiff is judged with the student's dbndiff2 (wrong) and dbnraw (right, though not bit-exact)
    message = graded["m_bndiff2_biased"].messages["test_dbndiff"]
    assert "correct for your dbndiff2, which is wrong" in message and "dbnraw" not in message, message


def test_steps_further_down_name_the_step_to_fix_not_their_neighbour(graded):
    # dcounts_sum is right for dcounts_sum_inv, which is right for the wrong dprobs: the step to fix is dprobs
    for cell in ("test_dcounts_sum", "test_dh", "test_dC"):
        message = graded["m_probs_sign"].messages[cell]
        assert "✔" in message and "fix dprobs first" in message, message
    assert "fix dcounts_sum_inv first" not in graded["m_probs_sign"].messages["test_dcounts_sum"]


# Two grading seeds (of 30 tried) on which the biased dbndiff2's error stayed within dhprebn's tolerance, yet grew
# past dembcat's: dembcat, right for the student's dhprebn, lost its point.
@pytest.mark.parametrize("seed", [1812976885, 124729223])
def test_a_small_error_from_upstream_that_grows_further_down_costs_only_its_own_step(seed):
    release = nbformat.read(REPO / "release" / "backprop_ninja" / f"{NB}.ipynb", as_version=4)
    student = "m_bndiff2_biased"
    graded = autograde(NB, {student: submissions(release, source_notebook(NB))[student]}, seed=seed)
    assert lost_steps(graded, student) == ["bndiff2"], graded[student].messages
    message = graded[student].messages["test_dembcat"]
    assert "✔" in message and "fix dbndiff2 first" in message, message


@pytest.mark.parametrize(
    "student",
    [
        *ALTERNATIVES,
        "alt_one_cell",
        "alt_one_cell_self_checks",
        "alt_one_cell_compare_asserts",
        "alt_split_cells",
        "alt_shell_commands",
    ],
)
def test_other_correct_formulas_and_layouts_get_full_marks(graded, student):
    assert lost_steps(graded, student) == [], graded[student].messages


def test_answers_inside_an_if_or_a_try_are_re_run_by_their_probe(graded):
    """A probe re-runs an `if` or a `try` that computes the answer whole: a right one is checked by its rule (no note
    that it could not be), and a rule mistake inside one is caught (both lose their step: MISTAKES)."""
    messages = graded["alt_in_blocks"].messages
    for step in ("logits", "logit_maxes"):
        assert "could not re-run" not in messages[f"test_d{step}"], messages[f"test_d{step}"]
    for student in ("m_dlogits_no_max_path_in_if", "m_logit_maxes_sign_in_try"):
        message = graded[student].messages[f"test_d{MISTAKES[student][1]}"]
        assert "has the right values on this batch, but not its backward rule" in message, message


def test_shell_commands_say_that_they_do_not_run_while_grading(graded):
    printed = "".join(
        o.get("text", "") for c in graded["alt_shell_commands"].notebook.cells for o in c.get("outputs", [])
    )
    assert "(shell commands do not run while grading: !pip install einops)\n" in printed, printed
    assert "(shell commands do not run while grading: !ls)\n" in printed, printed


def test_exact_zeros_are_right_where_the_gradient_is_zero_and_say_why(graded):
    messages = graded["alt_c"].messages
    assert "exactly zero, which is right: subtracting a row's max" in messages["test_dlogit_maxes"]
    assert "exactly zero, which is right: BatchNorm subtracts the batch mean" in messages["test_db1"]
    assert "The backward rule gives values up to" in messages["test_db1"]


def test_a_probe_that_cannot_separate_the_rule_says_so_and_the_value_decides(graded):
    message = graded["alt_b"].messages["test_dhprebn"]  # the fused formula, from dhpreact
    assert message.startswith("✔") and "is computed from dhpreact, further up the graph" in message, message


def test_a_probe_that_cannot_run_says_so_and_the_value_decides(graded):
    message = graded["alt_probe_cannot_run"].messages["test_dh"]
    assert message.startswith("✔") and "could not re-run your code for dh with other inputs: AttributeError" in message


def test_the_probe_is_silent_when_the_rule_holds(graded):
    assert "rule" not in graded["solution"].messages["test_dcounts"]
    assert "rule" not in graded["alt_d"].messages["test_dhprebn"]  # dbnmeani written out: consistent pins


def test_answers_inside_a_with_block_are_probed_like_the_others(graded):
    """`with torch.no_grad():` (nested too) around an answer: the probe re-runs its statements and concludes."""
    messages = graded["alt_no_grad"].messages
    for step in ("dlogit_maxes", "dlogits", "db1", "dC"):
        assert messages[f"test_{step}"].startswith("✔") and probe_notes(messages[f"test_{step}"]) == [], messages


@pytest.mark.parametrize("student", CHEATS)
def test_answers_from_autograd_earn_nothing(graded, student):
    _, _, steps, words = CHEATS[student]
    assert lost_steps(graded, student) == sorted(steps)
    assert words in graded[student].messages[f"test_d{steps[0]}"]


def test_pasted_values_earn_nothing(graded):
    assert lost_steps(graded, "c_pasted_values") == ["b2"]


def test_neutralised_cells_earn_nothing(graded):
    assert sum(graded["c_blank_cells"].points.values()) == 0
    assert "ran to the end but reported nothing" in graded["c_blank_cells"].messages["test_dW1"]
    assert [p.kind for p in graded["c_blank_cells"].problems] == ["no_answer_reported"]


def test_a_dead_kernel_keeps_the_points_earned_before_it(graded):
    assert lost_steps(graded, "k_dies_midway") == sorted([*ALL_STEPS[ALL_STEPS.index("h") :], "C_index_add"])
    assert "kernel died" in graded["k_dies_midway"].messages["test_dW2"]


def stderr_cells(graded, student) -> list:
    """Cells that wrote to stderr (nbgrader gives a graded cell that does 0 points)."""
    cells = graded[student].notebook.cells
    return [i for i, c in enumerate(cells) for o in c.get("outputs", []) if o.get("name") == "stderr"]


def probe_notes(message: str) -> list:
    """The lines of a message that say a probe could not judge (they are in parentheses)."""
    return [line for line in message.splitlines() if line.strip().startswith("(")]


@pytest.mark.parametrize("student", ["solution", "alt_one_cell", *LATER_LINES])
def test_a_later_line_changes_no_verdict_of_an_earlier_answer(graded, student):
    """Issue 24: each probe re-runs its statements on what they read when they ran, not on the namespace the test
    cell finds (the lecture's dC loop over n leaves n = 2); every answer keeps its points, every probe concludes."""
    assert lost_steps(graded, student) == [], graded[student].messages
    for cell, message in graded[student].messages.items():
        assert message.startswith("✔") and probe_notes(message) == [], (cell, message)
    assert stderr_cells(graded, student) == []


def test_what_a_snapshot_cannot_copy_leaves_the_answer_to_its_value_and_says_so(graded):
    assert lost_steps(graded, "honest_uncopied") == []
    message = graded["honest_uncopied"].messages["test_dbndiff2"]
    assert "read sizes, a Sizes, which it cannot copy" in message and "judged by its value alone" in message, message
    others = {c: m for c, m in graded["honest_uncopied"].messages.items() if c != "test_dbndiff2"}
    assert not any(probe_notes(m) for m in others.values()), others


def test_every_word_a_student_reads_goes_through_the_catalog(graded, monkeypatch):
    """Every student's feedback in a pseudo-translated edition: each line of each verdict and of the table of steps
    comes from a template of the catalog (it is marked), and every reason holds words. JudgeAnswers itself writes it
    so, in the edition it is given."""
    pseudo_translated(monkeypatch)
    assert untranslated(NB, graded) == []
    for student in ("blank", "m_probs_sign", "m_bnbias_keepdim"):
        again = judge(NB, student, graded[student].executed, PSEUDO)
        assert again.messages == rendered(graded[student], PSEUDO)[0]
        assert (again.points, again.diagnoses) == (graded[student].points, graded[student].diagnoses)


@pytest.mark.parametrize(
    "student, line",
    [
        ("alt_h_rebound_in_dW2", "h = h.T"),
        ("alt_h_rebound_by_a_tuple", "h, g = h.T, dlogits"),
        ("alt_h_rebound_by_a_walrus", "dW2 = (h := h.T) @ dlogits"),
    ],
)
def test_a_temporary_named_as_a_forward_tensor_costs_nothing_and_the_later_step_names_it(graded, student, line):
    """h = h.T in dW2's cell makes the later dhpreact raise in the notebook: its code is right for the forward pass's
    h, so it keeps its points, and its words name the line that rebound h (a tuple's assignment or a walrus too)."""
    student = graded[student]
    assert student.lost() == [], student.messages
    assert f"read h after your cell of dW2 rebound it (`{line}`)" in student.messages["test_dhpreact"]
    assert "fix dhpreact first" in student.messages["test_dbngain"], student.messages["test_dbngain"]


def test_a_forged_probe_of_zero_pins_earns_nothing(graded):
    """A kernel that reports every pin as exact zeros entry by entry (and zeros as what the code gave, which follows
    every rule on such pins) earns nothing by it: the grader counts a zero of a pin only where the student's own
    gradient, as reported, has it. Before, it earned every step but the first, by its rule or as set up."""
    assert sum(graded["c_forged_zero_pins"].points.values()) == 0, graded["c_forged_zero_pins"].messages
    # (its cell reads globals(), a namespace by keys: code the grader cannot read, every answer from then on)
    from_hpreact = sorted([*ALL_STEPS[ALL_STEPS.index("hpreact") :], "C_index_add"])
    assert lost_steps(graded, "c_forged_zero_pins_as_set_up") == from_hpreact, graded["c_forged_zero_pins_as_set_up"]

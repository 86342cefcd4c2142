"""Exercise 5's visible checks judge as the grader: a ✔ under a graded cell means the point.

The notebook's own batch, the self-check helpers (with the engine's rule probe and tolerance, and Exercise 5's table
of steps, STEP_TABLE), the course's answers and every case of tests/support/cases_ex5.py, run cell by cell outside
Jupyter as test_visible_checks_judge_as_the_grader.py runs Exercise 1.
"""

import pytest
import torch
from support.cases_ex5 import ALTERNATIVES, MISTAKES, NB5
from test_student_notebooks import HELPERS, release, run_cells, source

from autograder.authoring.submissions import grade_id, solved
from autograder.common.naming import SETUP_PREFIX
from autograder.engine.operators import OPERATOR_STEPS
from autograder.engine.reference import run_setup, strip_hidden

NAMES = [s.name for s in OPERATOR_STEPS]


@pytest.fixture(scope="module")
def notebook():
    """run(changes, stop=None): the notebook's answer and graded cells with ``changes``, from Part 1 up to (not
    including) step ``stop``; returns what each graded cell printed, by step, and the namespace."""
    setup = tuple(c.source for c in source(NB5).cells if grade_id(c).startswith(SETUP_PREFIX))
    base = dict(run_setup(setup, 2147483647))  # the notebook's own SEED
    # each run starts from these values: an answer that changes a given tensor in place (dhgelu = dhdrop, then
    # dhgelu *= ...: tests/support/cases_ex5.py's alt_f_aliases) must not change it for the runs after it
    values = {k: v.detach().clone() for k, v in base.items() if isinstance(v, torch.Tensor)}
    # read and compiled once (solved copies the release): 16 of each run's 60 ms were reading both notebooks again
    # and compiling the helper cell
    release_nb, source_nb = release(NB5), source(NB5)
    helpers = compile(strip_hidden(HELPERS), "<string>", "exec")

    def run(changes=None, stop=None):
        cells = {grade_id(c): c.source for c in solved(release_nb, source_nb, changes).cells}
        with torch.no_grad():
            for k, v in values.items():
                base[k].copy_(v)
        namespace = {**base}
        exec(helpers, namespace)
        printed = {}
        for name in NAMES[: NAMES.index(stop) if stop else None]:
            printed[name] = run_cells(namespace, cells[f"answer_d{name}"], cells[f"test_d{name}"])
        return printed, namespace, cells

    return run


def test_the_course_answers_are_ticked_and_the_checklist_is_complete(notebook):
    printed, namespace, cells = notebook()
    for name, out in printed.items():
        assert out.startswith(f"✔ d{name}: shape") and out.count("\n") == 1, out
    assert "All 15 gradients match autograd." in run_cells(namespace, cells["check_all"])


@pytest.mark.parametrize("mistake", MISTAKES)
def test_every_known_mistake_is_a_cross_under_its_cell(notebook, mistake):
    changes, expected = MISTAKES[mistake]
    printed, _, _ = notebook(changes)
    for cell in expected:
        name = cell.removeprefix("test_d")
        assert printed[name].startswith(f"✘ d{name}"), printed[name]


def test_a_factor_moved_up_a_step_is_a_cross_under_that_step_only(notebook):
    """As the grader judges it: dscores / √head_size is wrong, and dq and dk without the scale are right with it."""
    printed, _, _ = notebook(MISTAKES["scale_moved_into_dscores"][0], stop="emb")
    assert printed["scores"].startswith("✘ dscores"), printed["scores"]
    assert printed["q"].startswith("✔ dq") and printed["k"].startswith("✔ dk"), (printed["q"], printed["k"])


def test_a_rule_right_only_on_this_batch_is_named_under_its_cell(notebook):
    printed, _, _ = notebook(MISTAKES["dropout_for_small_gradients_only"][0])
    assert printed["hgelu"].startswith("✘ dhgelu: the values are right on this batch, but not the backward rule")


@pytest.mark.parametrize("student", ALTERNATIVES)
def test_other_correct_formulas_are_ticked(notebook, student):
    printed, _, _ = notebook(ALTERNATIVES[student])
    # the line of the cell's own gradient (an answer's own prints come before it: print(dhln.shape))
    marks = {name: [s[0] for s in out.splitlines() if s[2:].startswith(f"d{name}:")] for name, out in printed.items()}
    assert [name for name, own in marks.items() if own != ["✔"]] == [], printed


def test_above_follows_the_graph(notebook):
    """A wrong dropout step is named under GELU's (its upstream); a wrong ReLU step, in its own network, is not
    named under LeakyReLU's."""
    printed, namespace, cells = notebook(MISTAKES["dropout_not_rescaled"][0], stop="lngain")
    assert "but dhgelu above is not right yet" in printed["hln"], printed["hln"]  # (dhln is right for it)
    out = run_cells(namespace, "drelu_in = drelu_out.clone()", cells["test_drelu_in"])
    out += run_cells(namespace, "dleaky_in = dleaky_out.clone()", cells["test_dleaky_in"])
    assert out.count("✘") == 2 and "above" not in out, out


def test_a_tensor_changed_through_a_later_alias_names_the_alias_that_changed_it(notebook):
    """`datt_out = dx` (checked, unchanged) and then `demb = dx; demb += ...`: demb changed dx and datt_out, so the
    hint names demb for both, not datt_out (whose own check saw dx's old values)."""
    changes = {
        "answer_datt_out": "datt_out = dx",
        "answer_demb": "demb = dx\ndemb += dq @ Wq.T\ndemb += dk @ Wk.T\ndemb += dv @ Wv.T",
    }
    printed, _, _ = notebook(changes)
    out = printed["emb"]
    assert "✘ dx changed after its check: demb is the same tensor" in out, out
    assert "✘ datt_out changed after its check: demb is the same tensor" in out, out
    assert "datt_out += ..." not in out and "dx += ..." not in out, out


def test_one_path_of_four_asks_for_each_of_the_others(notebook):
    printed, _, _ = notebook({"answer_demb": "demb = dx.clone()"})
    assert "emb also feeds q, k, v, so add those paths too" in printed["emb"], printed["emb"]
    assert "`demb += ...` for each of the others" in printed["emb"], printed["emb"]


def test_half_of_a_sums_gradient_is_not_blamed_on_the_power_rule(notebook):
    """datt_out = 0.5 * dx: x = emb + att_out squares nothing, so the hint names the split, not a square's factor 2."""
    printed, _, _ = notebook({"answer_datt_out": "datt_out = 0.5 * dx"}, stop="att")
    assert "the gradient split in two? A sum passes its whole gradient" in printed["att_out"], printed["att_out"]
    assert "power rule" not in printed["att_out"], printed["att_out"]


def test_a_step_below_a_transposed_upstream_keeps_its_points_under_its_cell(notebook):
    """dx transposed: the grader's formula passes it on to datt_out as the student's code does, and keeps datt_out its
    point; its check asked for another dimension in datt_out's own cell."""
    slip, below = "x", "att_out"
    _, _, cells = notebook(stop=NAMES[0])
    changes = {f"answer_d{slip}": cells[f"answer_d{slip}"] + f"\nd{slip} = d{slip}.transpose(-2, -1)"}
    printed, _, _ = notebook(changes, stop=NAMES[NAMES.index(below) + 1])
    assert printed[slip].startswith(f"✘ d{slip}"), printed[slip]
    assert f"this step keeps its points; fix d{slip} first" in printed[below], printed[below]

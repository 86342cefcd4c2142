"""Exercises 2 and 3, every known case, graded in process (tests/in_process.py): the hidden tests run as at
autograde, the real JudgeAnswers judges their reports. tests/slow/test_ex2_ex3_pipeline.py runs a few of them
through nbgrader."""

import nbformat
import pytest
from support.cases_ex2_ex3 import (
    ALTERNATIVES,
    CHEATS,
    GIVEN_CHANGED,
    KINDS,
    LAID_OUT,
    MISTAKES,
    NB2,
    NB3,
    POINTS,
    REPLACED_LATER,
    RULE_MISTAKES,
    submissions,
)
from support.course import REPO
from support.in_process import autograde, judge, selected, source_notebook
from support.words import PSEUDO, pseudo_translated, rendered, untranslated


@pytest.fixture(scope="module")
def graded(request):
    found = {}
    for notebook in (NB2, NB3):
        release = nbformat.read(REPO / "release" / "backprop_ninja" / f"{notebook}.ipynb", as_version=4)
        class_ = submissions(notebook, release, source_notebook(notebook))
        found[notebook] = autograde(notebook, selected(request, class_))
    return found


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_points_table(graded, notebook):
    assert graded[notebook]["solution"].max_points == POINTS[notebook], (
        f"{notebook}'s graded cells and their points are not POINTS in tests/support/cases_ex2_ex3.py: update it there"
    )


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_solution_gets_full_marks(graded, notebook):
    solution = graded[notebook]["solution"]
    assert solution.lost() == []
    assert all(solution.messages[g].startswith("✔") for g in POINTS[notebook]), solution.messages


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_blank_release_gets_zero_without_crashing(graded, notebook):
    blank = graded[notebook]["blank"]
    assert sum(blank.points.values()) == 0
    for cell in POINTS[notebook]:
        assert "not answered yet" in blank.messages[cell], blank.messages[cell]


@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_mistake_costs_exactly_its_own_cells_with_its_message(graded, mistake):
    notebook, _, expected = MISTAKES[mistake]
    student = graded[notebook][mistake]
    assert student.lost() == sorted(expected), student.messages
    for cell, words in expected.items():
        assert words in student.messages[cell], student.messages[cell]


@pytest.mark.parametrize("student", GIVEN_CHANGED)
def test_a_given_upstream_changed_in_place_costs_no_step_whose_code_is_right(graded, student):
    """dhpreact (and dhpreact_biased), which the notebook hands out, changed by `x = dhpreact; x *= ...`: each step
    computed by its rule from the changed values keeps its points, and its words name the changed tensor."""
    _, expected = GIVEN_CHANGED[student]
    got = graded[NB3][student]
    assert got.lost() == [], got.messages
    for cell, words in expected.items():
        assert words in got.messages[cell], got.messages[cell]


@pytest.mark.parametrize("mistake", KINDS)
def test_a_mistake_in_the_biased_dhprebn_is_diagnosed_with_its_kind(graded, mistake):
    """Exercise 3, Part 4: each known mistake loses dhprebn_biased alone, and the class report counts it by its kind."""
    student = graded[NB3][mistake]
    assert student.lost() == ["test_dhprebn_biased"], student.messages
    assert student.diagnoses["test_dhprebn_biased"] == KINDS[mistake], student.messages["test_dhprebn_biased"]


def test_the_biased_dhprebn_is_judged_by_its_rule_too(graded):
    """The fused formula, the one from hprebn_biased alone and the atomic chain all read dhpreact_biased: each probe
    concludes (no note in parentheses) and finds the rule right."""
    for student in ("solution", "alt_a", "alt_b", "alt_c"):
        message = graded[NB3][student].messages["test_dhprebn_biased"]
        notes = [line for line in message.splitlines() if line.strip().startswith("(")]
        assert message.startswith("✔ dhprebn_biased: 2 of 2 points") and notes == [], message


@pytest.mark.parametrize("mistake", ["loss_copied", "hpreact_copied"])
def test_a_copied_chunked_value_is_right_on_the_batch_and_earns_nothing(graded, mistake):
    notebook, _, expected = RULE_MISTAKES[mistake]
    (cell,) = expected
    assert "A copy of the chunked forward pass earns nothing" in graded[notebook][mistake].messages[cell]


@pytest.mark.parametrize("student", ALTERNATIVES)
@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_other_correct_formulas_get_full_marks(graded, student, notebook):
    assert graded[notebook][student].lost() == [], graded[notebook][student].messages


def test_a_temporary_named_as_a_forward_tensor_is_named_with_its_cell(graded):
    """Each line that rebound a tensor dhprebn reads is named, with its cell: a value's (hpreact_fast) too."""
    message = graded[NB3]["alt_temporaries_named_as_forward_tensors"].messages["test_dhprebn"]
    assert "read bnvar_inv after your cell of hpreact_fast rebound it (`bnvar_inv = " in message, message
    assert "read bnraw after your cell of dbngain rebound it (`bnraw = bnraw * dhpreact`)" in message, message


def test_probes_judge_what_the_answers_read_when_they_ran(graded):
    for cell in ("test_hpreact_fast", "test_dhprebn"):
        message = graded[NB3]["alt_later_lines"].messages[cell]
        notes = [line for line in message.splitlines() if line.strip().startswith("(")]  # a probe that could not judge
        assert message.startswith("✔") and notes == [], message


def test_dhprebn_from_the_students_own_dbngain_and_dbnbias_is_checked_by_its_rule(graded):
    """Those two were computed from the pinned dhpreact in the student's cells: the probe re-runs them too."""
    assert "rule" not in graded[NB3]["alt_d"].messages["test_dhprebn"]
    assert "further up" not in graded[NB3]["alt_d"].messages["test_dhprebn"]


@pytest.mark.parametrize("student", CHEATS)
def test_answers_from_autograd_earn_nothing(graded, student):
    changes, expected = CHEATS[student]
    for notebook in changes:
        got = graded[notebook][student]
        assert got.lost() == sorted(expected[notebook]), got.messages
        for cell, words in expected[notebook].items():
            assert words in got.messages[cell], got.messages[cell]


@pytest.mark.parametrize("student", REPLACED_LATER)
def test_a_report_cannot_be_replaced_by_a_later_cell(graded, student):
    """A later cell updates what the graded cells showed under display ids, with answers and probes the grader's own
    rules computed: the reports the grader reads are those the graded cells sent, and the answers around them (one
    before, one after, both the student's own) keep their points."""
    _, _, expected = REPLACED_LATER[student]
    got = graded[NB3][student]
    assert got.lost() == sorted(expected), got.messages
    for cell, words in expected.items():
        assert words in got.messages[cell], got.messages[cell]
    assert got.points["test_hpreact_fast"] == 2 and got.points["test_dhprebn_biased"] == 2


@pytest.mark.parametrize("student", LAID_OUT)
def test_cells_above_the_start_run_after_it(graded, student):
    """A cell of the student's above the cell that starts grading (or that cell moved down) runs after it, as autograde
    runs them: what it reads from .grad is a decoy, and an honest student's module and helper there serve as before."""
    changes, expected = LAID_OUT[student]
    for notebook in changes:
        got = graded[notebook][student]
        assert got.lost() == sorted(expected[notebook]), got.messages
        for cell, words in expected[notebook].items():
            assert words in got.messages[cell] and "earns nothing" in got.messages[cell], got.messages[cell]


def test_pasted_values_earn_nothing(graded):
    assert graded[NB2]["c_pasted_values"].lost() == ["test_dlogits", "test_dlogits_rows"]
    assert "this batch" in graded[NB2]["c_pasted_values"].messages["test_dlogits_rows"]
    assert graded[NB3]["c_pasted_values"].lost() == ["test_dbnbias"]


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_every_word_a_student_reads_goes_through_the_catalog(graded, notebook, monkeypatch):
    """Every student's feedback in a pseudo-translated edition: each line of each verdict and of the table of steps
    comes from a template of the catalog (it is marked), and every reason holds words. JudgeAnswers itself writes it
    so, in the edition it is given."""
    pseudo_translated(monkeypatch)
    assert untranslated(notebook, graded[notebook]) == []
    for student in ("blank", "c_copy_grad", "loss_from_probs" if notebook == NB2 else "dhprebn_no_bessel"):
        got = graded[notebook][student]
        again = judge(notebook, student, got.executed, PSEUDO)
        assert again.messages == rendered(got, PSEUDO)[0]
        assert (again.points, again.diagnoses) == (got.points, got.diagnoses)

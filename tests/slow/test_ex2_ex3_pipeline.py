"""Exercises 2 and 3 through the real pipeline: generate_assignment, then ONE autograde run for a small class.

A few representative students of tests/cases_ex2_ex3.py (every case is graded in process by the fast tier): the
solution, a blank notebook, two students with one mistake in each graded cell (so that the class stays small),
one with issue 12's mistakes (a copied loss_fast, BatchNorm without its epsilon), alternative formulas and a cheat;
Exercise 3's Part 4 (dhprebn_biased) among them: a mistake for each of the three packed students, the fused formula,
its version with means and the atomic chain.
"""

import pytest
from support.cases_ex2_ex3 import CHEATS, LAID_OUT, MISTAKES, NB2, NB3, POINTS, submissions
from support.course import ASSIGNMENT

from autograder.authoring.submissions import solved

# student -> the mistakes it carries, each in its own graded cell
PACKED = {
    "m_a": [
        "loss_sum",
        "dlogits_no_n",
        "bn_biased_forward",
        "dbngain_wrong_axis",
        "dhprebn_no_bessel",
        "dhprebn_biased_keeps_bessel",
    ],
    "m_b": ["dlogits_softmax_dim0", "dbnbias_keepdim", "dhprebn_no_mean_term", "dhprebn_biased_first_tensors"],
    "m_rules": ["loss_copied", "hpreact_no_epsilon", "dhprebn_no_epsilon", "dhprebn_biased_no_epsilon"],
}
ALTERNATIVES = ["alt_a", "alt_c", "alt_d"]


def packed(student: str, notebook: str, release, source):
    changes = {}
    for mistake in PACKED[student]:
        book, cells, _ = MISTAKES[mistake]
        if book == notebook:
            assert not set(cells) & set(changes), f"{student}: two mistakes in one cell"
            changes.update(cells)
    return solved(release, source, changes)


@pytest.fixture(scope="module")
def graded(course):
    for nb in (NB2, NB3):
        release, source = course.notebook("release", nb), course.notebook("source", nb)
        class_ = submissions(nb, release, source)
        for student in ["solution", "blank", *ALTERNATIVES, "c_copy_grad", "c_read_above_the_start"]:
            course.submit(student, nb, class_[student])
        for student in PACKED:
            course.submit(student, nb, packed(student, nb, release, source))
    course.nbgrader("autograde", ASSIGNMENT)
    return course


def lost(course, student, notebook) -> list:
    scores, maximum = course.scores(student, notebook), course.max_scores(notebook)
    return sorted(g for g in POINTS[notebook] if scores[g] != maximum[g])


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_points_table(graded, notebook):
    assert graded.max_scores(notebook) == POINTS[notebook]  # the setup cells are locked cells, not 0-point grade cells


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_solution_gets_full_marks(graded, notebook):
    assert lost(graded, "solution", notebook) == []
    messages = graded.messages("solution", notebook)
    assert all(messages[g].startswith("✔") for g in POINTS[notebook]), messages


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_blank_release_gets_zero_without_crashing(graded, notebook):
    assert sum(graded.scores("blank", notebook).values()) == 0
    messages = graded.messages("blank", notebook)
    for cell in POINTS[notebook]:
        assert "not answered yet" in messages[cell], messages[cell]


@pytest.mark.parametrize("mistake", [m for ms in PACKED.values() for m in ms])
def test_a_mistake_costs_its_own_cells_with_its_message(graded, mistake):
    notebook, _, expected = MISTAKES[mistake]
    student = next(s for s, ms in PACKED.items() if mistake in ms)
    messages = graded.messages(student, notebook)
    for cell, words in expected.items():
        assert words in messages[cell], messages[cell]
    # ... and the student loses nothing beyond the cells of their own mistakes
    own = {cell for m in PACKED[student] if MISTAKES[m][0] == notebook for cell in MISTAKES[m][2]}
    assert set(lost(graded, student, notebook)) == own


@pytest.mark.parametrize("student", ALTERNATIVES)
@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_other_correct_formulas_get_full_marks(graded, student, notebook):
    assert lost(graded, student, notebook) == [], graded.messages(student, notebook)


def test_answers_from_autograd_earn_nothing(graded):
    changes, expected = CHEATS["c_copy_grad"]
    for notebook in changes:
        assert lost(graded, "c_copy_grad", notebook) == sorted(expected[notebook])
        messages = graded.messages("c_copy_grad", notebook)
        for cell, words in expected[notebook].items():
            assert words in messages[cell], messages[cell]


def test_a_cell_above_the_start_runs_after_it(graded):
    """GradingExecute runs the student's cell added above the cell that starts grading right after that cell: what it
    read from .grad is a decoy (common.setup_cells.execution_order)."""
    changes, expected = LAID_OUT["c_read_above_the_start"]
    for notebook in changes:
        messages = graded.messages("c_read_above_the_start", notebook)
        assert lost(graded, "c_read_above_the_start", notebook) == sorted(expected[notebook]), messages
        for cell, words in expected[notebook].items():
            assert words in messages[cell], messages[cell]


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_hidden_tests_and_solutions_are_not_in_the_release(graded, notebook):
    text = (graded.root / "release" / ASSIGNMENT / f"{notebook}.ipynb").read_text()
    for secret in [
        "HIDDEN TESTS",
        "report(",
        "start_grading",
        "grading_seed",
        "BEGIN SOLUTION",
        "dlogits[range(n), Yb] -= 1",
        "n / (n - 1) * bnraw",
        "hprebn.var(0, keepdim=True, unbiased=True)",
        "dhprebn_biased = bngain",
    ]:
        assert secret not in text, secret


@pytest.fixture(scope="module")
def feedback(graded):
    graded.nbgrader("generate_feedback", ASSIGNMENT)
    return graded


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_feedback_opens_with_every_graded_cell_and_the_first_to_fix(feedback, notebook):
    students = sorted(
        p.parent.parent.name for p in (feedback.root / "submitted").glob(f"*/{ASSIGNMENT}/{notebook}.ipynb")
    )
    assert len(students) >= 5  # the solution, a blank one, mistakes, alternatives, a cheat
    for student in students:
        page = feedback.feedback(student, notebook)
        assert page.table() == feedback.summary_rows(student, notebook, list(POINTS[notebook])), student
        wrong = [anchor for anchor, mark, _, _ in page.table() if mark == "✘"]
        assert page.first_to_fix() == wrong[:1], student
        for secret in ["HIDDEN TESTS", "report(", "start_grading", "grading_seed", "x-backprop-ninja", "data_dtype"]:
            assert secret not in page.text, (student, secret)
    titles = [r.step for r in feedback.feedback("solution", notebook).rows]
    assert (
        titles
        == {
            NB2: ["loss_fast", "dlogits", "every row of dlogits sums to zero"],
            NB3: ["hpreact_fast", "dbngain", "dbnbias", "dhprebn", "dhprebn_biased"],
        }[notebook]
    )
    assert "../../course/" not in feedback.feedback("solution", notebook).text  # the derivation links work anywhere

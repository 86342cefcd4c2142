"""Exercise 5, every known case, graded in process (tests/support/in_process.py): the hidden tests run as at
autograde, the real JudgeAnswers judges their reports. tests/slow/test_ex5_pipeline.py runs a few through nbgrader."""

import nbformat
import pytest
from support.cases_ex5 import ALTERNATIVES, CHEATS, LAID_OUT, MISTAKES, NB5, POINTS, RAISING, REBOUND, submissions
from support.course import REPO
from support.in_process import autograde, selected, source_notebook

from autograder.engine.operators import OPERATOR_STEPS


@pytest.fixture(scope="module")
def graded(request):
    release = nbformat.read(REPO / "release" / "backprop_ninja" / f"{NB5}.ipynb", as_version=4)
    return autograde(NB5, selected(request, submissions(release, source_notebook(NB5))))


def test_points_table(graded):
    assert graded["solution"].max_points == POINTS
    assert sum(POINTS.values()) == 26  # the notebook's "How it is graded" says so


def test_solution_gets_full_marks(graded):
    solution = graded["solution"]
    assert solution.lost() == []
    assert all(solution.messages[g].startswith("✔") for g in POINTS), solution.messages


def test_blank_release_gets_zero_without_crashing(graded):
    blank = graded["blank"]
    assert sum(blank.points.values()) == 0
    for cell in POINTS:
        assert "not answered yet" in blank.messages[cell], blank.messages[cell]
        assert blank.diagnoses[cell] == "not_answered"


def test_every_step_has_a_known_mistake_and_two_alternatives():
    """The table of cases covers the table of operators: a new operator needs its rows here."""
    answers = {f"answer_d{step.name}" for step in OPERATOR_STEPS}
    mistaken = {cell for changes, _ in MISTAKES.values() for cell in changes}
    assert mistaken == answers
    for changes in ALTERNATIVES.values():
        assert set(changes) == answers


@pytest.mark.parametrize("mistake", [*MISTAKES, *RAISING])
def test_a_mistake_costs_exactly_its_own_step_with_the_kind_that_names_it(graded, mistake):
    _, expected = {**MISTAKES, **RAISING}[mistake]
    student = graded[mistake]
    assert student.lost() == sorted(expected), student.messages
    for cell, (kind, words) in expected.items():
        assert student.diagnoses[cell] == kind, student.messages[cell]
        assert words in student.messages[cell], student.messages[cell]


def test_later_steps_keep_their_points_and_name_the_step_to_fix(graded):
    """Error carried forward through the whole chain: every step after dhgelu is judged from the student's own."""
    messages = graded["dropout_not_rescaled"].messages
    for cell in ("test_dhln", "test_dhpreln", "test_dx", "test_dscores", "test_demb"):
        assert messages[cell].startswith("✔") and "fix dhgelu first" in messages[cell], messages[cell]


def test_a_factor_moved_up_a_step_costs_that_step_only_and_the_next_says_why(graded):
    """dscores / √head_size with dq = dscores @ k: dq's and dk's values are autograd's on every input, and the rule
    probe's random dscores no longer takes their points (it cost 7 points: dscores 3, dq and dk 2 each)."""
    messages = graded["scale_moved_into_dscores"].messages
    for cell, answer in [("test_dq", "dq"), ("test_dk", "dk")]:
        assert messages[cell].startswith("✔"), messages[cell]
        assert f"{answer} is right only together with your dscores" in messages[cell], messages[cell]


def test_a_keepdim_dropped_earns_half(graded):
    assert graded["lnbias_keepdim"].points["test_dlnbias"] == 0.5


@pytest.mark.parametrize("student", REBOUND)
def test_a_temporary_named_as_a_forward_tensor_costs_only_a_step_wrong_for_the_forward_pass_too(graded, student):
    """x = hln in dhln's cell breaks the later dx (its code reads x.shape) in the notebook: dx's code is right for the
    forward pass's x, so it keeps its points and its words name the line that rebound x."""
    _, losing, words = REBOUND[student]
    assert graded[student].lost() == losing, graded[student].messages
    for cell, pieces in words.items():
        for piece in pieces:
            assert piece in graded[student].messages[cell], graded[student].messages[cell]


@pytest.mark.parametrize("student", ALTERNATIVES)
def test_other_correct_formulas_get_full_marks(graded, student):
    assert graded[student].lost() == [], graded[student].messages


def test_the_alternatives_are_checked_by_their_rule(graded):
    """Each one's code ran again on random upstream gradients: no note says the probe could not judge."""
    for student in ALTERNATIVES:
        for cell, message in graded[student].messages.items():
            notes = [line for line in message.splitlines() if line.strip().startswith("(")]
            assert notes == [], (student, cell, message)


@pytest.mark.parametrize("student", CHEATS)
def test_answers_from_autograd_earn_nothing(graded, student):
    _, expected = CHEATS[student]
    got = graded[student]
    assert got.lost() == sorted(expected), got.messages
    for cell, words in expected.items():
        assert words in got.messages[cell] and got.diagnoses[cell] == "autograd", got.messages[cell]


@pytest.mark.parametrize("student", LAID_OUT)
def test_cells_above_the_start_run_after_it(graded, student):
    """What a cell of the student's above the cell that starts grading reads from .grad is a decoy, as is what an
    answer reads with that cell moved below it; with the cell deleted, no answer is reported."""
    _, _, expected = LAID_OUT[student]
    got = graded[student]
    assert got.lost() == sorted(expected), got.messages
    for cell, words in expected.items():
        assert words in got.messages[cell], got.messages[cell]


def test_pasted_values_earn_nothing(graded):
    assert graded["c_pasted_values"].lost() == ["test_dlnbias"]


def test_every_word_a_student_reads_goes_through_the_catalog(graded, monkeypatch):
    """As for Exercises 1 to 4 and 6: each line of each verdict and of the table of steps comes from the catalog."""
    from support.words import pseudo_translated, untranslated

    pseudo_translated(monkeypatch)
    assert untranslated(NB5, graded) == []

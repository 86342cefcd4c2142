"""Exercise 6, every known case, graded in process (tests/support/in_process.py): the hidden tests run as at
autograde, the real JudgeAnswers judges their reports. tests/slow/test_ex6_pipeline.py runs a few of them through
nbgrader and ``backprop-ninja grade``."""

import nbformat
import pytest
from support.cases_ex6 import ALTERNATIVES, BROKEN_LINES, CHEATS, MISTAKES, NB, POINTS, SOLVED_IDS, copier, submissions
from support.course import ASSIGNMENT, REPO
from support.in_process import autograde, selected, source_notebook
from support.words import untranslated

from autograder.common.diagnoses import METADATA
from autograder.engine.bug_hunt.catalogue import planted
from autograder.grading.results.bug_hunt_ids import shared_ids

SOLVED = ["solution"] + [f"solution_{i}" for i in range(1, len(SOLVED_IDS))]


@pytest.fixture(scope="module")
def graded(request):
    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    return autograde(NB, selected(request, submissions(release, source_notebook(NB))))


def test_points_table(graded):
    assert graded["solution"].max_points == POINTS


@pytest.mark.parametrize("student", SOLVED)
def test_the_solution_gets_full_marks_for_every_id(graded, student):
    assert graded[student].lost() == [], graded[student].messages
    assert all(graded[student].messages[g].startswith("✔") for g in POINTS)


def test_the_ids_give_different_bugs(graded):
    sets = {tuple(bug.key for bug in planted(text)) for text in SOLVED_IDS}
    assert len(sets) > 1
    bugs = [graded[s].messages["test_bug_1"].splitlines()[0] for s in SOLVED]  # "✔ bug 1: dlogprobs: 2 of 2 points"
    assert len(set(bugs)) > 1, bugs


def test_a_blank_notebook_gets_zero_with_clear_messages(graded):
    blank = graded["blank"]
    assert sum(blank.points.values()) == 0
    for cell in POINTS:
        assert blank.diagnoses[cell] == "not_answered", blank.messages[cell]
    assert "numerical_gradient still raises NotImplementedError" in blank.messages["test_checker"]
    for cell in ["test_found", "test_bug_1", "test_bug_2", "test_bug_3"]:
        assert "BUG_HUNT_ID is not set" in blank.messages[cell]


def test_without_an_id_only_the_checker_counts(graded):
    student = graded["no_id"]
    assert student.lost() == ["test_bug_1", "test_bug_2", "test_bug_3", "test_found"]
    assert all("BUG_HUNT_ID is not set as a string" in student.messages[c] for c in student.lost())
    assert all(student.messages[c].rstrip().endswith("in quotes") for c in student.lost())  # (a number: no id)


@pytest.mark.parametrize("case", MISTAKES)
def test_a_mistake_costs_exactly_its_own_cell_with_its_diagnosis(graded, case):
    _, expected = MISTAKES[case]
    student = graded[case]
    assert student.lost() == sorted(expected), student.messages
    for cell, (kind, words) in expected.items():
        assert student.diagnoses[cell] == kind, student.messages[cell]
        assert words in student.messages[cell], student.messages[cell]


@pytest.mark.parametrize("case", BROKEN_LINES)
def test_a_right_line_broken_is_named_with_its_own_steps_words(graded, case):
    """The fix that loses its points for a line without a bug says which gradient went wrong and how, as its step's
    own diagnosis would (the cell and the kind: the MISTAKES table)."""
    _, gradient, words = BROKEN_LINES[case]
    student = graded[case]
    (cell,) = student.lost()
    assert words in student.messages[cell] and gradient in student.messages[cell], student.messages[cell]
    assert "this fix keeps its points" not in student.messages[cell]


def test_a_bug_still_in_its_fix_is_named_in_plain_words(graded):
    assert "still clips the loss, not the gradient" in "".join(graded["still_clipped_loss"].messages.values())
    assert "does not add up repeated indices" in "".join(graded["still_not_accumulated"].messages.values())


def test_a_fix_right_for_a_gradient_a_bug_further_up_made_wrong_keeps_its_points(graded):
    """still_clipped_loss keeps its other bugs' fixes: each is right for the gradients the clipped loss made wrong."""
    student = graded["still_clipped_loss"]
    kept = [c for c in ("test_bug_2", "test_bug_3") if student.points[c] == 2]
    assert kept == ["test_bug_2", "test_bug_3"]
    assert all("because of a bug further up" in student.messages[c] for c in kept), student.messages


@pytest.mark.parametrize("student", ALTERNATIVES)
def test_other_correct_fixes_names_and_checkers_get_full_marks(graded, student):
    assert graded[student].lost() == [], graded[student].messages


def test_changing_the_parameters_after_the_setup_changes_no_grade(graded):
    assert graded["tries_the_usual_init"].lost() == [], graded["tries_the_usual_init"].messages


@pytest.mark.parametrize("student", CHEATS)
def test_answers_from_autograd_earn_nothing(graded, student):
    _, expected = CHEATS[student]
    got = graded[student]
    assert got.lost() == sorted(expected), got.messages
    for cell, kind in expected.items():
        assert got.diagnoses[cell] == kind and got.points[cell] == 0, got.messages[cell]


def test_a_copier_with_another_id_loses_the_names_only(graded):
    theirs, mine = copier()
    assert not {b.key for b in planted(theirs)} & {b.key for b in planted(mine)}
    student = graded["copier"]
    assert student.lost() == ["test_found"], student.messages
    assert student.points["test_found"] == 0 and student.diagnoses["test_found"] == "bugs_missed"


def test_two_students_with_one_id_are_named_by_the_class_pipeline(graded, tmp_path):
    """The ids come from the judged notebooks' metadata (JudgeAnswers' own record), as grade reads them."""
    students = ["solution", "solution_1", "copier", "blank"]  # copier's id is theirs; blank has none
    for student in students:
        folder = tmp_path / "autograded" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(graded[student].notebook, folder / f"{NB}.ipynb")
    assert shared_ids(tmp_path, ASSIGNMENT, students) == []
    folder = tmp_path / "autograded" / "twin" / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(graded["solution"].notebook, folder / f"{NB}.ipynb")
    problems = shared_ids(tmp_path, ASSIGNMENT, students + ["twin"])
    assert [(p.student, p.kind) for p in problems] == [
        ("solution", "shared_bug_hunt_id"),
        ("twin", "shared_bug_hunt_id"),
    ]
    assert "'ada.lovelace'" in problems[0].detail and "twin" in problems[0].detail


def test_an_id_of_any_length_is_named_in_a_line(tmp_path):
    """An id is whatever a student typed: the problem's line quotes its start, and still names the twin."""
    typed = "x" * 100_000
    for student in ["long", "long_twin"]:
        cell = nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade": True, "grade_id": "test_found"}})
        facts = {METADATA: {"facts": {"bug_hunt_id": typed}}}
        cell.outputs = [nbformat.v4.new_output("display_data", {"text/plain": ""}, metadata=facts)]
        folder = tmp_path / "autograded" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nbformat.v4.new_notebook(cells=[cell]), folder / f"{NB}.ipynb")
    problems = shared_ids(tmp_path, ASSIGNMENT, ["long", "long_twin"])
    assert [p.student for p in problems] == ["long", "long_twin"]
    assert all(len(p.detail) < 200 and "'xxx" in p.detail for p in problems), problems


def test_every_word_a_student_reads_goes_through_the_catalog(graded, monkeypatch):
    """Exercises 1 to 4 held every verdict to the catalog; Exercise 6 was not, and its titles escaped it: a Russian
    student read "✘ bug 3: dC: 0 из 2 баллов", a Chinese one "✘ the gradients your bugs made wrong：0 / 3 分"."""
    from support.words import pseudo_translated

    pseudo_translated(monkeypatch)
    assert untranslated(NB, graded) == []

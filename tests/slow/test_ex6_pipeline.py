"""Exercise 6 through the real pipeline: generate_assignment, ONE ``nbgrader autograde`` run of a small class, its
feedback; then ``backprop-ninja grade`` of a class where two students entered the same id.

Representative students of tests/support/cases_ex6.py (every case is graded in process by the fast tier): the
solution for two ids, a blank notebook, one without an id, one with a mistake in each graded cell, alternative fixes,
names and checker, an autograd cheat, and a copier.
"""

import json
import shutil

import pytest
from support.cases_ex6 import (
    CHEATS,
    MISTAKES,
    NB,
    ONE_SIDED,
    POINTS,
    SOLVED_IDS,
    answers,
    build,
    checker,
    id_with,
    slot,
    submissions,
    with_bug,
)
from support.course import ASSIGNMENT, run_grade, temporary_course

from autograder.engine.bug_hunt.catalogue import planted

PACKED_ID = id_with("aliased", "epsilon")


def packed(release, source):
    """One student, one mistake in each graded cell: a bug left in, a gradient named downstream, a one-sided checker."""
    names = [bug.gradient for bug in planted(PACKED_ID)]
    changes = answers(
        PACKED_ID,
        answer_backward_pass=with_bug("epsilon"),
        answer_found=f"buggy = {names[:2] + ['dhprebn']!r}",  # the third one missed, a gradient without a bug named
        **checker(ONE_SIDED),
    )
    return build(release, source, changes)


PACKED_LOST = {
    "test_checker": "one_sided_difference",
    "test_found": "bugs_missed",
    slot(PACKED_ID, "epsilon"): "epsilon",
}
CORRECT = ["solution", "solution_1", "alt_lines_a1", "alt_lines_b2", "alt_rewritten_pass_2"]
BROKE = "broke_tanh_derivative"  # fixed the bugs, broke a right line: the fix whose part holds it loses its points


@pytest.fixture(scope="module")
def graded():
    with temporary_course("ex6-pipeline-", only=NB) as course:
        release, source = course.notebook("release", NB), course.notebook("source", NB)
        class_ = submissions(release, source)
        for student in [*CORRECT, "blank", "no_id", "copier", "c_autograd_pass", BROKE]:
            course.submit(student, NB, class_[student])
        course.submit("packed", NB, packed(release, source))
        course.nbgrader("autograde", ASSIGNMENT)
        yield course


def kinds(course, student) -> dict:
    """grade_id -> the diagnosis kind JudgeAnswers wrote into the autograded notebook's graded cell."""
    path = course.root / "autograded" / student / ASSIGNMENT / f"{NB}.ipynb"
    found = {}
    for cell in json.loads(path.read_text())["cells"]:
        gid = cell["metadata"].get("nbgrader", {}).get("grade_id")
        results = [o for o in cell.get("outputs", []) if o.get("output_type") == "execute_result"]
        if gid in POINTS and results:
            found[gid] = results[-1]["metadata"]["backprop_ninja"]["diagnosis"]
    return found


def lost(course, student) -> list:
    scores, maximum = course.scores(student, NB), course.max_scores(NB)
    return sorted(g for g in POINTS if scores[g] != maximum[g])


def test_points_table(graded):
    assert graded.max_scores(NB) == POINTS


@pytest.mark.parametrize("student", CORRECT)
def test_the_solution_and_other_correct_answers_get_full_marks(graded, student):
    assert lost(graded, student) == [], graded.messages(student, NB)
    assert all(m.startswith("✔") for m in graded.messages(student, NB).values())


def test_different_ids_are_judged_on_different_bugs(graded):
    first = [graded.messages(s, NB)["test_bug_1"].splitlines()[0] for s in ("solution", "solution_1")]
    assert first[0] != first[1] and SOLVED_IDS[0] != SOLVED_IDS[1]


def test_blank_and_no_id(graded):
    assert sum(graded.scores("blank", NB).values()) == 0
    assert set(kinds(graded, "blank").values()) == {"not_answered"}
    assert lost(graded, "no_id") == ["test_bug_1", "test_bug_2", "test_bug_3", "test_found"]
    assert "BUG_HUNT_ID is not set" in graded.messages("no_id", NB)["test_found"]


def test_each_mistake_costs_its_own_cell_with_its_diagnosis(graded):
    assert lost(graded, "packed") == sorted(PACKED_LOST)
    assert {g: kinds(graded, "packed")[g] for g in PACKED_LOST} == PACKED_LOST
    messages = graded.messages("packed", NB)
    assert "still leaves out BatchNorm's epsilon" in messages[slot(PACKED_ID, "epsilon")]
    assert graded.scores("packed", NB)["test_found"] == 1  # two named, one named without a bug


def test_a_right_line_broken_costs_the_fix_of_its_part(graded):
    (cell, (kind, words)), *_ = MISTAKES[BROKE][1].items()
    assert lost(graded, BROKE) == [cell] and kinds(graded, BROKE)[cell] == kind
    assert words in graded.messages(BROKE, NB)[cell] and "tanh" in graded.messages(BROKE, NB)[cell]


def test_an_autograd_cheat_and_a_copier(graded):
    assert lost(graded, "c_autograd_pass") == sorted(CHEATS["c_autograd_pass"][1])
    assert lost(graded, "copier") == ["test_found"] and graded.scores("copier", NB)["test_found"] == 0


def test_feedback_has_every_graded_cell_and_no_secret(graded):
    graded.nbgrader("generate_feedback", ASSIGNMENT)
    for student in ["solution", "packed", "blank"]:
        page = graded.feedback(student, NB)
        assert page.table() == graded.summary_rows(student, NB, list(POINTS)), student
        for secret in ["HIDDEN TESTS", "report_fix", "keep_grading_point", "x-backprop-ninja", "data_dtype"]:
            assert secret not in page.text, (student, secret)
    assert "dbnvar still leaves out BatchNorm" in graded.feedback("packed", NB).text


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_the_class_pipeline_names_two_students_with_one_id():
    """backprop-ninja grade, sandboxed: the twins' shared id is a named problem of both; the others have none."""
    with temporary_course("ex6-class-", only=NB) as course:
        release, source = course.notebook("release", NB), course.notebook("source", NB)
        twin = build(release, source, answers("s1234567"))
        course.submit("twina", NB, twin)
        course.submit("twinb", NB, twin)
        course.submit("other", NB, build(release, source, answers("s7654321")))
        run_grade(course.root, "--quiet", "--workers", "2", "--no-feedback", timeout=1800)
        problems = json.loads((course.root / "problems.json").read_text())
        shared = [(p["student"], p["notebook"]) for p in problems if p["problem"] == "shared_bug_hunt_id"]
        assert shared == [("twina", NB), ("twinb", NB)], problems
        assert "'s1234567'" in next(p["detail"] for p in problems if p["student"] == "twina")
        grades = {row.split(",")[0]: row for row in (course.root / "grades.csv").read_text().splitlines()[1:]}
        assert set(grades) == {"twina", "twinb", "other"}  # graded all the same: the instructor decides

"""The course's gradebook and what grading writes into it, without a kernel: the template graders grade into, and
the batched merge, held row for row to nbgrader's API one student at a time (``support/gradebooks.py``).
tests/slow/test_cluster.py holds it to that on a class really graded, in SQLite and PostgreSQL."""

import datetime
import json
import shutil

import pytest
from support.course import ASSIGNMENT
from support.gradebooks import merge_one_by_one, rows

from autograder.common.errors import GradingError
from autograder.grading.results import gradebook
from autograder.grading.results.gradebook import (
    GradedNotebook,
    GradedSubmission,
    make_template,
    read_submission,
    sqlite_url,
)
from autograder.grading.results.merge import Lateness, Merger

NB = "ex1_atomic_backward"
DUE = datetime.datetime(2026, 12, 15, 22, 59)


@pytest.fixture(scope="module")
def made_once(new_gradebook, tmp_path_factory):
    """A gradebook with the assignment (due date, two graded cells, an answer cell, a task) and two students: ada,
    whom a teaching assistant graded by hand, and ben, who has an extension. Made once; each test has a copy of its
    own."""
    path = tmp_path_factory.mktemp("course") / "gradebook.db"
    shutil.copy(new_gradebook, path)
    with gradebook.opened(sqlite_url(path)) as gb:
        gb.add_assignment(ASSIGNMENT, duedate=DUE)
        gb.add_notebook(NB, ASSIGNMENT)
        for cell in ("test_dprobs", "test_dh"):
            gb.add_grade_cell(cell, NB, ASSIGNMENT, max_score=1, cell_type="code")
            gb.add_source_cell(cell, NB, ASSIGNMENT, cell_type="code", source="check()", locked=True, checksum="x")
        gb.add_solution_cell("answer_dprobs", NB, ASSIGNMENT)
        gb.add_task_cell("task_explain", NB, ASSIGNMENT, max_score=1, cell_type="markdown")  # a grade and a comment
        gb.add_source_cell("answer_dprobs", NB, ASSIGNMENT, cell_type="code", source="dprobs = ...", checksum="y")
        gb.add_notebook("ex2_cross_entropy_backward", ASSIGNMENT)  # a notebook nobody's grades name
        for student in ("ada", "ben"):
            gb.add_student(student)
        gb.add_submission(ASSIGNMENT, "ada")
        gb.add_submission(ASSIGNMENT, "ben", extension=datetime.timedelta(days=2))
        gb.find_grade("test_dprobs", NB, ASSIGNMENT, "ada").manual_score = 0.5
        gb.find_comment("answer_dprobs", NB, ASSIGNMENT, "ada").manual_comment = "see me"
        gb.find_submission_notebook(NB, ASSIGNMENT, "ada").flagged = True
        gb.db.commit()
    return path


@pytest.fixture
def course_gradebook(made_once, tmp_path):
    """A copy of the course's gradebook (``made_once``) for this test, at tmp_path / "gradebook.db"."""
    shutil.copy(made_once, tmp_path / "gradebook.db")
    return sqlite_url(tmp_path / "gradebook.db")


def graded(hours_late: float | None, dprobs: float, comment: str, penalty: float | None) -> GradedSubmission:
    """A worker's grades of Exercise 1, handed in ``hours_late`` after the due date (None: no timestamp)."""
    stamp = None if hours_late is None else (DUE + datetime.timedelta(hours=hours_late)).isoformat()
    scores = {"test_dprobs": [dprobs, False], "test_dh": [0.0, True], "task_explain": [None, True]}
    nb = GradedNotebook(scores, {"answer_dprobs": comment, "task_explain": None}, penalty)
    return GradedSubmission.from_json(json.loads(json.dumps(GradedSubmission(stamp, {NB: nb}).to_json())))


def merge(url: str, root, grades: dict) -> list:
    """Merge ``grades`` (student -> GradedSubmission or None) with a Merger; what it reported, in order."""
    reported = []
    merger = Merger(url, root, ASSIGNMENT, lambda student, late: reported.append((student, late)))
    for student, submission in grades.items():
        merger.add(student, submission)
    merger.close()
    return reported


def test_the_template_holds_the_assignment_and_no_student_but_the_extensions(course_gradebook, tmp_path):
    make_template(course_gradebook, ASSIGNMENT, tmp_path / "template.db")
    with gradebook.opened(sqlite_url(tmp_path / "template.db")) as gb:
        assignment = gb.find_assignment(ASSIGNMENT)
        assert assignment.duedate == DUE and [nb.name for nb in assignment.notebooks] == [
            NB,
            "ex2_cross_entropy_backward",
        ]
        assert sorted(c.name for c in assignment.notebooks[0].grade_cells) == ["test_dh", "test_dprobs"]
        assert [c.name for c in assignment.notebooks[0].solution_cells] == ["answer_dprobs"]
        assert len(assignment.notebooks[0].source_cells) == 3
        assert [s.student.id for s in assignment.submissions] == ["ben"]
        assert assignment.submissions[0].extension == datetime.timedelta(days=2)


def test_merging_keeps_what_people_wrote_and_adds_no_rows(course_gradebook, tmp_path):
    url = course_gradebook
    worker = sqlite_url(tmp_path / "worker.db")
    make_template(url, ASSIGNMENT, tmp_path / "worker.db")
    with gradebook.opened(worker) as gb:  # what autograde writes for ada and cy
        for student in ("ada", "cy"):
            gb.add_student(student)
            gb.add_submission(ASSIGNMENT, student, timestamp=datetime.datetime(2026, 12, 16, 10, 0))
            gb.find_grade("test_dprobs", NB, ASSIGNMENT, student).auto_score = 1.0
            gb.find_grade("test_dh", NB, ASSIGNMENT, student).auto_score = 0.0
            gb.find_comment("answer_dprobs", NB, ASSIGNMENT, student).auto_comment = "No response."
            gb.find_submission_notebook(NB, ASSIGNMENT, student).late_submission_penalty = 0.1
        gb.db.commit()
    sent = {s: GradedSubmission.from_json(read_submission(worker, ASSIGNMENT, s).to_json()) for s in ("ada", "cy")}
    for _ in range(2):  # merged twice (a retried task): still one submission, one row per cell
        merge(url, tmp_path, sent)
    assert read_submission(url, ASSIGNMENT, "nobody") is None
    with gradebook.opened(url) as gb:
        ada = gb.find_submission_notebook(NB, ASSIGNMENT, "ada")
        grades = {g.name: (g.auto_score, g.manual_score) for g in ada.grades}
        assert grades == {"test_dprobs": (1.0, 0.5), "test_dh": (0.0, None), "task_explain": (None, None)}
        comment = gb.find_comment("answer_dprobs", NB, ASSIGNMENT, "ada")
        assert (comment.auto_comment, comment.manual_comment) == ("No response.", "see me")
        assert ada.flagged and ada.late_submission_penalty == 0.1
        assert gb.find_submission(ASSIGNMENT, "ada").timestamp == datetime.datetime(2026, 12, 16, 10, 0)
        assert gb.find_submission_notebook(NB, ASSIGNMENT, "cy").score == 1.0
        assert sorted(s.student.id for s in gb.find_assignment(ASSIGNMENT).submissions) == ["ada", "ben", "cy"]
        assert len(rows(url)["grade"]) == 3 * 3  # three students, two graded cells and a task each


def test_the_batched_merge_writes_the_rows_nbgraders_api_wrote_one_student_at_a_time(course_gradebook, tmp_path):
    """ada (graded by hand) and ben (an extension) are in the gradebook, cy and dee are new; then they are all
    graded again, with other scores, comments, timestamps and penalties. Each time, both gradebooks have the same
    rows, ids aside, and the same lateness."""
    one_by_one = sqlite_url(tmp_path / "one_by_one.db")
    shutil.copy(tmp_path / "gradebook.db", tmp_path / "one_by_one.db")
    rounds = [
        {"ada": graded(-1, 1.0, "ok", None), "ben": graded(30, 0.0, "late", 0.4), "cy": graded(None, 0.5, "", None)},
        {
            "ada": graded(2, 0.0, "worse", 0.2),
            "ben": graded(60, 1.0, "later", 0.4),
            "cy": graded(5, 1.0, "now", 0.1),
            "dee": graded(0, 1.0, "on time", None),
        },
    ]
    for grades in rounds:
        expected = {s: merge_one_by_one(one_by_one, ASSIGNMENT, s, g) for s, g in grades.items()}
        reported = merge(course_gradebook, tmp_path, grades)
        assert dict(reported) == expected and sorted(reported) == reported
        assert rows(course_gradebook) == rows(one_by_one)
    assert expected["ada"] == Lateness(7200, DUE, {NB: 0.2}) and expected["dee"] == Lateness(0, DUE, {})
    assert expected["ben"] == Lateness(12 * 3600, DUE + datetime.timedelta(days=2), {NB: 0.4})
    assert len(rows(course_gradebook)["grade"]) == 3 * 4  # one row per graded cell and task of a student: no more


def test_a_student_merged_as_none_loses_their_grades_and_files(course_gradebook, tmp_path):
    folders = [tmp_path / kind / "ada" / ASSIGNMENT for kind in ("autograded", "feedback")]
    for folder in folders:
        folder.mkdir(parents=True)
        (folder / f"{NB}.ipynb").write_text("{}")
    assert merge(course_gradebook, tmp_path, {"ada": None, "cy": graded(1, 1.0, "ok", None)}) == [
        ("ada", None),
        ("cy", Lateness(3600, DUE, {})),
    ]
    assert read_submission(course_gradebook, ASSIGNMENT, "ada") is None and not any(f.exists() for f in folders)
    assert read_submission(course_gradebook, ASSIGNMENT, "cy").notebooks[NB].scores["test_dprobs"] == [1.0, False]


def test_a_merge_that_fails_stops_the_grading_and_says_why(course_gradebook, tmp_path):
    reported = []
    merger = Merger(course_gradebook, tmp_path, "another_assignment", lambda *merged: reported.append(merged))
    merger.add("ada", graded(1, 1.0, "ok", None))
    merger.thread.join(30)  # it ends at the first failure
    with pytest.raises(GradingError, match="merging grades into the course's gradebook failed: NoResultFound"):
        merger.add("ben", graded(1, 1.0, "ok", None))
    with pytest.raises(GradingError, match="failed: NoResultFound"):
        merger.close()
    assert reported == [] and read_submission(course_gradebook, ASSIGNMENT, "ada").notebooks[NB].scores == {
        "test_dprobs": [None, True],
        "test_dh": [None, True],
        "task_explain": [None, True],
    }


def test_a_late_notebook_that_lost_one_point_says_one_point():
    """The class's problems said "1 points taken off" (cleo's ex6_bug_hunt on a hub, 10% of 10 points)."""
    due = datetime.datetime(2026, 12, 6, 23, 15)
    said = [p.detail for p in Lateness(900.0, due, {"ex6_bug_hunt": 1.0, "ex5_new_operators": 2.6}).problems("cleo")]
    assert said == [
        "handed in 0.2 hours after the due date (2026-12-06 23:15 UTC): 2.6 points taken off",
        "handed in 0.2 hours after the due date (2026-12-06 23:15 UTC): 1 point taken off",
    ]

"""nbgrader's per-cell preprocessors on a notebook's gradebook rows read at once (``autograder/preprocessors/
gradebook_rows.py``), without a kernel: RestoreLockedCells, SaveAutoGradesAtOnce and GetGradesAtOnce against stock
OverwriteCells, SaveAutoGrades and GetGrades, which look up every cell's row with a query of its own, on copies of one
gradebook."""

import shutil

import pytest
from nbformat import from_dict
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from nbgrader.api import Gradebook
from nbgrader.preprocessors import GetGrades, OverwriteCells, SaveAutoGrades
from nbgrader.utils import compute_checksum
from support.course import ASSIGNMENT
from support.gradebooks import rows

from autograder.grading.results.gradebook import sqlite_url
from autograder.preprocessors import GetGradesAtOnce, RestoreLockedCells, SaveAutoGradesAtOnce
from autograder.preprocessors.gradebook_rows import SubmissionRows

NB = "ex1_atomic_backward"
pytestmark = pytest.mark.filterwarnings("ignore:Object of type <Submitted")  # (nbgrader_config.py filters it too)
RELEASED = {"answer_dprobs": "dprobs = ...", "test_dprobs": "check()", "test_dh": "check()", "task_explain": "Why?"}


def cell(grade_id: str, source=None, outputs=(), **flags):
    """A cell of the notebook as the release has it (``source`` None), or with ``source`` and ``outputs``."""
    make = new_markdown_cell if grade_id.startswith("task") else new_code_cell
    c = make(RELEASED[grade_id] if source is None else source)
    c.metadata["nbgrader"] = from_dict({"grade_id": grade_id, "grade": False, "solution": False, "locked": False})
    c.metadata.nbgrader.update(points=1, **flags)
    if outputs:
        c.outputs = [from_dict(o) for o in outputs]
    return c


FLAGS = {
    "answer_dprobs": {"solution": True},
    "test_dprobs": {"grade": True, "locked": True},
    "test_dh": {"grade": True, "locked": True},
    "task_explain": {"task": True},
}


@pytest.fixture(scope="module")
def made_once(new_gradebook, tmp_path_factory):
    """Exercise 1's four kinds of cell, their checksums the release's, and two students: ada, whom a teaching
    assistant graded by hand, and ben."""
    path = tmp_path_factory.mktemp("course") / "gradebook.db"
    shutil.copy(new_gradebook, path)
    with Gradebook(sqlite_url(path)) as gb:
        gb.add_assignment(ASSIGNMENT)
        gb.add_notebook(NB, ASSIGNMENT)
        for name, flags in FLAGS.items():
            released = cell(name, **flags)
            kind = released.cell_type
            if flags.get("grade") or flags.get("task"):
                add = gb.add_task_cell if flags.get("task") else gb.add_grade_cell
                add(name, NB, ASSIGNMENT, max_score=1, cell_type=kind)
            if flags.get("solution"):
                gb.add_solution_cell(name, NB, ASSIGNMENT)
            locked = flags.get("locked", False)
            checksum = compute_checksum(released)
            gb.add_source_cell(name, NB, ASSIGNMENT, cell_type=kind, source=released.source, locked=locked,
                               checksum=checksum)  # fmt: skip
        for student in ("ada", "ben"):
            gb.add_student(student)
            gb.add_submission(ASSIGNMENT, student)
        gb.find_grade("test_dprobs", NB, ASSIGNMENT, "ada").manual_score = 0.5
        gb.db.commit()
    return path


def resources(url: str, student: str) -> dict:
    return {"nbgrader": {"notebook": NB, "assignment": ASSIGNMENT, "student": student, "db_url": url}}


def test_restoring_the_locked_cells_gives_the_cells_stock_overwritecells_gives(made_once, tmp_path):
    """A locked cell changed, its points changed, a cell turned into markdown, a grade id the gradebook lacks."""
    changed = cell("test_dprobs", "pass", **FLAGS["test_dprobs"])
    changed.metadata.nbgrader["points"] = 5
    as_markdown = new_markdown_cell("check()", metadata=cell("test_dh", **FLAGS["test_dh"]).metadata)
    submitted = [cell("answer_dprobs", "dprobs = probs", **FLAGS["answer_dprobs"]), changed, as_markdown]
    submitted += [cell("task_explain", "Because.", **FLAGS["task_explain"]), cell("test_dh", **FLAGS["test_dh"])]
    submitted[-1].metadata.nbgrader["grade_id"] = "test_unknown"
    url = sqlite_url(made_once)
    found = []
    for preprocessor in (OverwriteCells, RestoreLockedCells):
        nb, _ = preprocessor().preprocess(new_notebook(cells=[from_dict(c) for c in submitted]), resources(url, "ben"))
        found.append(nb.cells)
    assert found[0] == found[1]
    assert found[0][1].source == "check()" and found[0][1].metadata.nbgrader.points == 1  # (restored)
    assert found[0][2].cell_type == "code" and "grade_id" not in found[0][4].metadata.nbgrader


def test_a_changed_locked_cell_is_a_problem_and_a_change_of_whitespace_is_none(made_once):
    """The instructor learns which locked cells a student changed (problems.json); an editor's line endings and
    trailing blank lines are no change; several changed cells are each graded with the course's version."""
    url = sqlite_url(made_once)
    for dprobs, dh, changed in (
        ("check()\n", "check()  \r\n\n", ""),
        ("check()\n", "check(); print('ok')", "cell 2 (test_dh): graded with the course's version of it"),
        ("pass", "pass", "cell 1 (test_dprobs), cell 2 (test_dh): graded with the course's version of each"),
    ):
        submitted = [cell("test_dprobs", dprobs, **FLAGS["test_dprobs"]), cell("test_dh", dh, **FLAGS["test_dh"])]
        _, res = RestoreLockedCells().preprocess(
            new_notebook(cells=[from_dict(c) for c in submitted]), resources(url, "ben")
        )
        problems = res.get("backprop_ninja", {}).get("incidents", [])
        assert [(p.student, p.kind, p.detail) for p in problems] == [("ben", "locked_cell_changed", changed)] * bool(
            changed
        ), problems


def test_the_students_page_keeps_the_intakes_repairs_and_hears_of_a_changed_locked_cell(made_once):
    """RestoreLockedCells sets the notebook's metadata for the later steps: it kept only the edition, so the intake's
    note of a repair never reached the student's page; a locked cell it restored was not noted at all. Only the
    notebook's own grade_ids are kept (the metadata of a plain ``nbgrader autograde`` is the student's)."""
    from autograder.common.problems import told_student

    submitted = [cell("test_dprobs", "pass", **FLAGS["test_dprobs"]), cell("test_dh", **FLAGS["test_dh"])]
    nb = new_notebook(cells=[from_dict(c) for c in submitted])
    nb.metadata["backprop_ninja"] = {"edition": "ru", "repairs": {"moved_cell": ["test_dh", "<b>x</b>"], "mine": []}}
    nb, _ = RestoreLockedCells().preprocess(nb, resources(sqlite_url(made_once), "ben"))
    ids = {"test_dprobs", "test_dh"}
    assert told_student(nb.metadata, ids) == {"moved_cell": ["test_dh"], "locked_cell_changed": ["test_dprobs"]}
    assert nb.metadata["backprop_ninja"]["edition"] == "ru"


@pytest.mark.parametrize(
    "dprobs_output, answer",
    [
        ({"output_type": "execute_result", "data": {"text/plain": "0.5"}, "metadata": {}, "execution_count": 1}, "x"),
        (None, RELEASED["answer_dprobs"]),  # the answer as released: "No response."
        ({"output_type": "stream", "name": "stderr", "text": "oops"}, "dprobs = probs"),
    ],
)
@pytest.mark.parametrize("student", ["ada", "ben"])
def test_saving_the_grades_at_once_writes_the_rows_stock_saveautogrades_writes(
    made_once, tmp_path, student, dprobs_output, answer
):
    """test_dprobs with partial credit, no output or stderr; test_dh with an error; the answer changed or not."""
    error = new_output("error", ename="RuntimeError", evalue="no", traceback=[])
    graded = [
        cell("answer_dprobs", answer, **FLAGS["answer_dprobs"]),
        cell("test_dprobs", None, [dprobs_output] if dprobs_output else [], **FLAGS["test_dprobs"]),
        cell("test_dh", None, [error], **FLAGS["test_dh"]),
        cell("task_explain", **FLAGS["task_explain"]),
    ]
    with Gradebook(sqlite_url(made_once)) as gb:  # the checksums, as OverwriteCells leaves them in the notebook
        for c in graded:
            c.metadata.nbgrader["checksum"] = gb.find_source_cell(c.metadata.nbgrader.grade_id, NB, ASSIGNMENT).checksum
    found = []
    for name, preprocessor in (("stock", SaveAutoGrades), ("at_once", SaveAutoGradesAtOnce)):
        shutil.copy(made_once, tmp_path / f"{name}.db")
        url = sqlite_url(tmp_path / f"{name}.db")
        preprocessor().preprocess(new_notebook(cells=[from_dict(c) for c in graded]), resources(url, student))
        found.append(rows(url))
    assert found[0] == found[1]
    assert found[0] != rows(sqlite_url(made_once))  # (grades were written)


@pytest.mark.parametrize("late_penalty", [None, 0.0, 0.5])
@pytest.mark.parametrize("student", ["ada", "ben"])
def test_reading_the_grades_at_once_gives_the_feedback_what_stock_getgrades_gives(
    made_once, tmp_path, student, late_penalty
):
    """The scores and comments each cell of the feedback shows, and the notebook's score, with or without a late
    penalty: ada has a grade a teaching assistant gave by hand and a comment."""
    graded = [cell(name, **flags) for name, flags in FLAGS.items()]
    shutil.copy(made_once, tmp_path / "graded.db")
    url = sqlite_url(tmp_path / "graded.db")
    SaveAutoGradesAtOnce().preprocess(new_notebook(cells=[from_dict(c) for c in graded]), resources(url, student))
    with Gradebook(url) as gb:
        gb.find_comment("answer_dprobs", NB, ASSIGNMENT, "ada").manual_comment = "Look at the sign."
        gb.find_submission_notebook(NB, ASSIGNMENT, student).late_submission_penalty = late_penalty
        gb.db.commit()
    found = []
    for preprocessor in (GetGrades, GetGradesAtOnce):
        nb, given = preprocessor().preprocess(
            new_notebook(cells=[from_dict(c) for c in graded]), resources(url, student)
        )
        found.append(([c.metadata.nbgrader for c in nb.cells], given["nbgrader"]))
    assert found[0] == found[1]
    assert [c.get("score") for c in found[0][0]] == [None, 0.5 if student == "ada" else 1, 1, 0]
    assert found[0][0][0]["comment"] == ("Look at the sign." if student == "ada" else None)
    assert found[0][1]["late_penalty"] == (late_penalty or 0)


def test_a_task_cell_named_as_a_graded_answer_cell_yields_to_it_as_in_nbgraders_lookups(new_gradebook, tmp_path):
    shutil.copy(new_gradebook, tmp_path / "gradebook.db")
    with Gradebook(sqlite_url(tmp_path / "gradebook.db")) as gb:
        gb.add_assignment(ASSIGNMENT)
        gb.add_notebook(NB, ASSIGNMENT)
        gb.add_task_cell("twin", NB, ASSIGNMENT, max_score=1, cell_type="markdown")  # made first: its rows come first
        gb.add_grade_cell("twin", NB, ASSIGNMENT, max_score=1, cell_type="code")
        gb.add_solution_cell("twin", NB, ASSIGNMENT)
        gb.add_student("ada")
        gb.add_submission(ASSIGNMENT, "ada")
        where = ("twin", NB, ASSIGNMENT, "ada")
        read_once = SubmissionRows(gb, *where[1:])
        assert read_once.find_grade(*where) is gb.find_grade(*where) and gb.find_grade(*where).cell.type == "GradeCell"
        assert read_once.find_comment(*where) is gb.find_comment(*where)
        assert gb.find_comment(*where).cell.type == "SolutionCell"


def test_grades_csv_reads_every_students_scores_at_once_as_nbgrader_computes_them(made_once, tmp_path):
    """grades.csv's rows, read in two queries: each notebook's score, each step's and the late penalty as nbgrader's
    own objects give them, a grade given by hand included; nothing for a notebook not graded or not in the gradebook."""
    from autograder.grading.results.grades_csv import grade_rows

    path = tmp_path / "gradebook.db"
    shutil.copy(made_once, path)
    url = sqlite_url(path)
    with Gradebook(url) as gb:
        gb.find_grade("test_dh", NB, ASSIGNMENT, "ben").auto_score = 1
        gb.find_grade("test_dprobs", NB, ASSIGNMENT, "ben").auto_score = 0
        gb.find_submission_notebook(NB, ASSIGNMENT, "ben").late_submission_penalty = 0.25
        gb.db.commit()
        stock = {}
        for student in ("ada", "ben"):
            snb = gb.find_submission_notebook(NB, ASSIGNMENT, student)
            stock[student] = snb.score, {g.name: g.score for g in snb.grades}, snb.late_submission_penalty
        max_total = gb.find_assignment(ASSIGNMENT).max_score
    steps = {NB: ["test_dprobs", "test_dh"]}
    graded = {"ada": [NB], "ben": [NB], "cy": [NB], "dee": []}
    rows = {r["student"]: r for r in grade_rows(url, ASSIGNMENT, [NB], steps, ["ada", "ben", "cy", "dee"], graded)}
    for student, (score, scores, penalty) in stock.items():
        row = rows[student]
        assert row[NB] == score and row["max_total"] == max_total
        assert row[f"{NB}:test_dprobs"] == scores["test_dprobs"] and row[f"{NB}:test_dh"] == scores["test_dh"]
        assert row["late_penalty"] == (penalty or None) and row["total"] == score - (penalty or 0)
    assert rows["ada"][f"{NB}:test_dprobs"] == 0.5  # by hand
    assert rows["ben"]["total"] == 0.75 and rows["ben"]["late_penalty"] == 0.25
    for student in ("cy", "dee"):  # not in the gradebook; none of their notebooks graded
        assert rows[student] == {"student": student, "max_total": max_total, "late_penalty": None, "total": None}

"""``backprop-ninja grade`` on a class that mixes good students with hostile and broken ones.

The whole class arrives as one LMS zip (Canvas-named flat files and a folder per student) and
is graded in ONE run of the command, sandboxed, with 2 workers and short time limits. Then:
the good students' grades are exactly those that stock ``nbgrader autograde`` gives them alone,
every bad one ends with its named outcome, and nothing left the sandbox. Only Exercise 1.
"""

import copy
import os
import shutil

import nbformat
import pytest
from support.course import ASSIGNMENT, REPO, run_grade
from support.edits import duplicated, fake_grade_cell, stripped, without

from autograder.authoring.submissions import grade_id, solved
from autograder.grading.intake.prepare import STAGED, stage_student

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

NB = "ex1_atomic_backward"


NOTEBOOK_TIMEOUT, CELL_TIMEOUT = 90, 15  # generous: this 2-core machine is shared with other test runs


def grade(course, *args, check=True, env=None):
    timeouts = ("--workers", "2", "--notebook-timeout", str(NOTEBOOK_TIMEOUT), "--cell-timeout", str(CELL_TIMEOUT))
    return run_grade(course.root, *timeouts, *args, check=check, env=dict(os.environ) if env is None else env)


NOTEBOOKS = ["ex1_atomic_backward", "ex2_cross_entropy_backward", "ex3_batchnorm_backward", "ex4_manual_training"]


@pytest.mark.parametrize(
    "name, notebook",
    [
        ("ex1_atomic_backward.ipynb", "ex1_atomic_backward"),
        ("Copy of ex1_atomic_backward.ipynb", "ex1_atomic_backward"),
        ("ex1_atomic_backward (1).ipynb", "ex1_atomic_backward"),
        ("Copy of ex2_cross_entropy_backward (3).ipynb", "ex2_cross_entropy_backward"),
        ("LATE_1234_5678_ex3_batchnorm_backward-1.ipynb", "ex3_batchnorm_backward"),
        ("EX4_Manual_Training.IPYNB", "ex4_manual_training"),
        ("ex1.ipynb", "ex1_atomic_backward"),
        ("Exercise 2.ipynb", "ex2_cross_entropy_backward"),
        ("homework.ipynb", None),
        ("ex12.ipynb", None),
        ("ex1_atomic_backward.py", None),
    ],
)
def test_lms_file_names_are_matched_to_notebooks(name, notebook):
    from autograder.grading.intake.which_notebook import match_notebook

    assert match_notebook(name, NOTEBOOKS) == notebook


@pytest.mark.filterwarnings("ignore::nbformat.validator.DuplicateCellId")  # the duplicated cell is the case
def test_repairs_give_back_the_release_structure():
    from autograder.grading.intake.repair import repair

    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    source = nbformat.read(REPO / "source" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    good = solved(release, source)
    ids = [grade_id(c) for c in good.cells if grade_id(c)]
    raw = lambda nb: nbformat.writes(nb).encode()
    for broken, kind in [
        (stripped(good), "metadata_stripped"),
        (without(good, "test_dprobs"), "deleted_cell"),
        (without(good, "setup_batch"), "deleted_cell"),
        (duplicated(good, "test_dprobs"), "duplicated_cell"),
        (fake_grade_cell(good), "unknown_cell"),
    ]:
        fixed, found = repair(raw(broken), release, NB)
        assert [p.kind for p in found] == [kind]
        assert [grade_id(c) for c in fixed.cells if grade_id(c)] == ids
        answers = {grade_id(c): c.source for c in fixed.cells if grade_id(c).startswith("answer_")}
        assert answers == {grade_id(c): c.source for c in good.cells if grade_id(c).startswith("answer_")}
    other = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('my ex2 answers')")])
    assert repair(raw(other), release, NB)[0] is None
    assert repair(raw(other), release, NB)[1][0].kind == "wrong_notebook"
    assert repair(b"", release, NB)[1][0].kind == "not_a_notebook"
    assert repair(b"[1, 2]", release, NB)[1][0].kind == "not_a_notebook"


@pytest.mark.parametrize("code", ["ru", "zh"])
def test_a_translated_notebook_that_lost_its_metadata_is_matched_in_its_own_words(code):
    """Colab drops the nbgrader metadata of a Russian or Chinese notebook too; its locked cells' comments and its
    answer cells' first lines are the edition's, not the English release's: still metadata_stripped, never
    wrong_notebook (the instructor met a Chinese student's correct Exercise 2 reported as another notebook)."""
    from autograder.grading.intake.repair import repair

    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    edition = nbformat.read(REPO / "editions" / code / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    source = nbformat.read(REPO / "source" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    good = solved(edition, source)
    fixed, found = repair(nbformat.writes(stripped(good)).encode(), release, NB)
    assert [p.kind for p in found] == ["metadata_stripped"]
    assert [grade_id(c) for c in fixed.cells if grade_id(c)] == [grade_id(c) for c in good.cells if grade_id(c)]
    answers = {grade_id(c): c.source for c in fixed.cells if grade_id(c).startswith("answer_")}
    assert answers == {grade_id(c): c.source for c in good.cells if grade_id(c).startswith("answer_")}


def test_a_notebook_without_its_test_cells_gets_them_back_and_is_graded():
    from autograder.grading.intake.repair import repair

    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    source = nbformat.read(REPO / "source" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    good = solved(release, source)
    tests = [grade_id(c) for c in good.cells if grade_id(c).startswith("test_")]
    no_tests = good
    for gid in tests:
        no_tests = without(no_tests, gid)
    fixed, found = repair(nbformat.writes(no_tests).encode(), release, NB)
    assert [p.kind for p in found] == ["deleted_cell"]
    assert found[0].detail == "put back from the release: " + ", ".join(tests)
    assert [grade_id(c) for c in fixed.cells if grade_id(c)] == [grade_id(c) for c in good.cells if grade_id(c)]


def test_another_notebook_saved_under_this_name_is_not_graded():
    from autograder.grading.intake.repair import repair

    release = {n: nbformat.read(REPO / "release" / ASSIGNMENT / f"{n}.ipynb", as_version=4) for n in NOTEBOOKS}
    source = {n: nbformat.read(REPO / "source" / ASSIGNMENT / f"{n}.ipynb", as_version=4) for n in NOTEBOOKS}
    for handed_in in NOTEBOOKS:  # Exercise 1 holds every setup cell of the others, and their dlogits and dbngain
        raw = nbformat.writes(solved(release[handed_in], source[handed_in])).encode()
        for name in set(NOTEBOOKS) - {handed_in}:
            fixed, found = repair(raw, release[name], name, "", {n: r for n, r in release.items() if n != name})
            assert fixed is None and [p.kind for p in found] == ["wrong_notebook"], (handed_in, name, found)
            assert found[0].detail.endswith(f": {handed_in}.ipynb saved under this name? Not graded"), found


def test_a_cell_moved_or_its_metadata_changed_is_graded_as_the_release_has_it():
    """A right answer dragged below its graded cell lost its points ("not answered yet: did its cell run without an
    error?") with no problem named; an answer cell a student's metadata made graded (50 points) stopped nbgrader
    (grader_error, the student not graded); a test cell's points were the student's to set. The answer goes back
    above its check (moved_cell); every known grade_id has the release's metadata (metadata_changed)."""
    from autograder.grading.intake.repair import repair

    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    source = nbformat.read(REPO / "source" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    good = solved(release, source)
    moved = copy.deepcopy(good)
    i = next(i for i, c in enumerate(moved.cells) if grade_id(c) == "answer_dprobs")
    moved.cells.insert(i + 3, moved.cells.pop(i))  # below test_dprobs and answer_dcounts_sum_inv
    fixed, found = repair(nbformat.writes(moved).encode(), release, NB)
    assert [(p.kind, p.detail) for p in found] == [
        ("moved_cell", "put back above the graded cell that checks it: answer_dprobs")
    ]
    assert [grade_id(c) for c in fixed.cells] == [grade_id(c) for c in good.cells]
    up = copy.deepcopy(good)  # dragged up, above the step before it
    i = next(i for i, c in enumerate(up.cells) if grade_id(c) == "answer_dprobs")
    up.cells.insert(i - 2, up.cells.pop(i))
    fixed, found = repair(nbformat.writes(up).encode(), release, NB)
    assert [p.kind for p in found] == ["moved_cell"]
    assert [grade_id(c) for c in fixed.cells] == [grade_id(c) for c in good.cells]

    # the lecture's order, on purpose: dlogits's first path (its own answer cell) above dlogit_maxes's cell, whose
    # += adds the other: put back below it, the += ran first and dlogits lost its 2 points (607339e)
    lecture = solved(
        release,
        source,
        {
            "answer_dlogits": "dlogits = dnorm_logits.clone()",
            "answer_dlogit_maxes": "dlogit_maxes = -dnorm_logits.sum(1, keepdim=True)\n"
            "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes",
        },
    )
    i, j = (
        next(i for i, c in enumerate(lecture.cells) if grade_id(c) == g)
        for g in ("answer_dlogits", "answer_dlogit_maxes")
    )
    lecture.cells.insert(j, lecture.cells.pop(i))
    fixed, found = repair(nbformat.writes(lecture).encode(), release, NB)
    assert found == [] and [grade_id(c) for c in fixed.cells] == [grade_id(c) for c in lecture.cells]

    forged = copy.deepcopy(good)
    for cell in forged.cells:
        if grade_id(cell) in ("answer_dlogprobs", "test_dprobs"):
            cell.metadata.nbgrader.update(grade=True, points=50)
    fixed, found = repair(nbformat.writes(forged).encode(), release, NB)
    assert [(p.kind, p.detail) for p in found] == [
        ("metadata_changed", "graded with the release's nbgrader metadata: answer_dlogprobs")  # test_dprobs: points
    ]
    want = {grade_id(c): c.metadata.nbgrader for c in release.cells if grade_id(c)}
    assert all(c.metadata.nbgrader == want[grade_id(c)] for c in fixed.cells if grade_id(c))


@pytest.mark.parametrize(
    "raw, what",
    [
        (b"PK\x03\x04\x14\x00", "a zip archive"),
        (b"%PDF-1.7\n", "a PDF document"),
        (b"<!DOCTYPE html>", "a web page (HTML)"),
    ],
)
def test_a_zip_a_pdf_or_a_web_page_under_a_notebooks_name_is_named(raw, what):
    """A zip handed in as ex1_atomic_backward.ipynb was "not JSON ('utf-8' codec can't decode byte 0xc1 in position
    10...)", on the student's page too: it is named, with what to hand in instead."""
    from autograder.grading.intake.repair import repair

    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    assert [(p.kind, p.detail) for p in repair(raw + bytes(range(256)), release, NB)[1]] == [
        ("not_a_notebook", f"{what}, not a Jupyter notebook: hand in the .ipynb file itself")
    ]


def test_a_notebook_cut_short_is_graded_for_what_it_holds():
    """A student who did Parts 1 and 2 and deleted the rest (or whose notebook lost its end) got wrong_notebook,
    "another notebook saved under this name? Not graded", and 0 for the right answers they had: the release's first
    cells, answers among them and nothing of another notebook, are this notebook; the rest is put back."""
    from autograder.grading.intake.repair import repair

    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    good = solved(release, nbformat.read(REPO / "source" / ASSIGNMENT / f"{NB}.ipynb", as_version=4))
    end = next(i for i, c in enumerate(good.cells) if grade_id(c) == "check_layer2")
    short = copy.deepcopy(good)
    short.cells = short.cells[: end + 1]
    fixed, found = repair(nbformat.writes(short).encode(), release, NB)
    assert [p.kind for p in found] == ["deleted_cell"]
    assert found[0].detail.startswith("it ends after check_layer2, put back from the release: test_dbngain, ")
    answers = {grade_id(c): c.source for c in fixed.cells if grade_id(c) in ("answer_dh", "answer_dbngain")}
    assert answers["answer_dh"] == next(c.source for c in good.cells if grade_id(c) == "answer_dh")
    assert "answer_dbngain" not in answers  # not handed in: nothing to grade
    setup_only = copy.deepcopy(good)  # the setup cells every exercise shares: no answer of this one
    setup_only.cells = [c for c in setup_only.cells if (grade_id(c) or "").startswith("setup")]
    assert [p.kind for p in repair(nbformat.writes(setup_only).encode(), release, NB)[1]] == ["wrong_notebook"]


def test_staging_reads_no_link_in_a_submitted_folder(tmp_path):
    """As root, a student's folder put in submitted/ by hand may hold links: one named like a notebook or like
    timestamp.txt must not bring another file of the machine (or another student's notebook) into the staged copy
    that the kernel sees; the notebook counts as not handed in, the timestamp as absent."""
    root = tmp_path / "course"
    folder = root / "submitted" / "mallory" / ASSIGNMENT
    folder.mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("2026-01-01 00:00:00 UTC the host's secret")
    (folder / "timestamp.txt").symlink_to(secret)
    (folder / f"{NB}.ipynb").symlink_to(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb")
    releases = {NB: nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)}
    graded, problems = stage_student(root, ASSIGNMENT, "mallory", [NB], releases)
    assert graded == [] and [(p.kind, p.notebook) for p in problems] == [("missing_notebook", NB)]
    assert list((root / STAGED / "mallory" / ASSIGNMENT).iterdir()) == []


def test_staging_reads_through_no_linked_folder(tmp_path):
    """A student's folder in submitted/ that is a link (mal -> ada, or mal/<assignment> -> ada's): staging read
    ada's notebook through it, and mal was graded on ada's work (a folder put in submitted/ by hand, unpacked from a
    zip that held links). Neither is read: the notebook counts as not handed in."""
    root = tmp_path / "course"
    ada = root / "submitted" / "ada" / ASSIGNMENT
    ada.mkdir(parents=True)
    shutil.copy(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", ada)
    (ada / "timestamp.txt").write_text("2026-12-16 10:00:00.000000 UTC")
    (root / "submitted" / "mal").symlink_to(root / "submitted" / "ada", target_is_directory=True)
    (root / "submitted" / "eve").mkdir()
    (root / "submitted" / "eve" / ASSIGNMENT).symlink_to(ada, target_is_directory=True)
    releases = {NB: nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)}
    for student in ("mal", "eve"):
        graded, problems = stage_student(root, ASSIGNMENT, student, [NB], releases)
        assert graded == [] and [(p.kind, p.notebook) for p in problems] == [("missing_notebook", NB)], problems
        assert list((root / STAGED / student / ASSIGNMENT).iterdir()) == []
    assert stage_student(root, ASSIGNMENT, "ada", [NB], releases) == ([NB], [])


def test_a_notebook_handed_in_under_another_name_is_named_when_submitted_is_graded_as_it_is(tmp_path):
    """Without --from, only <notebook>.ipynb in the assignment's folder is graded: a browser's "(1)" copy, or a
    notebook beside the assignment's folder, leaves the student missing_notebook, whose detail names the file and
    the command that matches it; a link named so is not named (nor followed)."""
    root = tmp_path / "course"
    release = REPO / "release" / ASSIGNMENT / f"{NB}.ipynb"
    for student, relative in (("ada", f"{ASSIGNMENT}/{NB} (1).ipynb"), ("ben", "Exercise 1.ipynb")):
        (root / "submitted" / student / ASSIGNMENT).mkdir(parents=True)
        shutil.copy(release, root / "submitted" / student / relative)
    (root / "submitted" / "cy" / ASSIGNMENT).mkdir(parents=True)
    (root / "submitted" / "cy" / ASSIGNMENT / f"{NB}-1.ipynb").symlink_to(release)
    releases = {NB: nbformat.read(release, as_version=4)}
    details = {}
    for student in ("ada", "ben", "cy"):
        graded, problems = stage_student(root, ASSIGNMENT, student, [NB], releases)
        assert graded == [] and [(p.kind, p.notebook) for p in problems] == [("missing_notebook", NB)]
        details[student] = problems[0].detail
    assert f"holds {ASSIGNMENT}/{NB} (1).ipynb: `backprop-ninja grade --from submitted`" in details["ada"]
    assert "holds Exercise 1.ipynb:" in details["ben"]
    assert details["cy"] == f"no {NB}.ipynb was handed in"  # a link named so is not named


@pytest.mark.parametrize("stamp", [b"\xff\xfe2\x00", b"handed in on Tuesday"])
def test_a_timestamp_that_is_no_time_is_named_and_left_out(tmp_path, stamp):
    """A timestamp.txt that is no UTF-8 (a student's own upload in a Moodle folder is collected as the time) stopped
    the whole class's run in the change keys (UnicodeDecodeError); one that is no time left the student ungraded
    (grader_error: "'CourseDirectory' object has no attribute 'fail'"). Both are bad_timestamp now: graded without
    it; a time nbgrader reads is staged as before."""
    from autograder.grading.intake.changes import submission_key

    root = tmp_path / "course"
    folder = root / "submitted" / "stan" / ASSIGNMENT
    folder.mkdir(parents=True)
    shutil.copy(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", folder)
    (folder / "timestamp.txt").write_bytes(stamp)
    releases = {NB: nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)}
    assert submission_key(root, ASSIGNMENT, "stan", [NB])
    graded, problems = stage_student(root, ASSIGNMENT, "stan", [NB], releases)
    assert graded == [NB] and [(p.kind, p.notebook) for p in problems] == [("bad_timestamp", None)]
    assert not (root / STAGED / "stan" / ASSIGNMENT / "timestamp.txt").exists()
    (folder / "timestamp.txt").write_text("2026-12-16 10:00:00.000000 UTC")
    assert stage_student(root, ASSIGNMENT, "stan", [NB], releases) == ([NB], [])
    assert (root / STAGED / "stan" / ASSIGNMENT / "timestamp.txt").read_text() == "2026-12-16 10:00:00.000000 UTC"


def test_a_hostile_notebook_costs_its_student_never_the_class(tmp_path, monkeypatch):
    """JSON nested 100,000 deep (RecursionError) or a grade_id that is a list (TypeError: unhashable) stopped the whole
    class's run ("grading stopped: grading worker 1 failed: maximum recursion depth exceeded..."). The first is
    not_a_notebook, the second a cell without nbgrader metadata (matched to the release); and whatever else a file
    raises in repair is a grader_error of its student."""
    from autograder.grading.intake import prepare
    from autograder.grading.intake.repair import repair

    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    deep = b'{"cells": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert [p.kind for p in repair(deep, release, NB)[1]] == ["not_a_notebook"]
    for odd in (["answer_dprobs"], 5):
        nb = copy.deepcopy(release)
        next(c for c in nb.cells if grade_id(c) == "answer_dprobs").metadata.nbgrader["grade_id"] = odd
        fixed, found = repair(nbformat.writes(nb).encode(), release, NB)
        assert [p.kind for p in found] == ["metadata_stripped"] and fixed is not None

    folder = tmp_path / "submitted" / "mal" / ASSIGNMENT
    folder.mkdir(parents=True)
    shutil.copy(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", folder)

    def unforeseen(*args):
        raise MemoryError("a file no check foresaw")

    monkeypatch.setattr(prepare, "repair", unforeseen)
    graded, problems = stage_student(tmp_path, ASSIGNMENT, "mal", [NB], {NB: release})
    assert graded == [] and [(p.kind, p.detail) for p in problems] == [
        ("grader_error", "its file could not be read: MemoryError('a file no check foresaw')")
    ]


@pytest.mark.filterwarnings("ignore::nbformat.validator.DuplicateCellId")  # the duplicated cell is the case
def test_each_repair_is_noted_in_the_graded_notebook_for_the_students_page(tmp_path):
    """The instructor read every repair in problems.json; the student read nothing of it (ada kept 34 / 34 with her
    answer_dprobs put back above its check, and her page did not say so). Each repair is noted in the notebook that
    is graded, naming the course's cells (never a grade_id of the student's own), for SummarizeSteps to say."""
    from autograder.common.problems import Problem, told_student
    from autograder.grading.intake.repair import repair

    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    good = solved(release, nbformat.read(REPO / "source" / ASSIGNMENT / f"{NB}.ipynb", as_version=4))
    ids = {grade_id(c) for c in good.cells if grade_id(c)}
    moved, changed = copy.deepcopy(good), copy.deepcopy(good)
    i = next(i for i, c in enumerate(moved.cells) if grade_id(c) == "answer_dprobs")
    moved.cells.insert(i + 3, moved.cells.pop(i))
    next(c for c in changed.cells if grade_id(c) == "test_dprobs").metadata.nbgrader["grade"] = False
    for broken, kind, cells in [
        (without(good, "test_dprobs"), "deleted_cell", ["test_dprobs"]),
        (duplicated(good, "test_dprobs"), "duplicated_cell", ["test_dprobs"]),
        (fake_grade_cell(good), "unknown_cell", []),
        (moved, "moved_cell", ["answer_dprobs"]),
        (changed, "metadata_changed", ["test_dprobs"]),
    ]:
        fixed, found = repair(nbformat.writes(broken).encode(), release, NB)
        assert [p.kind for p in found] == [kind]
        assert told_student(fixed.metadata, ids) == {kind: cells}, kind
    fixed, found = repair(nbformat.writes(stripped(good)).encode(), release, NB)
    assert set(told_student(fixed.metadata, ids)) == {"metadata_stripped"}
    assert told_student(repair(nbformat.writes(good).encode(), release, NB)[0].metadata, ids) == {}

    # what staging finds beside the notebook: a timestamp that is no time, several files collected for it
    folder = tmp_path / "submitted" / "stan" / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(good, folder / f"{NB}.ipynb")
    (folder / "timestamp.txt").write_text("handed in on Tuesday")
    collected = [Problem("stan", NB, "duplicate_file", "2 files"), Problem("ann", NB, "duplicate_file", "3 files")]
    assert stage_student(tmp_path, ASSIGNMENT, "stan", [NB], {NB: release}, collected)[0] == [NB]
    staged = nbformat.read(tmp_path / STAGED / "stan" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    assert told_student(staged.metadata, ids) == {"duplicate_file": [], "bad_timestamp": []}


@pytest.mark.parametrize("code", ["ru", "zh"])
def test_a_deleted_cell_of_a_translated_notebook_is_put_back_in_its_own_words(code):
    """A Russian notebook without its test_dh got the English release's cell back; RestoreLockedCells, which compares
    a locked cell with the course's in the notebook's language, then found it changed (locked_cell_changed), and the
    student's page would say a cell they never saw in English was theirs and not the course's."""
    from autograder.grading.intake.repair import repair

    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    edition = nbformat.read(REPO / "editions" / code / ASSIGNMENT / f"{NB}.ipynb", as_version=4)
    good = solved(edition, nbformat.read(REPO / "source" / ASSIGNMENT / f"{NB}.ipynb", as_version=4))
    fixed, found = repair(nbformat.writes(without(good, "test_dh")).encode(), release, NB)
    assert [p.kind for p in found] == ["deleted_cell"]
    put_back = next(c.source for c in fixed.cells if grade_id(c) == "test_dh")
    assert put_back == next(c.source for c in edition.cells if grade_id(c) == "test_dh")
    assert put_back != next(c.source for c in release.cells if grade_id(c) == "test_dh")  # (its comment is translated)


def test_a_notebook_exported_as_a_script_is_that_notebooks_problem_not_every_missing_ones(tmp_path):
    """A student who handed in ex1 as a .py (Colab's File → Download → .py) got missing_notebook for ex1 "no
    ex1_atomic_backward.ipynb was handed in as a regular file; what was handed in matches no notebook: …py", and the
    same sentence about the .py on every other notebook they had not handed in; their ex1 page said no file was
    found. Now ex1 is not_a_notebook, naming the .py (its page: "is not a Jupyter notebook… hand in
    ex1_atomic_backward.ipynb again"), and the others are plainly missing. Beside a notebook for it, the .py is a
    stray file (unmatched_file), as before."""
    from autograder.grading.intake.collect import collect

    nb1, nb2 = NB, "ex2_cross_entropy_backward"
    download = tmp_path / "canvas"
    download.mkdir()
    text = (REPO / "release" / ASSIGNMENT / f"{nb1}.ipynb").read_text()
    (download / f"hoppergrace_3456_7890_{nb1}.py").write_text("# %%\nimport torch\n")
    (download / "hoppergrace_3456_7891_notes.txt").write_text("my notes\n")
    (download / f"lovelaceada_1234_5678_{nb1}.html").write_text("<html></html>")
    (download / f"lovelaceada_1234_5679_Copy of {nb1}.ipynb").write_text(text)
    root = tmp_path / "course"
    collected, problems = collect(download, root, ASSIGNMENT, [nb1, nb2])
    assert collected == {"lovelaceada_1234": [nb1]}
    found = {(p.student, p.notebook, p.kind): p.detail for p in problems}
    assert found == {
        ("hoppergrace_3456", nb1, "not_a_notebook"): f"hoppergrace_3456_7890_{nb1}.py: not a notebook file (.ipynb)",
        ("hoppergrace_3456", None, "unmatched_file"): "hoppergrace_3456_7891_notes.txt: not a notebook file (.ipynb)",
        ("lovelaceada_1234", None, "unmatched_file"): f"lovelaceada_1234_5678_{nb1}.html: not a notebook file (.ipynb)",
    }
    releases = {n: nbformat.read(REPO / "release" / ASSIGNMENT / f"{n}.ipynb", as_version=4) for n in (nb1, nb2)}
    graded, staged = stage_student(root, ASSIGNMENT, "hoppergrace_3456", [nb1, nb2], releases, problems)
    assert graded == [] and [(p.kind, p.notebook) for p in staged] == [("missing_notebook", nb2)]
    assert staged[0].detail == (  # the stray file still told, the .py not: it is ex1's
        f"no {nb2}.ipynb was handed in; what was handed in matches no notebook: "
        "hoppergrace_3456_7891_notes.txt: not a notebook file (.ipynb)"
    )


def test_a_notebook_named_after_none_is_matched_by_its_cells(tmp_path):
    """Untitled0.ipynb (work saved in a new notebook, or renamed) was an unmatched_file and its notebook missing,
    however plainly it held Exercise 2's cells; now it is collected as the notebook most of whose own cells it holds,
    unless a file named after that notebook was handed in too. A notebook with no cell of the course, or the setup
    cells only (which the notebooks share), stays an unmatched_file."""
    from autograder.authoring.submissions import copy_notebook
    from autograder.grading.intake.collect import collect

    nb1, nb2 = NB, "ex2_cross_entropy_backward"
    download = tmp_path / "moodle"
    release = {n: nbformat.read(REPO / "release" / ASSIGNMENT / f"{n}.ipynb", as_version=4) for n in (nb1, nb2)}
    setup_only = copy_notebook(release[nb2])
    setup_only.cells = [c for c in setup_only.cells if grade_id(c) and grade_id(c).startswith("setup")]
    files = {
        "Ada Lovelace_1_assignsubmission_file_/Untitled0.ipynb": nbformat.writes(release[nb2]),
        "Ben Sign_2_assignsubmission_file_/lab.ipynb": nbformat.writes(release[nb2]),
        f"Ben Sign_2_assignsubmission_file_/{nb2}.ipynb": nbformat.writes(release[nb2]).replace("Exercise", "Ex"),
        "Cy Young_3_assignsubmission_file_/scratch.ipynb": nbformat.writes(nbformat.v4.new_notebook()),
        "Cy Young_3_assignsubmission_file_/setup.ipynb": nbformat.writes(setup_only),
        "Cy Young_3_assignsubmission_file_/broken.ipynb": '{"cells": [',
    }
    for name, text in files.items():
        (download / name).parent.mkdir(parents=True, exist_ok=True)
        (download / name).write_text(text)
    root = tmp_path / "course"
    shutil.copytree(REPO / "release" / ASSIGNMENT, root / "release" / ASSIGNMENT)
    collected, problems = collect(download, root, ASSIGNMENT, [nb1, nb2])
    assert collected == {"Ada_Lovelace_1": [nb2], "Ben_Sign_2": [nb2]}
    assert (root / "submitted" / "Ada_Lovelace_1" / ASSIGNMENT / f"{nb2}.ipynb").read_text() == files[
        "Ada Lovelace_1_assignsubmission_file_/Untitled0.ipynb"
    ]
    assert "Ex 2" in (root / "submitted" / "Ben_Sign_2" / ASSIGNMENT / f"{nb2}.ipynb").read_text()  # the named one
    assert sorted((p.student, p.kind, p.detail.split(":")[0]) for p in problems) == [
        ("Ben_Sign_2", "unmatched_file", "Ben Sign_2_assignsubmission_file_/lab.ipynb"),
        ("Cy_Young_3", "unmatched_file", "Cy Young_3_assignsubmission_file_/broken.ipynb"),
        ("Cy_Young_3", "unmatched_file", "Cy Young_3_assignsubmission_file_/scratch.ipynb"),
        ("Cy_Young_3", "unmatched_file", "Cy Young_3_assignsubmission_file_/setup.ipynb"),
    ]


def test_a_newer_copy_that_is_empty_or_no_notebook_does_not_hide_the_students_notebook(tmp_path):
    """Two files for one notebook, the newer empty (an upload that failed) or cut short: the newest was taken and the
    student's notebook ignored; their page said "the file is empty" and their work scored nothing. The newest copy
    that is a notebook is taken, and duplicate_file says why; a newer notebook is still taken over an older one."""
    import zipfile

    from autograder.grading.intake.collect import collect

    good = '{"cells": [], "nbformat": 4}'
    download = tmp_path / "moodle.zip"
    with zipfile.ZipFile(download, "w") as z:
        for name, data, day in [
            ("José Núñez_12347_assignsubmission_file_/ex1_atomic_backward.ipynb", good, 4),
            ("José Núñez_12347_assignsubmission_file_/ex1_atomic_backward (2).ipynb", "", 5),
            ("Chloé Dubois_12350_assignsubmission_file_/ex1_atomic_backward.ipynb", good, 3),
            ("Chloé Dubois_12350_assignsubmission_file_/ex1_atomic_backward (1).ipynb", good[:10], 4),
            ("Chloé Dubois_12350_assignsubmission_file_/ex1_atomic_backward (2).ipynb", "", 5),
            ("Ada Lovelace_1_assignsubmission_file_/ex1_atomic_backward.ipynb", good, 4),
            ("Ada Lovelace_1_assignsubmission_file_/ex1_atomic_backward (1).ipynb", good.replace("4", "4 "), 5),
            ("Ben Bit_2_assignsubmission_file_/ex1_atomic_backward.ipynb", "", 5),
        ]:
            z.writestr(zipfile.ZipInfo(name, (2026, 12, day, 10, 0, 0)), data)
    collected, problems = collect(download, tmp_path / "course", ASSIGNMENT, [NB])
    assert sorted(collected) == ["Ada_Lovelace_1", "Ben_Bit_2", "Chloé_Dubois_12350", "José_Núñez_12347"]
    submitted = tmp_path / "course" / "submitted"
    for student in ("José_Núñez_12347", "Chloé_Dubois_12350"):
        assert (submitted / student / ASSIGNMENT / f"{NB}.ipynb").read_text() == good
    assert (submitted / "Ada_Lovelace_1" / ASSIGNMENT / f"{NB}.ipynb").read_text() == good.replace("4", "4 ")
    assert (submitted / "Ben_Bit_2" / ASSIGNMENT / f"{NB}.ipynb").read_text() == ""  # their only file: graded as it is
    why = {p.student: p.detail for p in problems if p.kind == "duplicate_file"}
    assert why["José_Núñez_12347"] == (
        "2 files for ex1_atomic_backward: took José Núñez_12347_assignsubmission_file_/ex1_atomic_backward.ipynb (the "
        "newest that is a notebook; José Núñez_12347_assignsubmission_file_/ex1_atomic_backward (2).ipynb, newer, is "
        "empty); ignored José Núñez_12347_assignsubmission_file_/ex1_atomic_backward (2).ipynb"
    )
    assert "newest that is a notebook" in why["Chloé_Dubois_12350"] and "(the newest)" in why["Ada_Lovelace_1"]

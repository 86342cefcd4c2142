"""The feedback's table of steps and its links, on hand-made graded notebooks (no kernels, no nbgrader runs).

The real pipeline (autograde, generate_feedback, the page in a browser) is tested in tests/slow.
"""

import nbformat
import pytest
from nbconvert.filters.strings import clean_html
from nbformat.v4 import new_code_cell, new_notebook, new_output
from support.course import FeedbackPage

from autograder.authoring import SOURCE_DIR, grade_id
from autograder.common.diagnoses import Reason
from autograder.common.links import repository_url
from autograder.common.words import say
from autograder.engine import wire
from autograder.engine.training.gradient_checks import call_problem
from autograder.engine.verdict import Verdict
from autograder.preprocessors import SummarizeSteps
from autograder.preprocessors.judge_answers import verdict_outputs, why_no_answer

REPOSITORY = repository_url()
HOSTILE = "<script>alert(1)</script>"
REORDERED = "in the order the backward pass computes them"


def graded_cell(gid: str, points: float, score: float, verdict: "Verdict | str" = "", **nbgrader):
    """A graded cell as GenerateFeedback's preprocessors meet it: the grader's verdict (as JudgeAnswers writes it; a
    str: text the kernel printed, no verdict), GetGrades' scores."""
    if isinstance(verdict, Verdict):
        outputs = verdict_outputs(verdict)
    else:
        outputs = [new_output("stream", name="stdout", text=verdict)] if verdict else []
    cell = new_code_cell("check()", outputs=outputs)
    cell.metadata.nbgrader = {"grade": True, "grade_id": gid, "points": points, "score": score, **nbgrader}
    return cell


def verdict(title: str, got: float, most: float, *reasons: str) -> Verdict:
    return Verdict(title, got, most, list(reasons))


def summarize(cells, late_penalty=0.0, notebook=None):
    nb = new_notebook(cells=cells)
    resources = {"nbgrader": {"late_penalty": late_penalty, **({"notebook": notebook} if notebook else {})}}
    nb, resources = SummarizeSteps().preprocess(nb, resources)
    return nb, resources


# Exercise 4's graded cells in the notebook's order: the gradients in the order backward_pass returns them.
EX4 = [
    graded_cell("setup_settings", 0, 0),  # a 0-point grade cell (older gradebooks): not a step
    graded_cell("test_dC", 2, 2, verdict("dC", 2, 2, "correct: max difference 2.6e-08")),
    graded_cell("test_dW1", 1, 0, verdict("dW1", 0, 1, "dW1 is transposed", "(judged from your dhprebn)")),
    graded_cell("test_db1", 1, 1, verdict("db1", 1, 1, "correct")),
    graded_cell("test_dW2", 1, 0, verdict("dW2", 0, 1, f"dW2 is transposed {HOSTILE}", "second", "third", "fourth")),
    graded_cell("test_db2", 1, 1, verdict("db2", 1, 1, "correct")),
    graded_cell("test_dbngain", 1, 1, verdict("dbngain", 0, 1, "keepdim dropped")),  # the instructor gave the point
    graded_cell("test_dbnbias", 1, 1, verdict("dbnbias", 1, 1, "correct")),
    graded_cell("train", 0, 0, "300 steps in 0.1 s"),
    graded_cell("test_training", 4, 3, verdict("training run", 3, 4, "follows autograd's run", "does not reach 2.75")),
    graded_cell(
        "test_calibration", 2, 2, verdict("BatchNorm calibration", 2, 2, "bnmean is the mean", "bnvar is the variance")
    ),
]


def test_steps_in_backward_order_with_the_most_upstream_wrong_one_first_to_fix():
    nb, resources = summarize(EX4)
    summary = nb.cells[0]
    assert summary.cell_type == "raw" and summary.metadata.raw_mimetype == "text/html"
    page = FeedbackPage(clean_html(summary.source))  # what nbconvert writes of a raw HTML cell
    assert [r.step for r in page.rows] == [
        "dW2",
        "db2",
        "dbngain",
        "dbnbias",
        "dW1",
        "db1",
        "dC",
        "training run",
        "BatchNorm calibration",
    ]
    assert [r.anchor for r in page.rows][:2] == ["test_dW2", "test_db2"] and page.rows[-1].anchor == "test_calibration"
    assert page.rows[-1].reasons == ["bnmean is the mean", "bnvar is the variance"]  # right, of 2 points: each line
    assert [r.mark for r in page.rows] == ["✘", "✔", "✔", "✔", "✘", "✔", "✔", "✘", "✔"]
    assert [r.first for r in page.rows] == [True] + [False] * 8
    assert page.headline == "6 of 9 graded cells right. Fix first: dW2 (0 of 1 point), marked below."
    assert page.rows[4].reasons == ["dW1 is transposed", "(judged from your dhprebn)"]
    assert page.rows[0].reasons == [f"dW2 is transposed {HOSTILE}", "second", "third", "… (more in the cell)"]
    assert page.rows[7].points == "3 / 4" and page.rows[7].reasons == ["follows autograd's run", "does not reach 2.75"]
    assert page.rows[1].reasons == ["correct"]
    assert page.rows[6].reasons == ["correct: max difference 2.6e-08"]  # dC, right: its one line
    assert page.rows[2].reasons == ["keepdim dropped", "(score set by your instructor)"]
    assert "<script" not in summary.source and "&lt;script&gt;" in summary.source
    assert "#toc { display: none; }" in resources["inlining"]["css"][-1]  # nbgrader's "Test cell" list gives way
    assert any(REORDERED in note for note in page.notes)  # the notebook has them in the order backward_pass returns
    assert any("with a seed you have not seen" in note for note in page.notes)  # why its numbers are not theirs


def test_exercise_5_is_ordered_by_its_own_table():
    """Its demb is not Exercise 1's (the embedding there comes last but one): its table puts the skip connection after
    the attention head, and Part 6's own networks last; the most upstream wrong step is the one to fix."""
    cells = [
        graded_cell("test_drelu_in", 1, 1, verdict("drelu_in", 1, 1, "correct")),
        graded_cell("test_demb", 3, 0, verdict("demb", 0, 3, "demb is missing the skip connection's gradient")),
        graded_cell(
            "test_dscores", 3, 0, verdict("dscores", 0, 3, "dscores takes the softmax's sum over the other axis")
        ),
        graded_cell("test_dhln", 2, 2, verdict("dhln", 2, 2, "correct")),
    ]
    nb, _ = summarize(cells, notebook="ex5_new_operators")
    page = FeedbackPage(clean_html(nb.cells[0].source))
    assert [r.step for r in page.rows] == ["dhln", "dscores", "demb", "drelu_in"]
    assert page.first_to_fix() == ["test_dscores"] and any(REORDERED in note for note in page.notes)
    nb, _ = summarize(cells)  # read with Exercise 1's table, only demb has a place: nothing moves, nothing said
    page = FeedbackPage(clean_html(nb.cells[0].source))
    assert [r.step for r in page.rows] == ["drelu_in", "demb", "dscores", "dhln"]
    assert page.notes and not any(REORDERED in note for note in page.notes)


GRADIENT_POINTS = [("C", 2), ("W1", 1), ("b1", 1), ("W2", 1), ("b2", 1), ("bngain", 1), ("bnbias", 1)]


def every_gradient_lost(reason) -> list:
    """Exercise 4's seven gradient cells, each lost for this one reason, and a training run that earned its points."""
    cells = [graded_cell(f"test_d{p}", points, 0, verdict(f"d{p}", 0, points, reason)) for p, points in GRADIENT_POINTS]
    return cells + [graded_cell("test_training", 4, 4, verdict("training run", 4, 4, "follows autograd's run"))]


def test_a_backward_pass_that_raised_is_the_one_error_to_fix_first_not_dW2():
    """Exercise 4's backward_pass raised: every gradient's cell has the grader's reason for it, which names
    backward_pass and its error. The headline sends the student to that error, not to dW2, the table's first row."""
    status = {"kind": "raised", "type": "NameError", "message": f"name 'dC' is not defined {HOSTILE}"}
    raised = call_problem(wire.Report({"backward_pass": status}), 0)
    assert raised.kind == "raised_error"
    nb, _ = summarize(every_gradient_lost(raised))
    page = FeedbackPage(clean_html(nb.cells[0].source))
    assert page.headline == (
        "1 of 8 graded cells right. Fix first: the one error behind 7 graded cells (8 points), the first of them "
        f"marked below: backward_pass raised NameError on the check batch: name 'dC' is not defined {HOSTILE}. Run "
        "Step 1 (your gradients beside autograd's) to see where"
    )
    assert [r.first for r in page.rows] == [True] + [False] * 7 and page.rows[0].step == "dW2"
    assert "<script" not in nb.cells[0].source
    # a reason of its own: the most upstream wrong step is the one to fix, as before
    cells = every_gradient_lost(raised)
    cells[3] = graded_cell("test_dW2", 1, 0, verdict("dW2", 0, 1, "dW2 is transposed"))
    page = FeedbackPage(clean_html(summarize(cells)[0].cells[0].source))
    assert page.headline == "1 of 8 graded cells right. Fix first: dW2 (0 of 1 point), marked below."


def test_a_kernel_that_died_names_the_first_cell_and_the_reason_all_share():
    """The kernel died before the gradients' cells reported: the headline is as it was, the first cell to fix and the
    reason the others share."""
    died, _ = why_no_answer(new_code_cell(), 0, {"kernel_died_in": 0}, set())
    assert died.kind == "did_not_run"
    page = FeedbackPage(clean_html(summarize(every_gradient_lost(died))[0].cells[0].source))
    assert page.headline == (
        "1 of 8 graded cells right. Fix first: dW2 (0 of 1 point), marked below. 7 graded cells (8 points) fail for "
        "the same reason: the kernel died before this cell reported its answer (see the cell where it stopped)"
    )
    assert [r.first for r in page.rows] == [True] + [False] * 7


def test_a_blank_exercise_4_is_sent_to_the_one_answer_its_gradients_wait_for():
    """Nothing written: every gradient waits for backward_pass, so the headline names that answer, not dW2."""
    unwritten = Reason("not_answered", say("not answered yet: backward_pass still raises NotImplementedError"))
    cells = [
        graded_cell(f"test_d{p}", points, 0, verdict(f"d{p}", 0, points, unwritten))
        for p, points in [("C", 2), ("W1", 1), ("b1", 1), ("W2", 1), ("b2", 1), ("bngain", 1), ("bnbias", 1)]
    ]
    training = Reason("not_answered", say("training stopped after 0 of 300 steps: training_step still raises it"))
    cells.append(graded_cell("test_training", 4, 0, verdict("training run", 0, 4, training)))
    page = FeedbackPage(clean_html(summarize(cells)[0].cells[0].source))
    assert page.headline == (
        "0 of 8 graded cells right. Fix first: the one answer that 7 graded cells (8 points) wait for (not answered "
        "yet: backward_pass still raises NotImplementedError); the first of them is marked below."
    )
    assert [r.first for r in page.rows] == [True] + [False] * 7


def test_the_late_penalty_in_the_headline_comments_and_absolute_course_links_in_the_notes():
    answer = new_code_cell("dW2 = ...")
    answer.metadata.nbgrader = {"solution": True, "grade": False, "grade_id": "answer_dW2", "comment": "See me"}
    blank = new_code_cell("# YOUR CODE HERE")  # nbgrader's own comment on an answer left as released
    blank.metadata.nbgrader = {"solution": True, "grade": False, "grade_id": "answer_dW1", "comment": "No response."}
    nb, _ = summarize([answer, blank, *EX4], late_penalty=2)
    page = FeedbackPage(clean_html(nb.cells[0].source))
    # the late penalty beside the score it explains, in the headline (it was a note under the whole table)
    assert page.headline.endswith(" Late submission: 2 points off (the score above is after it).")
    assert not any("Late submission" in note for note in page.notes)
    assert page.notes[0] == "Your instructor commented on answer_dW2." and "#comment-answer_dW2" in page.links
    course = [link for link in page.links if not link.startswith("#")]
    assert course == [
        f"{REPOSITORY}/blob/main/course/README.md#when-you-are-stuck",
        f"{REPOSITORY}/blob/main/course/cheatsheet.md",
    ]


def test_all_right_and_nothing_to_summarize():
    nb, _ = summarize([graded_cell("test_dC", 2, 2, verdict("dC", 2, 2, "correct"))])
    page = FeedbackPage(clean_html(nb.cells[0].source))
    assert page.headline == "All 1 graded cells are right." and not any(r.first for r in page.rows)
    right = [graded_cell(f"test_d{p}", 1, 1, verdict(f"d{p}", 1, 1, "correct")) for p in ("W1", "W2")]
    page = FeedbackPage(clean_html(summarize(right)[0].cells[0].source))  # moved, but no ✘ to fix first
    assert [r.step for r in page.rows] == ["dW2", "dW1"] and not any(REORDERED in note for note in page.notes)
    setup_only = [graded_cell("setup_settings", 0, 0)]
    nb, resources = summarize(setup_only)
    assert nb.cells == setup_only and "inlining" not in resources


def test_a_graded_cell_without_the_graders_verdict_shows_no_kernel_text():
    nb, _ = summarize([graded_cell("test_dC", 2, 0, "anything the kernel printed")])
    row = FeedbackPage(clean_html(nb.cells[0].source)).rows[0]
    assert (row.step, row.mark, row.reasons) == ("dC", "✘", [])


@pytest.mark.parametrize("path", sorted(SOURCE_DIR.glob("*.ipynb")), ids=lambda p: p.stem)
def test_every_hidden_region_is_in_a_locked_cell(path):
    """nbgrader_config.py lets hidden tests live outside grade cells (ClearHiddenTests.enforce_metadata = False):
    autograde restores them in locked cells only, so a hidden region anywhere else would silently not run.
    And no grade cell is worth 0 points: such a cell would be listed as an empty "0 / 0" step."""
    for cell in nbformat.read(path, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if "BEGIN HIDDEN TESTS" in cell.source:
            assert meta.get("locked") and grade_id(cell), grade_id(cell) or cell.source[:80]
        if meta.get("grade"):
            assert meta.get("points", 0) > 0, grade_id(cell)


def test_a_chinese_headline_puts_no_space_after_a_full_stop():
    from autograder.preprocessors.summarize_steps import Row, headline_html

    rows = [Row("test_dW2", "dW2", 0, 1, ["wrong"], False), Row("test_dC", "dC", 2, 2, ["correct"], False)]
    line = headline_html(rows, rows[0], "zh")
    assert "。" in line and "。 " not in line and not line.endswith(" ")
    assert ". " in headline_html(rows, rows[0], "en")  # English keeps its space

"""The feedback page leaves out what only nbgrader needed and joins the pieces of one printed text (no kernels)."""

import time
from pathlib import Path

import nbformat
from nbformat import from_dict
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from autograder.engine.verdict import Verdict
from autograder.preprocessors import TidyFeedback
from autograder.preprocessors.judge_answers import verdict_outputs

REPO = Path(__file__).resolve().parents[2]


def tidied(cells):
    nb, _ = TidyFeedback().preprocess(new_notebook(cells=cells), {})
    return nb.cells


def test_a_graded_cell_keeps_its_verdict_in_words_not_the_points_nbgrader_read():
    graded = new_code_cell("check()", outputs=verdict_outputs(Verdict("dC", 2, 2, ["correct"])))
    graded.metadata.nbgrader = {"grade": True, "grade_id": "test_dC", "points": 2, "locked": True}
    student = new_code_cell("x", outputs=[new_output("execute_result", data={"text/plain": "2.0"})])  # their own
    graded, student = tidied([graded, student])
    assert [o.output_type for o in graded.outputs] == ["stream"] and graded.outputs[0].text.startswith("✔ dC")
    assert [o.output_type for o in student.outputs] == ["execute_result"]


def test_nbgraders_no_response_is_not_shown_as_a_comment_and_the_instructors_are():
    blank, answered = new_code_cell("# YOUR CODE HERE"), new_code_cell("dW2 = ...")
    blank.metadata.nbgrader = {"solution": True, "grade": False, "grade_id": "answer_dW1", "comment": "No response."}
    answered.metadata.nbgrader = {"solution": True, "grade": False, "grade_id": "answer_dW2", "comment": "See me"}
    blank, answered, _ = tidied([blank, answered, new_markdown_cell("text")])
    assert blank.metadata.nbgrader["comment"] is None and answered.metadata.nbgrader["comment"] == "See me"


def test_a_printed_line_split_in_two_messages_is_one_output_and_other_outputs_keep_their_order():
    stream = lambda name, text: new_output("stream", name=name, text=text)  # noqa: E731
    image = new_output("display_data", data={"text/plain": "<Figure>"})
    (cell,) = tidied(
        [
            new_code_cell(
                "print(...)",
                outputs=[
                    stream("stdout", "(skipped while grading)"),
                    stream("stdout", "\n"),
                    stream("stderr", "warning\n"),
                    stream("stdout", "after\n"),
                    image,
                    stream("stdout", "last\n"),
                ],
            )
        ]
    )
    assert [(o.output_type, o.get("name"), o.get("text")) for o in cell.outputs] == [
        ("stream", "stdout", "(skipped while grading)\n"),
        ("stream", "stderr", "warning\n"),
        ("stream", "stdout", "after\n"),
        ("display_data", None, None),
        ("stream", "stdout", "last\n"),
    ]


def test_a_flood_of_pieces_is_joined_in_linear_time_and_a_text_that_is_no_text_is_left_alone():
    # 400 kB in single bytes, and a text that is a number; built without nbformat's schema check (400,000 checks)
    stream = lambda text: {"output_type": "stream", "name": "stdout", "text": text}  # noqa: E731
    cell = {"cell_type": "code", "metadata": {}, "source": "flood()", "execution_count": None}
    cell["outputs"] = [*(stream("x") for _ in range(400_000)), stream(7), stream("z")]
    nb = from_dict({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    start = time.perf_counter()
    nb, _ = TidyFeedback().preprocess(nb, {})
    assert time.perf_counter() - start < 10  # joined one piece at a time, it copies 80 GB
    assert [o.get("text") for o in nb.cells[0].outputs] == ["x" * 400_000, 7, "z"]


def test_the_courses_long_helper_cells_show_their_opening_comment_and_how_many_lines_follow():
    release = nbformat.read(REPO / "release" / "backprop_ninja" / "ex4_manual_training.ipynb", as_version=4)
    kept = {"self_check_helpers", "setup_dataset", "test_dW1"}
    cells = [c for c in release.cells if c.metadata.get("nbgrader", {}).get("grade_id") in kept]
    before = {c.metadata.nbgrader.grade_id: c.source for c in cells}
    shown = {c.metadata.nbgrader.grade_id: c.source for c in tidied(cells)}
    helpers = before["self_check_helpers"].splitlines()
    opening = helpers[:3]  # what it is, what it is for, that it is the same in every notebook
    assert all(line.startswith("#") for line in opening) and not helpers[3].startswith("#")
    more = len(helpers) - 3
    assert shown["self_check_helpers"].splitlines() == [
        *opening,
        f"# … and {more} more lines of the course's code: the same as in your notebook",
    ]
    assert (shown["setup_dataset"], shown["test_dW1"]) == (before["setup_dataset"], before["test_dW1"])  # short, graded

    russian = nbformat.read(REPO / "editions" / "ru" / "backprop_ninja" / "ex4_manual_training.ipynb", as_version=4)
    (helper,) = [c for c in russian.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "self_check_helpers"]
    nb, _ = TidyFeedback().preprocess(russian, {})
    assert "курса" in helper.source.splitlines()[-1] and len(helper.source.splitlines()) <= 7


# IPython's traceback of a hidden test that raised (the grade cell's own lines around the failing one, as a kernel
# sends them), and a traceback the student's code printed, which passes through the grader's own code
HIDDEN_TEST = (
    'check_answer("W2")\n### BEGIN HIDDEN TESTS\nfrom autograder.in_kernel import report\n\n'
    'report(globals(), "dW2")\n### END HIDDEN TESTS'
)
RAISED = [
    "\x1b[31m---------------------------------------------------------------------------\x1b[39m",
    "\x1b[31mTypeError\x1b[39m                                 Traceback (most recent call last)",
    "\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[1]\x1b[39m\x1b[32m, line 5\x1b[39m\n"
    "\x1b[32m      2\x1b[39m \x1b[38;5;66;03m### "
    "BEGIN HIDDEN TESTS\x1b[39;00m\n\x1b[32m      3\x1b[39m \x1b[38;5;28;01mfrom\x1b[39;00m autograder.in_kernel "
    "\x1b[38;5;28;01mimport\x1b[39;00m report\n\x1b[32m----> \x1b[39m\x1b[32m5\x1b[39m \x1b[30;43mreport\x1b[39;49m"
    '\x1b[30;43m(\x1b[39;49mglobals(), "dW2")\n',
    "\x1b[36mFile \x1b[39m\x1b[32m/course/autograder/in_kernel/reports.py:20\x1b[39m, in \x1b[36mreport\x1b[39m\n"
    "\x1b[32m---> 20\x1b[39m     answers = _answers(namespace)\n",
    "\x1b[31mTypeError\x1b[39m: 'int' object is not subscriptable",
]
PRINTED = (
    "Traceback (most recent call last):\n"
    '  File "/tmp/ipykernel_7/1.py", line 3, in <module>\n'
    "    dW2 = h.T @ dlogits\n"
    '  File "/course/autograder/in_kernel/reports.py", line 20, in report\n'
    "    answers = _answers(namespace)\n"
    'report(globals(), "dW2")\n'
    "TypeError: oops\n"
)


def test_no_output_shows_a_hidden_test_or_the_graders_frames():
    """ClearHiddenTests clears a grade cell's hidden lines from its source only: a hidden test that raised showed
    them in its traceback, and a student's printed traceback or ``print(In[12])`` any of them (until 2026-12-08)."""
    from autograder.preprocessors import HiddenTestsOutOfOutputs

    graded = new_code_cell(HIDDEN_TEST, outputs=[new_output("error", ename="TypeError", evalue="x", traceback=RAISED)])
    graded.metadata.nbgrader = {"grade": True, "grade_id": "test_dW2", "points": 1, "locked": True}
    student = new_code_cell("print(tb)", outputs=[new_output("stream", name="stderr", text=PRINTED)])
    nb, _ = HiddenTestsOutOfOutputs().preprocess(new_notebook(cells=[graded, student]), {})
    shown = str([cell.outputs for cell in nb.cells])
    for leak in ("HIDDEN TESTS", "report(", "import report", "autograder/in_kernel", "_answers"):
        assert leak not in shown, shown
    assert (
        "'int' object is not subscriptable" in shown and "dW2 = h.T @ dlogits" in shown and "TypeError: oops" in shown
    )
    assert "left out" in nb.cells[0].outputs[0].traceback[-2]


def test_a_kernels_flood_of_frame_like_lines_is_read_in_linear_time_and_a_students_own_region_hides_nothing():
    """A megabyte line of "File /" (a pattern that backtracked took 3.8 s for 48 KB of it), and a student's cell that
    opens a hidden region of its own and never ends it (every later line of the cell was taken for a hidden test's)."""
    from autograder.preprocessors import HiddenTestsOutOfOutputs

    flood = "File /" * 200_000 + "\n"
    own = new_code_cell("### BEGIN HIDDEN TESTS\nprint('my own line, kept')\n" * 2, outputs=[])
    own.outputs = [new_output("stream", name="stdout", text=flood + "print('my own line, kept')\n")]
    start = time.perf_counter()
    nb, _ = HiddenTestsOutOfOutputs().preprocess(new_notebook(cells=[own]), {})
    assert time.perf_counter() - start < 10
    assert nb.cells[0].outputs[0].text == flood + "print('my own line, kept')\n"

"""What went wrong while a notebook ran, named by kind, from the executed notebook alone (no kernels)."""

from nbformat.v4 import new_code_cell, new_notebook, new_output

from autograder.preprocessors.grading_execute import GradingExecute
from autograder.preprocessors.judge_answers import why_no_answer


def error(ename):
    return new_output("error", ename=ename, evalue="", traceback=[])


def graded_cell(grade_id, outputs=()):
    cell = new_code_cell("report(globals(), 'dprobs')", metadata={"nbgrader": {"grade": True, "grade_id": grade_id}})
    cell.outputs = list(outputs)
    return cell


def incidents(nb, **state):
    resources = {
        "nbgrader": {"student": "ada", "notebook": "ex1"},
        "backprop_ninja": {"kernel_died_in": None, "notebook_time_limit_in": None, "incidents": [], **state},
    }
    execute = GradingExecute(timeout=15, notebook_timeout=90)
    execute._truncated = {}
    execute.record_incidents(nb, resources)  # into the resources, where class grading's worker reads them
    return [(p.kind, p.detail) for p in resources["backprop_ninja"]["incidents"]]


def test_a_cell_interrupted_at_its_timeout_and_a_notebook_stopped_at_its_limit_are_two_kinds():
    nb = new_notebook(
        cells=[
            new_code_cell("setup"),
            graded_cell("test_dprobs", [error("CellTimeoutError"), error("KeyboardInterrupt")]),
            new_code_cell("while True: pass", outputs=[error("CellTimeoutError")]),
            graded_cell("test_dh"),
        ]
    )
    assert incidents(nb) == [
        ("cell_timeout", "cell 2 (test_dprobs) ran over the 15 s cell limit and was interrupted; the notebook went on"),
        (
            "cell_timeout",
            'cell 3 ("while True: pass") ran over the 15 s cell limit and was interrupted; the notebook went on',
        ),
    ]
    assert incidents(nb, notebook_time_limit_in=2) == [
        (
            "notebook_time_limit",
            'the notebook ran over its 90 s limit in cell 3 ("while True: pass") and was stopped; '
            "the cells after it scored 0",
        ),
        ("cell_timeout", "cell 2 (test_dprobs) ran over the 15 s cell limit and was interrupted; the notebook went on"),
    ]


def test_a_cell_is_named_as_the_feedback_page_and_the_notebook_show_it():
    """Its place among all cells, the In [n] of its run, and its grade_id, else its first line (quoted, cut short)."""
    long = new_code_cell("\n  # " + "x" * 100 + "\nwhile True: pass", execution_count=7)
    nb = new_notebook(cells=[graded_cell("test_dprobs"), long, new_code_cell("")])
    nb.cells[0].execution_count = 3
    for cell in nb.cells:
        cell.outputs = [error("CellTimeoutError")]
    named = [detail.split(" ran over")[0] for _, detail in incidents(nb)]
    assert named == ["cell 1 (In [3], test_dprobs)", f'cell 2 (In [7], "# {"x" * 58}...")', "cell 3"]


def test_a_graded_cell_without_an_answer_says_why():
    state = {"kernel_died_in": None, "notebook_time_limit_in": None}
    silent, raised, timed_out = graded_cell("a"), graded_cell("b", [error("NameError")]), graded_cell("c")
    message, ran = why_no_answer(silent, 5, state, timed_out=set())
    assert ran and message.startswith("no answer reached the grader: this cell ran to the end but reported nothing")
    message, ran = why_no_answer(raised, 5, state, timed_out=set())
    assert ran and "stopped with NameError" in message
    message, ran = why_no_answer(timed_out, 5, state, timed_out={5})
    assert not ran and "interrupted" in message
    message, ran = why_no_answer(silent, 5, {**state, "kernel_died_in": 3}, timed_out=set())
    assert not ran and "kernel died" in message
    message, ran = why_no_answer(silent, 5, {**state, "notebook_time_limit_in": 5}, timed_out=set())
    assert not ran and "time limit" in message
    assert "crashed" not in why_no_answer(silent, 5, state, timed_out=set())[0]


def test_a_student_who_adds_thousands_of_failing_cells_makes_a_few_problems_named_in_their_letters():
    """3,000 cells that each raised MemoryError were 3,000 problems (problems.json 750 KB, the class report 620 KB
    for one student), each naming its cell by a first line in escapes ("# \\u041c\\u043e\\u0439"): ten of a kind
    are named, in the cell's own letters, and the rest counted."""
    cells = [new_code_cell(f"# Мой цикл {i}\nraise MemoryError()", outputs=[error("MemoryError")]) for i in range(300)]
    found = incidents(new_notebook(cells=cells))
    assert [kind for kind, _ in found] == ["memory_limit"] * 11
    assert found[0][1] == 'cell 1 ("# Мой цикл 0") ran out of memory (MemoryError); the notebook went on'
    assert found[-1][1] == "and 290 more cells with this problem"

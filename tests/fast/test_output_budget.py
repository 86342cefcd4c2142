"""What a cell may make the grader hold, through nbclient's own message handling (no kernel: the messages a kernel
could send, handed to GradingExecute as nbclient's poll loop hands them)."""

import copy

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from autograder.common.naming import ANSWER_MIME
from autograder.preprocessors import GradingExecute
from autograder.preprocessors.incidents import Limits, notebook_incidents
from autograder.preprocessors.output_budget import OUTPUTS_PER_CELL, written

LIMIT = 10_000


def executor(cells: int = 1) -> GradingExecute:
    execute = GradingExecute()
    execute.nb = new_notebook(cells=[new_code_cell("x") for _ in range(cells)])
    execute._edition, execute.max_output_bytes, execute.max_notebook_output_bytes = "en", LIMIT, 4 * LIMIT
    execute._output_bytes, execute._truncated, execute._display_id_map, execute._display_bytes = {}, {}, {}, {}
    execute.clear_before_next_output = False  # (nbclient sets it as a cell starts)
    return execute


def send(execute, msg_type: str, content: dict, cell_index: int = 0) -> None:
    msg = {"msg_type": msg_type, "header": {"msg_type": msg_type}, "content": content, "parent_header": {}}
    execute.process_message(msg, execute.nb.cells[cell_index], cell_index)


def kept(execute) -> int:
    return sum(len(str(o)) for cell in execute.nb.cells for o in cell.outputs)


def test_many_error_messages_count_against_the_cell():
    execute = executor()
    for _ in range(300):
        send(execute, "error", {"ename": "E", "evalue": "v" * 5000, "traceback": ["t" * 5000] * 50})
    assert kept(execute) < 2 * LIMIT + 200_000  # the first error whole, then nothing: not 300 of them
    assert execute._truncated == {0: "cell"} and "output truncated" in execute.nb.cells[0].outputs[-1].text


def test_a_notebook_of_many_cells_each_within_its_budget_is_bounded_in_all():
    """A student may add cells: 100 cells that each print under a cell's budget must not make the grader hold 100
    budgets' worth."""
    execute = executor(cells=100)
    for cell in range(100):
        send(execute, "stream", {"name": "stdout", "text": "x" * (LIMIT - 400)}, cell)
    assert kept(execute) < 5 * LIMIT + 100 * 200  # the notebook's budget, then a line under each cell past it
    assert execute._truncated == dict.fromkeys(range(4, 100), "notebook")
    assert "this notebook printed more than" in execute.nb.cells[99].outputs[-1].text
    state = {"kernel_died_in": None, "notebook_time_limit_in": None}
    found = notebook_incidents(execute.nb, state, Limits(600, 60, LIMIT, 0, 4 * LIMIT), execute._truncated, None)
    assert len(found) == 11 and found[0] == (  # 96 cells: ten named, the rest counted
        "output_limit",
        'cell 5 ("x") printed after the notebook\'s output passed 0.038147 MB; the rest of its output was dropped',
    )
    assert found[-1] == ("output_limit", "and 86 more cells with this problem")


def test_control_characters_count_as_the_escapes_nbformat_writes():
    """One cell of 4 Mi control characters, counted as one character each, was 24 MiB on disk: nbformat writes each
    as a six-character escape (\\u0001)."""
    execute = executor()
    send(execute, "stream", {"name": "stdout", "text": "\x01" * (LIMIT // 2)})
    assert execute._truncated == {0: "cell"} and execute.nb.cells[0].outputs[-1].text.count("output truncated") == 1
    execute = executor()
    send(execute, "stream", {"name": "stdout", "text": "ж" * (LIMIT // 2)})  # written as it is: one character each
    assert execute._truncated == {}


def test_a_graded_cells_report_is_kept_whatever_the_other_cells_printed():
    """Answers reach the grader as displays: one graded cell's first report is held within its own budget alone, so
    that what other cells printed costs no graded cell its points. A second report in that cell, and one sent from an
    ordinary cell, count against the notebook as any output does."""
    execute = executor(cells=7)
    graded, ordinary = execute.nb.cells[5], execute.nb.cells[6]
    graded.metadata["nbgrader"] = {"grade": True, "grade_id": "test_dprobs", "locked": True, "points": 1}
    for cell in range(5):  # the notebook's budget, used up to the last character by the cells before
        # and what nbformat writes around it: the content's keys, the stream's name, the quotes
        text = "x" * (LIMIT - execute._held() - written({"name": "stdout", "text": ""}))
        send(execute, "stream", {"name": "stdout", "text": text}, cell)
    assert execute._output_bytes[None] == 4 * LIMIT and execute._truncated == {4: "notebook"}
    report = {"data": {ANSWER_MIME: {"dprobs": "…"}, "text/plain": "(answer reported to the grader)"}, "metadata": {}}
    for cell in (5, 5, 6):
        send(execute, "display_data", copy.deepcopy(report), cell)
    assert [ANSWER_MIME in o.get("data", {}) for o in graded.outputs] == [True, False]  # then the line of the cut
    assert execute._truncated == {4: "notebook", 5: "notebook", 6: "notebook"}
    assert not any(ANSWER_MIME in o.get("data", {}) for o in ordinary.outputs)


def test_one_display_update_of_many_displays_counts_once_for_each():
    execute = executor()
    for _ in range(15):  # 15 tiny displays under one id: within the budget
        send(execute, "display_data", {"data": {"text/plain": "."}, "metadata": {}, "transient": {"display_id": "d"}})
    assert execute._truncated == {}
    big = {"data": {"text/plain": "x" * 100_000}, "metadata": {}, "transient": {"display_id": "d"}}
    send(execute, "update_display_data", big)  # copied into each of the 15: 1.5 MB, were it kept
    assert all(o.data["text/plain"] == "." for o in execute.nb.cells[0].outputs if o.output_type == "display_data")
    assert execute._truncated == {0: "cell"} and kept(execute) < 2 * LIMIT


def test_a_small_display_update_is_kept():
    execute = executor()
    send(execute, "display_data", {"data": {"text/plain": "0%"}, "metadata": {}, "transient": {"display_id": "bar"}})
    send(
        execute,
        "update_display_data",
        {"data": {"text/plain": "100%"}, "metadata": {}, "transient": {"display_id": "bar"}},
    )
    assert [o.data["text/plain"] for o in execute.nb.cells[0].outputs] == ["100%"] and execute._truncated == {}


def test_a_report_is_final_as_its_cell_sent_it():
    """nbclient updates every output shown under a display id, in any cell: a graded cell's report sent under an id (or
    a display sent in its place) was replaced by a later cell, out of the static reading's sight, with answers the
    grader's own rules computed (tests/support/cases_ex2_ex3.py, REPLACED_LATER). A report takes no id, and no update
    brings one in; other displays update as before."""
    execute = executor(cells=3)
    report = lambda answers: {"data": {ANSWER_MIME: answers, "text/plain": "."}, "metadata": {}}
    send(execute, "display_data", {**report({"dbngain": "own"}), "transient": {"display_id": "r"}}, 0)
    send(
        execute, "display_data", {"data": {"text/plain": "later"}, "metadata": {}, "transient": {"display_id": "p"}}, 0
    )
    send(execute, "display_data", {"data": {"text/plain": "0%"}, "metadata": {}, "transient": {"display_id": "bar"}}, 1)
    for display_id in ("r", "p"):  # from a later cell: an update, and a display under the same id
        for msg_type in ("update_display_data", "display_data"):
            send(execute, msg_type, {**report({"dbngain": "forged"}), "transient": {"display_id": display_id}}, 2)
    send(
        execute,
        "update_display_data",
        {"data": {"text/plain": "100%"}, "metadata": {}, "transient": {"display_id": "bar"}},
        2,
    )
    first, second, third = (cell.outputs for cell in execute.nb.cells)
    assert [o.data.get(ANSWER_MIME) for o in first] == [{"dbngain": "own"}, None]
    assert first[1].data == {"text/plain": "later"} and second[0].data == {"text/plain": "100%"}
    assert [o.data[ANSWER_MIME] for o in third] == [{"dbngain": "forged"}] * 2  # (sent by that cell: its own)


def test_widget_state_counts_against_the_cell():
    execute = executor()
    execute.widget_state, execute.widget_buffers, execute.comm_objects = {}, {}, {}
    for i in range(300):  # 300 widgets of 100 KB of state each: 30 MB, were it kept
        send(execute, "comm_open", {"comm_id": f"w{i}", "target_name": "none", "data": {"state": {"v": "s" * 100_000}}})
    assert sum(len(str(state)) for state in execute.widget_state.values()) < 2 * LIMIT
    assert execute._truncated == {0: "cell"} and "output truncated" in execute.nb.cells[0].outputs[-1].text


def test_a_progress_bar_widget_is_kept():
    execute = executor()
    execute.widget_state, execute.widget_buffers, execute.comm_objects = {}, {}, {}
    send(execute, "comm_open", {"comm_id": "bar", "target_name": "none", "data": {"state": {"value": 0}}})
    for value in range(1, 30):  # (a budget of 4 MiB holds thousands of updates)
        send(execute, "comm_msg", {"comm_id": "bar", "data": {"method": "update", "state": {"value": value}}})
    assert execute.widget_state == {"bar": {"value": 29}} and execute._truncated == {}


def test_many_empty_outputs_count_against_the_cell():
    """An empty output holds no characters, but nbclient keeps it: a kernel that sent empty displays for 30 s made the
    grader hold 122,687 of them (1 GiB at the worker's peak), each counted as 4 characters."""
    execute = executor(cells=2)
    for _ in range(20_000):
        send(execute, "display_data", {"data": {}, "metadata": {}}, 0)
        send(execute, "stream", {"name": "stdout", "text": ""}, 1)
    assert [len(cell.outputs) for cell in execute.nb.cells] <= [OUTPUTS_PER_CELL + 1] * 2
    assert execute._truncated == {0: "cell", 1: "cell"} and "output truncated" in execute.nb.cells[1].outputs[-1].text


def test_many_empty_widget_states_count_against_the_cell():
    execute = executor()
    execute.widget_state, execute.widget_buffers, execute.comm_objects = {}, {}, {}
    for i in range(20_000):  # an entry of widget_state each, "" and {} holding no characters
        send(execute, "comm_open", {"comm_id": f"w{i}", "target_name": "none", "data": {"state": "" if i % 2 else {}}})
    assert len(execute.widget_state) <= OUTPUTS_PER_CELL and execute._truncated == {0: "cell"}


def test_what_a_cell_printed_past_its_budget_costs_no_later_cell_its_output():
    """What was dropped is held by nobody: a student's cell that printed 40 MiB (cut at 4 MiB) used to count all of
    it against the notebook, and every later graded cell's report was dropped: every answer right, 0 of 34."""
    execute = executor(cells=3)
    for _ in range(100):  # 500 KB, ten times the notebook's budget, from one cell
        send(execute, "stream", {"name": "stdout", "text": "x" * 5000}, 0)
    report = {"data": {"application/x.report": "answer", "text/plain": "(answer reported to the grader)"}}
    send(execute, "display_data", {**report, "metadata": {}}, 1)
    assert execute.nb.cells[1].outputs[0].data == report["data"] and execute._truncated == {0: "cell"}
    send(execute, "stream", {"name": "stdout", "text": "."}, 0)  # the rest of the cut cell's output stays dropped
    assert execute.nb.cells[0].outputs[-1].text.strip().startswith("[output truncated")


def test_what_nbclient_keeps_beyond_texts_and_data_counts_too():
    """A stream's name, an execute_result's count, a display id and a comm id are kept as the kernel sent them: 40
    streams named with 10 MB each made an autograded notebook of 420 MB, past a notebook's budget of 32 MiB."""
    parts = {
        "stream": lambda big: {"name": big, "text": "."},
        "execute_result": lambda big: {"data": {"text/plain": "."}, "metadata": {}, "execution_count": [big]},
        "display_data": lambda big: {"data": {}, "metadata": {}, "transient": {"display_id": big}},
        "comm_open": lambda big: {"comm_id": big, "target_name": "none", "data": {"state": {}}},
    }
    for msg_type, content in parts.items():
        execute = executor()
        execute.widget_state, execute.widget_buffers, execute.comm_objects = {}, {}, {}
        for i in range(50):
            send(execute, msg_type, content(f"{i} " + "n" * 5_000))
        held = kept(execute) + sum(len(str(key)) for key in [*execute.widget_state, *execute._display_id_map])
        assert held < 2 * LIMIT, msg_type


def test_what_nbformat_writes_and_python_holds_counts_not_compact_json():
    """4 MiB of compact JSON nested 200 deep were 400 MiB once nbformat indented it on disk, and 4 MiB of empty lists
    (each 4 characters, held as a Python list of 56 bytes) made a worker peak at 3.7 GB for a notebook's 32 MiB."""
    nested = []
    for _ in range(200):
        nested = [nested]
    for metadata in ({"x": nested}, {"x": [[] for _ in range(1000)]}):
        execute = executor()
        for _ in range(30):
            send(execute, "display_data", {"data": {"text/plain": "."}, "metadata": metadata})
        assert execute._truncated == {0: "cell"}
        assert len(nbformat.writes(execute.nb)) < 3 * LIMIT


def test_a_cell_keeps_an_execution_count_only_when_it_is_a_number():
    """nbclient takes a cell's count from any message that has one: a list of 250,000 empty lists as each cell's count
    made a worker hold 1.2 GB more, counted by no budget (and failed the notebook's validation, ungraded)."""
    execute = executor(cells=2)
    execute.record_timing = False  # (nbclient's metadata of a cell's run is made as the cell starts)
    send(execute, "execute_input", {"code": "", "execution_count": [[]] * 1000}, 0)
    send(execute, "execute_input", {"code": "", "execution_count": 7}, 1)
    assert [cell.execution_count for cell in execute.nb.cells] == [None, 7]
    send(execute, "execute_result", {"data": {"text/plain": "1"}, "metadata": {}, "execution_count": "<b>"}, 1)
    assert execute.nb.cells[1].execution_count is None and execute.nb.cells[1].outputs[-1].execution_count is None


def test_a_value_nested_too_deep_to_write_is_dropped_not_raised():
    """A kernel's C encoder sends 990 levels of lists, which the grader's JSON writer cannot write: the message is
    dropped as over the budget, and the cell says so, instead of an error that failed the notebook's grading."""
    deep = []
    for _ in range(990):
        deep = [deep]
    execute = executor()
    send(execute, "display_data", {"data": {"application/json": deep}, "metadata": {}})
    assert execute._truncated == {0: "cell"} and "output truncated" in execute.nb.cells[0].outputs[-1].text


def test_messages_the_relay_dropped_are_named_by_the_bound_they_passed():
    """One message over the bound for one message, and large ones after the kernel's messages together passed theirs
    (relay.TOGETHER): each named with its own bound."""
    execute = executor(cells=1)
    state = {"kernel_died_in": None, "notebook_time_limit_in": None}
    limits = Limits(600, 60, LIMIT, 64 * 2**20, 4 * LIMIT, 256 * 2**20)
    found = notebook_incidents(execute.nb, state, limits, {}, None, {0: [70 * 2**20, 30 * 2**20, 30 * 2**20]})
    assert [kind for kind, _ in found] == ["message_limit", "message_limit"]
    assert "sent 1 message of 70 MB once decoded, over the 64 MB limit for one message" in found[0][1], found
    assert "sent 2 large messages after the kernel's messages together passed 256 MB" in found[1][1], found


def test_what_the_kernel_makes_nbclient_log_is_bounded_by_record_and_by_notebook():
    """nbclient logs every message type it does not know, named as the kernel sent it, and nbgrader keeps a student's
    whole log in memory: 400 messages of a type named with 500,000 characters made a worker hold 660 MB. The executor's
    log cuts each record and keeps a notebook's first RECORDS, then says how many more there were."""
    import io
    import logging

    from autograder.preprocessors.output_budget import RECORD_CHARS, RECORDS

    execute, captured = executor(), io.StringIO()
    handler = logging.StreamHandler(captured)
    execute.log.logger.addHandler(handler)  # (nbgrader's capture of a student's log is such a handler)
    try:
        for notebook in range(2):
            for i in range(RECORDS * 5):
                send(execute, "x" * 5000 + str(i), {})
            execute.log_ends_notebook()
    finally:
        execute.log.logger.removeHandler(handler)
    lines = captured.getvalue().splitlines()
    assert len(lines) == 2 * (RECORDS + 1), len(lines)  # each notebook's own RECORDS, and the line that counts the rest
    assert all(len(line) < RECORD_CHARS + 100 for line in lines)
    assert lines[0].startswith("unhandled iopub msg: xxx") and "more characters not kept" in lines[0]
    assert lines[RECORDS] == f"{RECORDS * 4} more records of this notebook's run were not kept (at most {RECORDS})"
    assert lines[RECORDS + 1].startswith("unhandled iopub msg: xxx")

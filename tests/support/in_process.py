"""Autograde without nbgrader, for the fast tier: a class of submissions graded in seconds.

What stays real: every cell of a submission runs as ``nbgrader autograde`` runs it (locked cells as the
gradebook restores them, from the source notebook with its hidden tests; ``NBGRADER_EXECUTION=autograde``
and the grading seed set; one cell after the other in one IPython shell, which is what a kernel is, so
``In``, magics and ``get_ipython()`` behave as in the kernel), and the grader's own ``JudgeAnswers``
preprocessor judges the outputs the hidden tests displayed, in this process, against its reference.

What is left out: nbgrader itself, the kernel protocol and the sandbox (the slow tier runs those).

The hidden tests monkeypatch torch (``start_grading``), so the cells run in forked child processes, never in
this one. Submissions of one notebook share their common first cells: a child runs the cells that all of its
submissions have in common, then forks one child per different next cell, and so on. The setup cells (data,
dataset, forward pass) therefore run once per notebook, not once per student; at most WORKERS shells run cells at
a time. A child that dies (``os._exit``) is a dead kernel for its students, as GradingExecute records one.
"""

import contextlib
import copy
import functools
import gc
import importlib
import io
import multiprocessing
import os
import pickle
import select
import shutil
import signal
import tempfile
import time
import types
import warnings
from dataclasses import dataclass
from pathlib import Path

import nbformat
import torch  # imported before forking: each child starts with torch loaded
from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config.loader import KVArgParseConfigLoader, PyFileConfigLoader

from autograder.authoring import SOURCE_DIR
from autograder.authoring.submissions import copy_notebook
from autograder.common.diagnoses import DIAGNOSES, METADATA, OTHER
from autograder.common.edition_text import edition_of, translated_cell_source
from autograder.common.editions import ENGLISH
from autograder.common.editions import METADATA as EDITION_METADATA
from autograder.common.naming import grade_id
from autograder.common.setup_cells import execution_order, setup_to_run_ahead
from autograder.data import EMBEDDED_NAMES, NAMES_VARIABLE, SEED_VARIABLE
from autograder.engine.exercises import CHECKS
from autograder.engine.honesty.grader_formulas import grader_functions
from autograder.in_kernel import known_cells
from autograder.in_kernel.switches import module_places
from autograder.preprocessors import judge_answers
from autograder.preprocessors.judge_answers import JudgeAnswers
from autograder.preprocessors.output_budget import a_report as graders_a_report
from autograder.sandbox.process_guards import refuse_exec
from autograder.sandbox.warm_up import format_a_traceback, store_exceptions_briefly
from support.course import ASSIGNMENT, REPO

DEFAULT_SEED = 1234567  # not the notebooks' own seed: like autograde, grade on a batch the student never saw
TIME_LIMIT = 600  # seconds for a whole class of one notebook; a runaway cell is a bug in a test
WORKERS = 2  # shells running cells at the same time (this machine has two cores)
# the grader's a_report, as nbclient runs it outside the kernel: a copy of its own, which the kernel's refusal of the
# grader's functions while grading (engine.honesty.grader_formulas) leaves alone, as the grader's process is left
a_report = types.FunctionType(graders_a_report.__code__, graders_a_report.__globals__, "a_report")


@dataclass
class Graded:
    """One submission, graded: what nbgrader would store in the gradebook and write in the graded cells."""

    points: dict  # grade_id -> points of every graded cell
    messages: dict  # grade_id -> the grader's text in that cell
    max_points: dict  # grade_id -> the cell's maximum
    diagnoses: dict  # grade_id -> the diagnosis kind JudgeAnswers wrote in that cell (None: every point earned)
    notebook: object  # the judged notebook
    problems: list  # the Problems JudgeAnswers found (no_answer_reported)
    executed: tuple = ()  # (the notebook as it ran, before judging; the kernel's state; the seed): for ``judge``
    verdicts: dict = None  # grade_id -> the Verdict JudgeAnswers wrote in that cell (its text renders it)

    def lost(self) -> list:
        """grade_ids of the graded cells that did not get all their points (0-point cells excluded)."""
        return sorted(g for g, most in self.max_points.items() if most and self.points[g] != most)


def source_notebook(name: str):
    return nbformat.read(SOURCE_DIR / f"{name}.ipynb", as_version=4)


def release_differs(release, source) -> str | None:
    """What tells that ``release`` was not made from ``source`` (their nbgrader cells by grade_id, in order), or None.
    The cases are handed in on release/, the locked cells are restored from source/: a graded cell added to source/
    and not released yet has no place in any submission."""
    cells = [[grade_id(c) for c in nb.cells if c.metadata.get("nbgrader")] for nb in (release, source)]
    if cells[0] == cells[1]:
        return None
    only_source, only_release = [g for g in cells[1] if g not in cells[0]], [g for g in cells[0] if g not in cells[1]]
    where = (
        f"cells only in source/: {only_source}, only in release/: {only_release}"
        if only_source or only_release
        else "its cells are in another order"
    )
    return (
        f"release/ is older than source/ ({where}): run .venv/bin/python -m autograder.authoring, then the tests again"
    )


@functools.cache
def _stale_release(name: str) -> str | None:
    release = nbformat.read(REPO / "release" / ASSIGNMENT / f"{name}.ipynb", as_version=4)
    problem = release_differs(release, source_notebook(name))
    return problem and f"{name}.ipynb: {problem}"


def as_autograde_runs_it(submission, source):
    """The submission as nbgrader's autograde executes it: every locked cell back as the gradebook has it
    (the source's, hidden tests included) in the language of the submission's edition, as RestoreLockedCells
    restores it, outputs cleared."""
    nb = copy_notebook(submission)
    edition = edition_of(nb)
    nb.metadata[EDITION_METADATA] = {"edition": edition}
    locked = {grade_id(c): c for c in source.cells if c.metadata.get("nbgrader", {}).get("locked")}
    for cell in nb.cells:
        original = locked.get(grade_id(cell))
        if original is not None:
            cell.cell_type = original.cell_type
            cell.source = translated_cell_source(original.cell_type, original.source, edition)
            cell.metadata["nbgrader"] = dict(original.metadata["nbgrader"])
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def selected(request, submissions: dict) -> dict:
    """``submissions`` cut down to the students that the module's selected tests are about, with "solution" and
    "blank", when each of those tests names one by a parameter (``-k`` on a case or two: seconds, not the class's
    minute); all of them when a selected test reads the class otherwise."""
    named = []
    for item in (i for i in request.session.items if i.path == request.path):
        params = getattr(getattr(item, "callspec", None), "params", {})
        student = next((params[p] for p in ("student", "mistake", "case") if params.get(p) in submissions), None)
        if student is None:
            return submissions
        named.append(student)
    keep = {*named, "solution", "blank"}
    return {student: nb for student, nb in submissions.items() if student in keep}


def autograde(name: str, submissions: dict, seed: int = DEFAULT_SEED) -> dict:
    """student -> Graded, for submissions (student -> notebook) of the notebook ``name``, all with one seed."""
    stale = _stale_release(name)
    if stale:
        raise AssertionError(stale)
    source = source_notebook(name)
    runs = {student: as_autograde_runs_it(nb, source) for student, nb in submissions.items()}
    executed = _execute(runs, seed)
    graded = {}
    for student, nb in runs.items():
        outputs, state = executed[student]
        for index, cell_outputs in outputs.items():
            nb.cells[index].outputs = cell_outputs  # shared with the other students of the record: judge copies
        graded[student] = judge(name, student, (nb, state, seed), nb.metadata[EDITION_METADATA]["edition"])
    return graded


def judge(name: str, student: str, executed: tuple, edition: str = ENGLISH) -> Graded:
    """JudgeAnswers on a notebook as it ran (``Graded.executed``), its feedback in the language of ``edition``."""
    nb, state, seed = executed
    # judging rebinds each graded cell's outputs and changes nothing deeper: a copy of every cell keeps ``nb`` as it ran
    judged = nbformat.NotebookNode({**nb, "cells": [nbformat.NotebookNode(cell) for cell in nb.cells]})
    resources = {
        "nbgrader": {"notebook": name, "student": student},
        "backprop_ninja": {
            "seed": seed,
            "names_path": str(EMBEDDED_NAMES),
            "incidents": [],
            "edition": edition,
            **state,
        },
    }
    verdicts = []
    with _recording(verdicts):
        judged, _ = JudgeAnswers().preprocess(judged, resources)
    graded = _read_grades(judged, resources["backprop_ninja"]["incidents"])
    checked = [grade_id(c) for c in judged.cells if c.metadata.get("nbgrader", {}).get("grade")]
    checked = [gid for gid in checked if gid in CHECKS[name]]  # JudgeAnswers writes a verdict in each, in order
    assert len(checked) == len(verdicts), (checked, verdicts)
    graded.executed, graded.verdicts = executed, dict(zip(checked, verdicts))
    return graded


@contextlib.contextmanager
def _recording(verdicts: list):
    """JudgeAnswers as it is, the Verdicts it writes into the cells appended to ``verdicts``."""
    write = judge_answers.verdict_outputs

    def recorded(verdict, edition=ENGLISH):
        verdicts.append(verdict)
        return write(verdict, edition)

    judge_answers.verdict_outputs = recorded
    try:
        yield
    finally:
        judge_answers.verdict_outputs = write


def _read_grades(nb, problems: list) -> Graded:
    """What JudgeAnswers wrote; every verdict that loses points names its diagnosis, a kind of the table."""
    points, messages, most, kinds = {}, {}, {}, {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("grade"):
            continue
        gid = grade_id(cell)
        most[gid] = float(meta.get("points", 0))
        results = [o for o in cell.get("outputs", []) if o.get("output_type") == "execute_result"]
        assert results, (
            f"{gid}: no verdict of the grader in this graded cell: does CHECKS in autograder/engine/exercises.py judge "
            "it? (tests/fast/test_engine.py::test_every_graded_cell_is_worth_what_its_check_gives)"
        )
        points[gid] = float(results[-1]["data"]["text/plain"])
        messages[gid] = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        kinds[gid] = results[-1]["metadata"][METADATA]["diagnosis"]
        assert points[gid] <= most[gid], (
            f"{gid}: its check gave {points[gid]} points, the cell is worth {most[gid]}; the notebook's points are not "
            "the engine's (tests/fast/test_engine.py::test_every_graded_cell_is_worth_what_its_check_gives)"
        )
        if points[gid] == most[gid]:
            assert kinds[gid] is None, messages[gid]
        else:
            assert kinds[gid] in DIAGNOSES and kinds[gid] != OTHER, (kinds[gid], messages[gid])
    return Graded(points, messages, most, kinds, nb, problems)


# ------------------------------------------------------------------------------------------ execution


def _execute(runs: dict, seed: int) -> dict:
    """student -> ({cell index: outputs}, the kernel state JudgeAnswers reads), every notebook run to its end."""
    folder = Path(tempfile.mkdtemp(prefix="backprop-ninja-in-process-"))
    _ORDERS.clear()
    _ORDERS.update({student: execution_order(nb.cells) for student, nb in runs.items()})  # as GradingExecute runs them
    slots = multiprocessing.get_context("fork").Semaphore(WORKERS)
    children = {}
    try:
        _fork(children, list(runs), lambda: _root(runs, seed, folder, slots), folder, slots)
        _wait(children, folder, slots)
        return _collect(runs, folder)
    finally:
        gc.unfreeze()  # (frozen by _fork)
        shutil.rmtree(folder, ignore_errors=True)


def _root(runs: dict, seed: int, folder: Path, slots) -> None:
    """The root of the tree of shells: the environment of autograde, then every cell."""
    # One thread: OpenMP's thread pool does not survive a fork (a child that uses it hangs), and the children
    # fork again. The graded tensors are small: torch would not split them across threads anyway.
    torch.set_num_threads(1)
    os.environ.update(
        {
            "NBGRADER_EXECUTION": "autograde",
            SEED_VARIABLE: str(seed),
            NAMES_VARIABLE: str(EMBEDDED_NAMES),
            "MPLBACKEND": "Agg",
        }
    )
    # As the kernel parent does: a shell's first traceback would load IPython's formatting; a traceback is kept in the
    # history by its name and message; where modules are found is resolved; the locked cells are transformed, parsed
    # and compiled once for every shell
    format_a_traceback()
    store_exceptions_briefly()
    module_places()
    grader_functions()
    _warnings_as_a_new_process_has_them()
    locked = {source for nb in runs.values() for source in (setup_to_run_ahead(nb.cells) or {}).get("locked", ())}
    transforms = known_cells.transformed(sorted(locked))
    refuse_exec()  # as each sandboxed kernel does: no new Python, which would have autograd whole

    shell = _shell()
    known_cells.install(shell, transforms)
    _run_group(shell, runs, list(runs), 0, folder, slots)


def _warnings_as_a_new_process_has_them() -> None:
    """pytest records each test's warnings (``catch_warnings(record=True)``, its filters), and a fork inherits that:
    a cell's warning vanished here, where a kernel shows it in the cell's output (the grader's own start_grading
    warned so in every kernel, unseen here; stock nbgrader gives a graded cell that writes to stderr no points)."""
    importlib.reload(warnings)  # showwarning as the module defines it, not pytest's list.append
    warnings.resetwarnings()
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.simplefilter("ignore", category)  # Python's own defaults (IPython shows __main__'s deprecations)


def _child(work, folder: Path) -> None:
    """Run ``work`` in this forked process and leave without returning to the caller's code (or pytest's)."""
    status = 1
    try:
        os.chdir(folder)  # what a notebook writes goes to the temporary folder
        work()
        status = 0
    finally:
        os._exit(status)


def _wait(children: dict, folder: Path, slots) -> None:
    """Wait for the children (pid -> its students) to end."""
    while children:
        _reap(children, folder, slots)
        if children:
            _until_one_ends(children)


def _until_one_ends(children: dict) -> None:
    """Sleep until a child ends or the first deadline passes (a process waiting on its children takes no CPU)."""
    fds = [os.pidfd_open(pid) for pid in children]  # readable once the child has ended
    try:
        select.select(fds, [], [], max(0.0, min(deadline for _, deadline in children.values()) - time.monotonic()))
    finally:
        for fd in fds:
            os.close(fd)


def _reap(children: dict, folder: Path, slots) -> None:
    """Forget the children that ended. One that died (os._exit, a crash) or ran over TIME_LIMIT is recorded for its
    students. A child holds a slot until it hands it back to branch; if it ended holding it, it is freed here."""
    for pid, (students, deadline) in list(children.items()):
        done, status = os.waitpid(pid, os.WNOHANG)
        if not done and time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            done, status = os.waitpid(pid, 0)
            _record(folder, {"students": students, "stopped": "notebook_time_limit_in"})
        elif done and not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            _record(folder, {"students": students, "stopped": "kernel_died_in"})
        if done:
            del children[pid]
            handed_back = folder / f"{pid}.handed-back"
            if handed_back.exists():
                handed_back.unlink()  # a later child may get the same pid
            else:
                slots.release()


def _fork(children: dict, students: list, work, folder: Path, slots) -> None:
    """Start ``work`` in a child holding a slot (waiting for one, and reaping, while all are taken)."""
    while not slots.acquire(timeout=0.01):
        _reap(children, folder, slots)
    gc.freeze()  # the child's garbage collector leaves its parent's objects alone: no page copied to mark them
    pid = os.fork()
    if pid == 0:
        _child(work, folder)
    children[pid] = (students, time.monotonic() + TIME_LIMIT)


def _record(folder: Path, entry: dict) -> None:
    """One line per event, in a file per process: processes never write to the same file."""
    with open(folder / f"{os.getpid()}.records", "ab") as f:
        pickle.dump(entry, f)


def _shell() -> InteractiveShell:
    """A shell set up as GradingExecute starts its kernels: with the course's extra_arguments (nbgrader_config.py)."""
    course = PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config()
    config = KVArgParseConfigLoader(argv=list(course.GradingExecute.extra_arguments)).load_config()
    shell = InteractiveShell.instance(config=config)
    shell.display_pub = _Outputs(shell=shell)
    # An error is kept by its name and message (_run_cell): the traceback nbclient would record is never formatted,
    # which was a third of the students' cells' CPU (IPython looks up each frame's module among all of them)
    shell.showtraceback = lambda *args, **kwargs: None
    return shell


class _Outputs(DisplayPublisher):
    """display() in a cell: kept as the display_data output that nbclient records. One shown under a display id, and
    an update of that id (update_display), are marked, and ``_shown_under_ids`` applies the updates as nbclient does,
    to every output shown under the id in any cell before, with GradingExecute's rules (``output_budget.a_report``)."""

    cell = []

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
        output = {"output_type": "display_data", "data": data, "metadata": metadata or {}}
        display_id = (transient or {}).get("display_id") if isinstance(transient, dict) else None
        if display_id and not a_report(output):  # (nbclient updates what was shown under the id, then keeps it)
            _Outputs.cell.append({**output, "output_type": _UPDATE, "display_id": display_id})
        if not update:
            _Outputs.cell.append({**output, _UPDATE: display_id} if display_id and not a_report(output) else output)


_UPDATE = "update_display_data"  # (an output's key, and the type of an update's entry: never nbformat's)


def _shown_under_ids(student: str, outputs: dict) -> None:
    """The updates of ``student``'s cells (cell index -> outputs, as run) applied in the order the cells ran, as
    nbclient applies them: each replaces the data and metadata of every output shown under its id before; the marks
    are taken out."""
    if not any(_UPDATE in o or o.get("output_type") == _UPDATE for cell in outputs.values() for o in cell):
        return
    shown = {}  # display id -> the outputs shown under it so far
    for index in _ORDERS[student]:
        if index not in outputs:
            continue
        cell = outputs[index] = [nbformat.NotebookNode(copy.deepcopy(dict(o))) for o in outputs[index]]  # (shared)
        for output in list(cell):
            if output.get("output_type") == _UPDATE:
                for target in shown.get(output["display_id"], []):
                    target["data"], target["metadata"] = output["data"], output["metadata"]
                cell.remove(output)
            elif (display_id := output.pop(_UPDATE, None)) is not None:
                shown.setdefault(display_id, []).append(output)


def _run_cell(shell: InteractiveShell, source: str) -> list:
    _Outputs.cell = displayed = []
    printed = {"stdout": io.StringIO(), "stderr": io.StringIO()}
    with contextlib.redirect_stdout(printed["stdout"]), contextlib.redirect_stderr(printed["stderr"]):
        result = shell.run_cell(source, store_history=True)
    outputs = [{"output_type": "stream", "name": k, "text": v.getvalue()} for k, v in printed.items() if v.getvalue()]
    error = result.error_before_exec or result.error_in_exec
    if error is not None:
        outputs.append({"output_type": "error", "ename": type(error).__name__, "evalue": str(error), "traceback": []})
    return outputs + displayed


def _run_group(shell: InteractiveShell, runs: dict, students: list, start: int, folder: Path, slots) -> None:
    """Run the cells from ``start`` on for these students, whose earlier cells all ran in this process.

    At most WORKERS processes run cells at a time: each is forked holding a slot, and hands it back when it
    branches (its children get slots of their own)."""
    index = start  # the step of execution_order
    while True:
        cells = {s: _code_cell(runs[s], _ORDERS[s], index) for s in students}
        sources = {s: source for s, (_, source) in cells.items()}
        if len(set(sources.values())) > 1:
            break
        source = sources[students[0]]
        if source is _END:
            return
        if source.strip():  # nbclient skips empty cells and cells of other kinds
            at = {s: cell for s, (cell, _) in cells.items()}
            _record(folder, {"students": students, "cells": at, "outputs": _run_cell(shell, source)})
        index += 1
    branches = {}
    for student, source in sources.items():
        branches.setdefault(source, []).append(student)
    (folder / f"{os.getpid()}.handed-back").touch()
    slots.release()
    children = {}
    for group in branches.values():
        _fork(children, group, lambda group=group: _run_group(shell, runs, group, index, folder, slots), folder, slots)
    _wait(children, folder, slots)


_END = "\0end of the notebook"
_ORDERS = {}  # student -> the order autograde runs the cells of their notebook in (execution_order)


def _code_cell(nb, order: list, step: int) -> tuple:
    """(index, source) of the cell run at ``step`` of ``order`` ("" for a cell of another kind), _END past the last."""
    if step >= len(order):
        return None, _END
    cell = nb.cells[order[step]]
    return order[step], cell.source if cell.cell_type == "code" else ""


def _records(path: Path):
    """The entries a process recorded, in order (pickle: the reports' tensors make megabytes)."""
    with open(path, "rb") as f:
        while True:
            try:
                yield pickle.load(f)
            except EOFError:
                return


def _collect(runs: dict, folder: Path) -> dict:
    entries = [entry for path in folder.glob("*.records") for entry in _records(path)]
    results = {s: ({}, {"kernel_died_in": None, "notebook_time_limit_in": None}) for s in runs}
    for entry in entries:
        if "cells" in entry:
            outputs = [nbformat.from_dict(o) for o in entry["outputs"]]  # once for all the students of the record
            for student in entry["students"]:
                results[student][0][entry["cells"][student]] = outputs
    for student, (outputs, _) in results.items():
        _shown_under_ids(student, outputs)
    for entry in entries:  # a process that died or was stopped: in the first code cell run that has no outputs
        for student in entry["students"] if "stopped" in entry else ():
            outputs, state = results[student]
            cells = runs[student].cells
            state[entry["stopped"]] = next(
                (i for i in _ORDERS[student] if cells[i].cell_type == "code" and i not in outputs), len(cells) - 1
            )
    return results

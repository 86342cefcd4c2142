"""Replace the output of every graded cell with the grader's verdict on the reported answer.

Runs in the grader's process after execution: only the tensors the kernel reported are read, judged against the
grader's own reference. The engine, and torch, are imported only when a notebook is judged
(docs/design/nbgrader-seams.md).
"""

import ast
from functools import lru_cache
from typing import TYPE_CHECKING

from nbformat import from_dict
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

from ..common.diagnoses import METADATA, Reason
from ..common.editions import ENGLISH
from ..common.naming import ANSWER_MIME, SETUP_PREFIX, grade_id
from ..common.phases import JUDGING, PHASES, REFERENCE
from ..common.setup_cells import execution_order
from ..common.words import render, say
from ..data import NAMES_VARIABLE
from ..engine.diagnosis.answer_notes import bound_names, misspelt, stopped_after
from .grading_execute import environment
from .incidents import record_incident, timed_out_cells

if TYPE_CHECKING:
    from ..engine.verdict import Verdict


# keyed on locked cells: the course's (RestoreLockedCells; CheckCellMetadata refuses a locked cell with no grade_id)
@lru_cache(maxsize=256)
def reported_names(source: str) -> frozenset:
    """The names a locked cell's ``report(globals(), "name", ...)`` calls send: the graded answers."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    return frozenset(
        arg.value
        for call in ast.walk(tree)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "report"
        for arg in call.args[1:]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
    )


def reported_values(cell) -> list:
    return [
        out["data"][ANSWER_MIME]
        for out in cell.get("outputs", [])
        if out.get("output_type") == "display_data" and ANSWER_MIME in out.get("data", {})
    ]


def why_no_answer(cell, index: int, state: dict, timed_out: set) -> tuple:
    """Why a graded cell reported no answer, as its feedback says it; and whether the cell had its full run
    (no dead kernel, no time limit), so that nothing but the submission kept the answer from the grader."""
    died_in, stopped_in = state.get("kernel_died_in"), state.get("notebook_time_limit_in")
    if died_in is not None and index >= died_in:
        return Reason(
            "did_not_run", say("the kernel died before this cell reported its answer (see the cell where it stopped)")
        ), False
    if stopped_in is not None and index >= stopped_in:
        return (
            Reason(
                "did_not_run",
                say("the notebook ran over its time limit before this cell finished (see the cell where it stopped)"),
            ),
            False,
        )
    if index in timed_out:
        return (
            Reason(
                "did_not_run",
                say("this cell ran over its time limit and was interrupted before it reported the answer"),
            ),
            False,
        )
    errors = [o.get("ename", "") for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        return (
            Reason(
                "no_answer",
                say(
                    "no answer reached the grader: this cell stopped with {error} before it reported it",
                    error=str(errors[-1]),
                ),
            ),
            True,
        )
    return (
        Reason(
            "no_answer",
            say(
                "no answer reached the grader: this cell ran to the end but reported nothing (the submission "
                "suppressed the report or replaced the grader's module in its kernel)"
            ),
        ),
        True,
    )


def verdict_outputs(verdict: "Verdict", edition: str = ENGLISH) -> list:
    """The verdict's text in the language of ``edition``, and its points (what nbgrader reads) with its diagnosis kind
    (what the class report reads, in English whatever the edition: ``grading.report.misconceptions``; a student cannot
    forge it, every graded cell's outputs are replaced) and its title as the student reads it (``SummarizeSteps``)."""
    title = render(verdict.title, edition)
    # Built as nbformat's new_output would, without its schema check of each output (24% of judging Exercise 1):
    # the notebook is checked once when the pass ends (Exporter.optimistic_validation).
    return [
        from_dict({"output_type": "stream", "name": "stdout", "text": verdict.text(edition)}),
        from_dict(
            {
                "output_type": "execute_result",
                "execution_count": None,
                "data": {"text/plain": repr(float(verdict.points))},
                "metadata": {
                    METADATA: {"diagnosis": verdict.diagnosis, "title": title, "points": verdict.points}
                    | ({"facts": verdict.facts} if verdict.facts else {})
                },
            }
        ),
    ]


class JudgeAnswers(NbGraderPreprocessor):
    """Judge each graded cell of a known notebook from what its kernel reported."""

    def preprocess(self, nb, resources):
        from ..engine.training.network import one_thread

        notebook = resources["nbgrader"]["notebook"]
        with (
            one_thread(),
            PHASES.phase(notebook, JUDGING),
        ):  # small tensors: threads only cost time, on a busy machine most
            return self._judge(nb, resources)

    def _judge(self, nb, resources):
        from ..engine import wire
        from ..engine.exercises import CHECKS
        from ..engine.honesty import AutogradTaint
        from ..engine.honesty.cell_code import statements
        from ..engine.judge import first_to_fix
        from ..engine.reference import run_setup

        checks = CHECKS.get(resources["nbgrader"]["notebook"])
        if not checks:
            self.log.warning("No checks for notebook %s: outputs left as they are", resources["nbgrader"]["notebook"])
            return nb, resources
        seed = resources["backprop_ninja"]["seed"]
        edition = resources["backprop_ninja"].get("edition", ENGLISH)  # the language the student reads
        setup = tuple(c.source for c in nb.cells if grade_id(c).startswith(SETUP_PREFIX))
        with (
            environment(**{NAMES_VARIABLE: resources["backprop_ninja"]["names_path"]}),
            PHASES.phase(resources["nbgrader"]["notebook"], REFERENCE),
        ):
            namespace = run_setup(setup, seed)
        timed_out, unanswered = set(timed_out_cells(nb)), []
        taint = AutogradTaint(
            answers={name for c in nb.cells if utils.is_locked(c) for name in reported_names(c.source)}
        )
        bound = set()  # the names the student's cells bind, so far
        checked = {}  # each graded answer's report at its own graded cell
        verdicts = {}  # the verdicts so far, by what they graded
        history = []  # the code cells before this one, in the order the kernel ran them
        for index in execution_order(nb.cells):
            cell = nb.cells[index]
            if cell.cell_type != "code":
                continue
            before = tuple(history)
            history.append(cell.source)
            if utils.is_locked(cell):
                taint.graders_cell(cell.source)  # the names its hidden tests left in the kernel
            else:
                taint.add_cell(cell.source)  # the student's own code, in the order it ran
                bound |= bound_names(statements(cell.source))
                if any(o.get("ename") == "AutogradIsOff" for o in cell.get("outputs", [])):
                    taint.refuse(cell.source)
            check = checks.get(grade_id(cell)) if utils.is_grade(cell) else None
            if check is None:
                continue
            reports = reported_values(cell)
            if len(reports) == 1 and isinstance(reports[0], dict):
                report = wire.Report(reports[0])
                refused = {name for name in taint.refused if report.info(name).get("kind", "missing") == "missing"}
                try:
                    verdict = check(report, namespace, seed, taint.tainted | refused, before)
                except Exception as error:  # a malformed (forged) report must cost this cell only
                    self.log.warning("cell %s: unreadable report (%.200r)", grade_id(cell), error)
                    verdict = check.nothing(
                        Reason("unreadable", say("the grader could not read the answer this cell reported"))
                    )
                answer = grade_id(cell).removeprefix("test_")
                verdict.lines += changed_after_check(checked, report, answer)
                verdict.lines += misspelt(answer, report, bound, taint.answers)
                verdict.lines += stopped_after(answer, report, verdict)
                if answer in report:
                    checked.setdefault(answer, report.raw(answer))
            else:
                if reports:
                    verdict = check.nothing(
                        Reason(
                            "unreadable",
                            say("this cell reported more than one answer: the submission tampered with it"),
                        )
                    )
                else:
                    why, ran = why_no_answer(cell, index, resources["backprop_ninja"], timed_out)
                    verdict = check.nothing(why)
                    if ran:
                        unanswered.append(grade_id(cell))
            first_to_fix(verdict, verdicts)
            verdicts[verdict.title] = verdict
            cell.outputs = verdict_outputs(verdict, edition)
        if unanswered:  # nothing crashed or timed out, yet no answer came: say so, it is no accident
            record_incident(
                resources,
                "no_answer_reported",
                f"{len(unanswered)} graded cells ran but reported no answer ({', '.join(unanswered[:5])}"
                + (", ..." if len(unanswered) > 5 else "")
                + "): the submission suppressed the reports or replaced the grader's module in its kernel",
                self.log,
            )
        return nb, resources


def changed_after_check(checked: dict, report, answer: str) -> list:
    """What a graded cell can tell about the gradients graded before it: the names of ``checked`` (each one's
    report at its own graded cell) that this cell's report shows with other values. Autograde runs the
    notebook once, top to bottom, so a difference means a later cell changed the tensor, usually in place.
    ``report`` is this cell's ``wire.Report``."""
    lines = []
    for name, then in checked.items():
        now = report.raw(name)
        if name == answer or now is None or now == then or _missing(then) and _missing(now):
            continue  # (_missing: not defined at its check, and still not: its own cell's report said what stopped it)
        if report.raw(answer) == now:
            lines.append(
                Reason(
                    "changed_in_place",
                    say(
                        "{name} changed after its check: it now holds the values of {answer}, so the two names are "
                        "one tensor (`{answer} = {name}` without .clone()?) and `{answer} += ...` changed {name} too. "
                        "{name} keeps the points of its own cell; write `{answer} = {name}.clone()`",
                        name=name,
                        answer=answer,
                    ),
                )
            )
        else:
            lines.append(
                Reason(
                    "changed_in_place",
                    say(
                        "{name} changed after its check: was it modified in place? ({name} keeps the points of its "
                        "own cell, but every later step that reads it reads the changed values)",
                        name=name,
                    ),
                )
            )
    return lines


_missing = lambda entry: isinstance(entry, dict) and entry.get("kind") == "missing"

"""The graded cells of Exercises 1 and 5, generated from their tables: ``answer_d<name>`` and ``test_d<name>`` for
each step, and in Exercise 1 ``answer_d<name>_<function>`` and ``test_d<name>_<function>`` for a step asked for again
with a given function (``backward_rules.WRITTEN_WITH``: ``dC_index_add``), right after its step's pair.

Their comment lines, check line, points and hidden region come from ``engine.backward_rules`` (Exercise 1) and
``engine.operators`` (Exercise 5), so they cannot drift from what the grader reads; the solutions and the markdown
between the pairs are written in the notebook.
"""

import re
from dataclasses import dataclass

from ..common.naming import grade_id
from ..engine import operators
from ..engine.backward_rules import STEPS, WRITTEN_WITH, Step
from .guarded_checks import guarded

NOTEBOOK = "ex1_atomic_backward"
TABLES = {NOTEBOOK: STEPS, operators.NOTEBOOK: operators.OPERATOR_STEPS}  # notebook -> the steps it grades, in order
SOLUTION = re.compile(r"^### BEGIN SOLUTION$", re.M)


@dataclass(frozen=True)
class Pair:
    """One graded answer of Exercise 1 or 5: its answer cell and the test cell right after it."""

    label: str  # what the layout problems name: the step, or the answer asked for with a function
    answer: str  # the variable, e.g. dcounts
    header: str  # the comment lines above the solution region of the answer cell
    test: str  # the test cell's source
    points: int

    @property
    def answer_id(self) -> str:
        return f"answer_{self.answer}"

    @property
    def test_id(self) -> str:
        return f"test_{self.answer}"


def _test_source(step: Step, answer: str, points: int, check: str) -> str:
    reported = ", ".join(f'"{name}"' for name in [answer, *(f"d{u}" for u in step.upstream)])
    if step.upstream:  # the rule probe: the answer's code re-run with these pinned to random tensors
        pinned = ", ".join(f'"d{name}"' for name in step.upstream)
        reported += f", probe=({pinned}{',' if len(step.upstream) == 1 else ''})"
    return (
        f"# Graded: {answer} ({points} point{'s' if points != 1 else ''})\n"
        "# Checked below on your batch; the autograder grades it on another one.\n"
        f"{guarded(check, check.split('(')[0])}\n"
        "### BEGIN HIDDEN TESTS\n"
        "from autograder.in_kernel import report\n"
        "\n"
        f"report(globals(), {reported})\n"
        "### END HIDDEN TESTS"
    )


def step_pair(step: Step) -> Pair:
    lines = [f"# d{step.name}: the gradient of loss with respect to {step.name}", f"# forward: {step.forward}"]
    if len(step.terms) == 2:
        paths = " and ".join(step.terms)
        lines.append(f"# {step.name} is used twice (by {paths}): `d{step.name} = ...` for one path, `+=` for the other")
    elif len(step.terms) > 2:
        paths = ", ".join(list(step.terms)[:-1]) + " and " + list(step.terms)[-1]
        lines.append(
            f"# {step.name} is used {len(step.terms)} times (by {paths}): `d{step.name} = ...` for one path, "
            "`+=` for each of the others"
        )
    test = _test_source(step, f"d{step.name}", step.points, f'check_answer("{step.name}")')
    return Pair(step.name, f"d{step.name}", "\n".join(lines), test, step.points)


def written_with_pair(step: Step, written) -> Pair:
    lines = [
        f"# {written.answer}: d{step.name} again, computed with {written.function}_",
        f"# forward: {step.forward}",
    ]
    check = f'check_answer("{step.name}", answer="{written.answer}", calls="{written.function}")'
    test = _test_source(step, written.answer, written.points, check)
    return Pair(written.answer, written.answer, "\n".join(lines), test, written.points)


def pairs(notebook: str = NOTEBOOK) -> list:
    """Every graded pair of the notebook (Exercise 1 or 5), in its order: each step's, then (Exercise 1) those asked
    for with a function."""
    found = []
    for step in TABLES[notebook]:
        found.append(step_pair(step))
        found += [written_with_pair(step, w) for w in WRITTEN_WITH if w.step == step.name]
    return found


def answer_metadata(pair: Pair) -> dict:
    return {"grade": False, "grade_id": pair.answer_id, "locked": False, "schema_version": 3, "solution": True}


def test_metadata(pair: Pair) -> dict:
    return {
        "grade": True,
        "grade_id": pair.test_id,
        "locked": True,
        "points": pair.points,
        "schema_version": 3,
        "solution": False,
    }


def with_header(pair: Pair, source: str) -> str:
    """The answer cell's source with its comment lines generated and its solution region kept."""
    match = SOLUTION.search(source)
    if match is None:
        raise ValueError(f"{pair.answer_id} has no '### BEGIN SOLUTION' region")
    return pair.header + "\n" + source[match.start() :]


def layout_problems(nb, notebook: str = NOTEBOOK) -> list:
    """What is out of place: each answer cell, its test cell right after it, in the table's order."""
    ids = [grade_id(c) for c in nb.cells]
    problems, last = [], -1
    for pair in pairs(notebook):
        if ids.count(pair.answer_id) != 1 or ids.count(pair.test_id) != 1:
            problems.append(f"{pair.label}: needs exactly one {pair.answer_id} and one {pair.test_id}")
            continue
        at = ids.index(pair.answer_id)
        if ids[at + 1 : at + 2] != [pair.test_id]:
            problems.append(f"{pair.label}: {pair.test_id} must come right after {pair.answer_id}")
        if at < last:
            problems.append(f"{pair.label}: out of the rules table's order")
        last = at
    known = {i for pair in pairs(notebook) for i in (pair.answer_id, pair.test_id)}
    stray = [i for i in ids if re.fullmatch(r"(answer|test)_d\w+", i) and i not in known]
    problems += [f"{i}: no step of the rules table has this grade_id" for i in stray]
    return problems


def stale_cells(nb, notebook: str = NOTEBOOK) -> list:
    """grade_ids of the notebook's graded cells whose source or metadata differ from what its table generates."""
    by_id = {grade_id(c): c for c in nb.cells if grade_id(c)}
    stale = []
    for pair in pairs(notebook):
        answer, test = by_id.get(pair.answer_id), by_id.get(pair.test_id)
        if answer is not None and (
            answer.metadata.get("nbgrader") != answer_metadata(pair)
            or SOLUTION.search(answer.source) is None
            or answer.source != with_header(pair, answer.source)
        ):
            stale.append(pair.answer_id)
        if test is not None and (test.metadata.get("nbgrader") != test_metadata(pair) or test.source != pair.test):
            stale.append(pair.test_id)
    return stale


def sync(nb, name: str) -> None:
    """Rewrite the graded cells of a notebook with a table (Exercises 1 and 5) from it; the solutions are kept."""
    if name not in TABLES:
        return
    problems = layout_problems(nb, name)
    if problems:
        raise ValueError(f"{name}: fix the graded cells by hand first: " + "; ".join(problems))
    by_id = {grade_id(c): c for c in nb.cells if grade_id(c)}
    for pair in pairs(name):
        answer, test = by_id[pair.answer_id], by_id[pair.test_id]
        answer.source = with_header(pair, answer.source)
        answer.metadata["nbgrader"] = answer_metadata(pair)
        test.source = pair.test
        test.metadata["nbgrader"] = test_metadata(pair)

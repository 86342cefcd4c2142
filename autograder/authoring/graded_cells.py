"""The graded cells of Exercises 1 and 5, generated from their tables: ``answer_d<name>`` and ``test_d<name>`` for
each step.

Their comment lines, check line, points and hidden region come from ``engine.backward_rules`` (Exercise 1) and
``engine.operators`` (Exercise 5), so they cannot drift from what the grader reads; the solutions and the markdown
between the pairs are written in the notebook.
"""

import re

from ..common.naming import grade_id
from ..engine import operators
from ..engine.backward_rules import STEPS, Step

NOTEBOOK = "ex1_atomic_backward"
TABLES = {NOTEBOOK: STEPS, operators.NOTEBOOK: operators.OPERATOR_STEPS}  # notebook -> the steps it grades, in order
SOLUTION = re.compile(r"^### BEGIN SOLUTION$", re.M)


def answer_id(step: Step) -> str:
    return f"answer_d{step.name}"


def test_id(step: Step) -> str:
    return f"test_d{step.name}"


def answer_header(step: Step) -> str:
    """The comment lines above the solution region of the step's answer cell."""
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
    return "\n".join(lines)


def test_source(step: Step) -> str:
    points = f"{step.points} point{'s' if step.points != 1 else ''}"
    reported = ", ".join(f'"d{name}"' for name in [step.name, *step.upstream])
    if step.upstream:  # the rule probe: the answer's code re-run with these pinned to random tensors
        pinned = ", ".join(f'"d{name}"' for name in step.upstream)
        reported += f", probe=({pinned}{',' if len(step.upstream) == 1 else ''})"
    return (
        f"# Graded: d{step.name} ({points})\n"
        "# Checked below on your batch; the autograder grades it on another one.\n"
        f'check_answer("{step.name}")\n'
        "### BEGIN HIDDEN TESTS\n"
        "from autograder.in_kernel import report\n"
        "\n"
        f"report(globals(), {reported})\n"
        "### END HIDDEN TESTS"
    )


def answer_metadata(step: Step) -> dict:
    return {"grade": False, "grade_id": answer_id(step), "locked": False, "schema_version": 3, "solution": True}


def test_metadata(step: Step) -> dict:
    return {
        "grade": True,
        "grade_id": test_id(step),
        "locked": True,
        "points": step.points,
        "schema_version": 3,
        "solution": False,
    }


def with_header(step: Step, source: str) -> str:
    """The answer cell's source with its comment lines generated and its solution region kept."""
    match = SOLUTION.search(source)
    if match is None:
        raise ValueError(f"{answer_id(step)} has no '### BEGIN SOLUTION' region")
    return answer_header(step) + "\n" + source[match.start() :]


def layout_problems(nb, steps=STEPS) -> list:
    """What is out of place: each step's answer cell, its test cell right after it, in the table's order."""
    ids = [grade_id(c) for c in nb.cells]
    problems, last = [], -1
    for step in steps:
        if ids.count(answer_id(step)) != 1 or ids.count(test_id(step)) != 1:
            problems.append(f"{step.name}: needs exactly one {answer_id(step)} and one {test_id(step)}")
            continue
        at = ids.index(answer_id(step))
        if ids[at + 1 : at + 2] != [test_id(step)]:
            problems.append(f"{step.name}: {test_id(step)} must come right after {answer_id(step)}")
        if at < last:
            problems.append(f"{step.name}: out of the rules table's order")
        last = at
    stray = [i for i in ids if re.fullmatch(r"(answer|test)_d\w+", i) and i not in _known_ids(steps)]
    problems += [f"{i}: no step of the rules table has this grade_id" for i in stray]
    return problems


def _known_ids(steps) -> set:
    return {f(step) for step in steps for f in (answer_id, test_id)}


def stale_cells(nb, steps=STEPS) -> list:
    """grade_ids of the notebook's graded cells whose source or metadata differ from what its table generates."""
    by_id = {grade_id(c): c for c in nb.cells if grade_id(c)}
    stale = []
    for step in steps:
        answer, test = by_id.get(answer_id(step)), by_id.get(test_id(step))
        if answer is not None and (
            answer.metadata.get("nbgrader") != answer_metadata(step)
            or SOLUTION.search(answer.source) is None
            or answer.source != with_header(step, answer.source)
        ):
            stale.append(answer_id(step))
        if test is not None and (
            test.metadata.get("nbgrader") != test_metadata(step) or test.source != test_source(step)
        ):
            stale.append(test_id(step))
    return stale


def sync(nb, name: str) -> None:
    """Rewrite the graded cells of a notebook with a table (Exercises 1 and 5) from it; the solutions are kept."""
    steps = TABLES.get(name)
    if steps is None:
        return
    problems = layout_problems(nb, steps)
    if problems:
        raise ValueError(f"{name}: fix the graded cells by hand first: " + "; ".join(problems))
    by_id = {grade_id(c): c for c in nb.cells if grade_id(c)}
    for step in steps:
        answer, test = by_id[answer_id(step)], by_id[test_id(step)]
        answer.source = with_header(step, answer.source)
        answer.metadata["nbgrader"] = answer_metadata(step)
        test.source = test_source(step)
        test.metadata["nbgrader"] = test_metadata(step)

"""Notes under a verdict on how the student's own cells wrote its answer: a name close to the answer's that is not it
(read from the student's cells as the grader holds them), a cell that stopped before all of its lines that write the
answer had run (as the kernel reported it, ``wire.Report.cut_short``)."""

import ast
import difflib

from ...common.diagnoses import NOTE, Reason
from ...common.naming import latin_lookalike
from ...common.words import say


def bound_names(statements) -> set:
    """The names a student's cell binds anywhere (x = .., for x in .., def x): where a misspelt answer may be."""
    nodes = [node for statement in statements for node in ast.walk(statement)]
    named = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return named | {n.name for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def misspelt(answer: str, report, bound: set, answers: set) -> list:
    """A line when ``answer`` is not defined (its cell raised nothing) and the student's code binds a name close to it
    that is no answer of its own: `dbhprebn` for `dhprebn`, `dbnmean1` for `dbnmeani`, `dH` for `dh`."""
    info = report.info(answer)
    if info.get("kind", "missing") != "missing" or info.get("raised"):
        return []
    others = sorted(bound - answers - {answer})
    twins = [n for n in others if latin_lookalike(n) == answer]  # `dсounts` with a Cyrillic с: the same to the eye
    cased = [n for n in others if n.casefold() == answer.casefold()]  # `dH` for `dh`: 0.5 close to difflib
    near = twins or cased or difflib.get_close_matches(answer, others, n=1, cutoff=0.8)
    if twins:
        words = say(
            "your code assigns {near}, which looks like {name} but is another name to Python: it holds letters that "
            "are not Latin ({letters}). Type them again in the Latin layout (the grader reads each answer by its name)",
            near=near[0],
            name=answer,
            letters=", ".join(f"{c} (U+{ord(c):04X})" for c in dict.fromkeys(near[0]) if not c.isascii()),
        )
    elif near:
        words = say(
            "your code assigns {near}, a name close to {name}: if it is meant to be {name}, correct its spelling (the "
            "grader reads each answer by its name)",
            near=near[0],
            name=answer,
        )
    return [Reason(NOTE, words)] if near else []


def stopped_after(answer: str, report, verdict) -> list:
    """A line when ``answer`` lost points and its cell stopped with an error before a statement of it that writes
    ``answer`` ran to its end (``wire.Report.cut_short``): ``answer`` holds only part of what the cell computes.
    (Before, a typo in `dhprebn += ... dbmeani` read only "the path through bnmeani is missing. Add its contribution
    with +=".)"""
    error = report.cut_short
    if verdict.passed or not error or report.info(answer).get("kind", "missing") == "missing":
        return []
    words = say(
        "{name}'s cell stopped with {error} before every line of it that writes {name} had run: {name} holds only "
        "part of what the cell computes. Fix that line and run the cell again",
        name=answer,
        error=error,
    )
    return [Reason(NOTE, words)]

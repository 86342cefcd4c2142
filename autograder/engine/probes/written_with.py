"""The grader's side of an answer asked for with a given function (``dC_index_add``: dC computed with index_add_):
the answer's code, found in the cells that ran as a rule probe finds it (``rerun.answer_code``), must call it.

The code is read from the notebook the grader holds, never from what the kernel says about it."""

from ...common.diagnoses import Reason
from ...common.words import say
from ..honesty import cell_code
from .rerun import NoAnswerCode, answer_code, calls_function


def as_run(source: str) -> str:
    """A cell's code as the kernel runs it; as it is if IPython cannot transform it (it failed in the kernel too)."""
    code = cell_code.as_run(source)
    return source if code is None else code


def not_written_with(cells, answer: str, pins, function: str, again: str) -> Reason | None:
    """Why the code of ``answer`` (``again`` computed another way) in ``cells`` (the code cells that ran before its
    graded cell, in order) does not call ``function``; None when it does. ``pins``: the probe's, which decide where
    the answer's code starts."""
    try:
        code = answer_code([as_run(source) for source in cells], answer, pins)
    except NoAnswerCode as why:
        return Reason(
            "not_asked_function",
            say(
                "the grader could not find the code that computed {answer} ({why}), so it cannot see {function}_ "
                "in it: write `{answer} = ...` in its answer cell",
                answer=answer,
                why=str(why),
                function=function,
            ),
        )
    if calls_function(code, function):
        return None
    return Reason(
        "not_asked_function",
        say(
            "{answer} does not call {function}_ (or {function}): this cell asks for {again} computed with it. Your "
            "{again} above keeps its own points however you wrote it",
            answer=answer,
            function=function,
            again=again,
        ),
    )


def reads_as_written(cells, answer: str, pins) -> frozenset:
    """The names the code of ``answer`` in ``cells`` (the code cells that ran before its graded cell, in order) reads
    before it writes them, as the notebook the grader holds has it: what a copy reads, whatever the kernel reported."""
    try:
        return answer_code([as_run(source) for source in cells], answer, pins).reads
    except NoAnswerCode:
        return frozenset()

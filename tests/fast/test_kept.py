"""A grading worker grades student after student: what it keeps of the cells it read is bounded by their characters
(``common.kept``), so that a hostile student's huge cell is read, and dropped before the next student."""

import gc
import sys
import tracemalloc
import weakref

import pytest

from autograder.common.kept import kept_by_text, kept_on_node
from autograder.common.translate import code_pieces
from autograder.engine.honesty.unread_code import unknown_module
from autograder.engine.probes.rerun import PARSES_KEPT, _reads, _rebinds, _rebound_in, parsed, writes
from autograder.engine.probes.snapshots import evaluated_names
from autograder.engine.probes.written_with import not_written_with, reads_as_written

MB = 2**20
HUGE = 5_000_000  # characters: over every budget of the grader's caches of texts


@pytest.fixture(autouse=True)
def graders_budget(monkeypatch):
    """The grader's budget of parses, whatever an earlier test that started grading here lifted it to (a kernel's)."""
    for kept in (parsed.kept, _rebound_in.kept):
        monkeypatch.setattr(kept, "budget", PARSES_KEPT)


def retained(read) -> int:
    """Bytes still allocated after ``read()`` made its text, read it and let it go."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        read()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()


def history(letter: str = "a") -> list:
    """The cells before a graded cell: an ordinary one, and a huge one that computes the answer."""
    return ["dlogits = probs.clone()", f"note = '{letter * HUGE}'\ndW2 = h.T @ dlogits\ndb2 = dlogits.sum(0)"]


def test_judging_a_huge_cell_keeps_nothing_of_it():
    """Judging's written-with probe reads the history through the probes' parse (``parsed``, ``_rebound_in``) and
    what they work out per statement: after it, nothing of the huge cell is left (an lru_cache held its parse, and
    its 5 MB literal, until 1,024 other cells pushed it out)."""
    assert reads_as_written(history(), "dW2", ["dlogits"]) == {"h"}  # read as before
    assert not_written_with(history(), "db2", ["dlogits"], "sum", "db2") is None
    assert retained(lambda: reads_as_written(history("b"), "dW2", ["dlogits"])) < MB  # (another student's)
    assert retained(lambda: not_written_with(history("c"), "db2", ["dlogits"], "sum", "db2")) < MB


def test_the_statements_of_a_huge_cell_go_with_its_parse():
    """What is worked out about a statement is kept on it: its node, and the literal in it, are freed once read."""
    cell = history()[1]
    statements = parsed(cell)
    assert [writes(s) for s in statements] == [{"note"}, {"dW2"}, {"db2"}]
    assert [_reads(s) for s in statements][1:] == [{"h", "dlogits"}, {"dlogits"}]
    assert _rebinds(statements[0]) == {"note"} and evaluated_names(statements[1]) == {"h", "dlogits"}
    assert _rebound_in(cell)["dW2"] == [1]
    gone = weakref.ref(statements[0])
    del statements, cell
    gc.collect()
    assert gone() is None


def test_an_ordinary_cell_is_parsed_once():
    cell = "dW2 = h.T @ dlogits\ndb2 = dlogits.sum(0)"
    assert parsed(cell) is parsed(cell) and _rebound_in(cell) is _rebound_in(cell)
    assert writes(parsed(cell)[0]) is writes(parsed(cell)[0])


@pytest.mark.parametrize(
    "read",
    [
        lambda letter: unknown_module(letter * HUGE),  # import mmmm...
        lambda letter: [p.text for p in code_pieces(f"x = 'Привет {letter * HUGE}'")],  # edition_of reads a cell
    ],
    ids=["unknown_module", "code_pieces"],
)
def test_other_readings_of_a_students_text_keep_no_huge_one(read, monkeypatch):
    own = [finder for finder in sys.meta_path if type(finder).__module__ != "_pytest.assertion.rewrite"]
    monkeypatch.setattr(sys, "meta_path", own)  # (pytest's import hook remembers each name it is asked for)
    assert read("a") == read("a")  # (read as before)
    assert retained(lambda: read("b")) < MB


def test_kept_by_text_and_on_node():
    calls = []

    @kept_by_text(10)
    def length(text: str) -> int:
        calls.append(text)
        return len(text)

    assert [length("aaaa"), length("aaaa"), length("b" * 11), length("b" * 11)] == [4, 4, 11, 11]
    assert calls == ["aaaa", "b" * 11, "b" * 11]  # a text over the budget is read again, never kept
    for text in ("cccc", "dddd"):
        length(text)
    assert list(length.kept.values) == [("cccc",), ("dddd",)] and length.kept.size == 8

    @kept_on_node
    def names(node) -> frozenset:
        calls.append(node)
        return frozenset(n.id for n in __import__("ast").walk(node) if type(n).__name__ == "Name")

    node = parsed("x = y")[0]
    assert names(node) is names(node) and calls[-1] is node and calls.count(node) == 1

"""Rule probes, the pure parts (engine/probes/): which code a probe re-runs, what it
reads (the snapshot of each statement, taken when it ran), and the copy it runs in."""

import ast
import contextlib
import io
import multiprocessing
import time

import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from autograder.engine.backward_rules import STEP_BY_NAME
from autograder.engine.explain import not_a_tensor
from autograder.engine.probes import snapshots
from autograder.engine.probes.judge_rule import judge_rule
from autograder.engine.probes.kept_by_rule import kept_as_set_up
from autograder.engine.probes.rerun import NoAnswerCode, answer_code, pinned_inputs, probe_namespace, put_back, replay
from autograder.engine.verdict import LINE_CHARS, Verdict
from autograder.engine.wire import PROBE, Report
from autograder.in_kernel import probe_runner, snapshot_hook

SETUP = "logits = h @ W2 + b2\nlogit_maxes = logits.max(1, keepdim=True).values\nnorm_logits = logits - logit_maxes"


def code_of(cells, answer, pins) -> list:
    return [ast.unparse(s) for s in answer_code(cells, answer, pins).statements]


def test_the_answer_code_is_the_same_in_every_layout():
    one_cell_per_gradient = [
        SETUP,
        "dnorm_logits = counts * dcounts",
        "dlogit_maxes = -dnorm_logits.sum(1, keepdim=True)",
        "dlogits = dnorm_logits.clone()\ndlogits += onehot * dlogit_maxes",
    ]
    split = [SETUP, "dnorm_logits = counts * dcounts", "dlogits = dnorm_logits.clone()"]
    split += ["dlogit_maxes = -dnorm_logits.sum(1, keepdim=True)", "dlogits += onehot * dlogit_maxes"]
    one_cell = [SETUP, "\n".join(one_cell_per_gradient[1:]) + "\ndh = dlogits @ W2.T"]
    pins = ("dnorm_logits", "dlogit_maxes")
    expected = ["dlogits = dnorm_logits.clone()", "dlogits += onehot * dlogit_maxes"]
    for cells in (one_cell_per_gradient, split, one_cell):
        assert code_of(cells, "dlogits", pins) == expected
        code = answer_code(cells, "dlogits", pins)
        assert code.pins_read == set(pins) and code.further_up == () and "onehot" in code.reads


def test_helpers_computed_from_the_pins_are_run_again_and_gradients_from_further_up_are_not():
    cells = ["dhpreact = hpreact.grad.clone()", "dbnbias = dhpreact.sum(0, keepdim=True)"]
    cells.append("t = n * dhpreact\ndhprebn = s * (t - dbnbias) + 0 * dh")
    code = answer_code(cells, "dhprebn", ("dhpreact",))
    assert [ast.unparse(s) for s in code.statements] == [
        "dbnbias = dhpreact.sum(0, keepdim=True)",
        "t = n * dhpreact",
        "dhprebn = s * (t - dbnbias) + 0 * dh",
    ]
    assert code.further_up == ("dh",)  # computed before the pin, from further up the graph


def test_a_forward_value_is_probed_apart_from_the_chunked_forward_pass():
    """The cell that computes the pinned input (the setup) is not re-run: a copy of its result stays a copy."""
    setup = "logits = h @ W2 + b2\nprobs = logits.softmax(1)\nloss = -probs.log()[range(n), Yb].mean()"
    copied = answer_code([setup, "loss_fast = loss.clone()"], "loss_fast", ("logits",))
    assert [ast.unparse(s) for s in copied.statements] == ["loss_fast = loss.clone()"]
    assert "loss" in copied.reads and not copied.pins_read
    helper = answer_code([setup, "z = logits - 1", "loss_fast = F.cross_entropy(z + 1, Yb)"], "loss_fast", ("logits",))
    assert len(helper.statements) == 2 and helper.pins_read == {"logits"}


def test_the_statements_of_a_with_block_are_the_cells_own_and_an_if_stays_whole():
    """`with torch.no_grad():` (nested too) is only around the statements: they are numbered in order, as the
    kernel's snapshot hook numbers them; a branch may not have run, so an `if` is re-run whole; a `while` is not
    re-run at all (its end may depend on the values a probe changes)."""
    pins = ("dnorm_logits", "dlogit_maxes")
    cell = "with torch.no_grad():\n    dlogits = dnorm_logits.clone()\n    with torch.no_grad():\n"
    cell += "        dlogits += onehot * dlogit_maxes\ndh = dlogits @ W2.T"
    code = answer_code([SETUP, cell], "dlogits", pins)
    assert code_of([SETUP, cell], "dlogits", pins) == [
        "dlogits = dnorm_logits.clone()",
        "dlogits += onehot * dlogit_maxes",
    ]
    assert code.origins == ((1, 0), (1, 1)) and code.pins_read == set(pins)
    branch = "if fused:\n    dlogits = softmax_minus_one_hot\nelse:\n    dlogits = dnorm_logits.clone()"
    assert code_of([SETUP, branch], "dlogits", pins) == [branch]
    with pytest.raises(NoAnswerCode, match="no statement `dlogits = ...`"):
        answer_code([SETUP, "while True:\n    dlogits = dnorm_logits.clone()\n    break"], "dlogits", pins)


def test_a_block_that_may_not_rebind_the_answer_keeps_the_code_before_it():
    """An `if` without an `else`, a loop, a `try` whose `except` leaves the answer alone may not rebind it: the code
    before it is the answer's too (it was left out: a right dlogits followed by `if debug: dlogits = None` was judged
    on the kernel's own value and lost its points, and a dlogits without the max's path followed by `if False:
    dlogits = 0` kept them, 'judged by its value')."""
    pins = ("dnorm_logits", "dlogit_maxes")
    right = "dlogits = dnorm_logits.clone()\ndlogits += onehot * dlogit_maxes"
    for block in (
        "if debug:\n    dlogits = None",
        "for name in names:\n    dlogits = None",
        "try:\n    dlogits = dnorm_logits * 1\nexcept RuntimeError:\n    pass",
    ):
        assert code_of([SETUP, right + "\n" + block], "dlogits", pins) == right.splitlines() + [block]
    both = "if fused:\n    dlogits = softmax_minus_one_hot\nelse:\n    dlogits = dnorm_logits.clone()"
    assert code_of([SETUP, right + "\n" + both], "dlogits", pins) == [both]  # rebound whichever way it goes
    handled = "try:\n    dlogits = dnorm_logits * 1\nexcept RuntimeError:\n    dlogits = dnorm_logits.clone()"
    assert code_of([SETUP, right + "\n" + handled], "dlogits", pins) == [handled]


def test_no_assignment_of_the_answer_is_said():
    with pytest.raises(NoAnswerCode, match="no statement `dh = ...`"):
        answer_code([SETUP, "globals()['dh'] = 1"], "dh", ("dlogits",))


def test_pins_take_the_shape_the_student_used_and_keep_exact_zeros():
    namespace = {"logit_maxes": torch.ones(4, 1), "dlogit_maxes": torch.zeros(4, 1), "bnmeani": torch.ones(1, 3)}
    namespace["dbnmeani"] = torch.ones(3)  # the lecture's (3,) for a (1, 3) tensor
    shapes = {name: t.shape for name, t in namespace.items()}
    pins = pinned_inputs(namespace, 7, "dX", ("dlogit_maxes", "dbnmeani"), shapes)
    assert not pins["dlogit_maxes"].any() and pins["dlogit_maxes"].shape == (4, 1)
    assert pins["dbnmeani"].shape == (3,) and pins["dbnmeani"].any()


def test_the_probe_changes_nothing_in_the_kernel():
    W2, generator = torch.ones(2, 2), torch.Generator().manual_seed(1)
    namespace = {"W2": W2, "parameters": [W2], "g": generator}
    seen = snapshots.take(namespace, ["W2", "parameters", "g"])
    apart = probe_namespace(namespace, {"dW2": torch.zeros(2, 2)})
    put_back(apart, seen)
    exec("W2 += 1\nparameters[0] += 1\ntorch.randn(3, generator=g)", {**apart, "torch": torch})
    assert torch.equal(W2, torch.ones(2, 2)) and torch.equal(
        torch.randn(1, generator=generator), torch.randn(1, generator=torch.Generator().manual_seed(1))
    )


def run(cells, answer, pins, taken) -> torch.Tensor:
    """The probe of ``answer`` on the snapshots ``taken`` ((cell, statement) -> namespace when it ran)."""
    code = answer_code(cells, answer, pins)
    plan = replay(code, {k: snapshots.take(ns, ns) for k, ns in taken.items()}, pins)
    apart = probe_namespace({}, pins)
    for statement, values in zip(code.statements, plan):
        put_back(apart, values)
        exec(compile(ast.Module([statement], []), "<probe>", "exec"), apart)
    return apart[answer]


def test_each_statement_reads_what_it_read_when_it_ran():
    """The lecture's layout: ``n`` is 32 when dbndiff2 is computed, and 2 once the dC loop has run."""
    cells = [
        "",
        "dbnvar = a * b\ndbndiff2 = 1.0 / (n - 1) * torch.ones_like(bndiff2) * dbnvar\nfor n in range(3):\n    pass",
    ]
    bndiff2 = torch.ones(4, 3)
    taken = {(1, 1): {"n": 32, "torch": torch, "bndiff2": bndiff2, "dbnvar": torch.zeros(1, 3)}}
    pins = {"dbnvar": torch.full((1, 3), 31.0)}
    bndiff2.mul_(5)  # changed in place after the statement ran: the snapshot holds its values as they were
    assert torch.equal(run(cells, "dbndiff2", pins, taken), torch.ones(4, 3))


def test_a_helper_reads_the_globals_it_saw_when_it_was_called():
    def scale(t):
        return t / (n - 1)  # noqa: F821  (n is the namespace's, below)

    namespace = {"n": 5}
    scale = type(scale)(scale.__code__, namespace)
    namespace["scale"] = scale
    seen = snapshots.take(namespace, ["scale"])
    namespace["n"] = 2  # the loop variable, later
    assert isinstance(seen["scale"], snapshots.Helper) and seen["n"] == 5
    apart = probe_namespace(namespace, {})
    put_back(apart, seen)
    assert apart["scale"](torch.tensor(8.0)) == 2.0


def test_pins_and_what_the_code_wrote_itself_are_not_put_back():
    cells = ["dh = dlogits @ W2.T", "t = dh * 2\ndhpreact = t + dh"]
    taken = {(1, 0): {"dh": torch.zeros(2)}, (1, 1): {"dh": torch.zeros(2), "t": torch.zeros(2)}}
    assert torch.equal(run(cells, "dhpreact", {"dh": torch.ones(2)}, taken), torch.full((2,), 3.0))


def test_what_no_snapshot_holds_makes_the_probe_say_so():
    cells = ["", "dh = dlogits @ W2.T"]
    with pytest.raises(NoAnswerCode, match="did not see what `dh = dlogits @ W2.T` read when it ran"):
        replay(answer_code(cells, "dh", ("dlogits",)), {}, ("dlogits",))

    class Weights:
        pass

    taken = {(1, 0): snapshots.take({"W2": Weights(), "dlogits": torch.ones(1)}, ["W2", "dlogits"])}
    with pytest.raises(NoAnswerCode, match="read W2, a Weights, which it cannot copy"):
        replay(answer_code(cells, "dh", ("dlogits",)), taken, ("dlogits",))


def test_snapshots_copy_what_can_change_and_keep_what_cannot():
    t = torch.ones(3, requires_grad=True)
    seen = snapshots.take({"t": t, "xs": [t, 1], "m": torch, "f": torch.tanh, "s": t.sum}, ["t", "xs", "m", "f", "s"])
    assert seen["t"] is not t and not seen["t"].requires_grad and seen["xs"][0] is not t
    assert seen["m"] is torch and seen["f"] is torch.tanh
    assert isinstance(seen["s"], snapshots.Uncopied)  # a method bound to the kernel's tensor
    assert snapshots.take({}, ["range"])["range"] is snapshots.UNBOUND
    big = torch.zeros(snapshots.MAX_BYTES // 4 + 1)
    assert isinstance(snapshots.copy(big), snapshots.Uncopied)


def test_a_probe_that_runs_too_long_is_stopped(monkeypatch):
    monkeypatch.setattr(probe_runner, "TIME_LIMIT", 0.2)
    start = time.monotonic()
    with pytest.raises(probe_runner.ProbeTimeLimit):
        with probe_runner.apart_from_the_kernel():
            time.sleep(5)
    assert time.monotonic() - start < 2


def test_a_probe_over_its_time_is_stopped_through_the_students_except(monkeypatch):
    """The student's `except Exception:` around a loop (a `try` is re-run whole since 7f47e55) caught the time
    limit, and what came after it ran with no limit at all (the timer fires once)."""
    monkeypatch.setattr(probe_runner, "TIME_LIMIT", 0.2)
    start = time.monotonic()
    with pytest.raises(probe_runner.ProbeTimeLimit):
        with probe_runner.apart_from_the_kernel():
            try:
                time.sleep(5)
            except Exception:
                pass
            time.sleep(5)
    assert time.monotonic() - start < 2


TRICKY_CELLS = [
    "from __future__ import annotations\nx: int = 1\nx",
    "def f(a):\n    return a * n\n\n\nn = 3\nz = f(2)\nz",
    "import torch\nt = torch.ones(2)\nt.add_(1)",
    "%time y = x + 1",
    "%%time\nw = y + 1",
    "for n in range(2):\n    pass\nq = 1 / (n - 1)",
    "v = x + 1\nv = v / 0",
    "u = [k for k in range(3)]\nprint(u)\n1 / 0",
]


def _run_in_a_shell(cells, snapshots: bool) -> tuple:
    """In a forked child: the cells in a fresh IPython shell (with the snapshot hook or not); what each showed."""
    shell = InteractiveShell.instance(config=Config(HistoryManager={"hist_file": ":memory:"}))
    if snapshots:
        snapshot_hook.take_snapshots(shell.user_ns)
    shown = []
    for source in cells:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result = shell.run_cell(source, store_history=True)
        timed = "time" in source  # %time prints how long it took
        shown.append((None if timed else out.getvalue(), err.getvalue(), repr(result.result)))
    taken = {key: sorted(seen) for key, seen in snapshot_hook.snapshots.items()}
    return shown, taken, snapshot_hook.snapshots.get((2, 2), {}).get("n"), snapshot_hook.finished


def in_a_fork(function, *args):
    """function(*args) in a forked process. Its pool is closed, not terminated: by then the test process may catch
    SIGTERM (an earlier test's library left a handler; seen on an xdist worker of the whole suite), and a forked
    worker that inherits the handler outlives terminate(), which then waits for it forever."""
    pool = multiprocessing.get_context("fork").Pool(1)
    try:
        return pool.apply(function, args)
    finally:
        pool.close()
        pool.join()


def test_the_snapshot_hook_changes_nothing_a_cell_does():
    """The cells show the same with the hook as without (values, prints, tracebacks; nothing on stderr); it takes
    snapshots of the statements that write a name, and of the code %time and %%time run."""
    plain, _, _, _ = in_a_fork(_run_in_a_shell, TRICKY_CELLS, False)
    hooked, taken, n_for_f, finished = in_a_fork(_run_in_a_shell, TRICKY_CELLS, True)
    assert hooked == plain and all(err == "" for _, err, _ in hooked)
    assert "ZeroDivisionError" in hooked[-1][0]  # the same traceback
    assert taken[(2, 2)] == ["f", "n"] and n_for_f == 3  # f's global n, as it was when f was called
    assert (6, 1) in taken and taken[(6, 1)] == ["n"]  # q = 1 / (n - 1), after the loop
    assert taken[(4, 0)] == ["x"] and taken[(5, 0)] == ["y"]  # %time and %%time: the code they ran in the namespace
    assert (7, 0) in finished and (7, 1) in taken and (7, 1) not in finished  # v = v / 0 started, and raised
    assert (3, 2) in finished  # t.add_(1) ends its cell (its value shown): the cell's outcome marks it


def test_what_of_the_notebook_reads_its_namespace_later_is_not_taken_as_it_is():
    """A class (its attributes can change), a helper behind a decorator or with a closure (the function it calls
    reads the kernel's globals): a probe that needs one cannot judge. A helper's defaults are copied."""
    namespace = {"__name__": "__main__"}
    cell = [
        "import functools",
        "class Sizes:\n    n = 32",
        "def twice(f):\n    def g():\n        return 2 * f()\n    return g",
        "def bessel():\n    return 1.0 / (n - 1)",
        "half = twice(bessel)",
        "wrapped = functools.wraps(bessel)(lambda: 1)",
        "def scaled(t, by=[1.0]):\n    return t * by[0]",
    ]
    exec("\n".join(cell), namespace)
    seen = snapshots.take(namespace, ["Sizes", "half", "wrapped", "scaled", "bessel"])
    assert all(isinstance(seen[name], snapshots.Uncopied) for name in ("Sizes", "half", "wrapped"))
    namespace["scaled"].__defaults__[0][0] = 5.0  # changed after the snapshot
    apart = probe_namespace(namespace, {})
    put_back(apart, seen)
    assert apart["scaled"](2.0) == 2.0 and isinstance(seen["bessel"], snapshots.Helper)


WITH_CELLS = [
    "import torch\na = torch.ones(2)",
    "with torch.no_grad():\n    b = a * 2\n    with torch.no_grad():\n        c = b + a\n    if True:\n        d = c\n"
    "    e = d + 1\nf = e * a\nf",
]


def test_the_snapshot_hook_takes_the_statements_of_a_with_block_as_the_probes_number_them():
    plain, _, _, _ = in_a_fork(_run_in_a_shell, WITH_CELLS, False)
    hooked, taken, _, _ = in_a_fork(_run_in_a_shell, WITH_CELLS, True)
    assert hooked == plain and all(err == "" for _, err, _ in hooked)
    assert {key: names for key, names in taken.items() if key[0] == 2} == {
        (2, 0): ["a"],
        (2, 1): ["a", "b"],
        (2, 2): ["c"],  # the `if`, whole
        (2, 3): ["d"],
        (2, 4): ["a", "e"],
    }
    assert answer_code(["", *WITH_CELLS], "e", ("a",)).origins == ((2, 0), (2, 1), (2, 2), (2, 3))


def test_magics_over_magics_are_read_through_to_a_bounded_depth():
    """%%time over %%capture reads as the code they ran; a cell of more nested magics than MAGIC_DEPTH is its one
    call (read through level by level, 30,000 of them took the grader 17 s: each level transforms the rest)."""
    from IPython.core.inputtransformer2 import TransformerManager

    from autograder.engine.probes.rerun import MAGIC_DEPTH, parsed

    def cell(depth):
        return TransformerManager().transform_cell("%%time\n" * depth + "x = 1\ndC = x\n")

    assert [type(s).__name__ for s in parsed(cell(MAGIC_DEPTH))] == ["Assign", "Assign"]
    deep = parsed(cell(MAGIC_DEPTH + 1))
    assert len(deep) == 1 and "run_cell_magic" in ast.unparse(deep[0])


@pytest.mark.parametrize(
    "cells, answer, pins, since, origins",
    [  # (each cell's statements are looked up once, ``_rebound_in``: the history's positions are worked out per probe)
        (["dhpreact *= bngain\ndhprebn = dhpreact * 2"], "dhprebn", ["dhpreact"], 0, ((1, 0), (1, 1))),
        (
            ["", "logits = h @ W2", "", "dlogits = probs.clone()\ndlogits[0] -= 1", ""],
            "dlogits",
            ["probs"],
            0,
            ((4, 0), (4, 1)),
        ),
        (["h = x", "dh = dlogits @ W2.T\nh = h * 2"], "dh", ["h", "dlogits"], 0, ((2, 0),)),
        (["dx = 1", "dy = dx * 2"], "dy", ["dx"], 5, ()),  # (``since`` after the history: nothing re-run)
        (["dx = 1", "dy = dx * 2"], "dy", ["dx"], -1, ((2, 0),)),
        (["dx = 1\ndx = dx * 3", "", "dy = dx * 2\ndx += 1\ndy = dy + dx"], "dy", ["dx"], 2, ((3, 0), (3, 1), (3, 2))),
    ],
)
def test_the_answer_code_s_place_in_a_history_with_empty_cells(cells, answer, pins, since, origins):
    cells = ["", *cells]
    code = answer_code(cells, answer, pins, since)
    assert code.origins == origins
    assert [ast.unparse(s) for s in code.statements] == [
        ast.unparse(ast.parse(cells[cell]).body[k]) for cell, k in origins
    ]


@pytest.mark.parametrize(
    "as_set_up",
    [
        5,
        {"rebound": {"x": 5}},
        {"rebound": {"x": {"line": 3, "answers": []}}},
        {"rebound": {"x": {"line": "x = hln", "answers": "dhln"}}},
        {"rebound": {"x y": {"line": "x = hln", "answers": []}}},
        {"rebound": {"x": {"line": "x = hln", "answers": ["<b>"]}}},
        {"rebound": {"x": {"line": "x = hln", "answers": []}}, "status": "ran", "result": {"kind": "tensor"}},
    ],
)
def test_a_forged_run_as_set_up_keeps_no_point(as_set_up):
    """What the kernel reports of its run on the forward pass's tensors is the student's to forge: malformed, it is
    nothing; well formed, it still needs a result that follows the rule on the grader's own pins."""
    step = STEP_BY_NAME["h"]
    forward = {name: torch.randn(32, 64) for name in ("h", "hpreact")} | {
        "W2": torch.randn(64, 27),
        "logits": torch.randn(32, 27),
    }
    grads = {"h": torch.randn(32, 64), "logits": torch.randn(32, 27)}
    probe = {"answer": "dh", "pins": {"dlogits": {"zero": False, "shape": [32, 27]}}, "status": "could_not_run"}
    report = Report({PROBE: {**probe, "pins_read": ["dlogits"], "as_set_up": as_set_up}})
    verdict = Verdict("dh", 0, step.points)
    assert kept_as_set_up(verdict, step, report, forward, grads, 1, "dh") is False
    assert verdict.points == 0 and not verdict.wrong_in_notebook


def test_a_text_the_kernel_reports_makes_no_huge_line_in_the_feedback():
    """A probe's reason, or the type of an answer that is no tensor, is the student's to forge: a graded cell's report
    is held within the cell's budget alone, and a reason of a megabyte made a verdict of a megabyte in each graded cell,
    past the notebook's own budget. Each line the student reads is cut (``verdict.LINE_CHARS``); the points stand."""
    huge = "R" * 1_000_000
    probe = {"answer": "db2", "pins": {"dlogits": {}}, "status": "failed", "reason": huge}
    outcome = judge_rule(STEP_BY_NAME["b2"], Report({PROBE: probe}), {"logits": torch.randn(32, 27)}, 1)
    assert outcome.verdict == "inconclusive"
    for verdict in (
        Verdict("db2", 1, 1, [outcome.line]),
        Verdict("db2", 0, 1, [not_a_tensor("db2", {"kind": "other", "type": huge})]),
    ):
        lines = verdict.text().splitlines()
        assert max(map(len, lines)) == LINE_CHARS and lines[1].endswith("R…") and len(lines) == 2


def _outputs_of_two_probes() -> tuple:
    """In a forked child: what two probes in a row print, display and show, and what a cell after them displays."""
    import sys

    from IPython.display import display

    shell = InteractiveShell.instance(config=Config(HistoryManager={"hist_file": ":memory:"}))
    publisher, hook = shell.display_pub, sys.displayhook
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        for k in range(2):
            with probe_runner.apart_from_the_kernel():
                print(f"printed {k}")
                print(f"warned {k}", file=sys.stderr)
                display({"text/plain": f"displayed {k}"}, raw=True)
                sys.displayhook(f"shown {k}")
        back = shell.display_pub is publisher and sys.displayhook is hook
        shell.run_cell("display('after')")
    return out.getvalue(), err.getvalue(), back, [o for p in probe_runner._publishers for o in p.outputs]


def test_a_probe_shows_nothing_and_gives_the_kernel_its_outputs_back():
    """What the student's code prints, writes to stderr, displays or shows in a probe reaches no output of the notebook,
    probe after probe (one capturing display publisher serves them all, emptied after each); the cell after them shows
    its own."""
    out, err, back, kept = in_a_fork(_outputs_of_two_probes)
    assert out == "'after'\n" and err == "" and back and kept == []

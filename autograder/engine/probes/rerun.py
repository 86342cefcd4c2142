"""The kernel's side of a rule probe: which statements of the student's cells make an answer, the random inputs they
are re-run on, and the namespace they run in."""

import ast
import zlib
from dataclasses import dataclass

import torch

from ..backward_rules import STEPS
from ..fused_rules import FUSED_STEPS
from ..operators import OPERATOR_STEPS
from .pins import kept_entries
from .snapshots import UNBOUND, Uncopied, evaluated_names, given_back
from .statements import (  # noqa: F401 (read as rerun's by the kernel's modules and the notebooks' helper cell)
    MAGIC_DEPTH,
    PARSES_KEPT,
    RUN_IN_PLACE,
    _all_rebind,
    _as_ipython_runs_it,
    _latest,
    _may_change,
    _may_rebind,
    _reads,
    _rebinds,
    _rebound_in,
    _without_pins,
    flattened,
    parsed,
    writes,
)

# the gradients that are zero whatever the batch (dlogit_maxes, db1): a student's exact zeros there carry forward into
# the probe as a whole; any other gradient of zeros is pinned at random, else code giving zeros follows every rule
WHOLLY_ZERO = frozenset("d" + step.name for step in STEPS if step.zero)
TIME_LIMIT = 5.0  # seconds a probe may run in the kernel; the answer code of one step takes milliseconds
# the names of gradients in every notebook (a fused step's upstream gradient too: Exercise 3's dhpreact_biased)
GRADIENTS = frozenset("d" + n for s in STEPS + FUSED_STEPS + OPERATOR_STEPS for n in [s.name, *s.upstream])


class NoAnswerCode(Exception):
    """The probe cannot re-run the answer's code (why, in words): none assigns it, or what it read is unknown."""


@dataclass(frozen=True)
class AnswerCode:
    """The statements a probe re-runs, in order, and what they read from the kernel's namespace."""

    statements: tuple  # ast statements
    reads: frozenset  # names read before the statements write them (their values: from the snapshots)
    pins_read: frozenset  # pinned inputs the statements read
    further_up: tuple  # gradients read that were not computed from the pins (the probe is then inconclusive)
    origins: tuple  # (cell, statement) of each statement: its place in the history, the key of its snapshot


def answer_code(cells, answer: str, pins, since: int = 0) -> AnswerCode:
    """The code of ``answer`` in the cells the kernel ran (in order), with ``pins`` standing for those names.

    It starts at the latest fresh assignment of the answer, or earlier at the latest of a pinned gradient (what is
    computed from a pinned gradient comes after it), or at the cell after the one that computes a pinned forward
    value (the chunked forward pass that computes it is not the student's answer: it stays as it ran), never before
    the cell ``since`` (the course's cells before it, which ran before grading started, stay as they ran). A statement
    that writes a pin is the pin's own computation, which the pin stands for, and is left out; but one in the answer's
    cell, before the answer, that changes a pin from the value it came with into the cell (``dhpreact *= bngain``,
    ``dhdrop = dhdrop * mask``) is the answer's code: it runs on the pin.
    """
    pins, parts = set(pins), [parsed(source) for source in cells]
    firsts = [0]  # the position of each cell's first statement among all the history's, and after the last
    for part in parts:
        firsts.append(firsts[-1] + len(part))
    last = _latest(cells, answer)
    if last is None:
        raise NoAnswerCode(f"no statement `{answer} = ...` ran before this cell")
    # from the latest statement that surely rebinds the answer: one that may (`if debug: dlogits = None`) needs it
    surely = (
        firsts[i] + k
        for i in reversed(range(len(cells)))
        for k in reversed(_rebound_in(cells[i]).get(answer, ()))
        if answer in _rebinds(parts[i][k])
    )
    start = next(surely, firsts[last[0]] + last[1])
    for pin in pins:
        bound = _latest(cells, pin)
        if bound and pin in GRADIENTS:
            start = min(start, firsts[bound[0]] + bound[1])
        elif bound and firsts[bound[0] + 1] < firsts[-1]:
            start = min(start, firsts[bound[0] + 1])
    start = max(start, firsts[min(max(since, 0), len(cells))])
    changes, computed_here = {}, set()  # the answer's own changes of a pin from the value it was handed over with
    for k, s in enumerate(parts[last[0]][: last[1]]):
        written = writes(s) & pins
        if not written:
            continue
        if written & _reads(s) and not written & computed_here:
            changes[k] = written
        else:  # the pin computed in this cell (``dlogprobs = zeros...; dlogprobs[...] = ...``): the pin stands for it
            computed_here |= written
    window = [(parts[last[0]][k], (last[0], k)) for k in sorted(changes) if firsts[last[0]] + k < start]
    changed = [changes[k] for k in sorted(changes) if firsts[last[0]] + k < start]
    for i in range(len(cells)):
        for k in range(max(start - firsts[i], 0), len(parts[i])):
            mine = changes.get(k) if i == last[0] else None
            if mine is not None or not writes(parts[i][k]) & pins:
                window.append((parts[i][k], (i, k)))
                changed.append(mine or set())
            elif (others := _without_pins(parts[i][k], pins)) is not None:  # a pin's part beside the answer's
                window.append((others, (i, k)))
                changed.append(set())

    derived, made = set(pins), []  # names computed from the pins; those the window wrote before each statement
    for s, _ in window:
        made.append(frozenset().union(made[-1], writes(window[len(made) - 1][0])) if made else frozenset())
        if _reads(s) & derived:
            derived |= writes(s)
        else:
            derived -= _rebinds(s)

    needed, kept, pins_read, further_up = {answer}, [], set(), set()
    for position in reversed(range(len(window))):
        s, origin = window[position]
        # a call that may change an object the answer's code made and reads (`bn = nn.BatchNorm1d(..)`, `bn.eval()`)
        if not (writes(s) & needed or _may_change(s) & needed & made[position]):
            continue
        kept.append((s, origin))
        needed -= _rebinds(s) | changed[position]
        for name in _reads(s):
            if name in pins and any(name in c for c in changed[:position]):
                needed.add(name)  # the pin as the answer's own code changed it before this statement
            elif name in pins:
                pins_read.add(name)
            elif name in GRADIENTS and name != answer and name not in derived:
                further_up.add(name)
            else:
                needed.add(name)
    kept.reverse()
    return AnswerCode(
        tuple(s for s, _ in kept),
        frozenset(needed),
        frozenset(pins_read),
        tuple(sorted(further_up)),
        tuple(origin for _, origin in kept),
    )


def calls_function(code: AnswerCode, function: str) -> bool:
    """Whether ``code``'s statements call ``function`` or its in-place twin: ``x.index_add_(..)``, ``index_add(..)``."""
    for node in (sub for statement in code.statements for sub in ast.walk(statement)):
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in (function, function + "_"):
                return True
    return False


def pin_value(seed: int, answer: str, name: str, shape) -> torch.Tensor:
    """The random tensor that stands for ``name`` in the probe of ``answer``: the same in the kernel and the grader.
    Gradients are standard normal; a forward input is five times wider, so that what it gives is far from what the
    notebook's own gives (the loss of such logits is about 8, a real one about 3.3: a copied loss is far off)."""
    generator = torch.Generator().manual_seed(zlib.crc32(f"{seed}/{answer}/{name}".encode()))
    value = torch.randn(tuple(shape), generator=generator)
    return value if name in GRADIENTS else 5 * value


def pinned_inputs(namespace: dict, seed: int, answer: str, names, shapes: dict, own_shapes: bool = True) -> dict:
    """name -> the random tensor that stands for it in the kernel, of the shape ``shapes`` gives (d<x>: x's), zero where
    the student's own value is (``kept_entries``); ``own_shapes``: in their shape if only size-1 dimensions differ."""
    pins = {}
    for name in names:
        shape = shapes.get(name[1:] if name in GRADIENTS else name)
        own = namespace.get(name)
        if shape is None:
            raise NoAnswerCode(f"{name} has no tensor to take its shape from")
        zero = isinstance(own, torch.Tensor) and own.is_floating_point() and own.numel() > 0 and not own.any()
        if zero and name not in WHOLLY_ZERO:  # zeros where the gradient is not: its pin stays random (``pinned``)
            zero, own = False, None
        pins[name] = torch.zeros(shape) if zero else pin_value(seed, answer, name, shape) * kept_entries(own, shape)
        if own_shapes and name in GRADIENTS and isinstance(own, torch.Tensor) and own.numel() == pins[name].numel():
            pins[name] = pins[name].reshape(own.shape)
    return pins


def replay(code: AnswerCode, snapshots: dict, pins, cells=None) -> list:
    """For each statement of ``code``, what to put back in the probe's namespace right before it runs: what it read
    when it ran (``snapshots``: origin -> snapshot), except the pins and what the statements before it wrote.

    A statement its cell never reached (an earlier one raised) reads what the namespace holds now, as it would have;
    with ``cells`` (the history ``code`` was read from), only when the cell stopped in the answer's own code or in a
    statement that reads or writes a gradient (a pin, or another answer of a cell that holds several): a typo of its
    own (``W = W3``) stops the answer as it would with every gradient right."""
    own, plan = set(pins), []
    for statement, origin in zip(code.statements, code.origins):
        if not writes(statement):  # a call that changes what it calls (``_may_change``) takes no snapshot
            if evaluated_names(statement) - own:
                raise NoAnswerCode(f"it did not see what `{_quoted(statement)}` read when it ran")
            plan.append({})
            continue
        seen = snapshots.get(origin)
        started = [k for k in range(origin[1]) if (origin[0], k) in snapshots]  # the last one ran, or raised
        if seen is None and started:
            if cells is not None and evaluated_names(statement):
                stopper = _where_it_stopped(parsed(cells[origin[0]]), started[-1], origin, code.origins, pins)
                if stopper is not None:
                    raise NoAnswerCode(f"its cell stopped at `{_quoted(stopper)}`, before `{_quoted(statement)}`")
            seen = {}  # its cell raised before it ran: it reads what the namespace holds now, as it would have
        if seen is None and evaluated_names(statement):
            raise NoAnswerCode(f"it did not see what `{_quoted(statement)}` read when it ran")
        wanted = {name: value for name, value in (seen or {}).items() if name not in own}
        uncopied = sorted((name, value.what) for name, value in wanted.items() if isinstance(value, Uncopied))
        if uncopied:
            name, what = uncopied[0]
            raise NoAnswerCode(f"`{_quoted(statement)}` read {name}, {what}, which it cannot copy as it was then")
        plan.append(wanted)
        own |= writes(statement)
    return plan


def _where_it_stopped(statements: tuple, last: int, origin: tuple, answer: tuple, pins) -> ast.stmt | None:
    """A statement of the cell that may have stopped it before ``origin`` and touches no gradient (a typo of its own),
    or None. It stopped at the statement ``last`` (the last with a snapshot), or after it, at one that takes none
    (it writes no name: ``print(count_sum)``); one that would have taken a snapshot was never reached."""
    may_have = [last] + [
        k for k in range(last + 1, origin[1]) if not (evaluated_names(statements[k]) and writes(statements[k]))
    ]
    touched = GRADIENTS | set(pins)
    for k in may_have:
        if (origin[0], k) not in answer and not (_reads(statements[k]) | writes(statements[k])) & touched:
            return statements[k]
    return None


def _quoted(statement: ast.stmt) -> str:
    text = ast.unparse(statement).splitlines()[0]
    return text if len(text) <= 60 else text[:57] + "..."


def probe_namespace(namespace: dict, pins: dict) -> dict:
    """A throwaway copy of the kernel's namespace, with the pins in place (``put_back`` fills in the rest)."""
    return {**namespace, **pins}


def put_back(apart: dict, values: dict) -> None:
    """A statement's snapshot back in the probe's namespace: copies (the code may change them), the notebook's own
    functions reading ``apart``, names that were unbound unbound again."""
    for name, value in values.items():
        if value is UNBOUND:
            apart.pop(name, None)
        else:
            apart[name] = given_back(value, apart)

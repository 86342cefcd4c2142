"""What went wrong while a notebook ran in the sandbox, sorted into the problem kinds of ``common.problems``.

GradingExecute records each in the notebook's resources (``record_incident``): class grading's worker reads them from
there for problems.json, and nbgrader's log shows them (``GRADING PROBLEM <student>/<notebook>: <kind>: ...``).
"""

import json
from dataclasses import dataclass

from ..common.problems import Problem


@dataclass(frozen=True)
class Limits:
    """The limits a notebook ran under, as its incidents quote them."""

    notebook_seconds: int
    cell_seconds: int
    output_bytes: int
    message_bytes: int = 0
    notebook_output_bytes: int = 0
    messages_together_bytes: int = 0  # past it, the relay dropped every large message


FIRST_LINE_CHARS = 60  # of a cell without a grade_id, shown to name it
PER_KIND = 10  # a notebook's incidents of one kind named cell by cell; the rest counted (a student may add cells)


def cell_name(nb, index: int) -> str:
    """'cell 12 (In [9], test_dprobs)', 'cell 14 (In [11], "for i in range(10**9):")': how every problem names a
    cell. Its place among all the notebook's cells (markdown ones too) tells it apart; the ``In [n]`` of its run is
    what the feedback page and the autograded notebook show beside it, its grade_id what the Formgrader shows, and the
    first line of a cell without one (a student's own), quoted, what a student finds in their notebook."""
    cell = nb.cells[index]
    shown, count = [], cell.get("execution_count")
    if cell.get("cell_type") == "code" and isinstance(count, int) and not isinstance(count, bool):
        shown.append(f"In [{count}]")
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
    first = next((line.strip() for line in str(cell.get("source", "")).splitlines() if line.strip()), "")
    if grade_id:
        shown.append(str(grade_id))
    elif first:
        # quoted, in its own letters (a Russian comment read \u041c\u043e\u0439); controls are escaped where shown
        shown.append(
            json.dumps(first[:FIRST_LINE_CHARS] + ("..." if len(first) > FIRST_LINE_CHARS else ""), ensure_ascii=False)
        )
    return f"cell {index + 1}" + (f" ({', '.join(shown)})" if shown else "")


def timed_out_cells(nb) -> list:
    """The indices of the cells interrupted at their timeout (nbclient leaves a CellTimeoutError in them)."""
    return [
        i
        for i, cell in enumerate(nb.cells)
        if any(
            o.get("output_type") == "error" and o.get("ename") == "CellTimeoutError" for o in cell.get("outputs", [])
        )
    ]


def record_incident(resources, kind: str, detail: str, log) -> None:
    """Note a problem of the notebook being graded: in its resources, for class grading's worker, and in the log."""
    nbgrader = resources.get("nbgrader", {})
    problem = Problem(nbgrader.get("student"), nbgrader.get("notebook"), kind, detail)
    resources.setdefault("backprop_ninja", {}).setdefault("incidents", []).append(problem)
    log.warning("GRADING PROBLEM %s/%s: %s: %s", problem.student, problem.notebook, kind, detail)


def left_behind_detail(left: dict) -> str:
    """The instructor's words for what a kernel left in its folder (the kernel parent's summary, whose names are the
    kernel's own: shown quoted and cut short)."""
    counts = left.get("counts") if isinstance(left.get("counts"), dict) else {}
    counts = {str(kind): int(n) for kind, n in counts.items() if str(kind).isalpha()}
    parts = [f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in sorted(counts.items())]
    changed = int(left.get("changed") or 0)
    if changed:
        parts.append(f"{changed} changed cop{'ies' if changed != 1 else 'y'} of its files")
    unread = int(left.get("unread") or 0)
    if unread:
        parts.append(f"{unread} folder{'s' if unread != 1 else ''} that could not be read")
    what = ", ".join(parts) or "entries"
    if left.get("capped"):
        what = f"so many entries that only {sum(counts.values())} were looked at ({what})"
    size = int(left.get("bytes") or 0)
    size = f"{size / 2**20:.1f} MB" if size >= 2**20 else f"{size // 1024} KB"
    examples = [json.dumps(str(e)[:200]) for e in (left.get("examples") or [])[:5]]
    links = int(left.get("hard_links") or 0)
    return (
        f"the kernel left {what} ({size}) in its folder"
        + (f", {links} of them hard links" if links else "")
        + (f", e.g. {', '.join(examples)}" if examples else "")
        + ": it worked in a copy inside its sandbox, so they were thrown away with it, and nothing of them was read"
    )


def left_out_detail(left_out: dict) -> str:
    """The instructor's words for the student's files that the kernel parent left out of the kernel's folder."""
    files, size = int(left_out.get("files") or 0), int(left_out.get("bytes") or 0)
    examples = [json.dumps(str(e)[:200]) for e in (left_out.get("examples") or [])[:5]]
    return (
        f"{files} file{'s' if files != 1 else ''} of the student's folder ({size / 2**20:.1f} MB) did not fit in "
        "the kernel's working folder or could not be read"
        + (f" ({', '.join(examples)}, the largest first)" if examples else "")
        + (
            ", and the folder holds more entries than are copied: the rest were not looked at"
            if left_out.get("capped")
            else ""
        )
        + "; the notebook ran without them"
    )


def notebook_incidents(nb, state: dict, limits: Limits, truncated, left_behind, oversized=None) -> list:
    """(kind, detail) of every incident of the executed notebook ``nb``: ``state`` is GradingExecute's record of
    the run (where the kernel died or the time ran out), ``truncated`` the cells whose output was cut (-> the budget
    they ran over, "cell" or "notebook"), ``left_behind`` the kernel parent's summary of what the kernel left in its
    folder (and of the student's files it ``left_out`` of it), ``oversized`` the sizes of the messages over the limit
    that the relay dropped, by cell."""
    found = []
    where = lambda i: cell_name(nb, i)
    if state["kernel_died_in"] is not None:
        status = state.get("exit_status")
        found.append(
            (
                "kernel_died",
                f"the kernel died in {where(state['kernel_died_in'])}"
                + (f" (exit status {status})" if status is not None else "")
                + "; the cells after it scored 0",
            )
        )
    stopped_in = state["notebook_time_limit_in"]
    if stopped_in is not None:  # one cell that could not be interrupted, usually
        found.append(
            (
                "notebook_time_limit",
                f"the notebook ran over its {limits.notebook_seconds} s limit in {where(stopped_in)} and was "
                "stopped; the cells after it scored 0",
            )
        )
    found += [  # the cell the notebook's limit stopped was cut short by that limit, not its own
        (
            "cell_timeout",
            f"{where(i)} ran over the {limits.cell_seconds} s cell limit and was interrupted; the notebook went on",
        )
        for i in timed_out_cells(nb)
        if i != stopped_in
    ]
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") != "error":
                continue
            ename, evalue = out.get("ename", ""), str(out.get("evalue", ""))
            if ename in ("MemoryError", "OutOfMemoryError") or (
                ename == "RuntimeError"
                and any(w in evalue for w in ("can't allocate memory", "not enough memory", "DefaultCPUAllocator"))
            ):
                found.append(("memory_limit", f"{where(i)} ran out of memory ({ename}); the notebook went on"))
            elif ename == "BlockingIOError" or "Resource temporarily unavailable" in evalue:
                found.append(("process_limit", f"{where(i)} hit the process limit ({ename}: {evalue[:80]})"))
    if left_behind and (left_behind.get("counts") or left_behind.get("changed") or left_behind.get("unread")):
        found.append(("kernel_files_discarded", left_behind_detail(left_behind)))
    if left_behind and isinstance(left_behind.get("left_out"), dict):
        found.append(("files_left_out", left_out_detail(left_behind["left_out"])))
    for i in sorted(truncated):
        if truncated[i] == "notebook":
            words = f"{where(i)} printed after the notebook's output passed {limits.notebook_output_bytes / 2**20:g} MB"
        else:
            words = f"{where(i)} printed more than {limits.output_bytes / 2**20:g} MB"
        found.append(("output_limit", f"{words}; the rest of its output was dropped"))
    for i, sizes in sorted((oversized or {}).items()):
        over = [size for size in sizes if size > limits.message_bytes]
        if over:
            found.append(
                (
                    "message_limit",
                    f"{where(i)} sent {len(over)} message{'s' if len(over) != 1 else ''} of "
                    f"{' and '.join(f'{size / 2**20:.0f} MB' for size in over[:3])}{', ...' if len(over) > 3 else ''} "
                    f"once decoded, over the {limits.message_bytes / 2**20:g} MB limit for one message: not kept; the "
                    "notebook went on",
                )
            )
        if len(over) < len(sizes):
            together, large = limits.messages_together_bytes / 2**20, len(sizes) - len(over)
            found.append(
                (
                    "message_limit",
                    f"{where(i)} sent {large} large message{'s' if large != 1 else ''} after the kernel's messages "
                    f"together passed {together:g} MB: not kept; the notebook went on",
                )
            )
    return _bounded(found)


def _bounded(found: list) -> list:
    """``found`` with at most ``PER_KIND`` incidents of a kind, and one that counts the rest: 3,000 cells that each
    raised MemoryError were 3,000 problems (problems.json 750 KB, the class report 620 KB for one student)."""
    kept, counts = [], {}
    for kind, detail in found:
        counts[kind] = counts.get(kind, 0) + 1
        if counts[kind] <= PER_KIND:
            kept.append((kind, detail))
    return kept + [(k, f"and {n - PER_KIND} more cells with this problem") for k, n in counts.items() if n > PER_KIND]

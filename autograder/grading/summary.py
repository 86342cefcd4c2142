"""What one ``grade`` run did, as the command prints it at the end."""

import statistics
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ..common.problems import KINDS, rank
from ..common.shown import for_terminal

KIND_WIDTH = max(map(len, KINDS))


@dataclass
class Summary:
    """One run of ``backprop-ninja grade``."""

    students: list
    """Every student in submitted/."""
    graded: list
    """The students (re)graded in this run."""
    unchanged: list
    """The students whose files and course had not changed since their last grading."""
    problems: list
    """Every ``Problem`` of the class (collecting, staging, grading), in problems.json's order."""
    grades_csv: Path
    problems_json: Path
    history_csv: Path
    """grade_history.csv: what every run changed, per student."""
    report: Path | None
    """The class report, when it could be written."""
    seconds: float
    hosts: list = field(default_factory=list)
    """On a Dask cluster: the ``cluster.HostTimes`` of every host that graded a student in this run."""


def print_summary(summary: Summary, file=None, shown: int = 30) -> None:
    """The summary, to ``file`` (None: sys.stdout as it is now, never as it was when this module was imported)."""
    s, file = summary, file or sys.stdout
    idle = len(s.students) - len(s.graded) - len(s.unchanged)
    print(
        f"{len(s.students)} students: {len(s.graded)} (re)graded, {len(s.unchanged)} unchanged since the last run"
        + (f", {idle} with nothing gradable" if idle else "")
        + f", in {s.seconds:.0f} s",
        file=file,
    )
    for line in host_lines(s.hosts):
        print(line, file=file)
    if s.problems:
        counts = {}
        for p in sorted(s.problems, key=lambda p: rank(p.kind)):
            counts[p.kind] = counts.get(p.kind, 0) + 1
        print(
            f"{len(s.problems)} problem{'s' if len(s.problems) != 1 else ''}: "
            + ", ".join(f"{n} {kind}" for kind, n in counts.items()),
            file=file,
        )
        # all in problems.json's order; when they do not fit, the most serious (a kernel that died, not the 30th
        # missing_notebook of a class that skipped an exercise), each kind in that order
        listed = s.problems if len(s.problems) <= shown else sorted(s.problems, key=lambda p: rank(p.kind))[:shown]
        for p in listed:  # a student's id, file names, a grade_id: the submission's words, shown literally
            student, notebook = for_terminal(p.student, 60), for_terminal(p.notebook or "-", 60)
            columns = padded(student, 20), padded(notebook, 28), padded(p.kind, KIND_WIDTH)
            print("  " + " ".join(columns), for_terminal(p.detail), file=file)
        if len(s.problems) > shown:
            print(f"  ... and {len(s.problems) - shown} more, less serious (all in {s.problems_json})", file=file)
    else:
        print("no problems", file=file)
    print(f"grades:   {s.grades_csv}\nproblems: {s.problems_json}\nhistory:  {s.history_csv}", file=file)
    if s.report:
        print(f"report:   {s.report}", file=file)


def padded(text: str, width: int) -> str:
    """``text`` and spaces up to ``width`` columns of a terminal: a Chinese or Japanese character takes two, a combining
    accent none (Unicode's East Asian Width)."""
    columns = sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    return text + " " * max(0, width - columns)


def host_lines(hosts: list) -> list:
    """What each host of the cluster graded, one line each; a slow host says so, and by how much."""
    if not hosts:
        return []
    lines = [f"graded on {len(hosts)} host{'s' if len(hosts) != 1 else ''}:"]
    for h in hosts:
        n, median = len(h.seconds), statistics.median(h.seconds)
        slow = f"  SLOW: {h.slow:g} times the other hosts' median" if h.slow else ""
        lines.append(f"  {h.host:32s} {n:4d} student{'s' if n != 1 else ' '}, median {median:6.1f} s{slow}")
    return lines

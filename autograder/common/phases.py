"""Where a grading worker's time goes: wall-clock seconds per phase of each notebook (``grade --profile``).

The phases, in the order a notebook meets them: kernel start, setup cells, other cells, kernel shutdown (in the
kernel), then reference and judging (``JudgeAnswers``, in the grader); beside them the kernel's CPU. The worker adds
nbgrader's autograde, feedback and gradebook SQL per student, and sends it all with the student's result.
"""

import contextlib
import os
import time
from collections import defaultdict

KERNEL_START, SETUP_CELLS, OTHER_CELLS, KERNEL_SHUTDOWN = (
    "kernel start",
    "setup cells",
    "other cells",
    "kernel shutdown",
)
REFERENCE, JUDGING = "reference", "judging"
NOTEBOOK_PHASES = (KERNEL_START, SETUP_CELLS, OTHER_CELLS, KERNEL_SHUTDOWN, REFERENCE, JUDGING)
KERNEL_CPU = "kernel CPU"


def descendants(pid: int) -> list:
    """The processes that ``pid`` started and that have not ended, their children, and so on, from /proc's lists of
    each thread's children (rather than every process of the machine)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            threads = os.listdir(f"/proc/{parent}/task")
        except OSError:  # ended meanwhile
            continue
        for thread in threads:
            try:
                with open(f"/proc/{parent}/task/{thread}/children") as f:
                    children = [int(child) for child in f.read().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def process_tree_cpu(pid: int) -> float:
    """CPU seconds of process ``pid`` and all its descendants (those reaped included), from /proc."""
    total = 0
    for process in [pid, *descendants(pid)]:
        try:
            with open(f"/proc/{process}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        except (OSError, ValueError, IndexError):  # gone meanwhile
            pass
    return total / os.sysconf("SC_CLK_TCK")


class PhaseClock:
    """Seconds spent in each phase, per notebook, since the worker last took them."""

    def __init__(self):
        self._seconds = defaultdict(lambda: defaultdict(float))
        self._nested = []  # seconds spent in phases inside each running phase

    def add(self, notebook: str, phase: str, seconds: float) -> None:
        self._seconds[notebook][phase] += seconds

    @contextlib.contextmanager
    def phase(self, notebook: str, phase: str):
        """Time the block as ``phase``; a phase inside it counts as itself only (reference inside judging)."""
        started = time.perf_counter()
        self._nested.append(0.0)
        try:
            yield
        finally:
            spent = time.perf_counter() - started
            self.add(notebook, phase, spent - self._nested.pop())
            if self._nested:
                self._nested[-1] += spent

    def take(self) -> dict:
        """{notebook: {phase: seconds}} recorded so far; the clock starts again from nothing."""
        taken = {notebook: dict(phases) for notebook, phases in self._seconds.items()}
        self._seconds.clear()
        return taken


PHASES = PhaseClock()  # this process's: one worker grades one notebook at a time


class Stopwatch:
    """Seconds spent inside ``with`` blocks of it, the one running included."""

    def __init__(self):
        self._done, self._since = 0.0, None

    def __enter__(self):
        self._since = time.monotonic()

    def __exit__(self, *exc):
        self._done += time.monotonic() - self._since
        self._since = None

    def seconds(self) -> float:
        since = self._since
        return self._done + (time.monotonic() - since if since is not None else 0.0)


EXECUTING = Stopwatch()  # executing notebooks (GradingExecute): what a worker's watchdog leaves out

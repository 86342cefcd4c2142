"""How a grading run stops: on Ctrl-C, and with the error that says why (the local pool's and the cluster's)."""

import shutil
import signal
import threading
from pathlib import Path

from ..common.errors import GradingError


class CtrlC:
    """Ctrl-C while grading, raised as KeyboardInterrupt where the waiting loop calls ``check()``.

    Python raises KeyboardInterrupt wherever the main thread happens to be: inside a garbage collector's
    callback it is printed and dropped, and grading would go on. A second Ctrl-C is raised at once.
    """

    def __enter__(self):
        self.pressed, self.previous = 0, None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._press)
        return self

    def _press(self, *_) -> None:
        self.pressed += 1
        if self.pressed > 1:
            raise KeyboardInterrupt

    def check(self) -> None:
        if self.pressed:
            raise KeyboardInterrupt

    def __exit__(self, *_) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def grading_stopped(reason: str, logs: str) -> GradingError:
    """The error that stops a run: why, what to do about a sandbox that cannot start, where to read more."""
    return GradingError(
        f"grading stopped: {reason}\n"
        + (
            "No student was graded outside the sandbox. Fix the sandbox (bubblewrap, user "
            "namespaces) or pass --unsandboxed to grade notebooks you trust without it.\n"
            if "sandbox" in reason
            else ""
        )
        + f"{logs}; the students graded so far are in the gradebook, and a new run goes on from there."
    )


def keep_logs(grading: Path) -> Path:
    """At the end of a run, its workers' logs kept in ``.grading/logs/`` (the last run's that graded anyone), their
    gradebook copies dropped: nbgrader's warnings, such as an incident's "GRADING PROBLEM" line, stay
    readable (docs/instructors.md, "Reading the autograde log")."""
    workers, logs = grading / "workers", grading / "logs"
    if workers.is_dir():  # (a run that graded nobody, or on a cluster, leaves the logs there were)
        shutil.rmtree(logs, ignore_errors=True)
        for copy in workers.glob("gradebook-*"):
            copy.unlink(missing_ok=True)
        workers.rename(logs)
    return logs

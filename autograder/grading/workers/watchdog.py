"""A grading worker's watchdog: the grader's own work for one student has a time limit of its own."""

import threading
import time

from ...common.phases import EXECUTING


class Watchdog:
    """Calls ``expired(student)`` (which answers for the student and ends the worker) when the grader's own work for
    one student runs over ``seconds``: all but executing its notebooks (``EXECUTING``), which have limits of their
    own (a cell's, a notebook's)."""

    def __init__(self, seconds: float, expired):
        self.seconds, self.expired = seconds, expired
        self.student = None
        threading.Thread(target=self._watch, daemon=True).start()

    def start(self, student: str) -> None:
        self.started, self.executed, self.student = time.monotonic(), EXECUTING.seconds(), student

    def done(self) -> None:
        self.student = None

    def used(self) -> float:
        """The grader's own seconds for the current student so far."""
        return time.monotonic() - self.started - (EXECUTING.seconds() - self.executed)

    def _watch(self) -> None:
        while True:
            time.sleep(min(1.0, self.seconds / 4))
            student = self.student
            if student is not None and self.used() > self.seconds:
                self.student = None
                self.expired(student)

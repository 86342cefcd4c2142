"""A grading worker's watchdog: the grader's own work for one student has a time limit of its own."""

import os
import threading
import time


class Watchdog:
    """Stops the worker when the grader's own work for one student (all but executing notebooks, which have their
    own limits) runs over ``seconds``: ``expired(student)`` answers for the student, then the process ends."""

    def __init__(self, seconds: float, expired):
        self.seconds, self.expired = seconds, expired
        self.student = None
        threading.Thread(target=self._watch, daemon=True).start()

    def start(self, student: str) -> None:
        from ...preprocessors.grading_execute import GradingExecute

        self.started, self.executed, self.student = time.monotonic(), GradingExecute.executing_seconds, student

    def done(self) -> None:
        self.student = None

    def used(self) -> float:
        """The grader's own seconds for the current student so far."""
        from ...preprocessors.grading_execute import GradingExecute

        now, since = time.monotonic(), GradingExecute.executing_since
        executing = GradingExecute.executing_seconds - self.executed + (now - since if since else 0)
        return now - self.started - executing

    def _watch(self) -> None:
        while True:
            time.sleep(min(1.0, self.seconds / 4))
            student = self.student
            if student is not None and self.used() > self.seconds:
                self.expired(student)
                os._exit(1)

"""The seconds a grading worker spends in the gradebook's SQL, for ``grade --profile``."""

import time


class DatabaseClock:
    """Seconds spent in the gradebook's SQL (statements, and commits with their flush), from SQLAlchemy's events."""

    def __init__(self):
        self.seconds = 0.0
        self._committing = None
        self._statement = None

    def listen(self) -> None:
        from sqlalchemy import event
        from sqlalchemy.engine import Engine
        from sqlalchemy.orm import Session

        event.listen(Engine, "before_cursor_execute", self._before_statement)
        event.listen(Engine, "after_cursor_execute", self._after_statement)
        event.listen(Session, "before_commit", self._before_commit)
        event.listen(Session, "after_commit", self._after_commit)
        event.listen(Session, "after_rollback", self._after_commit)

    def _before_statement(self, *args):
        self._statement = time.perf_counter()

    def _after_statement(self, *args):
        if self._statement is not None and self._committing is None:  # a commit's statements count with it
            self.seconds += time.perf_counter() - self._statement
        self._statement = None

    def _before_commit(self, session):
        self._committing = time.perf_counter()

    def _after_commit(self, session):
        if self._committing is not None:
            self.seconds += time.perf_counter() - self._committing
        self._committing = None

    def take(self) -> float:
        taken, self.seconds = self.seconds, 0.0
        return taken

"""One worker of ``backprop-ninja grade``: nbgrader's own autograde, one student at a time.

It loads the course's nbgrader_config.py as ``nbgrader autograde`` does, reads student ids on stdin and answers
each with a ``WorkerResult`` as a JSON line on stdout (after ``READY``); everything else goes to stderr. It exits
with its parent (docs/design/class-grading.md, "A worker").
"""

import gc
import json
import logging
import os
import re
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field

from ...common.problems import Problem
from ...common.shown import for_terminal
from ...common.tools import start_up
from ..results.gradebook import GradedSubmission, read_submission
from .watchdog import Watchdog

READY = {"ready": True}
EXCEPTION_LINE = re.compile(r"^\s*[\w.]*(Error|Exception|Exit|Interrupt): ")  # a traceback's last line
GRADER_SECONDS = 120  # default of the grader's own time per student, kernels left out (grade --grader-time-limit)
TIME_LIMIT_OPTION = "--grader-time-limit"


@dataclass
class WorkerResult:
    """What a worker answers for one student."""

    student: str
    """The student it graded (a result for anyone else means the worker is confused: it is killed)."""
    success: bool
    """nbgrader's autograde (and feedback) succeeded."""
    error: str = ""
    """nbgrader's error, its last 3000 characters, when it did not."""
    incidents: list = field(default_factory=list)
    """Every ``Problem`` the grading kernel ran into (time, memory, a dead kernel...)."""
    sandbox_error: str = ""
    """The sandbox's own message when it could not start a kernel: then nobody can be graded."""
    worker_ended: bool = False
    """The worker stopped itself after this answer (its watchdog: ``grader_time_limit``): start another."""
    seconds: float = 0.0
    """How long grading the student took."""
    grades: GradedSubmission | None = None
    """What autograde wrote into the worker's gradebook for the student (None when it wrote nothing)."""
    profile: dict = field(default_factory=dict)
    """Where that time went (``profile``): ``notebooks`` {notebook: {phase: seconds}}, and the seconds of the
    whole ``autograde``, of the ``feedback``, and of the gradebook's SQL (``database``)."""

    def to_line(self) -> str:
        grades = self.grades.to_json() if self.grades else None
        return json.dumps({**asdict(self), "incidents": [p.to_json() for p in self.incidents], "grades": grades}) + "\n"

    @classmethod
    def from_json(cls, data: dict) -> "WorkerResult":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["incidents"] = [Problem.from_json(p) for p in data.get("incidents", [])]
        known["grades"] = GradedSubmission.from_json(data["grades"]) if data.get("grades") else None
        return cls(**known)


def error_cause(error: str) -> str:
    """The line of nbgrader's error output (``WorkerResult.error``) that names the cause: the last exception other
    than nbgrader's own summary ("NbGraderException: Please see the above traceback"), else its last line."""
    lines = error.strip().splitlines() or ["?"]
    causes = [line.strip() for line in lines if EXCEPTION_LINE.match(line) and "NbGraderException" not in line]
    return (causes or lines)[-1][:300]


def cause_in_log(log) -> str:
    """ ": <the exception that ended it>" from the end of a worker's log (``error_cause``), or "" when none is named."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 65536))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    named = [line for line in tail.splitlines() if EXCEPTION_LINE.match(line)]
    return f": {for_terminal(error_cause(named[-1]))}" if named else ""


def no_exchange(app):
    """The exchange grading gives NbGraderAPI, which lists the real one when it starts: with the hub's
    JupyterHubAuthPlugin (docs/jupyterhub.md) that listing asks the hub and needs JUPYTERHUB_USER, so that ``grade``
    over ssh or from cron on the hub's machine stopped at "a grading worker did not start". Grading reads and writes
    the course folder only."""
    from nbgrader.exchange import ExchangeError, ExchangeFactory

    class Unlisted:
        def start(self):
            raise ExchangeError("grading does not use the exchange")

    class NoExchange(ExchangeFactory):
        def List(self, *args, **kwargs):
            return Unlisted()

    return NoExchange(parent=app)


def exit_with_parent() -> None:
    """End this process as soon as the process that started it is gone (a forked worker is also killed by Linux then:
    ``fork_server._child``)."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def load() -> None:
    """Import what a worker grades with: nbgrader, the sandbox, and the engine with torch (a fork server does it
    once for all the workers it forks, ``fork_server``)."""
    import nbgrader.apps.api  # noqa: F401
    import nbgrader.apps.baseapp  # noqa: F401

    from ...common import phases  # noqa: F401
    from ...engine import exercises  # noqa: F401 (JudgeAnswers' engine, torch with it: loaded before any student)
    from ...preprocessors import grading_execute  # noqa: F401
    from ...sandbox import forked_kernels, stage  # noqa: F401

    # What was loaded lives as long as the worker: out of the cycle collector's sight (each full pass over it took
    # 0.3 s), and, in a fork server, not copied into each worker by that collector's writes
    gc.freeze()


def scratch_gradebook(db_url: str) -> None:
    """The worker's gradebook is its own copy, read back after each student and made anew whenever the worker starts:
    SQLite need not wait for the disk at every one of nbgrader's commits (about 30 a notebook, 4 to 12 ms each here).
    And the worker keeps one SQLAlchemy engine per database: nbgrader's Gradebook makes a new one each time it is
    opened (five times a notebook), and SQLAlchemy caches its compiled queries in the engine, so each of
    nbgrader's queries was compiled again for every notebook. Closing a Gradebook only empties the engine's pool."""
    import sqlite3

    import nbgrader.api
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    engines, make_engine = {}, nbgrader.api.create_engine

    def one_engine(url, **options):
        key = (str(url), tuple(sorted(options.items())))
        if key not in engines:
            engines[key] = make_engine(url, **options)
        return engines[key]

    nbgrader.api.create_engine = one_engine

    path = os.path.realpath(db_url.removeprefix("sqlite:///")) if db_url.startswith("sqlite:///") else None

    def connected(connection, record) -> None:
        if path and isinstance(connection, sqlite3.Connection):
            files = [os.path.realpath(row[2]) for row in connection.execute("PRAGMA database_list") if row[2]]
            if path in files:
                connection.execute("PRAGMA synchronous = OFF")

    event.listen(Engine, "connect", connected)


def nbgrader_app(argv: list) -> tuple:
    """(assignment, feedback, grader time limit, app): nbgrader's app, configured by the course's nbgrader_config.py
    and the worker's arguments ``argv`` (nbgrader's, and ``--no-feedback``, ``--grader-time-limit=S``), as
    ``nbgrader autograde`` would be."""
    from nbgrader.apps.baseapp import NbGrader

    assignment, *options = argv
    limits = [float(a.split("=", 1)[1]) for a in options if a.startswith(f"{TIME_LIMIT_OPTION}=")]
    app = NbGrader()
    app.initialize([a for a in options if a != "--no-feedback" and not a.startswith(TIME_LIMIT_OPTION)])
    return assignment, "--no-feedback" not in options, (limits or [GRADER_SECONDS])[-1], app


def start_kernel_parent(app):
    """Start the kernel parent of the worker that nbgrader's ``app`` configures (``nbgrader_app``) without
    waiting for it to load, and return it (None: kernels get none, or it could not start; the first kernel meets
    that error again, and reports it). From the main thread: its sandbox dies with the thread that started it."""
    from ...preprocessors.grading_execute import GradingExecute

    try:
        return GradingExecute(parent=app).start_kernel_parent()
    except Exception as error:  # noqa: BLE001
        print(f"the kernel parent could not be started ahead of the first student: {error}", file=sys.stderr)
        return None


def main(argv=None) -> None:
    from ...sandbox.forked_kernels import KernelParents
    from ...sandbox.stage import own_mount_namespace

    # One kernel parent serves all the worker's students, each shown on its stage in turn: as root mounted there, in a
    # mount namespace of the worker's own (before any thread starts: a process with threads cannot have one), or of
    # its fork server's, which may have started the parent already; else copied there
    if not KernelParents.mounts_decided:
        KernelParents.mounts_decided, KernelParents.mounts = True, own_mount_namespace()
    exit_with_parent()
    argv = list(sys.argv[1:] if argv is None else argv)
    results = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # a stray print must not be taken for a result

    from nbgrader.apps.api import NbGraderAPI

    from ...common.phases import PHASES
    from .autograde import autograde, feedback_pages
    from .database_clock import DatabaseClock

    assignment, feedback, limit, app = nbgrader_app(argv)
    start_kernel_parent(app)  # (unless the server has: then it is this worker's already)
    load()

    scratch_gradebook(app.coursedir.db_url)
    api = NbGraderAPI(coursedir=app.coursedir, exchange=no_exchange(app), parent=app)
    database = DatabaseClock()
    database.listen()
    answering = threading.Lock()

    def answer(result: WorkerResult) -> None:
        with answering:
            results.write(result.to_line())

    def over_time(student: str) -> None:
        detail = f"the grader's own work for this student took over {limit:g} s (kernels left out); not graded"
        problem = Problem(student, None, "grader_time_limit", detail)
        answer(WorkerResult(student, False, error=detail, incidents=[problem], worker_ended=True))
        KernelParents.close()
        os._exit(1)  # (nbgrader may be stuck anywhere: no teardown)

    watchdog = Watchdog(limit, over_time)
    from ...preprocessors.grading_execute import GradingExecute  # (loaded with the course's config already)

    # the limit of one notebook as nbgrader_config.py sets it, for the coordinator's limit of this worker's students
    results.write(json.dumps({**READY, "notebook_seconds": GradingExecute(parent=app).notebook_timeout}) + "\n")
    for line in sys.stdin:
        student = line.strip()
        if not student:
            continue
        started = time.monotonic()
        watchdog.start(student)
        result, graded = autograde(api, assignment, student)
        KernelParents.student_done()  # nothing of the student stays in their kernel parent's sandbox
        autograded = time.monotonic()
        failed = lambda r: "" if r["success"] else (r.get("error") or "") + (r.get("log") or "")  # (the cause: its log)
        error = failed(result)
        if result["success"] and feedback:
            error = failed(feedback_pages(api, assignment, student))
        profile = {
            "notebooks": PHASES.take(),
            "autograde": autograded - started,
            "feedback": time.monotonic() - autograded,
            "database": database.take(),
        }
        grades = read_submission(app.coursedir.db_url, assignment, student) if result["success"] else None
        watchdog.done()
        answer(
            WorkerResult(
                student=student,
                success=bool(result["success"]),
                error=error[-3000:],
                incidents=graded.incidents,
                sandbox_error=graded.sandbox_failure,
                seconds=round(time.monotonic() - started, 2),
                grades=grades,
                profile=profile,
            )
        )


def run(argv=None) -> None:
    """A worker process from start to end; never returns. Once every answer is written, the last student's
    sandbox ends, then the process: without Python's own teardown of torch and nbgrader, which would hold up the
    pool (it waits for its workers) by a third of a second, and which a forked worker must not run at all."""
    from ...sandbox.forked_kernels import KernelParents

    start_up()
    status = 0
    try:
        main(argv)
    except BaseException:  # noqa: BLE001 (its log says why; the pool sees the worker end)
        traceback.print_exc()
        status = 1
    KernelParents.close()
    logging.shutdown()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    run()

"""The worker pool of ``backprop-ninja grade``: N ``worker`` processes grading students from one queue.

Each worker grades into a private gradebook, gets its share of the cores, and as root its own kernel uid; one that
does not answer in time is killed and started afresh. ``Worker`` is also what a Dask worker grades with
(docs/design/class-grading.md).
"""

import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...common.errors import GradingError
from ...common.tools import python_module
from ...sandbox.uids import claim_sandbox_uid
from ..intake.prepare import GRADING_DIR, STAGED
from ..stopping import CtrlC, grading_stopped
from .fork_server import ForkedWorker, ForkServer
from .worker import TIME_LIMIT_OPTION, WorkerResult, cause_in_log

START_SECONDS = 300  # a worker's start, at least


@dataclass(frozen=True)
class GraderSettings:
    """How a worker grades: the same on this machine and on a Dask worker (``grade``'s options)."""

    sandbox: bool = True
    notebook_timeout: int | None = None  # None: nbgrader_config.py's GradingExecute.notebook_timeout
    cell_timeout: int | None = None  # None: nbgrader_config.py's Execute.timeout
    memory_limit_gb: float | None = None  # None: SandboxedKernelManager.memory_limit
    feedback: bool = True
    first_sandbox_uid: int = 61000  # as root, kernels run as the first free uids from here, one per worker
    extra_nbgrader_args: tuple = ()
    warm_kernels: bool = True  # fork a student's kernels from a warm kernel parent in their sandbox
    grader_time_limit: float | None = None  # None: worker.GRADER_SECONDS, the grader's own time per student


class Worker:
    """One ``grading.worker`` process with its own gradebook; restarted when it has to be killed."""

    def __init__(self, index: int, root: Path, assignment: str, settings: GraderSettings, template: Path, threads=0):
        self.index, self.root, self.assignment, self.settings = index, root, assignment, settings
        self.threads = threads  # torch/OpenMP threads of the worker and its kernels (0: their default)
        self.folder = root / GRADING_DIR / "workers"
        self.db = self.folder / f"gradebook-{index}.db"
        self.log = self.folder / f"worker-{index}.log"
        self.template = template
        self.proc = None
        self.uid_lock = None
        self.lines = queue.Queue()
        self.server = None  # a ForkServer that forks this worker (the local pool's), else it starts as a Python
        self.notebook_seconds = None  # one notebook's limit, as the worker read it from the course's configuration

    def args(self) -> list:
        """The worker's command-line arguments (``worker.main``'s)."""
        o = self.settings
        args = [
            self.assignment,
            f"--CourseDirectory.root={self.root}",
            f"--CourseDirectory.db_url=sqlite:///{self.db}",
            f"--CourseDirectory.submitted_directory={STAGED}",
            f"--SandboxedKernelManager.course_root={self.root}",
            "--log-level=WARN",
        ]
        if not o.sandbox:
            args.append("--GradingExecute.sandbox=False")
        if not o.warm_kernels:
            args.append("--SandboxedKernelManager.kernel_parent=False")
        if o.notebook_timeout is not None:
            args.append(f"--GradingExecute.notebook_timeout={int(o.notebook_timeout)}")
        if o.cell_timeout is not None:
            args.append(f"--Execute.timeout={int(o.cell_timeout)}")
        if o.memory_limit_gb is not None:
            args.append(f"--SandboxedKernelManager.memory_limit={int(o.memory_limit_gb * 2**30)}")
        if os.geteuid() == 0:  # RLIMIT_NPROC counts per uid: one uid per worker keeps a fork bomb to itself
            if self.uid_lock is None:
                self.uid, self.uid_lock = claim_sandbox_uid(o.first_sandbox_uid)
            uid = self.uid
            args += [f"--SandboxedKernelManager.sandbox_uid={uid}", f"--SandboxedKernelManager.sandbox_gid={uid}"]
        if not o.feedback:
            args.append("--no-feedback")
        if o.grader_time_limit is not None:
            args.append(f"{TIME_LIMIT_OPTION}={o.grader_time_limit:g}")
        return args + list(o.extra_nbgrader_args)

    def environment(self) -> dict:
        env = dict(os.environ)
        if self.threads:  # W workers on C cores: C/W threads each, not C each (OpenMP oversubscribed spins)
            for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
                env.setdefault(variable, str(self.threads))
        return env

    def spawn(self) -> None:
        """Start the process, forked by the server or a Python that loads (nbgrader, torch) while the caller goes
        on; ``start`` waits for it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.lines = queue.Queue()
        with open(self.log, "ab") as log:
            if self.server:
                (stdin, to_worker), (from_worker, stdout) = os.pipe(), os.pipe()
                try:
                    self.server.fork(self.args(), stdin, stdout, log.fileno())
                except OSError:
                    raise GradingError(f"the grading workers' fork server has ended; see {self.server.log}") from None
                finally:
                    os.close(stdin)
                    os.close(stdout)
                self.proc = ForkedWorker(to_worker, from_worker)
            else:
                self.proc = subprocess.Popen(
                    python_module("autograder.grading.workers.worker", *self.args()),
                    cwd=self.root,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                    bufsize=1,
                    start_new_session=True,
                    env=self.environment(),
                )
        self.reader = threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True)
        self.reader.start()

    def start(self) -> None:
        """Ready to grade, its gradebook a fresh template copy (a worker opens it at its first student)."""
        if self.proc is None or self.proc.poll() is not None:
            self.spawn()
        shutil.copy(self.template, self.db)
        # a slow node's worker may take longer to start (its imports, its kernel parent's): as long as its grader
        ready = self._next(max(START_SECONDS, self.settings.grader_time_limit or 0))
        if not ready or not ready.get("ready"):
            self.kill()
            log = self.server.log if self.server and self.server.proc.poll() is not None else self.log
            raise GradingError(f"a grading worker did not start{cause_in_log(log)}; see {log}")
        self.notebook_seconds = ready.get("notebook_seconds")

    @staticmethod
    def _read(proc, lines) -> None:
        for line in proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(proc, ForkedWorker) and isinstance(message, dict) and "pid" in message:
                proc.started(message["pid"], message.get("kernel_parent"))  # what the fork server writes first
            else:
                lines.put(message)
        lines.put(None)

    def _next(self, timeout: float):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def grade(self, student: str, timeout: float) -> WorkerResult | None:
        """The worker's result for ``student``, or None when it died or ran out of time (it is killed)."""
        try:
            self.proc.stdin.write(student + "\n")
            self.proc.stdin.flush()
        except OSError:
            return None
        answer = self._next(timeout)
        if not isinstance(answer, dict) or answer.get("student") != student:
            self.kill()
            return None
        return WorkerResult.from_json(answer)

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            # Not forked yet: its pid comes once the server has loaded (its uid is not free before it has ended)
            deadline = time.monotonic() + 60
            while self.proc.pid is None and self.reader.is_alive() and time.monotonic() < deadline:
                time.sleep(0.02)
            if self.proc.pid is None:  # the server has ended (or hangs) without forking it: it ends on its own
                self.proc.stdin.close()
            else:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        if isinstance(self.proc, ForkedWorker):
            self.proc.end_kernel_parent()
        self._release_uid()

    def stop(self) -> None:
        """Ask the worker to end: it ends its last student's sandbox, then exits (``close`` waits for that)."""
        if self.proc and self.proc.poll() is None and not self.proc.stdin.closed:
            self.proc.stdin.close()

    def close(self) -> None:
        """Wait for the worker if it was asked to stop (60 s at most), else kill it; its uid is free again."""
        if self.proc and self.proc.poll() is None and self.proc.stdin.closed:
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def _release_uid(self) -> None:
        if self.uid_lock:
            self.uid_lock.close()
            self.uid_lock = None


class WorkerPool:
    """Grade students with ``workers``; ``finish(student, result, allowed)`` is called once per student.

    ``run(students, prepare)`` is the interface class grading uses; ``cluster.DaskPool`` has the same."""

    def __init__(self, workers: list, allowed: Callable[..., float], finish: Callable):
        self.workers, self.allowed, self.finish = workers, allowed, finish
        self.failure = []  # the first entry stops every worker
        self.server = None  # the ForkServer of its workers (``spawn``)

    def spawn(self, count: int) -> None:
        """Start the first ``count`` workers now, to load while the caller prepares (``run`` starts the rest)."""
        for w in self.workers[:count]:
            self._fork_server(w).spawn()

    def _fork_server(self, worker: Worker) -> Worker:
        """``worker``, to be forked by the pool's fork server (started for the first one)."""
        if self.server is None:
            worker.folder.mkdir(parents=True, exist_ok=True)
            self.server = ForkServer(worker.root, worker.environment(), worker.folder / "fork-server.log")
        worker.server = self.server
        return worker

    def close(self) -> None:
        """Wait for the workers that were stopped, kill the others, and end the fork server."""
        for w in self.workers:
            w.close()
        if self.server:
            self.server.close()

    def run(self, students: list, prepare: Callable[[str], bool]) -> None:
        """Grade them all, each after ``prepare(student)`` (False: not graded); GradingError when grading had to stop
        (a worker failed, the sandbox cannot start).

        On Ctrl-C every worker is killed and the KeyboardInterrupt goes on up.
        """
        jobs = queue.Queue()
        for student in students:
            jobs.put(student)
        for w in self.workers[len(students) :]:  # spawned for a class that turned out smaller
            w.kill()
        used = [self._fork_server(w) for w in self.workers[: len(students)]]
        threads = [threading.Thread(target=self._serve, args=(w, jobs, prepare), daemon=True) for w in used]
        try:
            with CtrlC() as ctrl_c:
                for t in threads:
                    t.start()
                for t in threads:
                    while t.is_alive():
                        t.join(0.5)
                        ctrl_c.check()
        except KeyboardInterrupt:
            self.failure.append("interrupted")
            for w in self.workers:
                w.kill()
            raise
        if self.failure:
            raise grading_stopped(self.failure[0], f"The workers' logs are in {self.workers[0].folder}")

    def _serve(self, worker: Worker, jobs: queue.Queue, prepare: Callable[[str], bool]) -> None:
        """One worker's loop: take the next student until none is left (or grading has failed)."""
        try:
            worker.start()
            while not self.failure:
                try:
                    student = jobs.get_nowait()
                except queue.Empty:
                    break
                if not prepare(student):
                    continue
                allowed = self.allowed(student, worker.notebook_seconds)
                result = worker.grade(student, allowed)
                if result is not None and result.sandbox_error:
                    self.failure.append(f"the sandbox could not start a kernel for {student}: {result.sandbox_error}")
                    break
                ended = result is None or result.worker_ended  # killed, or it stopped itself: start afresh
                if ended:
                    worker.kill()  # first: its sandbox ends now, not after the merge
                self.finish(student, result, allowed)
                if ended:
                    worker.start()
            worker.stop()
        except BaseException as error:  # noqa: BLE001 (reported by run(); the other workers stop)
            self.failure.append(f"grading worker {worker.index} failed: {error}")
            worker.kill()

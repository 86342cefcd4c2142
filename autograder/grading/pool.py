"""The worker pool of ``backprop-ninja grade``: N ``worker`` processes grading students from one queue.

Each worker has its own copy of the gradebook (``gradebook.copy_database``) and is fed student
ids one at a time; its answer for each (a ``WorkerResult``, or None when it died or ran out of
time) goes to the pool's ``finish`` callback as it arrives. A worker that has not answered in
time is killed and started afresh. As root, worker i's kernels run as uid 61000 + i (the first
unused uids from ``first_sandbox_uid``): RLIMIT_NPROC counts per uid, so one student's fork bomb
cannot starve the kernel of the student graded beside it. With W workers on C cores, each worker
and its kernels get C/W torch/OpenMP threads.
"""

import json
import os
import pwd
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable

from ..errors import GradingError
from .gradebook import copy_database
from .staging import GRADING_DIR, STAGED
from .worker import WorkerResult


def sandbox_uid(first: int, index: int) -> int:
    """The index-th uid from ``first`` on that no account uses."""
    uid, free = first, -1
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            free += 1
            if free == index:
                return uid
        uid += 1


def restore_owner(folder: Path) -> None:
    """A killed worker cannot give a student's folder back from the sandbox's uid: do it here."""
    if os.geteuid() == 0 and folder.exists():
        from ..sandbox import chown_tree

        chown_tree(str(folder), os.getuid(), os.getgid())


class Worker:
    """One ``grading.worker`` process with its own gradebook copy; restarted when it has to be killed."""

    def __init__(self, index: int, root: Path, assignment: str, options, main_db: Path, threads: int = 0):
        self.index, self.root, self.assignment, self.options = index, root, assignment, options
        self.threads = threads  # torch/OpenMP threads of the worker and its kernels (0: their default)
        self.folder = root / GRADING_DIR / "workers"
        self.db = self.folder / f"gradebook-{index}.db"
        self.log = self.folder / f"worker-{index}.log"
        self.main_db = main_db
        self.proc = None
        self.lines = queue.Queue()

    def argv(self) -> list:
        o = self.options
        args = [
            sys.executable,
            "-m",
            "autograder.grading.worker",
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
            args.append("--GradingExecute.warm_kernels=False")
        if o.notebook_timeout is not None:
            args.append(f"--GradingExecute.notebook_timeout={int(o.notebook_timeout)}")
        if o.cell_timeout is not None:
            args.append(f"--Execute.timeout={int(o.cell_timeout)}")
        if o.memory_limit_gb is not None:
            args.append(f"--SandboxedKernelManager.memory_limit={int(o.memory_limit_gb * 2**30)}")
        if os.geteuid() == 0:  # RLIMIT_NPROC counts per uid: one uid per worker keeps a fork bomb to itself
            uid = sandbox_uid(o.first_sandbox_uid, self.index)
            args += [f"--SandboxedKernelManager.sandbox_uid={uid}", f"--SandboxedKernelManager.sandbox_gid={uid}"]
        if not o.feedback:
            args.append("--no-feedback")
        return args + list(o.extra_nbgrader_args)

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        copy_database(self.main_db, self.db)
        self.lines = queue.Queue()
        env = dict(os.environ)
        if self.threads:  # W workers on C cores: C/W threads each, not C each (OpenMP oversubscribed spins)
            for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
                env.setdefault(variable, str(self.threads))
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv(),
                cwd=self.root,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                bufsize=1,
                start_new_session=True,
                env=env,
            )
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()
        ready = self._next(300)
        if not ready or not ready.get("ready"):
            self.kill()
            raise GradingError(f"a grading worker did not start; see {self.log}")

    @staticmethod
    def _read(proc, lines) -> None:
        for line in proc.stdout:
            try:
                lines.put(json.loads(line))
            except ValueError:
                pass
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
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()


class WorkerPool:
    """Grade students with ``workers``; ``finish(student, result, allowed)`` is called once per student."""

    def __init__(self, workers: list, allowed: Callable[[str], float], finish: Callable):
        self.workers, self.allowed, self.finish = workers, allowed, finish
        self.failure = []  # the first entry stops every worker

    def run(self, students: list) -> None:
        """Grade them all; GradingError when grading had to stop (a worker failed, the sandbox cannot start).

        On Ctrl-C every worker is killed and the KeyboardInterrupt goes on up.
        """
        jobs = queue.Queue()
        for student in students:
            jobs.put(student)
        threads = [threading.Thread(target=self._serve, args=(w, jobs), daemon=True) for w in self.workers]
        try:
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(0.5)
        except KeyboardInterrupt:
            self.failure.append("interrupted")
            for w in self.workers:
                w.kill()
            raise
        if self.failure:
            sandbox = "sandbox" in self.failure[0]
            folder = self.workers[0].folder
            raise GradingError(
                f"grading stopped: {self.failure[0]}\n"
                + (
                    "No student was graded outside the sandbox. Fix the sandbox (bubblewrap, user "
                    "namespaces) or pass --unsandboxed to grade notebooks you trust without it.\n"
                    if sandbox
                    else ""
                )
                + f"The workers' logs are in {folder}; the students graded so far "
                "are in gradebook.db, and a new run goes on from there."
            )

    def _serve(self, worker: Worker, jobs: queue.Queue) -> None:
        """One worker's loop: take the next student until none is left (or grading has failed)."""
        try:
            worker.start()
            while not self.failure:
                try:
                    student = jobs.get_nowait()
                except queue.Empty:
                    break
                allowed = self.allowed(student)
                result = worker.grade(student, allowed)
                if result is not None and result.sandbox_error:
                    self.failure.append(f"the sandbox could not start a kernel for {student}: {result.sandbox_error}")
                    break
                self.finish(student, result, worker.db, allowed)
                if result is None:  # killed: give the folder back from the sandbox's uid, start afresh
                    restore_owner(worker.root / "autograded" / student)
                    worker.start()
            worker.stop()
        except BaseException as error:  # noqa: BLE001 (reported by run(); the other workers stop)
            self.failure.append(f"grading worker {worker.index} failed: {error}")
            worker.kill()

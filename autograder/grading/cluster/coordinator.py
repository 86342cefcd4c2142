"""``backprop-ninja grade --scheduler tcp://HOST:PORT``: the class graded on a Dask cluster, a task per student.

``DaskCluster.connect`` reaches the scheduler and waits for a worker before anything is graded: an address
where no scheduler answers stops the run with one line. ``DaskPool`` is the local ``WorkerPool``'s
counterpart (``run(students)``, ``finish`` called once per student): it registers the course on every
worker (``remote.CoursePlugin``: a worker with other versions than this machine's, or without the sandbox,
is refused, and the run stops), submits one task per student (``remote.grade``), a window at a time so that
the class's notebooks are never all in memory, writes what each task sends back into the course root
exactly where a local run writes it, and takes the course off the workers at the end.

Faults: a Dask worker that dies while grading a student makes the scheduler run that task on another
worker (``distributed.scheduler.allowed-failures`` times; then the student gets worker_killed); each task's
result is merged once, so the student is graded once. A student over their time limit is stopped on the
worker, as in a local run. Ctrl-C cancels what is queued; state.json has every student merged so far.

Security: whoever can reach the scheduler can run code on the workers. Start it where only the course's
machines reach it (``dask scheduler --host``); across a network, use TLS (``tls://`` addresses and Dask's
``distributed.comm.tls`` settings, which the client here reads too).
"""

import contextlib
import shutil
import time
import uuid
from itertools import islice
from pathlib import Path
from typing import Callable

from ...common.errors import GradingError
from ..stopping import CtrlC, grading_stopped
from ..workers.worker import WorkerResult
from .payload import CourseBundle, Refused, StudentJob, WorkerRefused, check_outputs

WORKER_TIMEOUT = 120  # seconds to wait for the first worker (reaching the scheduler: Dask's own connect timeout)
DASK_LOGS = "The Dask workers' own logs say more"


class DaskCluster:
    """A connected Dask client; ``close()`` when done."""

    def __init__(self, client):
        self.client = client

    @classmethod
    def connect(cls, address: str, worker_timeout: float = WORKER_TIMEOUT):
        try:
            from distributed import Client
        except ImportError:
            raise GradingError(
                "grading on a Dask cluster needs Dask distributed: .venv/bin/pip install -e '.[cluster]'"
            ) from None
        from distributed.security import Security

        tls = Security()  # Dask's TLS settings (its config files, DASK_DISTRIBUTED__COMM__TLS__* variables)
        if address.startswith("tls://") and not (tls.tls_ca_file and tls.tls_client_cert):
            raise GradingError(
                f"{address} is a TLS scheduler, and Dask's TLS settings are not set (distributed.comm.tls.ca-file, "
                "client.cert, client.key; see the README). Nothing was graded."
            )
        try:
            client = Client(address, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as error:
            reason = " ".join(str(error).split()) or type(error).__name__
            raise GradingError(f"cannot reach the Dask scheduler at {address}: {reason}. Nothing was graded.") from None
        try:
            client.wait_for_workers(1, timeout=worker_timeout)
        except TimeoutError:
            client.close()
            raise GradingError(
                f"no Dask worker joined the scheduler at {address} within {worker_timeout:g} s "
                f"(start them: dask worker {address}). Nothing was graded."
            ) from None
        return cls(client)

    def close(self) -> None:
        self.client.close()


class DaskPool:
    """Grade students on the cluster; ``finish(student, result, allowed)`` is called once per student."""

    def __init__(self, cluster: DaskCluster, root: Path, bundle: CourseBundle, allowed: Callable, finish: Callable):
        self.client, self.root, self.bundle, self.allowed, self.finish = cluster.client, root, bundle, allowed, finish

    def run(self, students: list) -> None:
        from . import remote

        name = remote.plugin_name(self.bundle.digest)
        try:
            self.client.register_plugin(remote.CoursePlugin(self.bundle), name=name)
        except Exception as error:  # WorkerRefused, or a worker whose code cannot even load the course
            with contextlib.suppress(Exception):
                self.client.unregister_worker_plugin(name)
            raise GradingError(
                f"{error}.\nEvery Dask worker must run what this machine runs (the same checkout of the course, "
                "installed the same way). Nothing was graded."
            ) from None
        try:
            self._grade(students)
        finally:
            self.client.unregister_worker_plugin(name)

    def _grade(self, students: list) -> None:
        from distributed import as_completed

        from . import remote

        waiting, running, done = iter(students), {}, as_completed(loop=self.client.loop)

        def submit(student: str) -> None:
            job = StudentJob.staged(self.root, self.bundle.assignment, student, self.bundle.digest)
            key = f"grade-{student}-{uuid.uuid4().hex[:8]}"
            future = self.client.submit(remote.grade, job, self.bundle.versions, self.allowed(student), key=key)
            running[future] = student
            done.add(future)

        for student in islice(waiting, max(4, 2 * sum(self.client.nthreads().values()))):
            submit(student)
        try:
            with CtrlC() as ctrl_c:
                while not done.is_empty():
                    finished = done.next_batch(block=False)
                    ctrl_c.check()
                    if not finished:
                        time.sleep(0.2)
                    for future in finished:
                        self._collect(running.pop(future), future)
                        student = next(waiting, None)
                        if student is not None:
                            submit(student)
        except BaseException:  # Ctrl-C or a stop: nothing more is graded
            self.client.cancel(list(running))
            raise

    def _collect(self, student: str, future) -> None:
        """Write one student's outputs into the course root and pass the result on (or stop grading)."""
        from distributed import KilledWorker

        allowed = self.allowed(student)
        try:
            outputs = future.result()
        except KilledWorker:  # every worker that took it died: not graded, as when a local worker is killed
            return self.finish(student, None, allowed)
        except (WorkerRefused, GradingError) as error:
            raise grading_stopped(str(error), DASK_LOGS) from None
        except Refused as error:
            return self.finish(
                student, WorkerResult(student, False, error=f"the Dask worker refused it: {error}"), allowed
            )
        except Exception as error:  # noqa: BLE001 (the student gets a grader_error that names it)
            return self.finish(student, WorkerResult(student, False, error=f"{type(error).__name__}: {error}"), allowed)
        result = outputs.result
        if result is not None and result.sandbox_error:
            raise grading_stopped(
                f"the sandbox could not start a kernel for {student}: {result.sandbox_error}", DASK_LOGS
            )
        try:
            check_outputs(outputs.files, student, self.bundle.assignment)
        except Refused as error:
            raise grading_stopped(str(error), DASK_LOGS) from None
        for kind in ("autograded", "feedback"):  # as nbgrader's --force does before it writes them
            shutil.rmtree(self.root / kind / student / self.bundle.assignment, ignore_errors=True)
        for name, (mode, data) in outputs.files.items():
            path = self.root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(mode & 0o777)
        self.finish(student, result, allowed)

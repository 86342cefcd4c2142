"""``backprop-ninja grade --scheduler``: the class graded on a Dask cluster, a task per student (coordinator side).

``DaskCluster.connect`` reaches the scheduler (tls:// unless it is on this machine, or --insecure-cluster);
``DaskPool`` is the local pool's counterpart, and merges each student once, from one complete run. Faults and
what happens: docs/cluster.md; the design: docs/design/cluster.md.
"""

import contextlib
import ipaddress
import shutil
import socket
import statistics
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from ...common.errors import GradingError
from ..stopping import CtrlC, grading_stopped
from ..workers.worker import WorkerResult
from .payload import CourseBundle, Refused, StudentJob, WorkerRefused, check_outputs

WORKER_TIMEOUT = 120  # seconds to wait for the first worker (reaching the scheduler: Dask's own connect timeout)
DASK_LOGS = "The Dask workers' own logs say more"
ENCRYPTED = ("tls", "wss")  # Dask's protocols that encrypt and authenticate both ends
SLOW_FACTOR = 2.0  # a host whose median seconds per student are this many times the other hosts' is slow


def on_this_machine(address: str) -> bool:
    """Whether a Dask address is loopback or in-process (``localhost`` and names that resolve to loopback only)."""
    scheme, _, rest = address.rpartition("://")
    if scheme == "inproc":
        return True
    host = urlsplit(f"//{rest}").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return False
    return bool(found) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in found)


def check_address(address: str, insecure_cluster: bool = False) -> None:
    """Refuse a scheduler on another machine that is reached without TLS, unless ``insecure_cluster``."""
    scheme = address.partition("://")[0] if "://" in address else "tcp"  # Dask's default protocol
    if scheme in ENCRYPTED or insecure_cluster or on_this_machine(address):
        return
    rest = address.partition("://")[2] or address
    raise GradingError(
        f"refusing {address}: whoever reaches a scheduler without TLS can run code on every worker. Use "
        f"tls://{rest} with the course's CA (Dask's distributed.comm.tls settings: ca-file, client.cert, "
        "client.key; see the README), or pass --insecure-cluster on a network only the course's machines reach. "
        "Nothing was graded."
    )


@dataclass(frozen=True)
class HostTimes:
    """The students one host of the cluster graded in a run, and how long each took there."""

    host: str
    """The Dask worker's hostname and address, e.g. ``node7 (10.0.0.7)``."""
    seconds: tuple
    """Seconds each of its students took there: their grading (autograde and feedback), or the whole task for one
    stopped at a limit."""
    slow: float = 0.0
    """Its median over the other hosts' median, when that is ``SLOW_FACTOR`` or more; else 0."""


def host_times(graded: dict) -> list:
    """``HostTimes`` of every host, by name, from host -> [seconds of each student]."""
    found = []
    for host, seconds in sorted(graded.items()):
        others = [t for h, times in graded.items() if h != host for t in times]
        factor = statistics.median(seconds) / statistics.median(others) if others and statistics.median(others) else 0
        found.append(HostTimes(host, tuple(seconds), round(factor, 1) if factor >= SLOW_FACTOR else 0.0))
    return found


class DaskCluster:
    """A connected Dask client; ``close()`` when done."""

    def __init__(self, client):
        self.client = client

    @classmethod
    def connect(cls, address: str, worker_timeout: float = WORKER_TIMEOUT, insecure_cluster: bool = False):
        check_address(address, insecure_cluster)
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
        except (OSError, TimeoutError, ValueError, RuntimeError) as error:  # RuntimeError: Dask's require-encryption
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


class WorkersWatch:
    """Stops a run whose scheduler has had no worker for ``WORKER_TIMEOUT`` seconds (the workers' network was
    cut, or they all ended): Dask would wait for one for ever."""

    EVERY = 5.0  # seconds between two looks at the scheduler's workers

    def __init__(self, client):
        self.client, self.looked, self.alone_since = client, time.monotonic(), None

    def check(self, left: int) -> None:
        now = time.monotonic()
        if now - self.looked < self.EVERY:
            return
        self.looked = now
        if self.client.nthreads():
            self.alone_since = None
            return
        self.alone_since = self.alone_since or now
        if now - self.alone_since >= WORKER_TIMEOUT:
            raise GradingError(
                f"grading stopped: no Dask worker has been at the scheduler for {WORKER_TIMEOUT:g} s, {left} "
                "students not graded; the students graded so far are in the gradebook, and the next run grades "
                "only the rest."
            )


class DaskPool:
    """Grade students on the cluster; ``finish(student, result, allowed)`` is called once per student."""

    def __init__(self, cluster: DaskCluster, root: Path, bundle: CourseBundle, allowed: Callable, finish: Callable):
        self.client, self.root, self.bundle, self.allowed, self.finish = cluster.client, root, bundle, allowed, finish
        self.merged = set()  # the students merged in this run: never twice
        self.graded_on = defaultdict(list)  # host -> seconds of each student's task there

    def host_times(self) -> list:
        """Which host graded how many students, how fast, and which was slow (``HostTimes``)."""
        return host_times(self.graded_on)

    def run(self, students: list, prepare: Callable[[str], bool]) -> None:
        """Grade them all, each submitted right after ``prepare(student)`` (False: not graded)."""
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
            self._grade(students, prepare)
        finally:
            self.client.unregister_worker_plugin(name)

    def _grade(self, students: list, prepare: Callable[[str], bool]) -> None:
        from distributed import as_completed

        from . import remote

        waiting, running, done = (s for s in students if prepare(s)), {}, as_completed(loop=self.client.loop)

        def submit(student: str) -> None:
            job = StudentJob.staged(self.root, self.bundle.assignment, student, self.bundle.digest)
            key = f"grade-{student}-{uuid.uuid4().hex[:8]}"
            future = self.client.submit(remote.grade, job, self.bundle.versions, self.allowed(student), key=key)
            running[future] = student
            done.add(future)

        for student in islice(waiting, max(4, 2 * sum(self.client.nthreads().values()))):
            submit(student)
        watch = WorkersWatch(self.client)
        try:
            with CtrlC() as ctrl_c:
                while not done.is_empty():
                    finished = done.next_batch(block=False)
                    ctrl_c.check()
                    if not finished:
                        time.sleep(0.2)
                        watch.check(len(students) - len(self.merged))
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

        if student in self.merged:  # a task that ran again (its worker was lost) counts once
            return
        self.merged.add(student)
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
        result = outputs.result  # the host's time: its grading's own seconds, else (stopped at a limit) the task's
        self.graded_on[outputs.host or "?"].append(result.seconds if result and result.seconds else outputs.seconds)
        if result is not None and result.student != student:  # a confused worker: nothing of it is merged
            raise grading_stopped(f"a Dask worker sent {result.student[:80]!r}'s result for {student}", DASK_LOGS)
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

"""What a Dask worker does for ``backprop-ninja grade --scheduler``.

``CoursePlugin`` refuses a worker of other versions or without the sandbox and rebuilds the course privately;
``grade``, one task per student, grades with ``pool.Worker``, the local run's worker process, and returns
nbgrader's files by name (docs/design/cluster.md).
"""

import itertools
import os
import shutil
import socket
import threading
import time
from pathlib import Path

from distributed import WorkerPlugin, get_worker

from ...common.errors import GradingError
from ..intake.prepare import GRADING_DIR, STAGED
from ..preflight import SANDBOX_TOOLS
from ..workers.autograde import read_regular
from ..workers.pool import Worker
from .payload import (
    CourseBundle,
    Refused,
    StudentJob,
    StudentOutputs,
    WorkerRefused,
    check_job,
    version_differences,
    versions,
)

PLUGIN = "backprop-ninja-course-"  # and the first 16 hex digits of the course's digest
MAX_RETURNED_BYTES = 64 * 2**20  # a graded notebook (each cell's output is cut at 4 MB) or its feedback page


def plugin_name(course_digest: str) -> str:
    return PLUGIN + course_digest[:16]


class CoursePlugin(WorkerPlugin):
    """The course on one Dask worker: checked against the worker's versions and tools, then rebuilt privately."""

    idempotent = False  # a coordinator that registers the course again replaces it (and its graders)

    def __init__(self, bundle: CourseBundle):
        self.bundle = bundle
        self.course = None

    def setup(self, worker) -> None:
        refusals = version_differences(self.bundle.versions, versions())
        if self.bundle.settings.sandbox:
            refusals += [f"{tool} not found (the sandbox needs it)" for tool in SANDBOX_TOOLS if not shutil.which(tool)]
        if refusals:
            raise WorkerRefused(f"Dask worker {worker.name} ({worker.address}) refused: {'; '.join(refusals)}")
        n = worker.state.nthreads  # tasks at once; each grader and its kernels get cores / n threads
        threads = max(1, (os.cpu_count() or 1) // n) if n > 1 else 0
        root = Path(worker.local_directory) / f"backprop-ninja-{self.bundle.digest[:12]}"
        self.course = PrivateCourse(self.bundle, root, threads)

    def teardown(self, worker) -> None:
        if self.course:
            self.course.close()


class PrivateCourse:
    """The course rebuilt from its bundle in a private folder, with the grader processes that grade in it."""

    def __init__(self, bundle: CourseBundle, root: Path, threads: int):
        self.bundle, self.root, self.threads = bundle, root, threads
        shutil.rmtree(root, ignore_errors=True)
        source = root / "source" / bundle.assignment
        for name, data in bundle.source.items():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            (source / name).write_bytes(data)
        (root / "nbgrader_config.py").write_bytes(bundle.config)
        self.template = root / GRADING_DIR / "template.db"
        self.template.parent.mkdir(parents=True)
        self.template.write_bytes(bundle.gradebook)
        root.chmod(0o755)  # the sandboxed kernels run as other uids and enter their student's folder
        self.idle, self.lock, self.numbers, self.closed = [], threading.Lock(), itertools.count(), False

    def grade(self, job: StudentJob, allowed: float) -> StudentOutputs:
        """Grade one student in this course with a grader process of its own while it lasts."""
        assignment, student = self.bundle.assignment, job.student
        staged = self.root / STAGED / student / assignment
        shutil.rmtree(staged, ignore_errors=True)
        staged.mkdir(parents=True)
        for name, data in job.notebooks.items():
            (staged / f"{name}.ipynb").write_bytes(data)
        if job.timestamp is not None:
            (staged / "timestamp.txt").write_bytes(job.timestamp)
        worker, result = self._take(), None
        try:
            result = worker.grade(student, allowed)
            copied = [name for name in self.bundle.source if not name.endswith(".ipynb")]  # by nbgrader, from source/
            files = {} if result is None else returned_files(self.root, assignment, student, job.notebooks, copied)
        finally:
            for folder in (STAGED, "autograded", "feedback"):
                shutil.rmtree(self.root / folder / student, ignore_errors=True)
            self._give_back(worker, alive=result is not None and not result.worker_ended)
        return StudentOutputs(result, files)

    def _take(self) -> Worker:
        with self.lock:
            if self.idle:
                return self.idle.pop()
            number, bundle = next(self.numbers), self.bundle
            worker = Worker(number, self.root, bundle.assignment, bundle.settings, self.template, self.threads)
        try:
            worker.start()
        except GradingError as error:  # its log is on this machine: send its end along
            tail = worker.log.read_text(errors="replace")[-2000:] if worker.log.is_file() else ""
            raise GradingError(f"{error}, on {get_worker().address}:\n{tail}") from None
        return worker

    def _give_back(self, worker: Worker, alive: bool) -> None:
        with self.lock:
            if alive and not self.closed:
                self.idle.append(worker)
                return
        worker.kill()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            idle, self.idle = self.idle, []
        for worker in idle:  # idle: nothing is lost, and a kill does not hold up the Dask worker
            worker.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def returned_names(assignment: str, student: str, notebooks, course_files=()) -> list:
    """What a Dask worker sends back for a student, by name: what nbgrader made (each graded notebook and its
    feedback page), the course's files it copied beside them (``course_files``, of source/) and the timestamp.txt
    staged with them, which the feedback folder gets too; nothing else of the folders is ever read."""
    names = [f"autograded/{student}/{assignment}/{name}" for name in ("timestamp.txt", *course_files)]
    names.append(f"feedback/{student}/{assignment}/timestamp.txt")  # as a local run's feedback has it
    for notebook in notebooks:
        names += [
            f"autograded/{student}/{assignment}/{notebook}.ipynb",
            f"feedback/{student}/{assignment}/{notebook}.html",
        ]
    return names


def returned_files(root: Path, assignment: str, student: str, notebooks, course_files=()) -> dict:
    """``returned_names`` that exist as regular files: {name: (permission bits, bytes)}."""
    found = {}
    for name in returned_names(assignment, student, notebooks, course_files):
        try:
            file = read_regular(root / name, MAX_RETURNED_BYTES)
        except ValueError as error:
            raise Refused(f"{error}: not sent back") from None
        if file is not None:
            found[name] = file
    return found


def grade(job: StudentJob, coordinator_versions: dict, allowed: float) -> StudentOutputs:
    """The Dask task of one student: refuse what is not the course's, then grade it in the private course."""
    worker = get_worker()
    plugin = worker.plugins.get(plugin_name(job.course))
    if plugin is None or plugin.course is None:  # it joined with other versions, or the course is gone
        differences = version_differences(coordinator_versions, versions())
        raise WorkerRefused(
            f"Dask worker {worker.address} has not set up the course: "
            + ("; ".join(differences) if differences else "see its log")
        )
    check_job(plugin.bundle, job)
    started = time.monotonic()
    outputs = plugin.course.grade(job, allowed)
    outputs.host, outputs.seconds = host_name(worker.address), round(time.monotonic() - started, 2)
    return outputs


def host_name(address: str) -> str:
    """This machine as the class's summary names it: ``node7 (10.0.0.7)`` for a worker at tls://10.0.0.7:port."""
    from distributed.comm import get_address_host

    name, ip = socket.gethostname(), get_address_host(address)
    return name if name == ip else f"{name} ({ip})"

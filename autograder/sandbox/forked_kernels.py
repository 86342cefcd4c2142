"""Kernels forked from kernel parents: which parent serves a kernel, and how jupyter_client launches it.

``KernelParents`` keeps one parent per sandbox; ``ForkedProvisioner`` is jupyter_client's own seam, and
``ForkedKernel`` its process handle, with the kernel's host pid found through /proc's NSpid; ``kernel_folder``
opens a forked kernel's socket folder as its sandbox shows it, for the relay (docs/design/sandbox.md).
"""

from __future__ import annotations

import atexit
import os
import select
import signal
import stat
import subprocess

from jupyter_client.provisioning import LocalProvisioner

from .kernel_parent import ForkedKernel, KernelParent
from .policy import SOCKETS


def kernel_folder(pid: int) -> int | None:
    """The socket folder of the kernel ``pid`` as its sandbox shows it, opened O_PATH; None while it is not there."""
    try:
        return os.open(f"/proc/{pid}/root{SOCKETS}", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None


def all_bound(folder: int, names) -> bool:
    """Whether the kernel has bound every socket of ``names`` in ``folder`` (``kernel_folder``)."""
    try:
        return all(stat.S_ISSOCK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode) for name in names)
    except OSError:
        return False


class PidfdProcess:
    """A process watched and killed through a pidfd: what a ``subprocess.Popen`` offers of a process this one did
    not start (its own parent reaps it, and has its exit status: ``returncode`` is -1 once it has ended)."""

    def __init__(self, pid: int | None = None):
        self.pid = self.returncode = self._pidfd = None
        if pid is not None:
            self.started(pid)

    def started(self, pid: int) -> None:
        self.pid = pid
        try:
            self._pidfd = os.pidfd_open(pid)
        except ProcessLookupError:  # ended, and reaped, already
            self.returncode = -1

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if self._pidfd is None or not select.select([self._pidfd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"process {self.pid}", timeout)
            os.close(self._pidfd)
            self.returncode = -1
        return self.returncode

    def poll(self):
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.poll() is None and self._pidfd is not None:
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)


class ForkedProvisioner(LocalProvisioner):
    """LocalProvisioner, but the kernel is forked by the student's kernel parent instead of started anew."""

    kernel_parent: KernelParent | None = None
    forked: ForkedKernel | None = None  # kept after the kernel ends (``process`` is not), for ``ended``

    async def launch_kernel(self, cmd: list, **kwargs) -> dict:
        cwd = self.kernel_parent.inside(kwargs["cwd"])
        setup = getattr(self.parent, "setup_ahead", None)
        self.process = self.forked = self.kernel_parent.fork(cmd, env=kwargs["env"], cwd=cwd, setup=setup)
        self.pid, self.pgid, self.cwd = self.process.pid, None, kwargs["cwd"]
        return self.connection_info

    def ended(self) -> dict | None:
        """The kernel has been shut down: its parent clears the sandbox for the next. What the kernel left in its
        folder (the parent's summary), or None."""
        if self.forked is None:
            return None
        forked, self.forked = self.forked, None
        return self.kernel_parent.kernel_ended(forked)


class KernelParents:
    """The kernel parents of a grading process: one on a stage for all its students (``stage_students``), else one per
    student, the current one's."""

    parents: dict = {}
    # the stage's students are mounted there: a grading worker's process with a mount namespace of its own (as root);
    # else copied there (an ordinary user's worker, or an nbgrader command's process: its threads may run already)
    mounts = False
    mounts_decided = False  # (by the worker's fork server, before the worker itself)

    @classmethod
    async def get(cls, key, start, timeout: float) -> KernelParent:
        """The running parent for ``key``, else the one ``start()`` makes; parents with no kernel running are
        stopped first (the student graded before: their sandbox ends)."""
        parent = cls.parents.get(key)
        if parent is not None and parent.alive():
            await parent.ready(timeout)  # (one started ahead may still be loading)
            return parent
        for other in [k for k, p in cls.parents.items() if k == key or not p.kernels or not p.alive()]:
            cls.parents.pop(other).close()
        parent = cls._started(start)
        await parent.ready(timeout)  # closes it and raises SandboxError if it never gets ready
        cls.parents[key] = parent
        return parent

    @classmethod
    def stage_busy_with_another(cls, folder: str) -> bool:
        """Whether a parent on a stage runs a kernel of another student than the one in ``folder``: a process that
        runs students' kernels side by side (not one student after the other, as nbgrader and the grading workers do)
        gives that student a parent of their own."""
        return any(p.stage is not None and p.kernels and p.stage.shown != folder for p in cls.parents.values())

    @classmethod
    def start_ahead(cls, key, start) -> KernelParent:
        """Start the parent for ``key`` without waiting for it to load (``get`` waits), and return it. From the
        thread that will use it: a parent's sandbox dies with the thread that started it (bwrap's
        --die-with-parent)."""
        if key not in cls.parents:
            cls.parents[key] = cls._started(start)
        return cls.parents[key]

    _closes_at_exit = False

    @classmethod
    def _started(cls, start) -> KernelParent:
        """``start()``, the first time with the last student's sandbox set to end with the process, not after it."""
        if not cls._closes_at_exit:
            atexit.register(cls.close)
            cls._closes_at_exit = True
        return start()

    @classmethod
    def adopt(cls, mine: KernelParent | None) -> None:
        """In a worker its fork server forked: keep ``mine``, the parent the server started ahead for this worker
        (now watched through a pidfd: the server is its parent), and drop the other workers' (all their pipes closed
        here, their stderr's too: each is its own worker's)."""
        for parent in cls.parents.values():
            if parent is mine:
                stdin, stdout = parent.process.stdin, parent.process.stdout
                parent.process = PidfdProcess(parent.process.pid)
                parent.process.stdin, parent.process.stdout = stdin, stdout
            else:
                parent.process.stdin.close()
                parent.process.stdout.close()
                parent.output.forget()
        cls.parents = {mine.key: mine} if mine is not None else {}  # under its key: the worker's kernels find it

    @classmethod
    def student_done(cls) -> None:
        """After each student: a parent on a stage clears the student away (``KernelParent.leave``), another
        ends with its sandbox."""
        for key, parent in list(cls.parents.items()):
            if parent.stage is None or not parent.leave():
                cls.parents.pop(key).close()

    @classmethod
    def close(cls) -> None:
        """Stop every parent (at the end of the process)."""
        while cls.parents:
            cls.parents.popitem()[1].close()

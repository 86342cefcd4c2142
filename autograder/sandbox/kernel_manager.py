"""SandboxedKernelManager: jupyter_client's kernel manager, with the kernel started by ``policy.command_line``.

It adds what a command line cannot hold: the kernel's private socket folder and account files, lending
the student's folder to the sandbox's uid while the kernel runs (as root), waiting until the kernel
listens, and naming the cause when it never does.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import tempfile
import time

from jupyter_client.manager import AsyncKernelManager
from traitlets import Float, Integer, Unicode, default

from ..data import NAMES_VARIABLE
from . import policy
from .policy import SandboxError

GiB = 2**30
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def chown_tree(top: str, uid: int, gid: int) -> None:
    """Give ``top`` and everything below it to uid:gid, never following symlinks."""
    os.lchown(top, uid, gid)
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(folder, name)
            os.lchown(path, uid, gid)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_mode & 0o6000:
                os.chmod(path, st.st_mode & 0o1777)  # no setuid/setgid files survive


class SandboxedKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernel runs in bubblewrap, seeing only the allow-list of ``policy``."""

    bwrap = Unicode("bwrap", config=True, help="The bubblewrap executable.")
    course_root = Unicode(
        "",
        config=True,
        help=(
            "The course root, never visible to the kernel (gradebook.db, source/, submitted/, other students): "
            "the kernel's folder must lie inside it. Default: nbgrader's CourseDirectory.root if configured, "
            "else the grading process's working directory, where nbgrader runs."
        ),
    )
    memory_limit = Integer(
        4 * GiB,
        config=True,
        help=(
            "RLIMIT_AS in bytes for each kernel process (0: none). Stops one notebook "
            "allocating the machine's memory: the allocation fails with MemoryError (torch: "
            "RuntimeError) instead of the OOM killer taking the grader. `import torch` needs "
            "about 0.8 GiB of address space."
        ),
    )
    cpu_time_limit = Integer(
        600,
        config=True,
        help=(
            "RLIMIT_CPU in seconds for each kernel process, over the whole notebook (0: none). "
            "Kills a notebook that spins (also one that ignores interrupts) so the others "
            "still get graded; raise it if a notebook legitimately trains for long."
        ),
    )
    process_limit = Integer(
        config=True,
        help=(
            "RLIMIT_NPROC: processes plus threads of the kernel's user (0: none); default "
            "max(64, 32 + 4 * cores), as torch/OpenMP/BLAS start threads per core. Stops fork "
            "bombs. Root is exempt, so as root the kernel runs as sandbox_uid."
        ),
    )
    file_size_limit = Integer(
        1 * GiB,
        config=True,
        help=(
            "RLIMIT_FSIZE in bytes (0: none): the largest file the kernel may write, so a "
            "notebook cannot fill the grading disk with one file."
        ),
    )
    tmp_size = Integer(
        512 * 2**20,
        config=True,
        help=("Size in bytes of the kernel's private /tmp and /dev/shm tmpfs (RAM, not covered by RLIMIT_AS)."),
    )
    sandbox_uid = Integer(
        65534,
        config=True,
        help=(
            "uid the kernel runs as when the grader is root ('nobody'; RLIMIT_NPROC counts "
            "all its processes on the host). The student's folder is lent to it while the "
            "kernel runs and given back afterwards. Ignored when the grader is not root."
        ),
    )
    sandbox_gid = Integer(65534, config=True, help="gid to go with sandbox_uid.")
    start_timeout = Float(60, config=True, help="Seconds the kernel may take to listen.")

    @default("process_limit")
    def _process_limit_default(self) -> int:
        return max(64, 32 + 4 * (os.cpu_count() or 1))

    _rundir = None
    _folder = None  # the kernel's folder (its working directory)
    _lent = None  # (folder, uid, gid) of the student folder lent to sandbox_uid

    started_ahead = False  # a warm kernel: its folder is lent when its notebook comes (lend_folder), not at start

    def lend_folder(self) -> None:
        """As root, give the kernel's folder to sandbox_uid until the kernel is cleaned up; else nothing.

        A kernel started ahead gets its folder only when its notebook comes: until then the kernel before
        it (the same student's) holds it, and gives it back when it ends."""
        if os.geteuid() == 0 and self._lent is None and self._folder is not None:
            st = os.stat(self._folder)
            self._lent = (self._folder, st.st_uid, st.st_gid)
            chown_tree(self._folder, self.sandbox_uid, self.sandbox_gid)

    @property
    def kernel_spec(self):
        """Interrupt by message: signalling bwrap's process group would kill bwrap."""
        spec = super().kernel_spec
        if spec is not None:
            spec.interrupt_mode = "message"
        return spec

    def _tool(self, name: str) -> str:
        path = shutil.which(name)
        if not path:
            raise SandboxError(f"cannot sandbox the kernel: {name!r} not found (apt-get install bubblewrap util-linux)")
        return os.path.realpath(path)

    def _run_as(self):
        """(uid, gid) of the kernel when the grader is root; None otherwise (a user namespace instead)."""
        return (self.sandbox_uid, self.sandbox_gid) if os.geteuid() == 0 else None

    async def _async_pre_start_kernel(self, **kw):
        """Talk to the kernel over ipc sockets in a private folder; write its /etc/passwd and /etc/group."""
        self._tool(self.bwrap)
        if self._rundir is None:
            self._rundir = tempfile.mkdtemp(prefix="nbgrader-sandbox-")
            os.mkdir(os.path.join(self._rundir, "ipc"), 0o700)
            uid, gid = self._run_as() or (os.getuid(), os.getgid())
            for name, text in zip(("passwd", "group"), policy.account_files(uid, gid)):
                with open(os.path.join(self._rundir, name), "w") as f:
                    f.write(text)
                os.chmod(f.name, 0o644)
        ipc = os.path.join(self._rundir, "ipc")
        self.transport = "ipc"
        self.ip = os.path.join(ipc, "kernel")
        self.connection_file = os.path.join(ipc, "kernel.json")
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        if os.geteuid() == 0:
            for path in (ipc, self.connection_file):
                os.chown(path, self.sandbox_uid, self.sandbox_gid)
        return cmd, kw

    def _command_line(self, kernel_cmd: list, student_folder: str, env: dict) -> list:
        course = self.course_root or self.config.get("CourseDirectory", {}).get("root") or os.getcwd()
        names = env.get(NAMES_VARIABLE, "")
        paths = policy.KernelPaths(
            student_folder=student_folder,
            course_root=os.path.realpath(course),
            ipc_folder=os.path.join(self._rundir, "ipc"),
            python_prefixes=policy.python_prefixes(kernel_cmd[0]),
            package_dir=PACKAGE_DIR,
            names_file=os.path.abspath(names) if names else "",
            passwd=os.path.join(self._rundir, "passwd"),
            group=os.path.join(self._rundir, "group"),
        )
        choom = shutil.which("choom")
        tools = policy.Tools(
            bwrap=self._tool(self.bwrap),
            prlimit=self._tool("prlimit"),
            setpriv=self._tool("setpriv") if os.geteuid() == 0 else "",
            choom=os.path.realpath(choom) if choom else "",
        )
        limits = {
            "as": self.memory_limit,
            "cpu": self.cpu_time_limit,
            "nproc": self.process_limit,
            "fsize": self.file_size_limit,
        }
        return policy.command_line(kernel_cmd, paths, tools, limits, self.tmp_size, self._run_as())

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        try:
            cwd = kw.get("cwd")
            if not cwd or not os.path.isdir(cwd):
                raise SandboxError(f"a sandboxed kernel needs its student folder as cwd, not {cwd!r}")
            cwd = os.path.realpath(cwd)
            env = kw.get("env") or dict(os.environ)
            argv = self._command_line(kernel_cmd, cwd, env)
            kw.update(cwd=cwd, env=policy.kernel_environment(env, kernel_cmd[0]))
            self._folder = cwd
            if not self.started_ahead:
                self.lend_folder()
            log_path = os.path.join(self._rundir, "kernel.log")
            with open(log_path, "ab") as log:
                kw.update(stdout=log, stderr=log)
                await super()._async_launch_kernel(argv, **kw)
            await self._await_listening(log_path)
        except BaseException:
            if self.provisioner and self.provisioner.has_process:
                await self.provisioner.kill()
                await self.provisioner.wait()
            await self._async_cleanup_resources()
            raise

    async def _await_listening(self, log_path: str) -> None:
        """Wait until the kernel has bound its sockets; name the cause if it never does."""
        proc = self.provisioner.process
        sockets = [f"{self.ip}-{port}" for port in self.ports]
        deadline = time.monotonic() + self.start_timeout
        while not all(os.path.exists(s) for s in sockets):
            failed = None
            if proc.poll() is not None:
                failed = f"exited with status {proc.returncode}"
            elif time.monotonic() > deadline:
                failed = f"did not listen within {self.start_timeout:g} s"
            if failed:
                with open(log_path, "rb") as log:
                    tail = log.read()[-3000:].decode(errors="replace")
                raise SandboxError(
                    f"the sandboxed kernel {failed} before it started (bwrap or kernel output follows):\n{tail}"
                )
            await asyncio.sleep(0.01)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        """Also give the student folder back and remove the socket directory."""
        await super()._async_cleanup_resources(restart=restart)
        if restart:
            return
        if self._lent is not None:
            folder, uid, gid = self._lent
            self._lent = None
            chown_tree(folder, uid, gid)
        if self._rundir is not None:
            shutil.rmtree(self._rundir, ignore_errors=True)
            self._rundir = None

    cleanup_resources = _async_cleanup_resources

"""SandboxedKernelManager: jupyter_client's kernel manager, with the kernel started by ``policy.command_line``.

It adds what a command line cannot hold: the kernel's private socket folder and account files, lending
the student's folder to the sandbox's uid while the kernel runs (as root), waiting until the kernel
listens, and naming the cause when it never does. By default a kernel is forked from a kernel parent
(``kernel_parent.py``, ``forked_kernels.py``): the sandbox, the socket folder and the account files are then
the parent's, made once for all the student's notebooks, or in a root worker for all its students
(``stage.py``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import sys
import tempfile
import time
import uuid
from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool, DottedObjectName, Float, Integer, Unicode, default

from ..data import NAMES_VARIABLE
from . import policy
from .forked_kernels import KERNEL_MODULE, PARENT_MODULE, ForkedProvisioner, KernelParent, KernelParents
from .policy import NOTEBOOK_VARIABLES, SandboxError
from .stage import Stage

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


class PromptKernelClient(AsyncKernelClient):
    """jupyter_client's client, ready as soon as the kernel's IOPub has reported idle after a kernel_info request,
    instead of after 0.2 s in which IOPub said nothing (0.2 of the 0.28 s a forked kernel took to start)."""

    async def _async_wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            request = self.kernel_info()
            try:
                reply = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                reply = None
            if reply and reply["parent_header"].get("msg_id") == request and await self._idle_after(request):
                self._handle_kernel_info_reply(reply)
                return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")

    wait_for_ready = _async_wait_for_ready  # (AsyncKernelClient binds the name to KernelClient's own)

    async def _idle_after(self, request: str, seconds: float = 1.0) -> bool:
        """Whether IOPub delivers the idle status of ``request`` (if it was not connected yet, it is lost)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            try:
                msg = await self.iopub_channel.get_msg(timeout=left)
            except Empty:
                return False
            if (
                msg["msg_type"] == "status"
                and msg["parent_header"].get("msg_id") == request
                and msg["content"].get("execution_state") == "idle"
            ):
                return True
        return False


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
    kernel_parent = Bool(
        True,
        config=True,
        help=(
            "Fork each kernel from a kernel parent: a Python in the sandbox that has imported torch, ipykernel and "
            "matplotlib once, so that a kernel starts without paying for them (kernel_parent.py). One per student, "
            "or in a grading worker that runs as root, one for all its students (stage.py). False: every kernel "
            "starts in a new sandbox of its own."
        ),
    )

    stage_students = Bool(
        True,
        config=True,
        help=(
            "In a grading worker that runs as root, fork the kernels of all its students from one kernel parent, "
            "showing each student's folder on its stage in turn (stage.py). False: one kernel parent per student."
        ),
    )

    client_class = DottedObjectName("autograder.sandbox.kernel_manager.PromptKernelClient")

    @default("client_factory")
    def _client_factory_default(self):
        return PromptKernelClient

    @default("process_limit")
    def _process_limit_default(self) -> int:
        return max(64, 32 + 4 * (os.cpu_count() or 1))

    _rundir = None  # the kernel's sockets, log and account files (its kernel parent's, when forked)
    _lent = None  # what gives the student folder back, once lent to sandbox_uid for this kernel
    _forked = False  # the kernel was forked by its student's kernel parent

    def _lend(self, folder: str):
        """As root, give ``folder`` to sandbox_uid; returns what gives it back (None when not root)."""
        if os.geteuid() != 0:
            return None
        st = os.stat(folder)
        chown_tree(folder, self.sandbox_uid, self.sandbox_gid)

        def give_back():
            if os.path.isdir(folder):  # (unless it is gone meanwhile)
                chown_tree(folder, st.st_uid, st.st_gid)

        return give_back

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

    def _new_rundir(self) -> str:
        """A private folder: ipc/ for the sockets, and the kernel's /etc/passwd and /etc/group."""
        rundir = tempfile.mkdtemp(prefix="nbgrader-sandbox-")
        os.mkdir(os.path.join(rundir, "ipc"), 0o700)
        uid, gid = self._run_as() or (os.getuid(), os.getgid())
        for name, text in zip(("passwd", "group"), policy.account_files(uid, gid)):
            with open(os.path.join(rundir, name), "w") as f:
                f.write(text)
            os.chmod(f.name, 0o644)
        if os.geteuid() == 0:
            os.chown(os.path.join(rundir, "ipc"), self.sandbox_uid, self.sandbox_gid)
        return rundir

    def _interpreter(self) -> str:
        """The kernel spec's Python, as jupyter_client resolves it."""
        first = self.kernel_spec.argv[0]
        return (
            sys.executable
            if first in ("python", f"python{sys.version_info[0]}", "python%i.%i" % sys.version_info[:2])
            else first
        )

    def _student_folder(self, cwd) -> str:
        if not cwd or not os.path.isdir(cwd):
            raise SandboxError(f"a sandboxed kernel needs its student folder as cwd, not {cwd!r}")
        return os.path.realpath(cwd)

    def _staged(self) -> bool:
        return KernelParents.staged and self.stage_students

    def _forks(self) -> bool:
        spec = self.kernel_spec
        return self.kernel_parent and spec is not None and spec.argv[1:3] == ["-m", KERNEL_MODULE]

    def _parent_recipe(self, env: dict, folder: str | None) -> tuple:
        """(key, start): what tells this kernel's sandbox from others (the kernel parents' key), and what starts a
        kernel parent in it for ``folder``, or on a stage (``_staged``) for any student's folder."""
        interpreter = self._interpreter()
        kernel_env = policy.kernel_environment(env, interpreter, PACKAGE_DIR)
        parent_env = {k: v for k, v in kernel_env.items() if k not in NOTEBOOK_VARIABLES}
        staged = self._staged()
        sandbox = (interpreter, tuple(sorted(parent_env.items())), self._run_as(), self._limits(), self.tmp_size)
        key = ("stage" if staged else folder, *sandbox)

        def start() -> KernelParent:
            rundir, stage = self._new_rundir(), None
            try:
                if staged:
                    stage = Stage(os.path.join(rundir, "stage"), os.path.join(rundir, "lend"))
                argv = self._command_line([interpreter, "-m", PARENT_MODULE], folder, env, rundir, stage)
                return KernelParent(key, argv, parent_env, stage.folder if stage else folder, rundir, stage)
            except BaseException:
                if stage is None or stage.close():
                    shutil.rmtree(rundir, ignore_errors=True)
                raise

        return key, start

    def start_staged_parent(self, env: dict) -> KernelParent | None:
        """Start the stage's kernel parent ahead of the first kernel, whose environment ``env`` is, without waiting
        for it to load (a grading worker's fork server does, while it loads), and return it. None when kernels get
        no staged parent."""
        if self._forks() and self._staged():
            return KernelParents.start_ahead(*self._parent_recipe(env, None))
        return None

    async def _kernel_parent_for(self, kw: dict) -> KernelParent:
        """The kernel parent of this kernel's sandbox, showing the kernel's folder: the running one, or a new one.
        On a stage (``_staged``), one parent serves every student whose sandbox is alike."""
        folder = self._student_folder(kw.get("cwd"))
        key, start = self._parent_recipe(kw.get("env") or dict(os.environ), folder)
        if self._staged():
            policy.check_student_folder(folder, self._course_root())
        for _ in range(2):  # a parent that a student's kernel stopped is closed when it is cleared: then a new one
            parent = await KernelParents.get(key, start, self.start_timeout)
            if parent.show(folder):
                return parent
        raise SandboxError(f"no kernel parent could show {folder} (see the worker's log)")

    async def _async_pre_start_kernel(self, **kw):
        """Talk to the kernel over ipc sockets in a private folder; fork it from its parent when it can be."""
        self._tool(self.bwrap)
        spec = self.kernel_spec
        self._forked = self._forks()
        if self._forked:
            parent = await self._kernel_parent_for(kw)
            self._rundir = parent.rundir
            self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
            self.provisioner = ForkedProvisioner(kernel_id=self.kernel_id, kernel_spec=spec, parent=self)
            self.provisioner.kernel_parent = parent
            name = f"kernel-{self.kernel_id}"
        else:
            self._rundir = self._rundir or self._new_rundir()
            name = "kernel"
        ipc = os.path.join(self._rundir, "ipc")
        self.transport = "ipc"
        self.ip = os.path.join(ipc, name)
        self.connection_file = os.path.join(ipc, f"{name}.json")
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        if os.geteuid() == 0:
            os.chown(self.connection_file, self.sandbox_uid, self.sandbox_gid)
        return cmd, kw

    def _limits(self) -> tuple:
        return (
            ("as", self.memory_limit),
            ("cpu", self.cpu_time_limit),
            ("nproc", self.process_limit),
            ("fsize", self.file_size_limit),
        )

    def _course_root(self) -> str:
        return os.path.realpath(self.course_root or self.config.get("CourseDirectory", {}).get("root") or os.getcwd())

    def _command_line(self, kernel_cmd: list, student_folder: str, env: dict, rundir: str, stage=None) -> list:
        """The sandbox of ``student_folder``, or with a ``Stage``, of whichever student folder it shows."""
        names = env.get(NAMES_VARIABLE, "")
        paths = policy.KernelPaths(
            student_folder=stage.student if stage else student_folder,
            stage=stage.folder if stage else "",
            course_root=self._course_root(),
            ipc_folder=os.path.join(rundir, "ipc"),
            python_prefixes=policy.python_prefixes(kernel_cmd[0]),
            package_dir=PACKAGE_DIR,
            names_file=os.path.abspath(names) if names else "",
            passwd=os.path.join(rundir, "passwd"),
            group=os.path.join(rundir, "group"),
        )
        choom = shutil.which("choom")
        tools = policy.Tools(
            bwrap=self._tool(self.bwrap),
            prlimit=self._tool("prlimit"),
            setpriv=self._tool("setpriv") if os.geteuid() == 0 else "",
            choom=os.path.realpath(choom) if choom else "",
        )
        return policy.command_line(kernel_cmd, paths, tools, dict(self._limits()), self.tmp_size, self._run_as())

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        try:
            cwd = self._student_folder(kw.get("cwd"))
            env = kw.get("env") or dict(os.environ)
            kw.update(cwd=cwd, env=policy.kernel_environment(env, kernel_cmd[0], PACKAGE_DIR))
            if self._lent is None:
                self._lent = self._lend(cwd)
            if self._forked:
                log_path = self.provisioner.kernel_parent.log_path
                await super()._async_launch_kernel(kernel_cmd, **kw)
            else:
                argv = self._command_line(kernel_cmd, cwd, env, self._rundir)
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

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        """jupyter_client's wait for a killed kernel to end, polling every 5 ms instead of 0.1 s: it ends in a few."""
        await super()._async_wait(pollinterval=0.005)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        """Also give the student folder back and remove the socket directory (a kernel parent's stays for its next
        kernel, once the parent has killed what this kernel left running)."""
        await super()._async_cleanup_resources(restart=restart)
        if restart:
            return
        if isinstance(self.provisioner, ForkedProvisioner):
            self.provisioner.ended()
        if self._lent is not None:
            give_back, self._lent = self._lent, None
            give_back()
        if self._rundir is not None and not self._forked:
            shutil.rmtree(self._rundir, ignore_errors=True)
        self._rundir = None

    cleanup_resources = _async_cleanup_resources

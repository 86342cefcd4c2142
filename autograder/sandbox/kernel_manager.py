"""SandboxedKernelManager: jupyter_client's kernel manager, with the kernel forked in the sandbox of ``policy``.

It adds what a command line cannot hold: the connection file and account files, waiting until the kernel listens
(naming the cause when it never does), the relay that every message from the kernel passes through, and what the
kernel left in its folder (docs/design/sandbox.md).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
import uuid

from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool, DottedObjectName, Float, Unicode, default, validate

from ..data import NAMES_VARIABLE
from . import policy
from .environment import NOTEBOOK_VARIABLES, kernel_environment
from .forked_kernels import ForkedProvisioner, KernelParents, all_bound, kernel_folder
from .in_sandbox import COLD, KERNEL_MODULE
from .kernel_parent import PARENT_MODULE, KernelParent
from .limits import SandboxLimits
from .policy import SandboxError
from .prompt_client import PromptKernelClient
from .relay import Relay
from .stage import CopyStage, Stage, private_folder, remove_private_folder

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class SandboxedKernelManager(SandboxLimits, AsyncKernelManager):
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
    start_timeout = Float(60, config=True, help="Seconds the kernel may take to listen.")
    kernel_parent = Bool(
        True,
        config=True,
        help=(
            "Fork each kernel from a kernel parent: a Python in the sandbox that has imported torch and ipykernel "
            "once, so that a kernel starts without paying for them (kernel_parent.py). One for all the students a "
            "process grades (stage_students), else one per student. False: every kernel "
            "starts in a new sandbox of its own, from a parent that imports nothing ahead."
        ),
    )

    stage_students = Bool(
        True,
        config=True,
        help=(
            "Fork the kernels of all the students a process grades (a grading worker, one nbgrader autograde run) "
            "from one kernel parent, showing each student's folder on its stage in turn (stage.py). False: one "
            "kernel parent per student."
        ),
    )

    client_class = DottedObjectName("autograder.sandbox.prompt_client.PromptKernelClient")

    @default("client_factory")
    def _client_factory_default(self):
        return PromptKernelClient

    setup_ahead = None  # the notebook's first cells and which its kernel parent may run ahead (GradingExecute's)
    _rundir = None  # the kernel's connection file, its relay's sockets and its account files (its kernel parent's)
    relay = None  # while the kernel runs: the Relay every connection to it goes through
    left_behind = None  # once the kernel has ended: what it left in its folder (kernel_parent.left_behind), or None

    @validate("transport_encryption")
    def _plain_messages(self, proposal):
        if proposal["value"] != "disabled":
            raise SandboxError(
                "the sandbox's relay reads the size of each message to bound it: "
                "SandboxedKernelManager.transport_encryption must stay disabled (the sockets never leave this machine)"
            )
        return proposal["value"]

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

    def _check_spec(self) -> None:
        """Only an ipykernel kernel can be forked by a kernel parent, and so run in the sandbox."""
        spec = self.kernel_spec
        if spec is None or spec.argv[1:3] != ["-m", KERNEL_MODULE]:
            argv = " ".join(spec.argv[:3]) if spec else "none"
            raise SandboxError(f"the sandbox runs ipykernel kernels (python -m {KERNEL_MODULE}), not {argv}")

    def _parent_recipe(self, env: dict, folder: str | None, staged: bool) -> tuple:
        """(key, start): what tells this kernel's sandbox from others (the kernel parents' key), and what starts a
        kernel parent in it for ``folder``, or on a stage (``staged``) for any student's folder."""
        interpreter = self._interpreter()
        kernel_env = kernel_environment(env, interpreter, PACKAGE_DIR)
        parent_env = {k: v for k, v in kernel_env.items() if k not in NOTEBOOK_VARIABLES}
        staged, cold = staged and self.kernel_parent, not self.kernel_parent
        sizes = (self.tmp_size, self.scratch_size)
        sandbox = (interpreter, tuple(sorted(parent_env.items())), self._run_as(), self._limits(), sizes)
        key = ("stage" if staged else folder, uuid.uuid4().hex if cold else "", *sandbox)

        def start() -> KernelParent:
            rundir, stage = private_folder(*(self._run_as() or (os.getuid(), os.getgid()))), None
            try:
                if staged:
                    on = os.path.join(rundir, "stage")
                    stage = Stage(on, os.path.join(rundir, "lend")) if KernelParents.mounts else CopyStage(on)
                argv = [interpreter, "-m", PARENT_MODULE, *([COLD] if cold else [])]
                argv = self._command_line(argv, folder, env, rundir, stage)
                folder_shown = stage.folder if stage else folder
                return KernelParent(key, argv, parent_env, folder_shown, rundir, stage, single_use=cold)
            except BaseException:
                if stage is None or stage.close():
                    remove_private_folder(rundir)
                raise

        return key, start

    def start_staged_parent(self, env: dict) -> KernelParent | None:
        """Start the stage's kernel parent ahead of the first kernel, whose environment ``env`` is, without waiting
        for it to load (a grading worker's fork server does, while it loads), and return it. None when kernels get
        no staged parent."""
        if self.kernel_parent and self.stage_students:
            self._check_spec()
            return KernelParents.start_ahead(*self._parent_recipe(env, None, True))
        return None

    async def _kernel_parent_for(self, kw: dict) -> KernelParent:
        """The kernel parent of this kernel's sandbox, showing the kernel's folder: the running one, or a new one.
        On a stage (``stage_students``), one parent serves every student whose sandbox is alike."""
        folder = self._student_folder(kw.get("cwd"))
        staged = self.stage_students and self.kernel_parent and not KernelParents.stage_busy_with_another(folder)
        key, start = self._parent_recipe(kw.get("env") or dict(os.environ), folder, staged)
        if staged:
            policy.check_student_folder(folder, self._course_root())
        for _ in range(2):  # a parent that a student's kernel stopped is closed when it is cleared: then a new one
            parent = await KernelParents.get(key, start, self.start_timeout)
            if parent.show(folder):
                return parent
        raise SandboxError(f"no kernel parent could show {folder} (see the worker's log)")

    async def _async_pre_start_kernel(self, **kw):
        """The kernel binds ipc sockets in the sandbox's own socket folder, as its connection file (in the parent's
        private folder) says; the parent forks it."""
        self._tool(self.bwrap)
        self._check_spec()
        self.left_behind = None
        parent = await self._kernel_parent_for(kw)
        self._rundir = parent.rundir
        self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
        self.provisioner = ForkedProvisioner(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self)
        self.provisioner.kernel_parent = parent
        name = f"kernel-{self.kernel_id}"
        self.transport = "ipc"
        self.ip = f"{policy.SOCKETS}/{name}"  # as the kernel sees it; the grader's clients get the relay's (_relay)
        self.connection_file = os.path.join(self._rundir, "connection", f"{name}.json")
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        if os.geteuid() == 0:
            os.chown(self.connection_file, self.sandbox_uid, self.sandbox_gid)
        return cmd, kw

    def _course_root(self) -> str:
        return os.path.realpath(self.course_root or self.config.get("CourseDirectory", {}).get("root") or os.getcwd())

    def _command_line(self, kernel_cmd: list, student_folder: str, env: dict, rundir: str, stage=None) -> list:
        """The sandbox of ``student_folder``, or with a ``Stage``, of whichever student folder it shows."""
        names = env.get(NAMES_VARIABLE, "")
        paths = policy.KernelPaths(
            student_folder=stage.student if stage else student_folder,
            stage=stage.folder if stage else "",
            course_root=self._course_root(),
            connection_folder=os.path.join(rundir, "connection"),
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
        limits = dict(self._limits())
        return policy.command_line(kernel_cmd, paths, tools, limits, self.tmp_size, self._run_as(), self.scratch_size)

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        parent = self.provisioner.kernel_parent
        try:
            cwd = self._student_folder(kw.get("cwd"))
            env = kw.get("env") or dict(os.environ)
            kw.update(cwd=cwd, env=kernel_environment(env, kernel_cmd[0], PACKAGE_DIR))
            await super()._async_launch_kernel(kernel_cmd, **kw)
            self._relay(await self._await_listening(parent))
        except BaseException:
            if self.provisioner and self.provisioner.has_process:
                await self.provisioner.kill()
                await self.provisioner.wait()
            await self._async_cleanup_resources()
            raise

    async def _await_listening(self, parent: KernelParent) -> int:
        """Wait until the kernel has bound its sockets; name the cause if it never does. Returns the kernel's socket
        folder as its sandbox shows it, opened while the kernel is known to run (``forked_kernels.kernel_folder``)."""
        proc, names = self.provisioner.process, self._socket_names()
        deadline, folder = time.monotonic() + self.start_timeout, None
        try:
            while folder is None or not all_bound(folder, names):
                folder = kernel_folder(proc.pid) if folder is None else folder
                failed = None
                if proc.poll() is not None:
                    failed = f"exited with status {proc.returncode}"
                elif time.monotonic() > deadline:
                    failed = f"did not listen within {self.start_timeout:g} s"
                if failed:
                    raise SandboxError(
                        f"the sandboxed kernel {failed} before it started (bwrap or kernel output follows):\n"
                        + parent.output.text()
                    )
                await asyncio.sleep(0.002)  # a forked kernel binds them 40-60 ms after the fork
            if proc.poll() is not None:  # so the pid was the kernel's when its folder was opened
                raise SandboxError(f"the sandboxed kernel exited with status {proc.returncode} as it started")
        except BaseException:
            if folder is not None:
                os.close(folder)
            raise
        return folder

    def _socket_names(self) -> list:
        return [f"{os.path.basename(self.ip)}-{port}" for port in self.ports]

    def _relay(self, folder: int) -> None:
        """From now on the grader's clients connect to the relay (in the parent's private folder), not the kernel."""
        names = self._socket_names()
        answering = [name for name, port in zip(names, self.ports) if port != self.iopub_port]  # (IOPub broadcasts)
        self.relay = Relay(folder, os.path.join(self._rundir, "relay"), names, self.max_message_bytes, answering)
        self.ip = os.path.join(self.relay.folder, os.path.basename(self.ip))

    def cleanup_ipc_files(self) -> None:
        """Nothing to remove: the relay removes its sockets, and the kernel's are in its sandbox."""

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        """jupyter_client's wait for a killed kernel to end, polling every 5 ms instead of 0.1 s: it ends in a few."""
        await super()._async_wait(pollinterval=0.005)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        """Also close the relay, have the kernel parent clear the sandbox for its next kernel (``left_behind``: what
        this one left in its folder), and forget the parent's folder."""
        await super()._async_cleanup_resources(restart=restart)
        if self.relay is not None:
            self.relay.close()
            self.relay = None
        if restart:
            return
        if isinstance(self.provisioner, ForkedProvisioner):  # (called twice: shutdown, then nbclient's cleanup)
            self.left_behind = self.provisioner.ended() or self.left_behind
        self._rundir = None

    cleanup_resources = _async_cleanup_resources

"""Run every autograded notebook's ipykernel inside bubblewrap (grading principle 5).

The kernel sees the machine read-only, with the course root (gradebook.db, source/,
submitted/, the other students) replaced by an empty tmpfs; only the student's own folder
(the kernel's working directory), a private /tmp and its own ipc socket directory are
writable.  It has no network (a new network namespace holds only loopback), its own
pid/ipc/uts namespaces, no capabilities, no_new_privs, a filtered environment, and
resource limits; it is killed with the grader.  When the grader runs as root, the kernel
runs as an unprivileged uid (``sandbox_uid``), because root ignores RLIMIT_NPROC and
could reach root-owned sockets.

nbgrader's ``Execute`` passes ``kernel_manager_class=AsyncKernelManager`` as a keyword,
which beats ``c.Execute.kernel_manager_class``; so enable the sandbox in
``nbgrader_config.py`` by swapping the preprocessor::

    c.Autograde.autograde_preprocessors = [
        "autograder.sandbox.SandboxedExecute",
        "nbgrader.preprocessors.IgnorePattern",
        "nbconvert.preprocessors.ClearMetadataPreprocessor",
        "nbgrader.preprocessors.LimitOutput",
        "nbgrader.preprocessors.SaveAutoGrades",
        "nbgrader.preprocessors.AssignLatePenalties",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
    c.SandboxedKernelManager.memory_limit = 4 * 2**30   # optional, see the traits below

Needs ``bwrap`` (bubblewrap) and util-linux's ``prlimit`` (and ``setpriv`` as root).  If
anything is missing or the sandbox does not come up, starting the kernel raises
:class:`SandboxError` and the notebook is not run unsandboxed (fail closed).
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import shutil
import stat
import sys
import tempfile
import time

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir
from nbgrader.preprocessors import Execute
from traitlets import Float, Integer, List, Unicode, default

GiB = 2**30
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class SandboxError(RuntimeError):
    """The sandboxed kernel could not be started; the notebook was not run."""


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _chown_tree(top: str, uid: int, gid: int) -> None:
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
    """An AsyncKernelManager whose kernel runs in bubblewrap; see the module docstring."""

    bwrap = Unicode("bwrap", config=True, help="The bubblewrap executable.")
    course_root = Unicode(
        "",
        config=True,
        help=(
            "Folder hidden entirely from the kernel (gradebook.db, source/, submitted/, other "
            "students). Default: nbgrader's CourseDirectory.root if configured, else the "
            "grading process's working directory, where nbgrader runs."
        ),
    )
    hidden_paths = List(
        Unicode(),
        ["~", "/root", "/home", "/run", jupyter_runtime_dir()],
        config=True,
        help=(
            "Further folders replaced by an empty tmpfs: the grader's home (secrets, other "
            "courses), Jupyter's runtime dir and /run (other kernels' and daemons' sockets)."
        ),
    )
    readonly_paths = List(
        Unicode(),
        [PACKAGE_DIR, "$BACKPROP_NINJA_NAMES"],
        config=True,
        help=(
            "Paths bound back read-only when a hidden folder or /tmp covers them; "
            "environment variables are expanded, unset or missing ones skipped. The "
            "Python installation running the kernel is always bound back."
        ),
    )
    env_allowlist = List(
        Unicode(),
        [
            "PATH",
            "LANG",
            "LANGUAGE",
            "LC_*",
            "TZ",
            "PYTHON*",
            "OMP_NUM_THREADS",
            "MKL_NUM_THREADS",
            "OPENBLAS_NUM_THREADS",
            "NBGRADER_*",
            "BACKPROP_NINJA_*",
            "JPY_*",
        ],
        config=True,
        help=(
            "Glob patterns of environment variables passed to the kernel; all others (tokens, "
            "credentials of the grading machine) are dropped, so output cannot leak them."
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
    _lent = None  # (folder, uid, gid) of the student folder lent to sandbox_uid

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
        return path

    async def _async_pre_start_kernel(self, **kw):
        """Talk to the kernel over ipc sockets in a private directory bound into the sandbox."""
        self._tool(self.bwrap)
        if self._rundir is None:
            self._rundir = tempfile.mkdtemp(prefix="nbgrader-sandbox-")
            os.mkdir(os.path.join(self._rundir, "ipc"), 0o700)
        ipc = os.path.join(self._rundir, "ipc")
        self.transport = "ipc"
        self.ip = os.path.join(ipc, "kernel")
        self.connection_file = os.path.join(ipc, "kernel.json")
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        if os.geteuid() == 0:
            for path in (ipc, self.connection_file):
                os.chown(path, self.sandbox_uid, self.sandbox_gid)
        return cmd, kw

    def _bwrap_argv(self, cmd: list[str], cwd: str) -> list[str]:
        root = os.geteuid() == 0
        course = self.course_root or self.config.get("CourseDirectory", {}).get("root") or os.getcwd()
        course = os.path.realpath(course)
        if root and self.sandbox_uid == 0:
            raise SandboxError("sandbox_uid must not be 0: root ignores the process limit")
        if course == "/" or cwd == course or not _inside(cwd, course):
            raise SandboxError(
                f"refusing to run a kernel in {cwd!r}: it must be a student's "
                f"folder inside the course root {course!r} (which is hidden; "
                "set SandboxedKernelManager.course_root)"
            )
        hidden = {os.path.realpath(os.path.expanduser(p)) for p in self.hidden_paths}
        hidden = {h for h in hidden | {course} if h != "/" and os.path.isdir(h)}
        veiled = hidden | {"/tmp", "/dev/shm"}
        tops = sorted(h for h in hidden if not any(_inside(h, v) for v in veiled - {h}))
        interp = os.path.dirname(os.path.dirname(cmd[0]))
        ro = [
            sys.prefix,
            sys.base_prefix,
            sys.exec_prefix,
            interp,
            os.path.dirname(os.path.dirname(os.path.realpath(cmd[0]))),
        ]
        for p in self.readonly_paths:
            p = os.path.expandvars(os.path.expanduser(p))
            if "$" not in p and os.path.exists(p):
                ro.append(p)
        ro = {os.path.realpath(p) for p in ro}
        ro = {p for p in ro if any(_inside(p, v) for v in veiled)}
        binds = [(p, "--ro-bind") for p in ro if not any(_inside(p, q) for q in ro - {p})]
        binds += [(os.path.join(self._rundir, "ipc"), "--bind"), (cwd, "--bind")]
        binds.sort(key=lambda b: (b[0].count("/"), b[1] == "--bind"))
        argv = [
            self._tool(self.bwrap),
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "sandbox",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ]
        for tmp in ("/tmp", "/dev/shm"):
            argv += ["--perms", "1777", "--size", str(self.tmp_size), "--tmpfs", tmp]
        for top in tops:
            argv += ["--perms", "0755", "--size", str(2**20), "--tmpfs", top]
        made = set(tops) | {"/tmp", "/dev/shm"}
        for path, how in binds:  # bwrap would make missing parents 0700: unreachable
            parent, missing = os.path.dirname(path), []
            while parent not in made and parent != "/":
                missing.append(parent)
                parent = os.path.dirname(parent)
            for folder in reversed(missing):
                argv += ["--perms", "0755", "--dir", folder]
            made.update(missing + [path])
            argv += [how, path, path]
        for top in tops:
            argv += ["--remount-ro", top]
        # ipykernel's parent poller would take the pid namespace's init for a new parent
        # and exit (launch_kernel sets JPY_PARENT_PID outside); --die-with-parent does its job.
        argv += ["--chdir", cwd, "--setenv", "JPY_PARENT_PID", "1"]
        if root:  # keep just what setpriv needs to become sandbox_uid and drop everything
            argv += [
                "--cap-drop",
                "ALL",
                "--cap-add",
                "CAP_SETUID",
                "--cap-add",
                "CAP_SETGID",
                "--cap-add",
                "CAP_SETPCAP",
                "--",
                self._tool("setpriv"),
                f"--reuid={self.sandbox_uid}",
                f"--regid={self.sandbox_gid}",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
            ]
        else:  # per-sandbox process count: RLIMIT_NPROC is set inside the new user ns
            argv += ["--unshare-user", "--disable-userns"]
        argv += ["--", self._tool("prlimit"), "--core=0"]
        for opt, value, slack in (
            ("as", self.memory_limit, 0),
            ("cpu", self.cpu_time_limit, 5),
            ("nproc", self.process_limit, 0),
            ("fsize", self.file_size_limit, 0),
        ):
            if value:
                argv.append(f"--{opt}={value}:{value + slack}")
        argv.append("--")
        if shutil.which("choom"):  # the OOM killer should pick a sandboxed process first
            argv += [shutil.which("choom"), "-n", "1000", "--"]
        return argv + cmd

    def _kernel_env(self, env: dict[str, str]) -> dict[str, str]:
        spec_env = set((self.kernel_spec.env if self.kernel_spec else None) or {})
        keep = {
            k: v
            for k, v in env.items()
            if k in spec_env or any(fnmatch.fnmatchcase(k, pat) for pat in self.env_allowlist)
        }
        keep.update(HOME="/tmp", TMPDIR="/tmp")
        return keep

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        try:
            cwd = kw.get("cwd")
            if not cwd or not os.path.isdir(cwd):
                raise SandboxError(f"a sandboxed kernel needs its student folder as cwd, not {cwd!r}")
            cwd = os.path.realpath(cwd)
            argv = self._bwrap_argv(kernel_cmd, cwd)
            kw.update(cwd=cwd, env=self._kernel_env(kw.get("env") or dict(os.environ)))
            if os.geteuid() == 0:
                if self._lent is None:
                    st = os.stat(cwd)
                    self._lent = (cwd, st.st_uid, st.st_gid)
                _chown_tree(cwd, self.sandbox_uid, self.sandbox_gid)
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
            _chown_tree(folder, uid, gid)
        if self._rundir is not None:
            shutil.rmtree(self._rundir, ignore_errors=True)
            self._rundir = None

    cleanup_resources = _async_cleanup_resources


class SandboxedExecute(Execute):
    """nbgrader's Execute preprocessor with every kernel started by SandboxedKernelManager."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)

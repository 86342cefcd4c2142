"""The grader's side of a kernel parent (``in_sandbox``, which runs inside): a warm Python in the sandbox that forks
the kernels, started, asked, and ended here.

The parent answers one JSON line per request on its stdout; its stderr (and its kernels') is kept as a short tail in
memory (``OutputTail``), never on disk: a kernel may write gigabytes there.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import threading
import time

from ..common.phases import descendants
from .policy import SandboxError
from .stage import CopyStage, Stage, remove_private_folder

PARENT_MODULE = "autograder.sandbox.in_sandbox"  # ``python -m PARENT_MODULE`` runs a kernel parent
# A parent answers in milliseconds (a fork, a waitpid, emptying /tmp); one that has not within ANSWER_SECONDS is
# given more time while it runs, up to BUSY_SECONDS (on a node throttled to a tenth of a core, running the setup cells
# ahead took more than ten), and none when stopped (a kernel of the same uid can send it SIGSTOP: as root)
ANSWER_SECONDS, BUSY_SECONDS = 10, 120
TAIL_BYTES = 64 * 1024  # what the grader keeps of a sandbox's stderr: the end, for the message when it fails


def namespace_pids(root: int) -> dict:
    """{pid inside its pid namespace: host pid} of ``root``'s descendants, from /proc."""
    found = {}
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/status") as f:
                nspid = next((line.split(":", 1)[1] for line in f if line.startswith("NSpid:")), str(pid))
        except OSError:  # gone meanwhile
            continue
        found[int(nspid.split()[-1])] = pid
    return found


def running(pid: int | None) -> bool:
    """Whether the process ``pid`` is running or waiting, not stopped (False when that cannot be read)."""
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "Tt"
    except (OSError, IndexError):
        return False


class OutputTail:
    """The end of what a process writes to a pipe, kept in memory (never on disk: a kernel may write gigabytes)."""

    def __init__(self):
        self.read_end, self.write_end = os.pipe()
        self._tail = bytearray()
        self._lock = threading.Lock()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        while chunk := os.read(self.read_end, 65536):
            with self._lock:
                self._tail += chunk
                del self._tail[:-TAIL_BYTES]
        os.close(self.read_end)

    def started(self) -> None:
        """The process has the write end: close this one, so that the drain ends with the process."""
        os.close(self.write_end)

    def forget(self) -> None:
        """In a forked process that does not drain this pipe (its drain thread stayed in the parent process)."""
        try:
            os.close(self.read_end)
        except OSError:  # the drain had reached the end and closed it already
            pass

    def text(self, chars: int = 3000) -> str:
        with self._lock:
            return bytes(self._tail[-chars:]).decode(errors="replace")


class KernelParent:
    """A kernel parent, running in the sandbox ``argv`` makes (``policy.command_line``): one student's, or with a
    ``stage``, a worker's for all its students, one at a time (``stage.py``); ``single_use``, for one kernel."""

    def __init__(
        self,
        key,
        argv: list,
        env: dict,
        cwd: str,
        rundir: str,
        stage: Stage | CopyStage | None = None,
        single_use=False,
    ):
        self.key, self.rundir, self.stage, self.single_use = key, rundir, stage, single_use
        self.kernels = set()  # the pids (inside) of its kernels that have not ended
        self.started = False  # it said it is ready (``ready``)
        self.host_pid = None  # the parent's pid outside the sandbox, once it is ready
        self.output = OutputTail()  # the parent's stderr and its kernels'
        try:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.output.write_end,
                cwd=cwd,
                env=env,
                text=True,
            )
        finally:
            self.output.started()

    def _fail(self, why: str):
        self.close()
        raise SandboxError(f"the sandbox's kernel parent {why} (bwrap or kernel output follows):\n{self.output.text()}")

    async def ready(self, timeout: float) -> None:
        """Wait until the parent has imported what its kernels share (at once when it already has)."""
        if self.started:
            return
        try:
            reply = await asyncio.wait_for(asyncio.to_thread(self.process.stdout.readline), timeout)
        except asyncio.TimeoutError:
            self._fail(f"did not start within {timeout:g} s")
        if not reply:
            self._fail(f"exited with status {self.process.wait()} before it started")
        self.host_pid = namespace_pids(self.process.pid).get(json.loads(reply).get("pid"))
        self.started = True

    def ask(self, request: dict) -> dict:
        """The parent's reply; if it has none in time (``ANSWER_SECONDS``, ``BUSY_SECONDS``), it is closed."""
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            waited = 0
            while not select.select([self.process.stdout], [], [], ANSWER_SECONDS)[0]:
                waited += ANSWER_SECONDS
                if waited >= BUSY_SECONDS or not running(self.host_pid):
                    self.close()
                    return {"error": f"the kernel parent did not answer within {waited} s"}
            reply = self.process.stdout.readline()
        except (OSError, ValueError):  # the parent is gone (its sandbox died, or it was closed)
            reply = ""
        if not reply:
            return {"error": "the kernel parent has exited"}
        return json.loads(reply)

    def alive(self) -> bool:
        return self.process.poll() is None

    def fork(self, kernel_cmd: list, env: dict, cwd: str, setup: dict | None = None) -> "ForkedKernel":
        """A kernel; with ``setup`` (``SandboxedKernelManager.setup_ahead``), one that takes the setup cells the parent
        ran ahead."""
        reply = self.ask({"start": {"argv": kernel_cmd, "env": env, "cwd": cwd, **({"setup": setup} if setup else {})}})
        if "pid" not in reply:
            self._fail(f"could not fork a kernel: {reply.get('error')}")
        self.kernels.add(reply["pid"])
        return ForkedKernel(self, reply["pid"])

    def show(self, folder: str) -> bool:
        """Make ``folder`` the one the next kernel works in; False if the parent did not survive clearing the
        sandbox (it is closed: start another; a kernel may have killed it, and its sandbox may not have ended
        yet). On a stage, the student before is cleared away first: every process of theirs, /tmp, /dev/shm,
        their sockets, and their folder itself."""
        if self.stage is not None and self.stage.shown != folder:
            if self.kernels:
                self._fail(f"still runs a kernel of {self.stage.shown}: it cannot show {folder}")
            if not self.leave():
                return False
        elif not self._cleared():
            return False
        if self.stage is not None:
            self.stage.show(folder)  # (a mounted stage shows it already; a copy stage copies it as it is now)
        return True

    def leave(self) -> bool:
        """Clear away the student shown on the stage (see ``show``); False if the parent did not survive it."""
        if not self.started:  # started ahead and still loading: it never showed anyone (and is not yet answering)
            return self.alive()
        if not self._cleared():
            return False
        self.stage.hide()
        return True

    def _cleared(self) -> bool:
        """Have the parent clear its sandbox; if it cannot (it did not answer, or the sandbox holds too many files),
        close it and say False."""
        return self._clear()[0]

    def _clear(self) -> tuple:
        """(cleared, what the kernel before left in its folder: the parent's summary, or None)."""
        reply = self.ask({"clear": True})
        left = reply.get("left") if isinstance(reply.get("left"), dict) else None
        if reply.get("cleared") is True:
            return True, left
        self.close()
        return False, left

    def inside(self, folder: str) -> str:
        """Where the sandbox sees ``folder``: on the stage if it has one (showing ``folder``), else ``folder``."""
        if self.stage is None:
            return folder
        if self.stage.shown != folder:
            self._fail(f"was asked for a kernel in {folder}, but shows {self.stage.shown}")
        return self.stage.student

    def kernel_ended(self, kernel: "ForkedKernel") -> dict | None:
        """Kill whatever the kernel left running in the sandbox, empty its /tmp, /dev/shm, scratch and socket folder;
        return the parent's summary of what it left in its folder (None: nothing, or the parent is gone)."""
        self.kernels.discard(kernel.inner_pid)
        if not self.alive():
            return None
        cleared, left = self._clear()
        if cleared and self.single_use:
            self.close()
        return left

    def close(self) -> None:
        """Stop the parent and its sandbox (every kernel in it)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        if self.stage is None or self.stage.close():  # never remove a folder through a student's mount
            remove_private_folder(self.rundir)


class ForkedKernel:
    """A forked kernel, handled the way LocalProvisioner handles the Popen of a kernel it started."""

    stdin = stdout = stderr = None

    def __init__(self, parent: KernelParent, inner_pid: int):
        self.parent, self.inner_pid = parent, inner_pid
        self.returncode = None
        self.pid = namespace_pids(parent.process.pid).get(inner_pid)
        if self.pid is None:
            parent._fail(f"forked a kernel (pid {inner_pid} in the sandbox) that the grader cannot find")
        self._pidfd = os.pidfd_open(self.pid)

    def poll(self):
        if self.returncode is None:
            if not self.parent.alive():
                self.returncode = -signal.SIGKILL  # the sandbox ended, and every process in it
            else:
                reply = self.parent.ask({"poll": self.inner_pid})
                self.returncode = reply.get("status", -signal.SIGKILL) if "error" not in reply else -signal.SIGKILL
            if self.returncode is not None:
                os.close(self._pidfd)
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.01)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            signal.pidfd_send_signal(self._pidfd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

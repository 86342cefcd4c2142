"""A pool's workers, forked from one process that loaded what a worker needs once.

A worker started as a Python of its own imports nbgrader, torch and the grading engine before it grades anyone:
1.3 CPU s, paid by every worker (in a class of 6 on two workers, a tenth of the run). The fork server
(``python -m autograder.grading.fork_server FD``) imports them once (``worker.load``), then forks a worker for
each request on its socket FD (SOCK_SEQPACKET, shared with the pool): the request holds the worker's arguments,
and its stdin, stdout and log as file descriptors. The server writes the worker's pid on that stdout first, so
the pool can kill a worker that has not said it is ready yet. Each worker is a session of its own (the pool
kills its process group), with the default SIGCHLD (the server lets the kernel reap the workers). The server
ends when the pool closes the socket or ends; its workers end with it (``worker.exit_with_parent``).
"""

import json
import os
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

MAX_REQUEST = 1 << 16


class ForkServer:
    """The pool's side: the server process and its socket."""

    def __init__(self, root: Path, env: dict, log: Path):
        self.log = log
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", __name__, str(theirs.fileno())],
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                pass_fds=[theirs.fileno()],
                start_new_session=True,
            )
        theirs.close()

    def fork(self, args: list, stdin: int, stdout: int, log: int) -> None:
        """Have the server fork a worker with ``args`` (its command-line arguments) on these descriptors."""
        socket.send_fds(self.sock, [json.dumps(args).encode()], [stdin, stdout, log])

    def close(self) -> None:
        """End the server (its workers end with it; the pool stops or kills them first)."""
        self.sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class ForkedWorker:
    """A worker the server forked, as the pool sees it: what it needs of a ``subprocess.Popen``."""

    def __init__(self, stdin: int, stdout: int):
        self.stdin = os.fdopen(stdin, "w", buffering=1)
        self.stdout = os.fdopen(stdout, "r")
        self.pid = None  # the first line on its stdout
        self.returncode = None
        self._pidfd = None

    def started(self, pid: int) -> None:
        self.pid = pid
        try:
            self._pidfd = os.pidfd_open(pid)
        except ProcessLookupError:  # ended, and reaped, already
            self.returncode = -1

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if self._pidfd is None or not select.select([self._pidfd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
            os.close(self._pidfd)
            self.returncode = -1  # (its status went to the kernel, which reaped it)
        return self.returncode

    def poll(self):
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None


def _child(args: list, fds: list) -> None:
    """In the forked worker: its own session and descriptors, then the worker itself; never returns."""
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    from . import worker

    worker.run(args)


def serve(fd: int) -> None:
    sock = socket.socket(fileno=fd)
    from . import worker

    worker.load()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the workers are reaped as they end
    while True:
        try:
            request, fds, _, _ = socket.recv_fds(sock, MAX_REQUEST, 3)
        except ConnectionResetError:
            os._exit(0)
        if not request:  # the pool closed the socket, or ended: no teardown of what was loaded for the workers
            os._exit(0)
        pid = os.fork()
        if pid == 0:
            sock.close()
            _child(json.loads(request), fds)
        try:
            os.write(fds[1], json.dumps({"pid": pid}).encode() + b"\n")
        except OSError:  # the pool has given up on this worker already
            pass
        for received in fds:
            os.close(received)


if __name__ == "__main__":
    serve(int(sys.argv[1]))

"""A pool's workers, forked from one process that loaded what a worker needs once.

The server imports nbgrader, torch and the engine, then forks a worker for each request on its socket; it also
starts the first workers' kernel parents while it loads. The protocol and its reasons:
docs/design/class-grading.md, "The fork server"; what it saves: docs/performance.md.
"""

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from ...common.tools import python_module, start_up
from ...sandbox.forked_kernels import KernelParents, PidfdProcess
from ...sandbox.stage import own_mount_namespace

MAX_REQUEST = 1 << 16
PR_SET_PDEATHSIG = 1  # prctl(2)


class ForkServer:
    """The pool's side: the server process and its socket."""

    def __init__(self, root: Path, env: dict, log: Path):
        self.log = log
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                python_module(__name__, str(theirs.fileno())),
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


class ForkedWorker(PidfdProcess):
    """A worker the server forked, as the pool sees it: what it needs of a ``subprocess.Popen`` (the pid comes
    first on its stdout, ``started``), and the kernel parent the server started ahead for it, which ends with it
    (``end_kernel_parent``)."""

    def __init__(self, stdin: int, stdout: int):
        super().__init__()
        self.stdin = os.fdopen(stdin, "w", buffering=1)
        self.stdout = os.fdopen(stdout, "r")
        self.kernel_parent = None

    def started(self, pid: int, kernel_parent: int | None = None) -> None:
        super().started(pid)
        if kernel_parent is not None:
            self.kernel_parent = PidfdProcess(kernel_parent)

    def end_kernel_parent(self) -> None:
        """Kill the sandbox the server started ahead for this worker, if it still runs (the worker ends it itself
        when it ends well; a killed worker cannot: the server started it, so it does not die with the worker)."""
        if self.kernel_parent is not None:
            self.kernel_parent.kill()
            self.kernel_parent.wait()


def _child(args: list, fds: list, kernel_parent, server: int) -> None:
    """In the forked worker: its own session and descriptors, its kernel parent, then the worker itself; never
    returns."""
    os.setsid()
    # killed when the server ends, however busy: the worker's own thread that watches for that waits for the GIL, and
    # a worker stuck in one long regular expression outlived its killed command (forked from the server's one thread)
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != server:  # the server was gone before
        os._exit(1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    KernelParents.adopt(kernel_parent)
    from . import worker

    worker.run(args)


def _waiting(sock: socket.socket) -> list:
    """The requests the pool has sent already, [(request, fds)]: it asks for its first workers as it starts the
    server."""
    found = []
    sock.setblocking(False)
    try:
        while True:
            request, fds, _, _ = socket.recv_fds(sock, MAX_REQUEST, 3)
            if not request:  # the pool has ended: the main loop sees it too
                break
            found.append((request, fds))
    except (BlockingIOError, ConnectionResetError):
        pass
    sock.setblocking(True)
    return found


def _kernel_parent_ahead(request: bytes):
    """The kernel parent of the worker ``request`` asks for, started now; None if it gets none, or if nbgrader's
    configuration fails (the worker meets that again, and reports it)."""
    from . import worker

    try:
        app = worker.nbgrader_app(json.loads(request))[-1]
    except (Exception, SystemExit):  # noqa: BLE001
        return None
    parent = worker.start_kernel_parent(app)
    if parent is not None:  # kept by itself, not by its key: an ordinary user's workers have alike sandboxes
        KernelParents.parents[object()] = KernelParents.parents.pop(parent.key)
    return parent


def _fork(request: bytes, fds: list, sock: socket.socket, kernel_parent=None) -> None:
    """Fork the worker ``request`` asks for; tell the pool its pid (and its kernel parent's)."""
    server = os.getpid()
    pid = os.fork()
    if pid == 0:
        sock.close()
        _child(json.loads(request), fds, kernel_parent, server)
    told = {"pid": pid}
    if kernel_parent is not None:  # the worker's alone from now on
        told["kernel_parent"] = kernel_parent.process.pid
        KernelParents.parents = {k: p for k, p in KernelParents.parents.items() if p is not kernel_parent}
        kernel_parent.process.stdin.close()
        kernel_parent.process.stdout.close()
    try:
        os.write(fds[1], json.dumps(told).encode() + b"\n")
    except OSError:  # the pool has given up on this worker already
        pass
    for received in fds:
        os.close(received)


def serve(fd: int) -> None:
    start_up()
    sock = socket.socket(fileno=fd)
    # As root, the server has a mount namespace of its own, which the workers it forks share (before any thread
    # starts): a kernel parent started here sees the stage its worker mounts students on
    KernelParents.mounts_decided, KernelParents.mounts = True, own_mount_namespace()
    from . import worker

    # The first workers' kernel parents load while torch and the engine load here (nbgrader's config is enough
    # to start them)
    ahead = [(request, fds, _kernel_parent_ahead(request)) for request, fds in _waiting(sock)]
    worker.load()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the workers are reaped as they end
    for request, fds, kernel_parent in ahead:
        _fork(request, fds, sock, kernel_parent)
    while True:
        try:
            request, fds, _, _ = socket.recv_fds(sock, MAX_REQUEST, 3)
        except ConnectionResetError:
            os._exit(0)
        if not request:  # the pool closed the socket, or ended: no teardown of what was loaded for the workers
            os._exit(0)
        _fork(request, fds, sock)


if __name__ == "__main__":
    serve(int(sys.argv[1]))

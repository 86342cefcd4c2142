"""The grader's end of a sandboxed kernel's sockets: jupyter_client connects to the relay, never to the kernel.

The relay listens in a folder of the grader's that no sandbox shows. For each connection jupyter_client makes, it
opens one to the kernel's own socket, in the kernel's private socket folder as the sandbox sees it, and copies the
bytes both ways. So:

- whatever a kernel does in its socket folder, the grader connects only to the relay: the relay opens the kernel's
  socket through a folder it holds open, follows no link, and takes nothing but a socket;
- the grader holds at most ``max_message_bytes`` of any one message from the kernel: the relay reads ZMTP 3's frames
  as they come, keeps a message only while it is within the bound, and reads the rest of a larger one into nothing.
  A frame weighs what jupyter_client will make of it (``weight``): its bytes, and an object for each JSON value in
  it. Once the kernel's messages together weigh ``TOGETHER`` times the bound, only small ones pass. What it dropped is
  in ``dropped``, for the notebook's problems;
- on every socket but IOPub (``answering``) the kernel only answers: one message for each the grader sent on that
  connection, the rest dropped (``unasked``). Nothing reads stdin, control only after a request: ZeroMQ held 1,000
  unread messages of 1 MiB on each (1.1 GB a socket, until the kernel ended).

Threads and blocking sockets: a kernel runs a few cells a second. Small frames are read through a buffer, a large one
straight into its own, and a message is passed on in one call.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from contextlib import suppress

GREETING = 64  # ZMTP 3's greeting: signature (10 bytes), version (2), mechanism (20), as-server (1), filler (31)
MORE, LONG, COMMAND = 1, 2, 4  # a frame's flags; the other bits are reserved (zero)
COMMAND_BYTES = 2**16  # the handshake's READY and the heartbeats are a few bytes: a larger command is refused
# ZMTP 3.1's subscriptions: libzmq hands them to the grader's socket as data, and one flagged MORE was glued to the
# next message, past the bound. A kernel's sockets never subscribe to the grader's.
KERNEL_NEVER_SENDS = (b"SUBSCRIBE", b"CANCEL")
CHUNK = 2**20  # what the relay reads at once of a stream, or of a message it drops
READ_AHEAD = 2**16  # what it reads at once of the kernel's small frames
IOV_MAX = 1024  # the most pieces one sendmsg takes (Linux)
FRAME_COST = 128  # what holding a frame costs beside its bytes (its two Python objects): a flood of empty frames counts
# what a JSON value costs the grader once decoded, beside its characters: an object and its place in a list (a
# message of 60 MB of empty lists, under the bound in bytes, made a worker hold 1.4 GB more while it was decoded)
VALUE_COST = 64
# the kernel's messages together, in max_message_bytes: past it only those of up to SMALL pass (status, replies, answer
# reports: KBs), so a kernel that sends large messages faster than the grader reads them makes it hold no more
TOGETHER, SMALL = 4, 2**20


def weight(frame) -> int:
    """What a frame costs the grader once decoded: its bytes, a ``VALUE_COST`` for each container and string (an
    opening bracket, a pair of quotes) and half of one for each other value (a comma: a float or a number's object).
    Commas and quotes inside a string count too: printed text weighs up to about ten times its bytes."""
    containers = frame.count(b"[") + frame.count(b"{") + frame.count(b'"') // 2
    return len(frame) + VALUE_COST * containers + VALUE_COST // 2 * frame.count(b",")


class NotZmtp(Exception):
    """The kernel spoke something other than ZMTP 3 with the NULL mechanism: its connection is closed."""


class _Frames:
    """The kernel's side of a connection, read through a small buffer: a message's frames (about seven, a flags byte
    and a length before each body) cost a call or two, not three calls each. It holds at most twice ``READ_AHEAD``
    beyond the frame being read; a larger body is read straight into a buffer of its own size."""

    def __init__(self, sock: socket.socket):
        self.sock, self.data, self.at = sock, bytearray(), 0

    def take(self, size: int) -> bytearray:
        """The next ``size`` bytes; EOFError if the kernel closes first."""
        if len(self.data) - self.at < size <= READ_AHEAD:
            del self.data[: self.at]
            self.at = 0
            while len(self.data) < size:
                chunk = self.sock.recv(READ_AHEAD)
                if not chunk:
                    raise EOFError
                self.data += chunk
        if len(self.data) - self.at >= size:
            self.at += size
            return self.data[self.at - size : self.at]
        piece = bytearray(size)  # a large frame: what is buffered, then the rest from the socket
        view, got = memoryview(piece), len(self.data) - self.at
        view[:got] = self.data[self.at :]
        self.data, self.at = bytearray(), 0
        while got < size:
            n = self.sock.recv_into(view[got:], min(size - got, CHUNK))
            if not n:
                raise EOFError
            got += n
        return piece

    def skip(self, size: int, scratch: bytearray) -> None:
        """Read the next ``size`` bytes and keep none of them."""
        buffered = min(size, len(self.data) - self.at)
        self.at, size = self.at + buffered, size - buffered
        view = memoryview(scratch)
        while size:
            n = self.sock.recv_into(view, min(size, len(scratch)))
            if not n:
                raise EOFError
            size -= n


def _pass_greeting(source: socket.socket, to: socket.socket) -> None:
    """Pass ZMTP 3's greeting on as it comes (each side's waits for the other's first bytes); NotZmtp if it is not."""
    greeting = b""
    while len(greeting) < GREETING:
        if not (chunk := source.recv(GREETING - len(greeting))):
            raise EOFError
        greeting += chunk
        if greeting[:1] != b"\xff" or len(greeting) > 10 and greeting[10] < 3:
            raise NotZmtp("not a ZMTP 3 greeting")
        if len(greeting) >= 16 and greeting[12:16] != b"NULL":
            raise NotZmtp("a security mechanism the relay cannot read through")
        to.sendall(chunk)


def _send_all(sock: socket.socket, pieces: list) -> None:
    """``pieces`` in order, in as few calls as the socket takes them (a view is made only of a piece sent in part: a
    view of every piece cost 320 bytes each, six times the bound for a message of one-byte frames)."""
    pieces, first = [p for p in pieces if len(p)], 0
    while first < len(pieces):
        sent = sock.sendmsg(pieces[first : first + IOV_MAX])
        while sent:
            if sent >= len(pieces[first]):
                sent -= len(pieces[first])
                first += 1
            else:
                pieces[first], sent = memoryview(pieces[first])[sent:], 0


class Relay:
    """The relay of one kernel: a listening socket in ``folder`` for each name in ``names`` (the kernel's socket of
    that name), until ``close``."""

    def __init__(self, kernel_folder: int, folder: str, names, max_message_bytes: int, answering=()):
        self.kernel_folder = kernel_folder  # an O_PATH descriptor of the kernel's socket folder, closed with the relay
        self.folder, self.names, self.bound = folder, list(names), max_message_bytes
        self.dropped, self.passed = [], 0  # (socket name, bytes) of each message over a bound; what passed weighed
        self.answering, self.unasked = set(answering), 0  # sockets where it only answers; messages no request asked for
        self._sockets, self._closed = set(), False
        self._lock = threading.Lock()
        try:
            for name in self.names:
                listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self._keep(listener)
                listener.bind(self.path(name))
                listener.listen(16)
                threading.Thread(target=self._accept, args=(listener, name), daemon=True).start()
        except BaseException:
            self.close()
            raise

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def _keep(self, sock: socket.socket) -> None:
        with self._lock:
            if self._closed:
                sock.close()
                raise OSError("the relay is closed")
            self._sockets.add(sock)

    def _forget(self, *socks) -> None:
        with self._lock:
            for sock in socks:
                if sock is not None:
                    self._sockets.discard(sock)
                    sock.close()

    def _accept(self, listener: socket.socket, name: str) -> None:
        while True:
            try:
                grader, _ = listener.accept()
            except OSError:
                if self._closed:
                    return
                time.sleep(0.01)  # (a connection gone before it was taken, no descriptor free): the next one counts
                continue
            try:
                self._keep(grader)
            except OSError:
                return
            threading.Thread(target=self._serve, args=(grader, name), daemon=True).start()

    def _kernel_socket(self, name: str) -> socket.socket:
        """A connection to the kernel's socket ``name``: opened without following a link, and only if a socket."""
        found = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.kernel_folder)
        try:
            if not stat.S_ISSOCK(os.fstat(found).st_mode):
                raise OSError(f"{name} in the kernel's socket folder is not a socket")
            kernel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                kernel.settimeout(10)
                kernel.connect(f"/proc/self/fd/{found}")  # the socket opened above, whatever the name means now
                kernel.settimeout(None)
            except OSError:
                kernel.close()
                raise
            return kernel
        finally:
            os.close(found)

    def _serve(self, grader: socket.socket, name: str) -> None:
        kernel = None
        try:
            kernel = self._kernel_socket(name)
            self._keep(kernel)
            asked = threading.Semaphore(0) if name in self.answering else None  # one for each request of the grader's
            threading.Thread(target=self._to_kernel, args=(grader, kernel, asked), daemon=True).start()
            self._to_grader(kernel, grader, name, asked)
        except (OSError, EOFError, NotZmtp):
            pass
        finally:
            self._forget(grader, kernel)

    @staticmethod
    def _to_kernel(grader: socket.socket, kernel: socket.socket, asked=None) -> None:
        """The grader's bytes, as they come (the grader is trusted); with ``asked``, its messages, each passed on at
        once and counted in ``asked`` before, so that the kernel's answer finds it counted (a command is no message)."""
        with suppress(OSError, EOFError, NotZmtp):
            if asked is None:
                while data := grader.recv(CHUNK):
                    kernel.sendall(data)
                raise EOFError
            _pass_greeting(grader, kernel)
            stream, pieces = _Frames(grader), []
            while True:
                flags, length = (head := stream.take(1))[0], stream.take(8 if head[0] & LONG else 1)
                pieces += [bytes(head + length), bytes(stream.take(int.from_bytes(length, "big")))]
                if not flags & MORE:
                    if not flags & COMMAND:
                        asked.release()
                    kernel.sendall(b"".join(pieces))
                    pieces = []
        for sock in (kernel, grader):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _to_grader(self, kernel: socket.socket, grader: socket.socket, name: str, asked=None) -> None:
        """The kernel's greeting as it comes (each side's waits for the other's first bytes), then whole messages
        within the bounds, and with ``asked`` only as many as the grader sent; a larger one is read and dropped."""
        _pass_greeting(kernel, grader)
        frames, held, over, scratch, stream = [], 0, 0, bytearray(CHUNK), _Frames(kernel)
        while True:
            flags = stream.take(1)[0]
            if flags & ~(MORE | LONG | COMMAND):
                raise NotZmtp(f"reserved frame flags {flags:#x}")
            length = stream.take(8 if flags & LONG else 1)
            size, head = int.from_bytes(length, "big"), bytes([flags]) + length
            if flags & COMMAND:
                if size > COMMAND_BYTES or frames or over or flags & MORE:
                    raise NotZmtp("a command that is too large, inside a message, or with more to come")
                command = stream.take(size)  # (it starts with its name)
                if (bytes(command[1 : 1 + command[0]]) if command else b"") in KERNEL_NEVER_SENDS:
                    raise NotZmtp("a subscription from the kernel's side")
                grader.sendall(head + command)
                continue
            if over or held + size + FRAME_COST > self.bound:
                over += held + size + FRAME_COST
                frames, held = [], 0
                stream.skip(size, scratch)
            else:
                frame = stream.take(size)
                cost = weight(frame) + FRAME_COST
                if held + cost > self.bound:  # within the bound in bytes, not once decoded
                    over += held + cost
                    frames, held = [], 0
                else:
                    frames += [head, frame]
                    held += cost
            if not flags & MORE:  # the message's last frame
                if not over and held > SMALL and self.passed + held > TOGETHER * self.bound:
                    over, frames = held, []
                if not over and asked is not None and not asked.acquire(blocking=False):
                    self.unasked += 1  # (nothing would read it: ZeroMQ would hold it until the kernel ends)
                    frames, held = [], 0
                self.passed += 0 if over else held
                if over:
                    self.dropped.append((name, over))
                _send_all(grader, frames)
                frames, held, over = [], 0, 0

    def close(self) -> None:
        """Stop listening, end every connection, remove the listening sockets."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            socks, self._sockets = self._sockets, set()
        os.close(self.kernel_folder)
        for sock in socks:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for name in self.names:
            with suppress(FileNotFoundError):
                os.unlink(self.path(name))

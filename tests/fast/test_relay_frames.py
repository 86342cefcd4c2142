"""The relay's reading of the kernel's ZMTP stream (``Relay._to_grader``), on socket pairs: whole messages within the
bound pass unchanged, whatever the pieces the bytes arrive in; a larger one is dropped and named. The relay with real
kernels: tests/slow/test_sandbox.py."""

import contextlib
import random
import socket
import threading
import time
import tracemalloc

from autograder.sandbox.relay import FRAME_COST, MORE, SMALL, TOGETHER, NotZmtp, Relay

GREETING = b"\xff" + bytes(8) + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" + bytes(31)


def frame(body: bytes, more: bool = False) -> bytes:
    flags = MORE if more else 0
    if len(body) > 255:
        return bytes([flags | 2]) + len(body).to_bytes(8, "big") + body
    return bytes([flags, len(body)]) + body


def message(*bodies: bytes) -> bytes:
    return b"".join(frame(body, more=i < len(bodies) - 1) for i, body in enumerate(bodies))


def relayed(stream: bytes, bound: int, pieces: int = 1) -> tuple:
    """What the grader receives when the kernel sends ``stream`` in ``pieces`` random pieces; and what was dropped."""
    relay = Relay.__new__(Relay)
    relay.bound, relay.dropped, relay.passed = bound, [], 0
    kernel, kernel_end = socket.socketpair()
    grader_end, grader = socket.socketpair()

    def read():
        try:
            relay._to_grader(kernel, grader, "iopub")
        except (EOFError, NotZmtp):  # the kernel's end closed, or spoke amiss: the connection ends (Relay._serve)
            pass

    reader = threading.Thread(target=read)
    reader.start()
    got = []
    collector = threading.Thread(target=lambda: got.append(b"".join(iter(lambda: grader_end.recv(1 << 16), b""))))
    collector.start()
    cuts = sorted(random.Random(pieces).sample(range(1, len(stream)), pieces - 1)) if pieces > 1 else []
    for start, end in zip([0, *cuts], [*cuts, len(stream)]):
        kernel_end.sendall(stream[start:end])
    kernel_end.close()
    reader.join(10)
    grader.close()
    collector.join(10)
    kernel.close()
    return got[0], relay.dropped


def test_messages_within_the_bound_pass_unchanged_in_any_pieces():
    ready = bytes([4, 5]) + b"READY"  # a command frame
    messages = message(b"<IDS|MSG>", b"sig", b"{}" * 200, b"x" * 70_000) + message(b"") + message(b"a", b"", b"b")
    for pieces in (1, 7, 500):
        assert relayed(GREETING + ready + messages, bound=1 << 20, pieces=pieces) == (GREETING + ready + messages, [])


def test_a_message_over_the_bound_is_dropped_and_named_and_the_next_passes():
    big = message(b"head", b"y" * 300_000)
    after = message(b"after")
    got, dropped = relayed(GREETING + big + after, bound=100_000, pieces=50)
    assert got == GREETING + after
    assert dropped == [("iopub", 4 + 300_000 + 2 * 128)]


def test_many_empty_frames_count_what_holding_them_costs():
    flood = message(*[b""] * 2000)
    got, dropped = relayed(GREETING + flood + message(b"ok"), bound=128 * 1000, pieces=3)
    assert got == GREETING + message(b"ok") and dropped == [("iopub", 128 * 2000)]


def command(name: bytes, body: bytes = b"", more: bool = False) -> bytes:
    data = bytes([len(name)]) + name + body
    return bytes([4 | (MORE if more else 0), len(data)]) + data


def test_a_command_flagged_more_or_a_subscription_closes_the_connection():
    # libzmq hands SUBSCRIBE and CANCEL to the grader's socket with their flags: flagged MORE, they were glued to the
    # next message, past the bound
    for refused in (command(b"PING", b"\x00\x00", more=True), command(b"SUBSCRIBE", b"x" * 200)):
        got, dropped = relayed(GREETING + refused + message(b"after"), bound=1 << 20, pieces=3)
        assert got == GREETING and dropped == []
    ping = command(b"PING", b"\x00\x00")
    assert relayed(GREETING + ping + message(b"ok"), bound=1 << 20) == (GREETING + ping + message(b"ok"), [])


def test_a_message_of_one_byte_frames_costs_little_beyond_the_bound():
    bound = 4 << 20
    tiny = message(*[b"x"] * (bound // 129 - 1))  # within the bound: kept and passed on
    tracemalloc.start()
    try:
        got, _ = relayed(GREETING + tiny, bound=bound, pieces=5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == GREETING + tiny
    assert peak < 3 * bound  # the message held, a read buffer, what the test itself keeps; a view a piece made it 6 x


def test_a_message_small_in_bytes_but_large_once_decoded_is_dropped():
    """Empty lists are 3 bytes each on the wire and a Python object each once jupyter_client decodes them: a message
    within the bound in bytes is weighed by what it becomes, and printed text passes as before."""
    import json

    lists = b"[" + b"[]," * 100_000 + b"[]]"  # 300 KB: about 7 MB of objects once decoded
    text = json.dumps({"name": "stdout", "text": "tensor([0.1, 0.2, 0.3])\n" * 10_000}).encode()  # 250 KB
    bound = 4 << 20  # (the text weighs 1.5 MB: its brackets and commas count, though they are in a string)
    passed, dropped = relayed(GREETING + message(b"<IDS|MSG>", text) + message(b"<IDS|MSG>", lists), bound)
    assert passed == GREETING + message(b"<IDS|MSG>", text)
    assert len(dropped) == 1 and dropped[0][1] > 8 * 2**20, dropped


def test_past_the_bound_of_the_messages_together_only_small_ones_pass():
    """A kernel that sends large messages faster than the grader reads them: once its messages together weigh
    TOGETHER times the bound, a large one is dropped and named, and small ones (status, replies) still pass."""
    size = SMALL + 1000
    large, small = message(b"head", b"z" * size), message(b"idle")  # large: over SMALL, within the bound
    stream = GREETING + large * (TOGETHER * 3) + small + large + small
    got, dropped = relayed(stream, bound=2 * SMALL, pieces=40)
    passed = TOGETHER * 2 * SMALL // (4 + size + 2 * FRAME_COST)  # the large messages within the bound together
    assert got == GREETING + large * passed + small + small
    assert dropped == [("iopub", 4 + size + 2 * FRAME_COST)] * (TOGETHER * 3 - passed + 1)


def answered(requests: list, replies: bytes) -> tuple:
    """Both directions of one connection on a socket where the kernel only answers (stdin, control, shell): the grader
    sends its greeting and ``requests`` one after another, the kernel answers each with all of ``replies`` once it has
    it. Returns what the kernel received, what the grader received, and the relay's count of what no request asked."""
    relay = Relay.__new__(Relay)
    relay.bound, relay.dropped, relay.passed, relay.unasked = 1 << 20, [], 0, 0
    kernel, kernel_end = socket.socketpair()
    grader_end, grader = socket.socketpair()
    kernel_end.settimeout(10)  # (a relay that passes nothing on fails the test, not hangs it)
    asked = threading.Semaphore(0)
    to_kernel = threading.Thread(target=Relay._to_kernel, args=(grader, kernel, asked), daemon=True)

    def read():
        with contextlib.suppress(EOFError):  # the kernel's end closed (Relay._serve)
            relay._to_grader(kernel, grader, "control", asked)

    to_grader = threading.Thread(target=read, daemon=True)
    got = []
    collector = threading.Thread(target=lambda: got.append(b"".join(iter(lambda: grader_end.recv(1 << 16), b""))))
    for thread in (to_kernel, to_grader, collector):
        thread.start()
    received, handshake = b"", GREETING + bytes([4, 5]) + b"READY"
    kernel_end.sendall(handshake)
    for i, request in enumerate([handshake, *requests]):
        grader_end.sendall(request)
        want = len(received) + len(request)
        while len(received) < want:
            received += kernel_end.recv(1 << 16)
        if i:  # the kernel answers a request as soon as it has it, and the relay reads all of that first
            kernel_end.sendall(replies)
            deadline = time.monotonic() + 10
            while relay.unasked < i * (replies.count(b"<IDS|MSG>") - 1) and time.monotonic() < deadline:
                time.sleep(0.001)
    kernel_end.sendall(replies)  # and once more, after the last request: none asked for these
    kernel_end.close()
    to_grader.join(10)  # (it ends at the kernel's end of the stream)
    grader.shutdown(socket.SHUT_RDWR)  # the grader's side ends: both its readers see it
    for thread in (collector, to_kernel):
        thread.join(10)
    for sock in (grader, grader_end, kernel):
        sock.close()
    return received, got[0], relay.unasked


def test_where_the_kernel_only_answers_it_sends_one_message_per_request():
    """nbclient never reads stdin and reads control only after a request of its own: what a kernel sent there unasked
    stayed in ZeroMQ's queue, 1,000 messages of up to 1 MiB on each socket, until the kernel ended. The relay passes
    one of the kernel's messages for each message of the grader's on that connection, and drops the rest."""
    request = message(b"<IDS|MSG>", b"sig", b'{"msg_type": "interrupt_request"}', b"{}", b"{}", b"{}")
    reply = message(b"<IDS|MSG>", b"sig", b'{"msg_type": "interrupt_reply"}')
    flood = message(b"<IDS|MSG>", b"x" * 1000)
    received, got, unasked = answered([request, request], reply + flood * 3)
    assert received == GREETING + bytes([4, 5]) + b"READY" + request * 2  # the grader's bytes pass unchanged
    assert got == GREETING + bytes([4, 5]) + b"READY" + reply * 2  # the kernel's handshake, then its two answers
    assert unasked == 3 * 2 + 4  # the flood after each answer, and all it sent after the last request


def test_where_nothing_is_asked_nothing_of_the_kernels_passes():
    """stdin: nbclient allows no input, so the grader sends nothing there, and nothing the kernel sends passes."""
    received, got, unasked = answered([], message(b"<IDS|MSG>", b"sig", b'{"msg_type": "input_request"}') * 5)
    assert received == GREETING + bytes([4, 5]) + b"READY" and got == GREETING + bytes([4, 5]) + b"READY"
    assert unasked == 5

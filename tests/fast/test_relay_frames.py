"""The relay's reading of the kernel's ZMTP stream (``Relay._to_grader``), on socket pairs: whole messages within the
bound pass unchanged, whatever the pieces the bytes arrive in; a larger one is dropped and named. The relay with real
kernels: tests/slow/test_sandbox.py."""

import random
import socket
import threading
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

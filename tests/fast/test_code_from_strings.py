"""While grading, code made from a string on behalf of a student's cell refuses, however it is reached; what the
environment makes of its own (namedtuple, dataclass, a module imported) still works
(autograder/engine/honesty/code_from_strings.py). Run in a child process, whose own code (``python -c``) stands for a
cell: an audit hook lasts as long as its process."""

import subprocess
import sys

CHILD = r"""
import collections, dataclasses, multiprocessing, pickle, sys, threading

from autograder.engine.honesty.code_from_strings import make_hook


class Refused(Exception):
    pass


def refusal():
    raise Refused


class Exec:
    def __reduce__(self):
        return exec, ("x = 1",)


sys.addaudithook(make_hook(tuple(p for p in sys.path if p), refusal))
seen = {}


def attempt(name, what):
    try:
        what()
        seen[name] = "ran"
    except Refused:
        seen[name] = "refused"


def in_a_thread():
    threading.excepthook = lambda args: seen.__setitem__("thread", type(args.exc_value).__name__)
    thread = threading.Thread(target=exec, args=("x = 1",))
    thread.start()
    thread.join()


def through_a_pipe():
    a, b = multiprocessing.Pipe()
    a.send_bytes(pickle.dumps(Exec()))
    b.recv()


attempt("exec", lambda: exec("x = 1"))
attempt("a pickle through a pipe", through_a_pipe)
attempt("a dataclass made of code", lambda: dataclasses.dataclass(type("E", (), {"__annotations__": {"a=1": int}})))
attempt("namedtuple", lambda: collections.namedtuple("P", "a b"))
attempt("dataclass", lambda: dataclasses.dataclass(type("D", (), {"__annotations__": {"a": int}})))
attempt("a module imported", lambda: __import__("fractions"))
in_a_thread()
print(sorted(seen.items()))
"""


def test_code_from_a_string_refuses_and_the_environments_own_code_runs():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == str(
        [
            ("a dataclass made of code", "refused"),
            ("a module imported", "ran"),
            ("a pickle through a pipe", "refused"),
            ("dataclass", "ran"),
            ("exec", "refused"),
            ("namedtuple", "ran"),
            ("thread", "Refused"),
        ]
    ), done

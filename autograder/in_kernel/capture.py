"""A call of the student's function that keeps what the grader needs to tell what it did: its result or the error it
raised, its local variables when it ended, and the line of it that raised."""

import linecache
import sys


def call_capturing(function, *args):
    """``function(*args)``: its result (or the exception it raised) and its local variables when it ended."""
    ended = {}
    code = getattr(function, "__code__", None)

    def profile(frame, event, arg):
        if event == "return" and frame.f_code is code:
            ended["locals"] = dict(frame.f_locals)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = function(*args)
    except Exception as error:  # the grader says which error it was
        result = error
    finally:
        sys.setprofile(previous)
    return result, ended.get("locals", {})


def raised_at(error: Exception, function) -> str:
    """The line of ``function`` that was running when ``error`` was raised (a call into a helper: the call), or ""."""
    code, line, tb = getattr(function, "__code__", None), "", error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is code:
            line = linecache.getline(code.co_filename, tb.tb_lineno).strip()
        tb = tb.tb_next
    return line[:200]

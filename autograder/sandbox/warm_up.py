"""What a kernel parent loads and prepares once, before it forks any kernel: every kernel starts with it
(docs/design/sandbox.md, "Kernel parents"). The parent runs nothing of a student's: only imports, one traceback of
its own, and a faster flush of the kernels' output streams."""

import gc
import importlib
import sys
import threading

# What the setup cells and the hidden tests import first. Not matplotlib (0.55 CPU s, a tenth of a student's kernels'
# CPU): the course's plots import it only when they draw, and they do not draw while grading.
WARM_IMPORTS = ("torch", "torch.nn.functional", "urllib.request", "autograder.in_kernel")
# What every kernel loads as it starts: debugpy (110 modules, 26 ms of a 60 ms start), pdb, IPython's debugger...
KERNEL_START_IMPORTS = ("ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.debugger", "IPython.core.completerlib")
KERNEL_START_IMPORTS += ("IPython.core.debugger", "IPython.extensions.storemagic", "tornado.platform.asyncio")


def format_a_traceback() -> None:
    from IPython.core.ultratb import AutoFormattedTB

    try:  # a process's first traceback imports and maps what IPython's formatter needs (0.2 s): here, not in a kernel
        raise ValueError("warm-up")
    except ValueError:
        AutoFormattedTB(mode="Context").structured_traceback(*sys.exc_info())


def flush_only_what_was_written() -> None:
    """ipykernel's ``OutStream.flush`` hands a flush to its IOPub thread and waits for it, twice a cell (stdout and
    stderr) even when nothing was written: a third of a plain kernel's CPU for a cell that prints nothing (1,000 cells,
    twice each way: 1.80-1.84 ms a cell, 1.29-1.36 without that round trip). This flush returns at once when its
    stream holds nothing and has no flush scheduled; otherwise, or with an ipykernel whose stream keeps its buffers
    otherwise, it is ipykernel's own. What a flush already under way in the IOPub thread sends still comes before the
    idle status the grader waits for: that thread sends it afterwards."""
    from ipykernel.iostream import OutStream

    flush = OutStream.flush
    if getattr(flush, "skips_empty", False):
        return

    def flush_if_written(self):
        try:
            if threading.current_thread() is not self.pub_thread.thread:
                with self._buffer_lock:
                    written = any(buffer.tell() for buffer in self._buffers.values())
                if not written and not self._flush_pending:
                    return
        except AttributeError:  # a closed stream, or another ipykernel's
            pass
        flush(self)

    flush_if_written.skips_empty = True
    OutStream.flush = flush_if_written


def store_exceptions_briefly() -> None:
    """IPython formats the traceback of every cell that raises twice: once to show it, and once more to keep in its
    history (``history_manager.exceptions``, which only the ``%notebook`` magic reads, and history is off in the
    kernels): 0.33 of the 1.2 s the kernels of the class of 6 spent on the tracebacks of its 98 cells that raised.
    Kept here: the exception's name and message, as IPython keeps them, without the traceback."""
    from IPython.core.interactiveshell import InteractiveShell

    def name_and_message(self, exception, filename=None, running_compiled_code=False):
        return {"ename": type(exception).__name__, "evalue": str(exception), "traceback": []}

    InteractiveShell._format_exception_for_storage = name_and_message


def warm_up() -> None:
    for name in (*WARM_IMPORTS, *KERNEL_START_IMPORTS):
        importlib.import_module(name)
    format_a_traceback()
    flush_only_what_was_written()
    store_exceptions_briefly()
    from ..engine.honesty.grader_formulas import grader_functions
    from ..in_kernel.switches import module_places

    module_places()  # (each kernel's start_grading reads it)
    grader_functions()  # (and this: the functions it makes refuse, found before the freeze below)
    # What was loaded lives as long as the kernels: out of the cycle collector's sight, whose every full pass over
    # it cost a kernel 0.13 s (0.3 s of Exercise 3's 0.7 s of CPU), and copied the pages it touched from the parent
    gc.freeze()

"""A kernel parent: a warm Python in a student's sandbox that forks the kernel of each of their notebooks.

Run as ``python -m autograder.sandbox.in_sandbox`` inside bubblewrap: it imports torch and ipykernel once, forks each
kernel into a fresh scratch, and clears the sandbox after it; one JSON line per request on stdin, one reply on
stdout. The protocol and its guarantees: docs/design/sandbox.md, "Kernel parents".
"""

from __future__ import annotations

import gc
import json
import os
import resource
import runpy
import signal
import sys

from ..data import SEED_VARIABLE
from .environment import NOTEBOOK_VARIABLES
from .policy import CPU_SLACK, SCRATCH, SOCKETS
from .process_guards import in_child, kill_the_rest, load_seccomp_filter, reap_helpers, refuse_exec, set_dumpable
from .scratch import MAX_ENTRIES, TooMany, fill_scratch, left_behind, remove_inside, skeleton, write_all
from .warm_up import warm_up

KERNEL_MODULE = "ipykernel_launcher"  # a kernel command a parent can fork: [python, -m, KERNEL_MODULE, ...]
COLD = "--cold"  # the parent's argument that makes it import nothing ahead and fork one kernel
PRIVATE_FOLDERS = ("/tmp", "/dev/shm", SOCKETS, SCRATCH)  # the sandbox's own tmpfs mounts, emptied after every kernel


def empty_private_folders() -> bool:
    """Empty the private folders; False when they hold more than MAX_ENTRIES, or when anything the parent did not find
    there at its start is left (a folder nested deeper than a path can name), or is no longer where it was (bwrap's
    folders on the way to a mount, moved): then only ending the sandbox clears them. It reads the names a kernel
    chose: only in a child of the parent (``in_child``)."""
    budget = [MAX_ENTRIES]
    try:
        for folder in PRIVATE_FOLDERS:
            if os.path.isdir(folder):
                remove_inside(folder, os.lstat(folder).st_dev, budget)
    except (TooMany, RecursionError, OSError):  # a chain of some 1,100 folders recurses too deep before a path is too
        return False  # long; as an ordinary user a private folder itself is the kernel's, which may make it unlistable
    # Nothing is left but what bwrap made, each where and as it made it (the folders on the way to a mount, and the
    # mount points): an ordinary user's kernel owns those folders, and moved its stage and connection folders into one
    # it made under the old name, so that the next student's kernel found no connection file and the run stopped
    try:
        return all(skeleton(f) == _found_at_start.get(f, {}) for f in PRIVATE_FOLDERS if os.path.isdir(f))
    except (TooMany, RecursionError, OSError):  # (OSError: a folder left that cannot be listed)
        return False


NOT_CLEARED = 3  # a child's exit status: the private folders could not be emptied (the sandbox must end)


def clear_sandbox(then=None) -> bool:
    """Kill every process of the sandbox but this one and pid 1; empty the private folders (in a child), and there
    run ``then()`` too, if given, for its exit status. False when the folders could not be emptied
    (``empty_private_folders``); OSError if ``then`` failed."""
    kill_the_rest()
    status = in_child(lambda: NOT_CLEARED if not empty_private_folders() else then() if then else 0)
    if status not in (0, NOT_CLEARED):
        raise OSError(f"the kernel parent's child that clears the sandbox failed (status {status}, see the log)")
    return status == 0


_found_at_start = {}  # private folder -> its ``skeleton`` when the parent started (what bwrap made there may stay)
_ahead = {}  # (setup cells, the notebook variables but the seed) -> their RunAhead (None: they cannot be run ahead)
_started_in = "/"  # the folder shown when the parent started (``main``), on sys.path: a student's, or the stage


def run_ahead(setup: dict, env: dict):
    """The RunAhead of the setup cells that ``setup`` names (``cells``, the notebook's first code cells, and ``ahead``,
    the indices of those that need no seed), run here the first time, once for all kernels, with the kernel's notebook
    variables but the seed, in the empty scratch, importing nothing from the folder shown; None if they cannot be."""
    from ..in_kernel import setup_ahead

    sources = tuple(setup["cells"][i] for i in setup["ahead"])
    variables = {k: v for k, v in env.items() if k in NOTEBOOK_VARIABLES and k != SEED_VARIABLE}
    key = sources, tuple(sorted(variables.items()))
    if key not in _ahead:
        if not clear_sandbox():
            raise TooMany("the sandbox holds too many files to clear")
        saved = dict(os.environ), list(sys.path)
        os.environ.update(variables)
        sys.path[:] = [p for p in sys.path if p and not (p + os.sep).startswith(_started_in + os.sep)]
        os.chdir(SCRATCH)
        try:
            _ahead[key] = setup_ahead.run_ahead(sources)
        finally:
            os.chdir(_started_in)
            sys.path[:] = saved[1]
            os.environ.clear()
            os.environ.update(saved[0])
        gc.freeze()  # (kept as long as the parent)
        if not clear_sandbox():
            raise TooMany("the sandbox holds too many files to clear")
    return _ahead[key]


def run_kernel(argv: list, env: dict, cwd: str, replies: int, armed: tuple = ()) -> None:
    """In the forked child: become the kernel ``argv`` would have started, armed with what its parent did ahead
    (``armed``: ``setup_ahead.arm``'s arguments); never returns."""
    status = 1
    try:
        os.close(replies)  # the kernel must not be able to answer for its parent
        if _state is not None:
            os.close(_state)  # nor read what its parent's children wrote down
        if _kernels_cpu is not None:  # (a hard limit: the kernel cannot raise it again)
            resource.setrlimit(resource.RLIMIT_CPU, _kernels_cpu)
        set_dumpable(True)
        refuse_exec()  # no Python but this one: a new one would have autograd whole (process_guards)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a kernel is interrupted by SIGINT
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(2, 1)
        os.close(null)
        os.chdir(cwd)
        sandbox_set = {"JPY_PARENT_PID": os.environ.get("JPY_PARENT_PID", "1")}  # bwrap's --setenv (policy)
        os.environ.clear()
        os.environ.update(env, **sandbox_set)
        if "numpy.random" in sys.modules:  # numpy seeds its global generator once, at import
            sys.modules["numpy.random"].seed()
        if armed:  # (the parent imported it; a cold one imports nothing ahead)
            from ..in_kernel.setup_ahead import arm
        sys.argv = [KERNEL_MODULE, *argv[3:], *(arm(*armed) if armed else [])]
        runpy.run_module(KERNEL_MODULE, run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:  # noqa: BLE001 (the log shows it; the kernel manager sees the exit)
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


_kernels_cpu = None  # RLIMIT_CPU of each kernel (soft, hard); None: the parent was given none


def lift_cpu_limit() -> None:
    """Keep the soft CPU limit the sandbox gave (with no hard one: policy.command_line) for the kernels, and lift it
    for the parent: its own time counts over every kernel it forks, and some of it a kernel can make it spend."""
    global _kernels_cpu
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if soft != resource.RLIM_INFINITY and hard == resource.RLIM_INFINITY:
        _kernels_cpu = soft, soft + CPU_SLACK
        resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


_state = None  # a memfd: what ``fill_scratch`` copied for the kernel running, and what it left out, which the child
_filled = False  # that filled the scratch wrote there (when True) for the child that reads what the kernel left
_dirty = True  # something may have written in the private folders since they were last emptied


def fill(cwd: str) -> int:
    """In a child: copy ``cwd`` into the scratch (``fill_scratch``) and write down for ``clear`` what was copied."""
    copied, left_out = fill_scratch(cwd)
    write_all(_state, json.dumps({"copied": copied, "left_out": left_out}).encode())
    return 0


def start(argv: list, env: dict, cwd: str, replies: int, setup=None) -> dict:
    """Fork a kernel that works in a fresh copy of ``cwd`` (the student's folder) in the scratch; with ``setup``, one
    that takes the seed-free setup cells run ahead here (``run_ahead``) and the locked cells' input transformations."""
    global _state, _filled, _dirty
    if argv[1:3] != ["-m", KERNEL_MODULE]:
        raise ValueError(f"can only fork {KERNEL_MODULE}, not {argv[:3]}")
    armed = ()
    if setup and COLD not in sys.argv[1:]:
        from ..in_kernel.known_cells import transformed

        ahead = run_ahead(setup, env) if setup["ahead"] else None
        armed = setup["cells"], setup["ahead"], ahead, transformed(setup["locked"])
    if _state is None:
        _state = os.memfd_create("copied")
    _filled, _dirty = False, True
    if not clear_sandbox(then=lambda: fill(cwd)):  # the names of the student's files stay in the child
        raise TooMany("the sandbox holds too many files to clear")
    _filled = True
    reap_helpers()
    pid = os.fork()
    if pid == 0:
        run_kernel(argv, env, SCRATCH, replies, armed)
    return {"pid": pid}


def walk_and_clear(filled: bool, replies: int) -> int:
    """In a child: the reply to ``clear``, written to ``replies`` (the grader's pipe) here, so that the names it holds
    never pass through the parent."""
    left = None
    if filled:
        state = json.loads(os.pread(_state, os.fstat(_state).st_size, 0))
        left = left_behind({path: v and tuple(v) for path, v in state["copied"].items()})
        if state["left_out"]:  # reported with what the kernel left: the grader reads both after the kernel
            left = {**(left or {}), "left_out": state["left_out"]}
    cleared = empty_private_folders()
    write_all(replies, (json.dumps({"cleared": cleared, "left": left}) + "\n").encode(), None)
    return 0 if cleared else NOT_CLEARED


def clear(replies: int) -> dict | None:
    """After a kernel: what it left in its folder (with ``left_out``, what of the student's folder did not fit in it),
    then the sandbox cleared (``cleared`` false: end it instead). A child reads it and writes the reply itself to
    ``replies`` (then None; the error, if it failed)."""
    global _filled, _dirty
    filled, _filled = _filled, False
    kill_the_rest()  # (before the walk: nothing of the kernel's adds files while it runs)
    if not _dirty:  # cleared already, and nothing forked since: the next kernel's start empties them again anyway
        return {"cleared": True, "left": None}
    status = in_child(lambda: walk_and_clear(filled, replies))
    _dirty = status != 0
    return None if status in (0, NOT_CLEARED) else {"error": f"the child that clears failed with status {status}"}


def poll(pid: int) -> dict:
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return {"status": -signal.SIGKILL}  # reaped already: killed by clear_sandbox
    return {"status": os.waitstatus_to_exitcode(status) if done else None}


def main() -> None:
    global _started_in
    _started_in = os.getcwd()
    _found_at_start.update((f, skeleton(f)) for f in PRIVATE_FOLDERS if os.path.isdir(f))
    set_dumpable(False)
    lift_cpu_limit()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the one signal Python handles: a kernel's would stop the parent
    load_seccomp_filter()  # before anything else runs here: every kernel inherits it
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # a stray print must not be taken for a reply
    if COLD not in sys.argv[1:]:
        warm_up()
    replies.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")  # (its pid inside the sandbox)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            if "start" in request:
                reply = start(**request["start"], replies=replies.fileno())
            elif "poll" in request:
                reply = poll(int(request["poll"]))
            elif "clear" in request:
                reply = clear(replies.fileno())  # (None: a child wrote it)
            else:
                reply = {"error": f"unknown request {sorted(request)}"}
        except Exception as failed:  # noqa: BLE001 (the kernel manager says why)
            reply = {"error": f"{type(failed).__name__}: {failed}"}
        if reply is not None:
            replies.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main()

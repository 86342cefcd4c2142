"""A kernel parent: a warm Python in a student's sandbox that forks the kernel of each of their notebooks.

``SandboxedKernelManager`` runs it as ``python -m autograder.sandbox.kernel_parent`` inside bubblewrap, with the
sandbox of one student's folder (``policy.command_line``, the limits included), or of a worker's stage, which
shows one student's folder after another (``stage.py``). It imports what every kernel
imports first (torch, ipykernel, matplotlib: ``WARM_IMPORTS``), runs nothing else, and then forks one kernel
per notebook: the kernel starts with those modules loaded instead of paying for them again.

Each kernel starts as it would in a sandbox of its own. When a kernel ends, and again before the next is
forked, the parent kills every other process of the sandbox (whatever the kernel left running) and empties
/tmp and /dev/shm. The kernel gets its own environment (its notebook's seed), working directory and argv;
it is forked from a parent that never ran a student's code, so nothing of an earlier notebook is in its
memory. What the student's notebooks share is what they shared before: the student's own folder. Another
student's kernels run in another parent, or on a stage in the same one once the grader has cleared the
student before away (every process killed, /tmp and /dev/shm emptied, the folder unmounted). The parent is
not dumpable, so that its kernels (the same uid) cannot ptrace it or write its memory to reach the kernels
it forks later; each kernel is dumpable again, as any process.

Protocol, one JSON object per line: requests on stdin, replies on the parent's stdout (a kernel's stdout and
stderr go to stderr, the log):

  (at start)                                         -> {"ready": true}
  {"start": {"argv": [...], "env": {...}, "cwd": D}} -> {"pid": P}, the kernel's pid inside the sandbox
  {"poll": P}                                        -> {"status": null (running) or the exit status}
  {"clear": true}                                    -> {"cleared": true}, once a kernel has ended
  anything that fails                                -> {"error": "..."}
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import runpy
import signal
import sys

from .forked_kernels import KERNEL_MODULE

# What the setup cells and the hidden tests import first, and matplotlib (Exercises 2 and 4 plot).
WARM_IMPORTS = ("torch", "torch.nn.functional", "matplotlib.pyplot", "urllib.request", "autograder.in_kernel")
PRIVATE_FOLDERS = ("/tmp", "/dev/shm")  # the sandbox's own tmpfs mounts, emptied after every kernel
# ipykernel sets this before it imports matplotlib; matplotlib reads it once, at import, so here it is set first
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
PR_SET_DUMPABLE = 4  # prctl(2)


def set_dumpable(dumpable: bool) -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, int(dumpable), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def warm_up() -> None:
    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)
    # ipykernel.debugger: every kernel imports it as it starts (debugpy, 110 modules: 26 ms of a 60 ms start)
    for name in (*WARM_IMPORTS, "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.debugger"):
        importlib.import_module(name)


def remove_inside(folder: str, device: int) -> None:
    """Remove what ``folder`` holds on ``device``, never crossing into another mount: the student's folder and the
    socket folder may be bound inside /tmp (when the course or the grader's temporary folder lies there)."""
    for entry in os.scandir(folder):
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.stat(follow_symlinks=False).st_dev == device:
                    remove_inside(entry.path, device)
                    os.rmdir(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:  # a folder bwrap made on the way to a mount (root's), or one holding a mount
            pass


def clear_sandbox() -> None:
    """Kill every process of the sandbox but this one and its init; empty the private folders."""
    try:
        os.kill(-1, signal.SIGKILL)  # in the sandbox's pid namespace: all it may signal but itself and pid 1
    except ProcessLookupError:
        pass  # nothing else was running
    while True:  # reap those that were its children
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                break
        except ChildProcessError:
            break
    for folder in PRIVATE_FOLDERS:
        if os.path.isdir(folder):
            remove_inside(folder, os.lstat(folder).st_dev)


def run_kernel(argv: list, env: dict, cwd: str, replies: int) -> None:
    """In the forked child: become the kernel ``argv`` would have started; never returns."""
    status = 1
    try:
        os.close(replies)  # the kernel must not be able to answer for its parent
        set_dumpable(True)
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
        sys.argv = [KERNEL_MODULE, *argv[3:]]
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


def start(argv: list, env: dict, cwd: str, replies: int) -> dict:
    if argv[1:3] != ["-m", KERNEL_MODULE]:
        raise ValueError(f"can only fork {KERNEL_MODULE}, not {argv[:3]}")
    clear_sandbox()
    pid = os.fork()
    if pid == 0:
        run_kernel(argv, env, cwd, replies)
    return {"pid": pid}


def poll(pid: int) -> dict:
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return {"status": -signal.SIGKILL}  # reaped already: killed by clear_sandbox
    return {"status": os.waitstatus_to_exitcode(status) if done else None}


def main() -> None:
    set_dumpable(False)
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # a stray print must not be taken for a reply
    warm_up()
    replies.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        try:
            request = json.loads(line)
            if "start" in request:
                reply = start(**request["start"], replies=replies.fileno())
            elif "poll" in request:
                reply = poll(int(request["poll"]))
            elif "clear" in request:
                clear_sandbox()
                reply = {"cleared": True}
            else:
                reply = {"error": f"unknown request {sorted(request)}"}
        except Exception as failed:  # noqa: BLE001 (the kernel manager says why)
            reply = {"error": f"{type(failed).__name__}: {failed}"}
        replies.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main()

"""Cells that leave processes behind in a grading kernel. A kernel can start no program, only fork itself
(``process_guards.refuse_exec``): each process here is a fork of the kernel that names itself (``/proc/<pid>/comm``)
so that a test can find it, and sleeps."""

import os


def _forked(name: str, seconds: int, new_session: bool, indent: str) -> str:
    lines = ["if os.fork() == 0:", *(["    os.setsid()"] if new_session else [])]
    lines += [f"    open('/proc/self/comm', 'w').write({name!r})", f"    time.sleep({seconds})", "    os._exit(0)"]
    return "".join(f"{indent}{line}\n" for line in lines)


def linger(name: str, seconds: int, new_session: bool = False) -> str:
    """A cell that forks one process called ``name`` (at most 15 bytes), which sleeps ``seconds``."""
    return "import os, time\n" + _forked(name, seconds, new_session, "")


def bomb(name: str, seconds: int, count: int) -> str:
    """A cell that forks up to ``count`` such processes and prints ``stopped: <error>`` when one cannot be made."""
    loop = f"import os, time\ntry:\n    for _ in range({count}):\n" + _forked(name, seconds, False, " " * 8)
    return loop + "except OSError as error:\n    print('stopped:', type(error).__name__)\n"


def named(name: str, uid: int | None = None) -> list:
    """The pids of the processes on this machine called ``name`` (and running as ``uid``, if given)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as comm, open(f"/proc/{pid}/status") as status:
                if comm.read().strip() == name and (uid is None or f"\nUid:\t{uid}\t" in status.read()):
                    found.append(pid)
        except OSError:
            pass
    return found

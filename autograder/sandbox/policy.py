"""What a sandboxed kernel may see, and the bubblewrap command line that grants exactly that.

Deny by default: every path inside is on the allow-list, with its reason (the environment's list is
``environment``); ``COMES_BACK`` lists all of a kernel's run that reaches the host. Data and pure functions only,
so tests/fast check the exact command line (docs/security.md).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from ..data import NAMES_VARIABLE
from .environment import PRIVATE_HOME


class SandboxError(RuntimeError):
    """The sandboxed kernel could not be started; the notebook was not run."""


@dataclass(frozen=True)
class Grant:
    """One path the kernel sees, and why it needs it."""

    path: str
    """Where the kernel sees it (absolute)."""
    why: str
    """Why it is on the list."""
    mount: str = "read-only"
    """``read-only``: the host's file or folder bound there (no host path is ever writable). ``tmpfs`` (private,
    empty, in memory; ``scratch`` the same, the kernel's working folder; ``sockets`` the same, small), ``proc`` (the
    sandbox's own processes) or ``dev`` (a minimal /dev): made new inside.
    ``symlink``: a symlink to ``source``, as the host has it."""
    source: str = ""
    """The host path bound at ``path`` when it is another one (the generated /etc/passwd); a symlink's target."""


# The machine's own files every Python kernel with torch and matplotlib needs, read-only. A missing one is
# skipped; a symlink (/lib -> usr/lib where /usr is merged) is made again inside, and its target granted.
SYSTEM_FILES = (
    Grant(
        "/usr/bin", "programs: the sandbox's own setpriv, prlimit and choom run inside it, and notebooks may run one"
    ),
    Grant("/usr/lib", "the C library, libstdc++ and the other shared libraries that Python, torch and numpy load"),
    Grant("/usr/lib64", "the dynamic linker (ld-linux-x86-64.so.2)"),
    Grant("/bin", "/usr/bin under its old name"),
    Grant("/lib", "/usr/lib under its old name"),
    Grant("/lib64", "the dynamic linker under the name every x86-64 program asks for"),
    Grant("/etc/ld.so.cache", "where the dynamic linker finds the system's shared libraries"),
    Grant(
        "/etc/fonts",
        "fontconfig's configuration: matplotlib runs fc-list when it builds its font cache, and without it fc-list "
        "writes an error to stderr, which would cost a graded cell its points",
    ),
)
# Made new for every kernel: nothing of the machine's is in them.
PRIVATE_MOUNTS = (
    Grant(
        "/proc",
        "Python, torch and ipykernel read /proc/self; in its own pid namespace, only the sandbox's processes show",
        "proc",
    ),
    Grant("/dev", "read-only, bwrap's own set: null, zero, full, random, urandom, tty, pts (no disk or GPU)", "dev"),
    Grant("/tmp", "private and empty, in memory: HOME, TMPDIR and matplotlib's cache", "tmpfs"),
    Grant("/dev/shm", "private shared memory, for torch and multiprocessing", "tmpfs"),
    Grant(
        "/sockets",
        "the kernel binds its sockets here, private and in memory; the grader reaches them only through its relay "
        "(relay.py), which follows no link and keeps at most max_message_bytes of any one message",
        "sockets",
    ),
    Grant(
        "/scratch",
        "the kernel's working folder: a private copy of the student's folder, in memory and of a fixed size, made "
        "before each kernel and thrown away after it; nothing a kernel writes reaches the grading machine",
        "scratch",
    ),
)
SOCKETS = "/sockets"  # where every kernel binds its sockets (its connection file says so)
SOCKETS_SIZE = 2**20  # sockets take no room: the folder's size only bounds what else a kernel puts there
SCRATCH = "/scratch"  # (the last of PRIVATE_MOUNTS) where every kernel works: its cwd
CPU_SLACK = 5  # a kernel gets SIGXCPU at its CPU limit, and SIGKILL that many seconds later (in_sandbox.run_kernel)
# Everything of a kernel's run that reaches the grading machine (grading principle 6: nothing flows back).
COMES_BACK = {
    "the executed notebook": "the outputs nbgrader receives as the kernel's messages and holds in memory, each "
    "cell's cut at GradingExecute.max_output_bytes; nbgrader writes the notebook and its page itself, by name",
    "its messages": "through the grader's relay (relay.py), whole messages only, each of at most "
    "SandboxedKernelManager.max_message_bytes; a larger one is read and dropped as it arrives, and named",
    "the end of its output": "the last 64 KiB of what the sandbox wrote to stderr, held in memory, for the message "
    "when a kernel does not start",
    "what it left in its folder": "a summary made inside the sandbox by the kernel parent (counts, bytes, the first "
    "names), for the instructor's kernel_files_discarded problem; the files themselves are thrown away",
    "what did not fit in its folder": "the parent's summary of the student's files it left out of the kernel's "
    "copy (their number, bytes, the largest names), for the instructor's files_left_out problem",
}

# Prefixes shared with the rest of the system: a Python installed there gets their bin/ and lib/, not all of them.
SHARED_PREFIXES = ("/", "/usr", "/usr/local")


@dataclass(frozen=True)
class KernelPaths:
    """The paths of one kernel that the allow-list names, all absolute."""

    student_folder: str
    """autograded/<student>/<assignment>, read-only: what the kernel's scratch (``SCRATCH``) is filled from."""
    course_root: str
    """Never visible: the student's folder must lie strictly inside it, and no granted path may contain it."""
    connection_folder: str
    """The kernels' connection files (socket names and key), written by the grader, read-only inside."""
    python_prefixes: tuple
    """The installation running the kernel: the venv, the Python it was made from, their resolved paths."""
    package_dir: str
    """This ``autograder`` package: the hidden tests import ``autograder.in_kernel``."""
    names_file: str
    """names.txt as ``$BACKPROP_NINJA_NAMES`` gives it to the kernel ("" when unset)."""
    passwd: str
    """The generated /etc/passwd (``account_files``)."""
    group: str
    """The generated /etc/group."""
    stage: str = ""
    """For a worker's kernel parent (``stage``): the folder bound instead of a student's, on which each
    student's folder is shown in turn, read-only; ``student_folder`` is then its mount point inside it."""


@dataclass(frozen=True)
class Tools:
    """The programs that make the sandbox; all but bwrap run inside it."""

    bwrap: str
    prlimit: str
    setpriv: str = ""  # only when the grader is root: it becomes the unprivileged uid inside
    choom: str = ""  # optional: makes the kernel the OOM killer's first choice


def python_prefixes(executable: str) -> tuple:
    """Where the kernel's Python lives: its venv, the installation the venv was made from, both resolved."""
    found = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    found += [os.path.dirname(os.path.dirname(p)) for p in (executable, os.path.realpath(executable))]
    found += [os.path.realpath(p) for p in found]
    return tuple(dict.fromkeys(os.path.normpath(p) for p in found))


def account_files(uid: int, gid: int) -> tuple:
    """/etc/passwd and /etc/group for the kernel: its own user only (getpass, ~ lookups), none of the host's."""
    return f"student:x:{uid}:{gid}:student:{PRIVATE_HOME}:/usr/sbin/nologin\n", f"student:x:{gid}:\n"


def allow_list(k: KernelPaths, tools: Tools) -> list:
    """Every path the kernel sees, with its reason, before symlinks and nesting are sorted out."""
    grants = [*SYSTEM_FILES, *PRIVATE_MOUNTS]
    for prefix in k.python_prefixes:
        if prefix in SHARED_PREFIXES:
            grants += [
                Grant(os.path.join(prefix, sub), f"the Python running the kernel, installed in {prefix}")
                for sub in ("bin", "lib")
            ]
        else:
            grants.append(
                Grant(
                    prefix,
                    "the Python running the kernel and its packages (torch, ipykernel): the venv and the Python it was "
                    "made from",
                )
            )
    grants += [
        Grant(tool, "runs inside the sandbox to set its limits")
        for tool in (tools.prlimit, tools.setpriv, tools.choom)
        if tool
    ]
    grants.append(Grant(k.package_dir, "the grader's module that the hidden tests import (autograder.in_kernel)"))
    if k.names_file:
        grants.append(Grant(k.names_file, f"the data set the notebooks read (${NAMES_VARIABLE})"))
    grants += [
        Grant(
            "/etc/passwd", "generated: names the kernel's own user only, not the machine's accounts", source=k.passwd
        ),
        Grant("/etc/group", "generated: the kernel's own group only", source=k.group),
        Grant(k.connection_folder, "the kernel's connection file: where to bind its sockets, and the key"),
    ]
    if k.stage:
        grants.append(Grant(k.stage, "where the worker shows the student's folder of the kernel running"))
    else:
        grants.append(Grant(k.student_folder, "the student's own staged notebooks, copied into the scratch"))
    return grants


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _depth(path: str) -> int:
    return 0 if path == "/" else path.count("/")


def resolve(grants: list) -> list:
    """The grants to mount, outermost first: missing host paths skipped, a host symlink made again inside
    (``symlink``, its target as ``source``) with its target granted, paths inside a read-only one dropped."""
    kept, todo = [], list(grants)
    while todo:
        g = todo.pop(0)
        if g.mount == "read-only" and not g.source:
            if os.path.islink(g.path):
                kept.append(Grant(g.path, g.why, "symlink", source=os.readlink(g.path)))
                todo.append(Grant(os.path.realpath(g.path), f"{g.why} (where {g.path} points)", g.mount))
                continue
            if not os.path.exists(g.path):
                continue
        kept.append(g)
    read_only = {g.path for g in kept if g.mount == "read-only"}
    kept = [g for g in kept if not (g.mount == "read-only" and any(_inside(g.path, p) for p in read_only - {g.path}))]
    return sorted({g.path: g for g in kept}.values(), key=lambda g: _depth(g.path))


MOUNT_OPTIONS = {  # Grant.mount -> bwrap's options for it, given the sizes of the in-memory folders
    "read-only": lambda g, sizes: ["--ro-bind", g.source or g.path, g.path],
    "symlink": lambda g, sizes: ["--symlink", g.source, g.path],
    "tmpfs": lambda g, sizes: ["--perms", "1777", "--size", str(sizes["tmpfs"]), "--tmpfs", g.path],
    "scratch": lambda g, sizes: ["--perms", "1777", "--size", str(sizes["scratch"]), "--tmpfs", g.path],
    "sockets": lambda g, sizes: ["--perms", "1777", "--size", str(SOCKETS_SIZE), "--tmpfs", g.path],
    "proc": lambda g, sizes: ["--proc", g.path],
    "dev": lambda g, sizes: ["--dev", g.path],
}


def check_student_folder(student: str, course: str) -> None:
    """A kernel works in a student's folder, strictly inside the course root: anything else is refused."""
    if course == "/" or student == course or not _inside(student, course):
        raise SandboxError(
            f"refusing to run a kernel in {student!r}: it must be a student's folder inside the course root "
            f"{course!r} (set SandboxedKernelManager.course_root)"
        )


def command_line(
    kernel_cmd: list, k: KernelPaths, tools: Tools, limits: dict, tmp_size: int, run_as=None, scratch_size=None
) -> list:
    """The bubblewrap command that runs ``kernel_cmd`` with exactly the allow-list of ``k``, in ``SCRATCH``.

    ``tmp_size``: the size in bytes of /tmp and /dev/shm each; ``scratch_size``: of the scratch (default the same).
    ``limits``: prlimit's resource -> value (``as``, ``cpu``, ``nproc``, ``fsize``; 0: none). ``run_as``: the
    (uid, gid) the kernel becomes when the grader is root (root ignores RLIMIT_NPROC and could reach
    root-owned sockets); None when the grader is not root: the kernel gets a user namespace instead.
    """
    course, student = k.course_root, k.student_folder
    if k.stage:
        if _inside(k.stage, course) or _inside(course, k.stage) or not _inside(student, k.stage):
            raise SandboxError(f"refusing the stage {k.stage!r}: it must hold {student!r} and lie outside {course!r}")
    else:
        check_student_folder(student, course)
    if run_as is not None and 0 in run_as:
        raise SandboxError("sandbox_uid and sandbox_gid must not be 0: root ignores the process limit")
    grants = resolve(allow_list(k, tools))
    sizes = {"tmpfs": tmp_size, "scratch": tmp_size if scratch_size is None else scratch_size}
    for g in grants:
        if g.mount == "read-only" and _inside(course, g.source or g.path):
            raise SandboxError(f"refusing to show {g.path!r} to the kernel: it holds the course root {course!r}")
    argv = [tools.bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net"]
    # An ordinary user's kernel parent is the pid namespace's init: bubblewrap's own would run as the kernels' uid,
    # unguarded, and a kernel wrote into its memory what the next student's read. As root bubblewrap's init stays: it
    # runs as root, and ends the sandbox when bubblewrap ends (a kernel parent, which setpriv gave another uid, never
    # receives the signal bubblewrap asks for it)
    argv += ["--as-pid-1"] if run_as is None else []
    argv += ["--die-with-parent", "--new-session", "--hostname", "sandbox"]
    made = {"/"}
    for g in grants:
        missing, parent = [], os.path.dirname(g.path)
        while parent not in made:
            missing.append(parent)
            parent = os.path.dirname(parent)
        for folder in reversed(missing):  # bwrap would make them 0700: the kernel's uid could not pass
            argv += ["--perms", "0755", "--dir", folder]
        made.update([*missing, g.path])
        argv += MOUNT_OPTIONS[g.mount](g, sizes)
    argv += ["--remount-ro", "/"]  # the folders made above stay empty: nothing can be written there
    # bwrap's /dev: a tmpfs of half the memory, an ordinary user's kernels' own, never cleared (its devices and /dev/shm
    # are mounts of their own, still writable)
    argv += [arg for g in grants if g.mount == "dev" for arg in ("--remount-ro", g.path)]
    # ipykernel polls no parent whose pid is 1 (jupyter_client sets JPY_PARENT_PID to the grader's pid outside,
    # which a kernel would take for a parent gone); --die-with-parent does that job.
    argv += ["--chdir", SCRATCH, "--setenv", "JPY_PARENT_PID", "1"]
    if run_as is not None:  # keep just what setpriv needs to become run_as, and drop everything
        argv += ["--cap-drop", "ALL"]
        argv += [arg for cap in ("SETUID", "SETGID", "SETPCAP") for arg in ("--cap-add", f"CAP_{cap}")]
        argv += ["--", tools.setpriv, f"--reuid={run_as[0]}", f"--regid={run_as[1]}", "--clear-groups"]
        argv += ["--inh-caps=-all", "--bounding-set=-all"]
    else:  # a process count of its own: RLIMIT_NPROC counts inside the new user namespace
        argv += ["--unshare-user", "--disable-userns"]
    argv += ["--", tools.prlimit, "--core=0"]
    # RLIMIT_CPU: the kernel parent's time counts over a worker's students, and a kernel can make it spend some; only
    # the soft limit here: the parent lifts it for itself, each kernel gets it and a hard one (in_sandbox.run_kernel)
    hard = {"cpu": "unlimited"}
    argv += [f"--{name}={value}:{hard.get(name, value)}" for name, value in limits.items() if value]
    argv.append("--")
    if tools.choom:  # the OOM killer should pick a sandboxed process first
        argv += [tools.choom, "-n", "1000", "--"]
    return argv + list(kernel_cmd)

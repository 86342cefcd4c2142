"""What a kernel parent does to itself before anything runs; its kernels inherit both. It cannot be traced or read
(``set_dumpable``), and it refuses the calls that make System V IPC objects, POSIX message queues and keys, which
outlive the kernel, user namespaces, and io_uring (``load_seccomp_filter``).

A System V shared-memory segment stays in the sandbox's IPC namespace after every process that made it has ended,
and no limit of the sandbox counts it: RLIMIT_AS counts only what is mapped, and the OOM killer, which takes a
sandboxed process first (``choom``), frees nothing by killing them. A notebook could pin the machine's memory that
way, or leave a message for the next student's kernels of the same worker. A key added to the uid's keyring
(``add_key``, ``keyctl``) is such a message too, and as root it outlives every sandbox of the worker's uid. Nothing in
the course needs them (torch shares memory through ``/dev/shm`` files), so creating one
fails with EPERM.

A user namespace gives the process in it every capability there: it could mount, make network namespaces and reach
much more of the Linux kernel's code than a sandboxed kernel needs. Bubblewrap's ``--disable-userns`` stops that only
for an ordinary user's grader, whose kernels live in a user namespace already; as root they run as a plain uid. So
``clone`` and ``unshare`` with CLONE_NEWUSER fail with EPERM. ``clone3`` passes its flags in memory, which a filter
cannot read: it fails with ENOSYS, and the C library then starts the thread or process with ``clone``.

The seccomp filter, which no process can remove, also refuses with EPERM every call of another ABI (x86-64's x32
numbers; 32-bit ``int 0x80`` calls, whose numbers differ and include the ``ipc`` multiplexer); it lets everything
else through.

Each kernel adds a second filter as it starts (``refuse_exec``): ``execve`` and ``execveat`` fail with EPERM. A new
program is a way around what the kernel's switches refuse: a Python started by ``subprocess``, ``os.system``
or ``!python`` would import a torch with autograd whole, compute a gradient from tensors the cell saved, and leave
it in a file to load. A forked process keeps the kernel's memory, switches included. The filter is the kernel's
alone, loaded after the fork: nothing the parent imports ahead can fail for the want of a program (``ctypes.util.
find_library`` runs ``ldconfig``).
"""

import ctypes
import errno
import os
import platform
import signal
import struct
import sys

# The calls refused, by this architecture's numbers (asm/unistd.h): shmget, semget, msgget, mq_open, then add_key,
# request_key, keyctl (a kernel's keyrings: the uid's keyring outlives every sandbox of that uid, as root a worker's),
# then io_uring_setup, io_uring_enter, io_uring_register (the same numbers on both): io_uring runs a process's reads,
# writes, opens and sockets inside Linux, where no seccomp filter sees them, and has been the way into the Linux
# kernel of many privilege escalations; nothing a notebook runs uses it (a sandboxed kernel could set one up); then
# inotify_init, inotify_init1 and fanotify_init: Linux counts their instances per user of the machine, whatever the
# user namespace, so an ordinary user's kernels (their uid) took all 128 of fs.inotify.max_user_instances, and the
# instructor's own programs (a Jupyter server, an editor) could watch no file while the kernel ran
REFUSED = {
    "x86_64": (0xC000003E, (29, 64, 68, 240, 248, 249, 250, 425, 426, 427, 253, 294, 300)),  # AUDIT_ARCH_X86_64
    "aarch64": (0xC00000B7, (194, 190, 186, 180, 217, 218, 219, 425, 426, 427, 26, 262)),  # AUDIT_ARCH_AARCH64
}
# clone and unshare, whose first argument holds the flags; clone3, the same number on both
NAMESPACE_CALLS = {"x86_64": (56, 272), "aarch64": (220, 97)}
CLONE3, CLONE_NEWUSER = 435, 0x10000000
EXEC_CALLS = {"x86_64": (59, 322), "aarch64": (221, 281)}  # execve, execveat
SECCOMP_CALL = {"x86_64": 317, "aarch64": 277}  # seccomp(2), which takes flags (Linux 3.17)
X32_SYSCALL_BIT = 0x40000000  # x86-64: a call numbered from here is x32's ABI, which seccomp reports as x86-64

# Classic BPF (linux/filter.h, linux/seccomp.h)
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
ARCH_OFFSET, NR_OFFSET, FLAGS_OFFSET = 4, 0, 16  # in struct seccomp_data; the low half of args[0] (little-endian)
ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | the errno
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 4, 38, 22, 2  # prctl(2)
# seccomp(2): a filtered process keeps the speculation mitigations it had (Linux 4.17). Without the flag, kernels
# booted with spec_store_bypass_disable=seccomp (the default before 5.16) turn on SSBD for it, which slows
# computation; the kernel runs only the student's own code, so it has no secret of anyone's to guard that way.
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW = 1, 4


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def assemble(code: list, labels: dict) -> bytes:
    """struct sock_filter entries of ``code``: (code, jump if true, jump if false, k), where a jump may name its
    target, a label, by its index in ``labels``."""
    # A jump counts the instructions it skips
    at = lambda i, target: labels[target] - i - 1 if isinstance(target, str) else target
    return b"".join(struct.pack("=HBBI", op, at(i, jt), at(i, jf), k) for i, (op, jt, jf, k) in enumerate(code))


def exec_program(machine: str) -> bytes | None:
    """The kernel's filter (``refuse_exec``) for ``machine``; None when unknown."""
    if machine not in EXEC_CALLS:
        return None
    arch, _ = REFUSED[machine]
    code = [(LD_W_ABS, 0, 0, ARCH_OFFSET), (JEQ_K, 0, "refuse", arch), (LD_W_ABS, 0, 0, NR_OFFSET)]
    code += [(JEQ_K, "refuse", 0, number) for number in EXEC_CALLS[machine]] + [(RET_K, 0, 0, ALLOW)]
    labels = {"refuse": len(code)}
    code.append((RET_K, 0, 0, RET_ERRNO | errno.EPERM))
    return assemble(code, labels)


def program(machine: str) -> bytes | None:
    """The filter for ``machine`` (``platform.machine()``) as struct sock_filter entries; None when unknown."""
    if machine not in REFUSED:
        return None
    arch, numbers = REFUSED[machine]
    clone, unshare = NAMESPACE_CALLS[machine]
    # (code, jump if true, jump if false, k); a jump names its target, a label below
    code = [(LD_W_ABS, 0, 0, ARCH_OFFSET), (JEQ_K, 0, "refuse", arch), (LD_W_ABS, 0, 0, NR_OFFSET)]
    if machine == "x86_64":
        code.append((JGE_K, "refuse", 0, X32_SYSCALL_BIT))
    code += [(JEQ_K, "refuse", 0, number) for number in numbers]
    code += [(JEQ_K, "no clone3", 0, CLONE3), (JEQ_K, "flags", 0, clone), (JEQ_K, "flags", 0, unshare)]
    code += [(RET_K, 0, 0, ALLOW)]
    labels = {"flags": len(code)}
    code += [(LD_W_ABS, 0, 0, FLAGS_OFFSET), (JSET_K, "refuse", 0, CLONE_NEWUSER), (RET_K, 0, 0, ALLOW)]
    labels["no clone3"] = len(code)
    code.append((RET_K, 0, 0, RET_ERRNO | errno.ENOSYS))
    labels["refuse"] = len(code)
    code.append((RET_K, 0, 0, RET_ERRNO | errno.EPERM))
    return assemble(code, labels)


def set_dumpable(dumpable: bool) -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, int(dumpable), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def load_seccomp_filter() -> bool:
    """Load the filter into this process and the ones it starts from now on; False on an architecture it does not
    know (nothing is refused there). OSError when the kernel refuses the filter."""
    return _load(program(platform.machine()))


def refuse_exec() -> bool:
    """In a kernel, before any of its code runs: no program can be started from now on (``exec_program``). False on
    an architecture the filter does not know."""
    return _load(exec_program(platform.machine()))


def _load(code: bytes | None) -> bool:
    if code is None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    fprog = SockFprog(len(code) // 8, code)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    call = SECCOMP_CALL[platform.machine()]
    if libc.syscall(call, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW, ctypes.byref(fprog)) != 0:
        if ctypes.get_errno() != errno.EINVAL:  # EINVAL: a kernel older than the flag
            raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_SET_MODE_FILTER) failed")
        if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
    return True


# The parent's processes other than its kernels: what a kernel left running, killed (kill_the_rest), and the
# short-lived children that read what the parent itself must not hold (in_child: docs/design/sandbox.md)


def kill_the_rest() -> None:
    """Kill every process of the sandbox but this one and pid 1 (as root, bubblewrap's init, which reaps orphans: the
    parent kills once); as init, until no other process is left, not even one dead and unreaped."""
    init = os.getpid() == 1
    while True:  # every orphan comes to init
        try:
            os.kill(-1, signal.SIGKILL)  # (again each time: one may have forked since)
        except (ProcessLookupError, PermissionError):  # none left, or none it may signal
            break
        if not init:
            break
        try:
            _reaped(os.waitpid(-1, 0)[0])
        except ChildProcessError:
            break
    while True:  # its own children that have ended already
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        _reaped(pid)


def in_child(work) -> int:
    """Run ``work()`` in a short-lived child and return its result (1 if it raised). What the child reads (the names
    of the files a kernel or a student's folder holds) ends with it: every kernel is forked from the parent, with a
    copy of its memory, freed parts included. The child answers before it exits (unmapping its copy of torch takes
    longer than its work): it is reaped later, at the latest before the next kernel is forked (``reap_helpers``)."""
    answer, answered = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(answer)
            status = work()
        except BaseException:  # noqa: BLE001 (the log shows it; the parent says the clear failed)
            import traceback

            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os.write(answered, bytes([status & 255]))
            os._exit(status)
    os.close(answered)
    _helpers.append(pid)
    try:
        status = os.read(answer, 1)
    finally:
        os.close(answer)
    return status[0] if status else 1  # (nothing: it was killed)


_helpers = []  # the children ``in_child`` forked, until they are reaped


def _reaped(pid: int) -> None:
    if pid in _helpers:  # (never waited for again: its pid may be a new process's by then)
        _helpers.remove(pid)


def reap_helpers() -> None:
    """Wait until the children ``in_child`` forked are gone: a kernel sees no process in its sandbox but its own, its
    parent and (as root) bubblewrap's init."""
    while _helpers:
        try:
            os.waitpid(_helpers.pop(), 0)
        except ChildProcessError:  # reaped already (kill_the_rest)
            pass

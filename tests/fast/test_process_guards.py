"""The seccomp filter of the kernel parents, loaded for real into a child of the test process (no kernel)."""

import ctypes
import ctypes.util
import errno
import json
import os
import platform
import subprocess
import sys

import pytest

from autograder.sandbox import process_guards

IPC_PRIVATE, IPC_CREAT = 0, 0o1000
ADD_KEY = {"x86_64": 248, "aarch64": 217}.get(platform.machine())

pytestmark = pytest.mark.skipif(
    platform.machine() not in process_guards.REFUSED, reason="the filter knows x86-64 and aarch64 only"
)


def in_a_filtered_child(calls, load=process_guards.load_seccomp_filter) -> dict:
    """Run ``calls(libc)`` in a child process that loaded the filter (``load``) first; what it returned."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            load()
            answer = calls(ctypes.CDLL(None, use_errno=True))
        except BaseException as error:  # noqa: BLE001 (the test sees it)
            answer = {"error": repr(error)}
        os.write(write, json.dumps(answer).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        text = answer.read()
    os.waitpid(pid, 0)
    return json.loads(text)


def outcome(result: int) -> str:
    return "ok" if result >= 0 else errno.errorcode[ctypes.get_errno()]


def test_system_v_ipc_and_message_queues_are_refused():
    def calls(libc):
        rt = ctypes.CDLL(ctypes.util.find_library("rt"), use_errno=True)
        return {
            "shmget": outcome(libc.shmget(IPC_PRIVATE, 2**20, IPC_CREAT | 0o600)),
            "semget": outcome(libc.semget(IPC_PRIVATE, 1, IPC_CREAT | 0o600)),
            "msgget": outcome(libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600)),
            "mq_open": outcome(rt.mq_open(b"/backprop-ninja-test", os.O_CREAT | os.O_RDWR, 0o600, None)),
            # a key (in the process keyring, -2, so that a filter that let it through leaves nothing behind)
            "add_key": outcome(libc.syscall(ADD_KEY, b"user", b"backprop-ninja-test", b"note", 4, -2)),
        }

    refused = ("shmget", "semget", "msgget", "mq_open", "add_key")
    assert in_a_filtered_child(calls) == {name: "EPERM" for name in refused}


def test_io_uring_is_refused():
    """io_uring does a process's work inside Linux, out of the filter's sight, and is much of the Linux kernel's attack
    surface: a sandboxed kernel could set one up. Nothing a notebook runs needs it."""
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    assert in_a_filtered_child(lambda libc: outcome(libc.syscall(425, 8, params))) == "EPERM"  # io_uring_setup


def test_no_file_watch_can_be_made():
    """inotify and fanotify instances are counted per user of the machine: an ordinary user's kernels, of the grader's
    uid in a user namespace, took all 128 of fs.inotify.max_user_instances, and the instructor's own programs could
    watch no file (EMFILE) while the kernel ran. Nothing a notebook runs needs them."""
    inotify_init1, fanotify_init = {"x86_64": (294, 300), "aarch64": (26, 262)}[platform.machine()]

    def calls(libc):
        found = {"inotify_init1": outcome(libc.syscall(inotify_init1, 0)), "fanotify_init": ""}
        found["fanotify_init"] = outcome(libc.syscall(fanotify_init, 0x200, 0))  # FAN_REPORT_FID: unprivileged
        if platform.machine() == "x86_64":
            found["inotify_init"] = outcome(libc.syscall(253))
        return found

    assert set(in_a_filtered_child(calls).values()) == {"EPERM"}


def test_a_user_namespace_cannot_be_made():
    clone_newuser, clone_newns = 0x10000000, 0x00020000

    def calls(libc):
        pid = os.fork()  # a plain fork, for comparison: allowed
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        return {
            "unshare(CLONE_NEWUSER)": outcome(libc.unshare(clone_newuser)),
            "unshare(CLONE_NEWUSER | CLONE_NEWNS)": outcome(libc.unshare(clone_newuser | clone_newns)),
            "clone3": outcome(libc.syscall(process_guards.CLONE3, None, 0)),  # its flags cannot be read: ENOSYS
        }

    assert in_a_filtered_child(calls) == {
        "unshare(CLONE_NEWUSER)": "EPERM",
        "unshare(CLONE_NEWUSER | CLONE_NEWNS)": "EPERM",
        "clone3": "ENOSYS",
    }


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the x32 ABI is x86-64's")
def test_a_call_by_its_x32_number_is_refused():
    getpid = 39
    answer = in_a_filtered_child(lambda libc: [outcome(libc.syscall(getpid)), outcome(libc.syscall(0x40000000 | 29))])
    assert answer == ["ok", "EPERM"]  # getpid as itself; shmget by its x32 number


def test_what_a_kernel_needs_still_works():
    def calls(libc):
        import subprocess
        import threading
        from multiprocessing import shared_memory

        import torch

        memory = shared_memory.SharedMemory(create=True, size=4096)  # a /dev/shm file: not refused
        try:
            memory.buf[0] = 7
            other = shared_memory.SharedMemory(name=memory.name)
            seen = other.buf[0]
            other.close()
        finally:
            memory.close()
            memory.unlink()
        child = subprocess.run(["true"]).returncode
        # a thread starts with clone once clone3 is refused (not torch's pool: OpenMP hangs in a fork of a process
        # that used it, as this test's may have)
        ran = []
        thread = threading.Thread(target=lambda: ran.append(threading.get_native_id() != os.getpid()))
        thread.start()
        thread.join()
        return [seen, child, ran, torch.ones(3).sum().item()]

    assert in_a_filtered_child(calls) == [7, 0, [True], 3.0]


def test_on_an_architecture_it_does_not_know_nothing_is_refused():
    assert process_guards.program("riscv64") is None


def test_a_kernel_starts_no_program():
    """A grading kernel's own filter: no program, a Python least of all; a fork (a copy of the kernel) still works."""

    def calls(libc):
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        forked = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        try:
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            started = "ok"
        except PermissionError:
            started = "EPERM"
        return {
            "fork": forked,
            "subprocess": started,
            "os.system": os.system("true"),
            "execveat": outcome(
                libc.syscall(process_guards.EXEC_CALLS[platform.machine()][1], -100, b"/bin/true", None, None, 0)
            ),
        }

    assert in_a_filtered_child(calls, process_guards.refuse_exec) == {
        "fork": 7,
        "subprocess": "EPERM",
        "os.system": 127 << 8,  # the shell itself could not be started
        "execveat": "EPERM",
    }

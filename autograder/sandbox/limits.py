"""The sandbox's limits, configurable as ``c.SandboxedKernelManager.<trait>`` (the kernel manager inherits them)."""

import os

from traitlets import Integer, default
from traitlets.config import Configurable

GiB = 2**30


class SandboxLimits(Configurable):
    """What one sandboxed kernel may use, and, as root, the uid it runs as."""

    memory_limit = Integer(
        4 * GiB,
        config=True,
        help=(
            "RLIMIT_AS in bytes for each kernel process (0: none). Stops one notebook "
            "allocating the machine's memory: the allocation fails with MemoryError (torch: "
            "RuntimeError) instead of the OOM killer taking the grader. `import torch` needs "
            "about 0.8 GiB of address space."
        ),
    )
    cpu_time_limit = Integer(
        600,
        config=True,
        help=(
            "RLIMIT_CPU in seconds for each kernel process, over the whole notebook (0: none). "
            "Kills a notebook that spins (also one that ignores interrupts) so the others "
            "still get graded; raise it if a notebook legitimately trains for long."
        ),
    )
    process_limit = Integer(
        config=True,
        help=(
            "RLIMIT_NPROC: processes plus threads of the kernel's user (0: none); default "
            "max(64, 32 + 4 * cores), as torch/OpenMP/BLAS start threads per core. Stops fork "
            "bombs. Root is exempt, so as root the kernel runs as sandbox_uid."
        ),
    )
    file_size_limit = Integer(
        1 * GiB,
        config=True,
        help=(
            "RLIMIT_FSIZE in bytes (0: none): the largest file the kernel may write, so a "
            "notebook cannot fill the grading disk with one file."
        ),
    )
    signal_queue_limit = Integer(
        1024,
        config=True,
        help=(
            "RLIMIT_SIGPENDING: signals queued to the kernel's processes at once (0: none). Linux counts them per user "
            "of the machine: without it, an ordinary user's kernel (their uid in a user namespace) queued all 96,367 "
            "of the grading user's, whose own programs then could queue none (sigqueue, timers: EAGAIN)."
        ),
    )
    tmp_size = Integer(
        512 * 2**20,
        config=True,
        help=("Size in bytes of the kernel's private /tmp and /dev/shm tmpfs (RAM, not covered by RLIMIT_AS)."),
    )
    scratch_size = Integer(
        512 * 2**20,
        config=True,
        help=(
            "Size in bytes of the kernel's working folder: a tmpfs (RAM) holding a copy of the student's folder, "
            "thrown away with the kernel; the most a notebook may write there."
        ),
    )
    max_message_bytes = Integer(
        64 * 2**20,
        config=True,
        help=(
            "The most the grader holds of any one message from a kernel, in bytes. The kernel's sockets reach the "
            "grader through a relay (relay.py) that reads each message as it arrives: a larger one is read and "
            "dropped, and its cell gets the problem message_limit; the notebook goes on. Past four times this for "
            "the kernel's messages together, a message over 1 MiB is dropped too. Each cell's output is further cut "
            "at GradingExecute.max_output_bytes."
        ),
    )
    sandbox_uid = Integer(
        65534,
        config=True,
        help=(
            "uid the kernel runs as when the grader is root ('nobody'; RLIMIT_NPROC counts "
            "all its processes on the host). Ignored when the grader is not root."
        ),
    )
    sandbox_gid = Integer(65534, config=True, help="gid to go with sandbox_uid.")

    @default("process_limit")
    def _process_limit_default(self) -> int:
        return max(64, 32 + 4 * (os.cpu_count() or 1))

    def _limits(self) -> tuple:
        return (
            ("as", self.memory_limit),
            ("cpu", self.cpu_time_limit),
            ("nproc", self.process_limit),
            ("fsize", self.file_size_limit),
            ("sigpending", self.signal_queue_limit),
        )

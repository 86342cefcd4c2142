"""The uids a root grader runs its kernels as: one per grading worker, so that RLIMIT_NPROC, which counts per
uid, keeps one student's fork bomb away from the kernel graded beside it."""

import fcntl
import pwd
import tempfile
from pathlib import Path


def claim_sandbox_uid(first: int) -> tuple:
    """(uid, lock): the first uid from ``first`` that no account uses and no other grader on this machine holds;
    it is this worker's while ``lock`` (an open file) stays open."""
    uid = first
    while True:
        try:
            pwd.getpwuid(uid)  # an account's: never
        except KeyError:
            lock = open(Path(tempfile.gettempdir()) / f"backprop-ninja-sandbox-uid-{uid}.lock", "w")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return uid, lock
            except BlockingIOError:
                lock.close()
        uid += 1

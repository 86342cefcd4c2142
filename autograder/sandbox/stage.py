"""A kernel parent's private folder, and the stage in it where each student's folder is shown in turn, inside one
sandbox.

As root, the worker binds the current student's folder on the stage, and the mount propagates into the sandbox
(``Stage``); the mounts live in a mount namespace of the worker's or its fork server's own. An ordinary user cannot
mount: the worker copies the folder onto the stage instead, before each kernel (``CopyStage``). Either way the
sandbox is cleared between students (docs/design/sandbox.md).
"""

from __future__ import annotations

import ctypes
import fcntl
import glob
import os
import shutil
import stat
import tempfile

from .policy import account_files

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC = 0x1, 0x2, 0x4, 0x20, 0x1000, 0x4000
MS_SLAVE, MS_SHARED = 1 << 19, 1 << 20
MNT_DETACH = 2
MAX_ENTRIES = 20000  # entries a copy stage copies of a student's folder at most (the parent's own bound)
PRIVATE_PREFIX = "nbgrader-sandbox-"
_OWNED = {}  # private folder -> the descriptor of its owner file, locked while this process uses the folder

_libc = ctypes.CDLL(None, use_errno=True)


def _call(name: str, *args) -> None:
    encoded = [a.encode() if isinstance(a, str) else a for a in args]
    if getattr(_libc, name)(*encoded) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{name}{tuple(args)}: {os.strerror(error)}")


def _mount(source, target: str, flags: int) -> None:
    _call("mount", source, target, None, ctypes.c_ulong(flags), None)


def _folder(path: str, mode: int = 0o755) -> None:
    """Make ``path`` with ``mode`` whatever the umask: as root, the kernels' uid must enter the stage."""
    os.mkdir(path)
    os.chmod(path, mode)


def private_folder(uid: int, gid: int) -> str:
    """A kernel parent's private folder: connection/ for its kernels' connection files (shown read-only to them),
    relay/ for the sockets the grader connects to (never shown), and /etc/passwd and /etc/group for ``uid``. Its
    ``owner`` file stays locked while this process uses it: a folder whose worker died is known by its free lock."""
    rundir = tempfile.mkdtemp(prefix=PRIVATE_PREFIX)
    fd = os.open(os.path.join(rundir, ".owner"), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(os.path.join(rundir, ".owner"), os.path.join(rundir, "owner"))  # seen by others only once locked
    _OWNED[rundir] = fd
    os.mkdir(os.path.join(rundir, "relay"), 0o700)
    os.mkdir(os.path.join(rundir, "connection"))
    os.chmod(os.path.join(rundir, "connection"), 0o755)  # as root, the kernel's uid reads its own file in it
    for name, text in zip(("passwd", "group"), account_files(uid, gid)):
        with open(os.path.join(rundir, name), "w") as f:
            f.write(text)
        os.chmod(f.name, 0o644)
    return rundir


def remove_private_folder(rundir: str) -> None:
    """Remove a private folder (nothing mounted in it any more) and let go of its owner file."""
    shutil.rmtree(rundir, ignore_errors=True)
    fd = _OWNED.pop(rundir, None)
    if fd is not None:
        os.close(fd)


def remove_stale_private_folders() -> int:
    """Remove the private folders of this user's kernel parents whose worker ended without removing them (killed,
    out of memory): each holds a copy of the last student's notebook. Only a folder of this user's, with an owner
    file whose lock is free, and nothing mounted in it; those of another run still grading are locked. How many."""
    removed = 0
    for rundir in glob.glob(os.path.join(glob.escape(tempfile.gettempdir()), PRIVATE_PREFIX + "*")):
        try:
            info = os.lstat(rundir)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                continue
            fd = os.open(os.path.join(rundir, "owner"), os.O_RDWR | os.O_NOFOLLOW)
        except OSError:
            continue  # gone, or not made by private_folder
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if not mounted_under(rundir):
                shutil.rmtree(rundir, ignore_errors=True)
                removed += 1
        except OSError:
            pass  # in use
        finally:
            os.close(fd)
    return removed


def own_mount_namespace() -> bool:
    """Give this process a mount namespace of its own, whose mounts never reach the machine's: True if it could
    (as root, before any thread starts), False otherwise (nothing changed)."""
    if os.geteuid() != 0:
        return False
    try:
        _call("unshare", CLONE_NEWNS)
        _mount(None, "/", MS_REC | MS_SLAVE)  # the machine's mounts still come in; ours do not go out
    except OSError:
        return False  # (then no stage is ever mounted: kernel parents are per student)
    return True


class Stage:
    """``folder`` (made here, in the parent's private run folder): a shared mount with an empty ``student`` folder,
    the mount point of the student shown; ``lend``, a private mount point beside it."""

    def __init__(self, folder: str, lend: str):
        self.folder, self.lend = folder, lend
        self.student = os.path.join(folder, "student")  # the kernels' working directory, as the sandbox sees it
        self.shown = None  # the host folder bound on ``student``
        _folder(folder)
        _folder(lend, 0o700)
        _mount(folder, folder, MS_BIND)
        _mount(None, folder, MS_SHARED)
        _folder(self.student)  # root's: the sandbox cannot write in it while no student is shown

    def show(self, student_folder: str) -> None:
        """Bind ``student_folder`` on ``student``, read-only, nosuid and nodev (after ``hide``): the kernels copy it
        into their scratch."""
        if self.shown == student_folder:
            return
        self.hide()
        # The flags are set on a private bind first: a remount would not reach the sandbox's copy, a bind's copy
        # keeps them.
        _mount(student_folder, self.lend, MS_BIND)
        try:
            _mount(None, self.lend, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
            _mount(self.lend, self.student, MS_BIND)
            self.shown = student_folder
        finally:
            _call("umount2", self.lend, MNT_DETACH)

    def hide(self) -> None:
        """Unmount the student shown, here and in the sandbox (nothing of theirs may be running any more)."""
        if self.shown is not None:
            _call("umount2", self.student, MNT_DETACH)
            self.shown = None

    def close(self) -> bool:
        """Unmount everything; True when nothing is mounted under the folder any more (it may be removed)."""
        try:
            self.hide()
            _call("umount2", self.folder, MNT_DETACH)
            if os.path.ismount(self.lend):
                _call("umount2", self.lend, MNT_DETACH)
        except OSError:
            pass
        return not (mounted_under(self.folder) or mounted_under(self.lend))


class CopyStage:
    """``Stage``'s part for a worker that cannot mount: ``student`` inside ``folder`` holds a copy of the student's
    folder, made anew before each of their kernels (nbgrader writes each notebook there as it grades it)."""

    def __init__(self, folder: str):
        self.folder, self.student, self.shown = folder, os.path.join(folder, "student"), None
        _folder(folder)
        _folder(self.student)

    def show(self, student_folder: str) -> None:
        """Copy ``student_folder``'s folders and regular files onto ``student`` (nothing else: no link is followed),
        after what was shown before is removed. No kernel runs then: the parent has cleared the sandbox."""
        self.hide()
        self.shown = student_folder
        budget = MAX_ENTRIES
        for folder, dirs, files in os.walk(student_folder):  # (os.walk does not follow links to folders)
            relative = os.path.relpath(folder, student_folder)
            target = os.path.normpath(os.path.join(self.student, relative))
            if relative != ".":
                _folder(target)
            budget -= len(dirs) + len(files)
            if budget < 0:
                raise OSError(f"{student_folder} holds more than {MAX_ENTRIES} entries")
            for name in files:
                _copy_regular(os.path.join(folder, name), os.path.join(target, name))

    def hide(self) -> None:
        for entry in os.scandir(self.student):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        self.shown = None

    def close(self) -> bool:
        try:
            self.hide()
        except OSError:
            pass
        return True


def _copy_regular(source: str, target: str) -> None:
    """Copy ``source`` if it is a regular file, opened without following a link (or a pipe's blocking)."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return  # a link, or gone
    with os.fdopen(fd, "rb") as f:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            with open(target, "xb") as out:
                os.fchmod(out.fileno(), 0o644)
                shutil.copyfileobj(f, out)


def mounted_under(folder: str) -> bool:
    """Whether a mount point of this process's namespace lies in ``folder`` (or is it)."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return any(p == folder or p.startswith(folder.rstrip("/") + "/") for p in points)

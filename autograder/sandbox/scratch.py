"""The kernel's working folder, its scratch (a tmpfs at policy.SCRATCH, inside the sandbox): the kernel parent fills
it with a copy of the student's folder before each kernel (``fill_scratch``) and reads back what the kernel left there
(``left_behind``) before it empties it (``remove_inside``, in_sandbox.py). Each reads names that a student or a
kernel chose, so the parent runs them only in short-lived children of its own (``process_guards.in_child``).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat

from .policy import SCRATCH

MAX_ENTRIES = 20000  # entries the parent copies, walks or removes; beyond, it stops (and a clear ends the sandbox)
EXAMPLES, NAME_CHARS = 5, 120  # what a summary of files names
STUDENT_SHARE = 0.5  # of the scratch, the most the student's files take: the rest is their kernel's to write in


def students_room() -> int:
    """Bytes of the scratch the student's files may take."""
    fs = os.statvfs(SCRATCH)
    return int(fs.f_blocks * fs.f_frsize * STUDENT_SHARE)


def fill_scratch(source: str) -> tuple:
    """Copy the student's folder (read-only here) into the empty scratch: its folders and regular files, nothing else,
    the smallest files first, up to ``STUDENT_SHARE`` of the scratch and MAX_ENTRIES entries. Returns (what was
    copied, {relative path: (size, mtime_ns), or None for a folder}, so that what the kernel adds shows; a summary
    of what was left out, or None). A file that cannot be copied is left out: a student's folder is theirs to fill
    (earlier notebooks' outputs, files of their own), and filling the scratch must fail only their notebook."""
    room = students_room()
    copied, files, left_out, capped = {}, [], [], False
    unlisted = lambda error: left_out.append((0, os.path.relpath(error.filename, source)))  # deeper than a path
    for folder, dirs, names in os.walk(source, onerror=unlisted):  # (os.walk does not follow links to folders)
        relative = os.path.relpath(folder, source)
        if len(copied) + len(files) + len(names) > MAX_ENTRIES:
            dirs[:], capped = [], True
            continue
        if relative != ".":
            try:
                os.mkdir(os.path.join(SCRATCH, relative), 0o755)
            except OSError:  # a path longer than the scratch can take
                dirs[:] = []
                left_out.append((0, relative))
                continue
            copied[relative] = None
        for name in names:
            path = os.path.normpath(os.path.join(relative, name))
            try:
                st = os.lstat(os.path.join(source, path))
            except OSError:
                continue  # gone
            if stat.S_ISREG(st.st_mode):
                files.append((st.st_size, path))
    for size, path in sorted(files):
        target = os.path.join(SCRATCH, path)
        try:
            if size > room:
                raise OSError("no room")
            shutil.copyfile(os.path.join(source, path), target)
            st = os.stat(target)
        except OSError:  # too large for what is left, unreadable, or the scratch is full
            left_out.append((size, path))
            if os.path.lexists(target):
                os.unlink(target)
            continue
        copied[path] = (st.st_size, st.st_mtime_ns)
        room -= st.st_blocks * 512
    if not left_out and not capped:
        return copied, None
    examples = [path[:NAME_CHARS] for _, path in sorted(left_out, reverse=True)[:EXAMPLES]]
    summary = {"files": len(left_out), "bytes": sum(size for size, _ in left_out), "examples": examples}
    return copied, {**summary, "capped": capped}


# what the summary of a kernel's leftovers calls an entry, and the test of its mode, most telling first
KINDS = {"link": stat.S_ISLNK, "pipe": stat.S_ISFIFO, "socket": stat.S_ISSOCK, "folder": stat.S_ISDIR,
         "file": stat.S_ISREG}  # fmt: skip
RANK = {kind: rank for rank, kind in enumerate(KINDS)}


def left_behind(copied: dict) -> dict | None:
    """What the kernel left in the scratch beyond the copies it was given (None: nothing): how many entries of each
    kind it added, how many copies it changed, how many of its files have other hard links, the bytes they take,
    and a few names, the most telling kinds first (a link with its target). Walks at most MAX_ENTRIES entries
    (then ``capped``); ``unread`` counts the folders it could not look into."""
    counts, found, changed, hard_links, used, seen, unread = {}, [], 0, 0, 0, 0, 0
    folders = [""]
    while folders and seen < MAX_ENTRIES:
        relative = folders.pop()
        try:
            with os.scandir(os.path.join(SCRATCH, relative)) as entries:
                for entry in entries:
                    seen += 1
                    if seen > MAX_ENTRIES:
                        break
                    path = os.path.join(relative, entry.name)
                    st = entry.stat(follow_symlinks=False)
                    kind = next((k for k, test in KINDS.items() if test(st.st_mode)), "other")
                    if kind == "folder":
                        folders.append(path)
                    if path in copied:
                        if copied[path] is None and kind == "folder" or copied[path] == (st.st_size, st.st_mtime_ns):
                            continue
                        changed += 1
                    else:
                        counts[kind] = counts.get(kind, 0) + 1
                    used += st.st_blocks * 512
                    hard_links += kind == "file" and st.st_nlink > 1
                    if len(found) < 100 * EXAMPLES:
                        target = f" -> {os.readlink(entry.path)[:NAME_CHARS]}" if kind == "link" else ""
                        found.append((RANK.get(kind, len(RANK)), path[:NAME_CHARS] + target))
        except OSError:  # a folder the kernel made unreadable (mode 0), or one nested deeper than a path can name
            unread += 1
    if not counts and not changed and not unread:
        return None
    capped = seen > MAX_ENTRIES or bool(folders)
    examples = [name for _, name in sorted(found)[:EXAMPLES]]
    return {"counts": counts, "changed": changed, "hard_links": hard_links, "bytes": used, "examples": examples,
            "capped": capped, "unread": unread}  # fmt: skip


class TooMany(Exception):
    """A folder holds more entries than the parent will walk: its sandbox is ended instead (its tmpfs with it)."""


def remove_inside(folder: str, device: int, budget: list) -> None:
    """Remove what ``folder`` holds on ``device``, never crossing into another mount (the connection folder is bound
    inside /tmp when the grader's temporary folder lies there); ``budget[0]`` entries at most, then TooMany."""
    for entry in os.scandir(folder):
        budget[0] -= 1
        if budget[0] < 0:
            raise TooMany(folder)
        try:
            if entry.is_dir(follow_symlinks=False):
                if (st := entry.stat(follow_symlinks=False)).st_dev == device:
                    if st.st_uid == os.getuid() and st.st_mode & 0o700 != 0o700:  # a kernel's unlistable folder
                        os.chmod(entry.path, 0o700)  # (0311) kept all it held, IPython startup files included
                    remove_inside(entry.path, device, budget)
                    os.rmdir(entry.path)
            else:
                os.unlink(entry.path)
        except OSError as error:  # a folder bwrap made on the way to a mount (root's), or one holding a mount
            if error.errno == errno.ENAMETOOLONG:  # nested deeper than a path can name, maybe in such a folder
                raise TooMany(entry.path) from None


def skeleton(folder: str, budget: int = MAX_ENTRIES) -> dict:
    """What ``folder`` holds, as {relative path: (device, inode)}: its own entries, and the mount points in it (bwrap's,
    on the way to a granted folder) without what they hold. Kept at the parent's start, so that a clear can tell that
    what it could not remove is what bwrap made, where bwrap made it: as an ordinary user the folders on the way are
    the kernel's, and a kernel moved the connection and stage folders inside one of them (TooMany past ``budget``)."""
    found, folders, device = {}, [""], os.lstat(folder).st_dev
    while folders:
        relative = folders.pop()
        with os.scandir(os.path.join(folder, relative)) as entries:
            for entry in entries:
                budget -= 1
                if budget < 0:
                    raise TooMany(folder)
                path, st = os.path.join(relative, entry.name), entry.stat(follow_symlinks=False)
                found[path] = (st.st_dev, st.st_ino)
                if stat.S_ISDIR(st.st_mode) and st.st_dev == device:
                    folders.append(path)
    return found


def write_all(fd: int, data: bytes, at: int | None = 0) -> None:
    """Write ``data`` to ``fd`` (a file emptied first, from offset ``at``; None: a pipe)."""
    if at is not None:
        os.ftruncate(fd, 0)
    view = memoryview(data)
    while view:
        done = os.write(fd, view) if at is None else os.pwrite(fd, view, at)
        view, at = view[done:], None if at is None else at + done

"""The kernel's scratch, as the kernel parent fills it, reads it back and clears it (inside the sandbox, where the
scratch is a tmpfs at policy.SCRATCH; here a temporary folder stands for it), and the instructor's words for what a
kernel left there."""

import json
import os
import shutil
import socket
import tempfile

import nbformat
import pytest

from autograder.common.problems import Problem
from autograder.preprocessors.incidents import left_behind_detail, left_out_detail, notebook_incidents
from autograder.sandbox import in_sandbox as kernel_parent
from autograder.sandbox import scratch as kernels_folder

NOTHING_HAPPENED = {"kernel_died_in": None, "notebook_time_limit_in": None}  # GradingExecute's record of a clean run


def deep_tree(top, leaf: str | None = None) -> None:
    """20 folders of 250-character names under ``top``: 5,000 characters, deeper than a path can name (PATH_MAX 4096),
    made by folder descriptor; with ``leaf``, a file of that name at the bottom."""
    fd = os.open(top, os.O_RDONLY)
    for _ in range(20):
        os.mkdir("d" * 250, dir_fd=fd)
        fd, above = os.open("d" * 250, os.O_RDONLY, dir_fd=fd), fd
        os.close(above)
    if leaf:
        os.close(os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)


def as_the_parents_uid(check) -> None:
    """Run ``check`` (true when it holds) in a child process as an ordinary uid, as the kernel parent runs (root reads
    and lists every folder, whatever its mode); the test fails unless it held."""
    pid = os.fork()
    if pid == 0:
        try:
            if os.getuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            os._exit(0 if check() else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setattr(kernels_folder, "SCRATCH", str(folder))
    return folder


@pytest.fixture
def submission(tmp_path):
    """A student's folder as nbgrader leaves it (read-only in the sandbox): notebooks, names.txt, a subfolder."""
    folder = tmp_path / "autograded" / "ada" / "ps1"
    (folder / "data").mkdir(parents=True)
    (folder / "ex1.ipynb").write_text("{}")
    (folder / "names.txt").write_text("emma\n")
    (folder / "data" / "extra.csv").write_text("1,2\n")
    os.symlink("/etc/passwd", folder / "host-link")  # never copied: only folders and regular files are
    return folder


def test_the_scratch_is_a_copy_of_folders_and_regular_files_only(scratch, submission):
    copied, left_out = kernels_folder.fill_scratch(str(submission))
    assert sorted(copied) == ["data", "data/extra.csv", "ex1.ipynb", "names.txt"] and left_out is None
    assert (scratch / "data" / "extra.csv").read_text() == "1,2\n" and not os.path.lexists(scratch / "host-link")
    assert kernels_folder.left_behind(copied) is None  # a kernel that wrote nothing left nothing


def test_the_students_files_take_at_most_their_share_of_the_scratch_the_smallest_first(
    scratch, submission, monkeypatch
):
    """A student's folder holds what they handed in and the notebooks graded before this one, outputs and all: more
    than the scratch takes must leave out the largest files and fail nothing, not fill the scratch (ENOSPC), which
    was taken for a broken sandbox and stopped the class's grading."""
    (submission / "big.bin").write_bytes(b"x" * 300_000)
    (submission / "data" / "medium.bin").write_bytes(b"x" * 60_000)
    monkeypatch.setattr(kernels_folder, "students_room", lambda: 100_000)
    copied, left_out = kernels_folder.fill_scratch(str(submission))
    assert sorted(copied) == ["data", "data/extra.csv", "data/medium.bin", "ex1.ipynb", "names.txt"]
    assert not (scratch / "big.bin").exists() and (scratch / "data" / "medium.bin").stat().st_size == 60_000
    assert left_out == {"files": 1, "bytes": 300_000, "examples": ["big.bin"], "capped": False}
    assert kernels_folder.left_behind(copied) is None  # what was left out is not the kernel's doing
    found = notebook_incidents(nbformat.v4.new_notebook(), NOTHING_HAPPENED, None, set(), {"left_out": left_out})
    assert [kind for kind, _ in found] == ["files_left_out"]
    assert Problem("ada", "ex1", *found[0]).detail == (
        "1 file of the student's folder (0.3 MB) did not fit in the kernel's working folder or could not be read "
        '("big.bin", the largest first); the notebook ran without them'
    )


def test_a_folder_nested_deeper_than_a_path_can_name_is_left_out_and_named(scratch, tmp_path):
    source = tmp_path / "deep"
    source.mkdir()
    deep_tree(source, leaf="bottom.txt")
    try:
        copied, left_out = kernels_folder.fill_scratch(str(source))
    finally:
        shutil.rmtree(source / ("d" * 250))  # (it removes by folder descriptor)
    assert left_out and left_out["files"] >= 1 and len(copied) < 20


def test_a_folder_of_too_many_entries_is_copied_only_up_to_a_bound(scratch, submission, monkeypatch):
    (submission / "many").mkdir()
    for i in range(30):
        (submission / "many" / str(i)).touch()
    monkeypatch.setattr(kernels_folder, "MAX_ENTRIES", 10)
    copied, left_out = kernels_folder.fill_scratch(str(submission))
    assert len(copied) <= 10 and not (scratch / "many" / "0").exists() and left_out["capped"]
    assert "the rest were not looked at" in left_out_detail(left_out)


def test_a_file_the_parent_cannot_read_is_left_out():
    """A file of the student's folder that the parent's uid may not read is left out of the scratch, and the copy
    goes on."""

    def check():
        source, target = tempfile.mkdtemp(), tempfile.mkdtemp()
        for name in ("secret.txt", "notes.txt"):
            with open(os.path.join(source, name), "w") as f:
                f.write(name)
        os.chmod(os.path.join(source, "secret.txt"), 0)
        kernels_folder.SCRATCH = target
        copied, left_out = kernels_folder.fill_scratch(source)
        return sorted(copied) == ["notes.txt"] == os.listdir(target) and left_out["examples"] == ["secret.txt"]

    as_the_parents_uid(check)


def test_a_folder_the_kernel_made_unreadable_is_summed_up_not_an_error():
    """The summary of what a kernel left used to raise on a folder of mode 0, and the instructor's
    kernel_files_discarded problem was lost with the kernel parent."""

    def check():
        kernels_folder.SCRATCH = tempfile.mkdtemp()
        os.makedirs(os.path.join(kernels_folder.SCRATCH, "hidden", "inside"))
        os.chmod(os.path.join(kernels_folder.SCRATCH, "hidden"), 0)
        left = kernels_folder.left_behind({})
        os.chmod(os.path.join(kernels_folder.SCRATCH, "hidden"), 0o700)
        words = left_behind_detail(left)
        return (
            left["counts"] == {"folder": 1}
            and left["unread"] == 1
            and words.startswith("the kernel left 1 folder, 1 folder that could not be read (")
        )

    as_the_parents_uid(check)


def test_what_a_kernel_left_is_summed_up_never_copied(scratch, submission):
    copied, _ = kernels_folder.fill_scratch(str(submission))
    os.symlink("../../../source/ps1/ps1.ipynb", scratch / "solutions.txt")
    os.mkfifo(scratch / "pipe")
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(str(scratch / "socket"))
    (scratch / "out").mkdir()
    (scratch / "out" / "plot.png").write_bytes(b"x" * 10000)
    os.link(scratch / "out" / "plot.png", scratch / "same-plot.png")
    (scratch / "ex1.ipynb").write_text('{"changed": true}')
    left = kernels_folder.left_behind(copied)
    assert left["counts"] == {"link": 1, "pipe": 1, "socket": 1, "folder": 1, "file": 2}
    assert left["changed"] == 1 and left["hard_links"] == 2 and not left["capped"]
    assert left["examples"][:3] == ["solutions.txt -> ../../../source/ps1/ps1.ipynb", "pipe", "socket"]
    assert 10000 <= left["bytes"] < 100000  # the plot's blocks (counted once per name), not names.txt's
    words = left_behind_detail(left)
    assert words.startswith(
        "the kernel left 2 files, 1 folder, 1 link, 1 pipe, 1 socket, 1 changed copy of its files ("
    )
    assert '"solutions.txt -> ../../../source/ps1/ps1.ipynb"' in words and "2 of them hard links" in words


def test_a_flood_of_files_is_looked_at_and_removed_only_up_to_a_bound(scratch, submission, monkeypatch):
    monkeypatch.setattr(os, "kill", lambda *args: None)  # clear_sandbox kills all it may: here, never
    monkeypatch.setattr(kernels_folder, "MAX_ENTRIES", 50)
    monkeypatch.setattr(kernel_parent, "MAX_ENTRIES", 50)
    monkeypatch.setattr(kernel_parent, "PRIVATE_FOLDERS", (str(scratch),))
    copied, _ = kernels_folder.fill_scratch(str(submission))
    (scratch / "many").mkdir()
    for i in range(200):
        (scratch / "many" / str(i)).touch()
    left = kernels_folder.left_behind(copied)
    assert left["capped"] and sum(left["counts"].values()) <= 50
    assert "so many entries that only" in left_behind_detail(left)
    assert kernel_parent.clear_sandbox() is False  # the parent says so; the grader ends the sandbox instead
    monkeypatch.setattr(kernel_parent, "MAX_ENTRIES", 1000)
    assert kernel_parent.clear_sandbox() is True and list(scratch.iterdir()) == []


def test_the_kernels_own_names_are_quoted_and_cut_short():
    left = {"counts": {"file": 1}, "changed": 0, "bytes": 0, "examples": ['x" onload="alert(1)' + "y" * 500]}
    words = left_behind_detail(left)
    assert '\\"' in words and "y" * 200 not in words


def test_a_folder_the_kernel_made_unlistable_is_emptied_too():
    """A kernel that hides a folder from its parent (mode 0311: enterable, not listable) must not keep what it
    holds for the next student, such as an IPython startup file."""

    def check():
        home = tempfile.mkdtemp()
        startup = os.path.join(home, ".ipython", "profile_default", "startup")
        os.makedirs(startup)
        with open(os.path.join(startup, "00-planted.py"), "w") as f:
            f.write("print('planted')\n")
        os.chmod(os.path.join(home, ".ipython"), 0o311)
        kernel_parent.remove_inside(home, os.lstat(home).st_dev, [1000])
        left = os.listdir(home)
        os.rmdir(home)
        return left == []

    as_the_parents_uid(check)


def test_a_folder_nested_deeper_than_a_path_can_name_ends_the_sandbox(scratch, monkeypatch):
    """Removing by path fails past PATH_MAX (4096): such a tree in /tmp would outlive the clear between students.
    The parent cannot remove it, so it says the sandbox is not cleared, and the grader ends it (its tmpfs with it)."""
    monkeypatch.setattr(os, "kill", lambda *args: None)  # clear_sandbox kills all it may: here, never
    monkeypatch.setattr(kernel_parent, "PRIVATE_FOLDERS", (str(scratch),))
    deep_tree(scratch)
    try:
        assert kernel_parent.clear_sandbox() is False
    finally:
        shutil.rmtree(scratch / ("d" * 250))  # (it removes by folder descriptor, as the sandbox's end does)
    assert kernel_parent.clear_sandbox() is True  # what the parent found at its start may stay: here, nothing


def test_a_chain_of_folders_deeper_than_the_recursion_limit_ends_the_sandbox_and_keeps_the_summary(
    scratch, monkeypatch
):
    """1,500 folders of one character: a path of 3,000 characters, within PATH_MAX, but removing them one call a
    level passed Python's recursion limit. The error ended the parent's clear, and the summary of what the kernel
    left (a link to /etc/shadow, say) was lost with it; now the clear says the sandbox is not cleared, as for a
    path too long, and the summary comes back."""
    monkeypatch.setattr(os, "kill", lambda *args: None)
    monkeypatch.setattr(kernel_parent, "PRIVATE_FOLDERS", (str(scratch),))
    monkeypatch.setattr(kernel_parent, "_state", os.memfd_create("copied"))  # as a child that filled it wrote
    os.write(kernel_parent._state, b'{"copied": {}, "left_out": null}')
    monkeypatch.setattr(kernel_parent, "_filled", True)
    os.symlink("/etc/shadow", scratch / "planted_link")
    fd = os.open(scratch, os.O_RDONLY)
    for _ in range(1500):
        os.mkdir("d", dir_fd=fd)
        fd, above = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(above)
    os.close(fd)
    try:
        replies, answer = os.pipe()
        assert kernel_parent.clear(answer) is None  # the child that read the names wrote the reply itself
        os.close(answer)
        reply = json.loads(os.read(replies, 65536))
        os.close(replies)
    finally:  # by folder descriptor, one level at a time (shutil.rmtree recurses too)
        fds = [os.open(scratch, os.O_RDONLY)]
        while "d" in os.listdir(fds[-1]):
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        os.close(fds.pop())
        while fds:
            os.rmdir("d", dir_fd=fds[-1])
            os.close(fds.pop())
    assert reply["cleared"] is False and reply["left"]["counts"]["link"] == 1


def test_a_deep_folder_inside_one_found_at_the_start_ends_the_sandbox_too(scratch, monkeypatch):
    """As an ordinary user, the folder bwrap makes in /tmp on the way to the connection folder is the kernel's: the
    check of what the parent found at its start looked at top-level names only, and a deep tree inside it stayed."""
    monkeypatch.setattr(os, "kill", lambda *args: None)
    monkeypatch.setattr(kernel_parent, "PRIVATE_FOLDERS", (str(scratch),))
    (scratch / "made-by-bwrap").mkdir()
    monkeypatch.setitem(kernel_parent._found_at_start, str(scratch), kernels_folder.skeleton(str(scratch)))
    deep_tree(scratch / "made-by-bwrap")
    try:
        assert kernel_parent.clear_sandbox() is False
    finally:
        shutil.rmtree(scratch / "made-by-bwrap" / ("d" * 250))


@pytest.mark.skipif(os.geteuid() != 0, reason="a stand-in for a mount point is a folder of root's, which needs root")
def test_a_kernel_that_moves_its_connection_and_stage_folders_ends_the_sandbox(monkeypatch):
    """As an ordinary user, the folder bwrap makes in /tmp on the way to the connection and stage folders (the grader's
    private folder lies in the host's /tmp) is the kernel's: a kernel moved it into one it made under the old name. The
    clear could not remove the mount points, found the same names at the top of /tmp, and said the sandbox cleared;
    the next student's kernel found no connection file, and `grade` stopped for the whole class ("the sandbox could not
    start a kernel for z_victim"). Here root's folders stand for the mount points, which the parent's uid cannot
    remove."""
    monkeypatch.setattr(os, "kill", lambda *args: None)  # clear_sandbox kills all it may: here, never
    top = tempfile.mkdtemp()  # the sandbox's /tmp: open to all, with the sticky bit
    os.chmod(top, 0o1777)
    on_the_way = os.path.join(top, "nbgrader-sandbox-x")
    os.mkdir(on_the_way)
    os.chown(on_the_way, 65534, 65534)  # bwrap made it as the kernels' uid
    for mount in ("connection", "stage"):
        os.mkdir(os.path.join(on_the_way, mount))
        open(os.path.join(on_the_way, mount, "held"), "w").close()
    monkeypatch.setattr(kernel_parent, "PRIVATE_FOLDERS", (top,))
    monkeypatch.setitem(kernel_parent._found_at_start, top, kernels_folder.skeleton(top))

    def moved_and_cleared(move: bool):
        def check():
            if move:  # what the kernel did (then it may plant a connection file and a student's folder of its own)
                os.rename(on_the_way, os.path.join(top, "away"))
                os.mkdir(on_the_way)
                os.rename(os.path.join(top, "away"), os.path.join(on_the_way, "inner"))
                os.makedirs(os.path.join(on_the_way, "stage", "student"))
            open(os.path.join(on_the_way, "planted"), "w").close()
            return kernel_parent.clear_sandbox() is (not move)

        return check

    try:
        as_the_parents_uid(moved_and_cleared(False))  # a kernel that moves nothing: the clear keeps bwrap's folders
        assert set(kernels_folder.skeleton(top)) == {"nbgrader-sandbox-x", *kernel_parent._found_at_start[top]}
        as_the_parents_uid(moved_and_cleared(True))  # moved: not cleared, the grader ends the sandbox
    finally:
        shutil.rmtree(top)


def test_a_private_folder_the_kernel_made_unlistable_ends_the_sandbox_and_keeps_the_summary(monkeypatch):
    """As an ordinary user, /tmp, /dev/shm, /sockets and the scratch themselves are the kernel's: one made /tmp mode 0.
    The clear's child raised PermissionError, the parent answered with an error, and the summary of what the kernel
    left was lost (the instructor had no kernel_files_discarded); now the clear says the sandbox is not cleared (the
    grader ends it, as before) and the summary comes back."""
    monkeypatch.setattr(os, "kill", lambda *args: None)  # clear_sandbox kills all it may: here, never

    def check():
        top = tempfile.mkdtemp()  # the kernel's /tmp and scratch at once
        kernel_parent.PRIVATE_FOLDERS, kernels_folder.SCRATCH = (top,), top
        kernel_parent._state, kernel_parent._filled = os.memfd_create("copied"), True
        os.write(kernel_parent._state, b'{"copied": {}, "left_out": null}')
        os.symlink("/etc/shadow", os.path.join(top, "planted_link"))
        os.chmod(top, 0)
        try:
            replies, answer = os.pipe()
            done = kernel_parent.clear(answer)
            os.close(answer)
            reply = json.loads(os.read(replies, 65536)) if done is None else done
        finally:
            os.chmod(top, 0o700)
            shutil.rmtree(top)
        return reply.get("cleared") is False and reply["left"]["unread"] == 1

    as_the_parents_uid(check)

"""The kernel's scratch, as the kernel parent fills it, reads it back and clears it (inside the sandbox, where the
scratch is a tmpfs at policy.SCRATCH; here a temporary folder stands for it), and the instructor's words for what a
kernel left there."""

import os
import shutil
import socket
import tempfile

import pytest

from autograder.preprocessors.incidents import left_behind_detail
from autograder.sandbox import in_sandbox as kernel_parent


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setattr(kernel_parent, "SCRATCH", str(folder))
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
    copied = kernel_parent.fill_scratch(str(submission))
    assert sorted(copied) == ["data", "data/extra.csv", "ex1.ipynb", "names.txt"]
    assert (scratch / "data" / "extra.csv").read_text() == "1,2\n" and not os.path.lexists(scratch / "host-link")
    assert kernel_parent.left_behind(copied) is None  # a kernel that wrote nothing left nothing


def test_what_a_kernel_left_is_summed_up_never_copied(scratch, submission):
    copied = kernel_parent.fill_scratch(str(submission))
    os.symlink("../../../source/ps1/ps1.ipynb", scratch / "solutions.txt")
    os.mkfifo(scratch / "pipe")
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(str(scratch / "socket"))
    (scratch / "out").mkdir()
    (scratch / "out" / "plot.png").write_bytes(b"x" * 10000)
    os.link(scratch / "out" / "plot.png", scratch / "same-plot.png")
    (scratch / "ex1.ipynb").write_text('{"changed": true}')
    left = kernel_parent.left_behind(copied)
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
    monkeypatch.setattr(kernel_parent, "MAX_ENTRIES", 50)
    monkeypatch.setattr(kernel_parent, "PRIVATE_FOLDERS", (str(scratch),))
    copied = kernel_parent.fill_scratch(str(submission))
    (scratch / "many").mkdir()
    for i in range(200):
        (scratch / "many" / str(i)).touch()
    left = kernel_parent.left_behind(copied)
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
    holds for the next student, such as an IPython startup file. Run as an ordinary uid, as the parent runs (root
    would list it anyway)."""
    pid = os.fork()
    if pid == 0:  # the child: the kernels' and the parent's uid
        try:
            if os.getuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            home = tempfile.mkdtemp()
            startup = os.path.join(home, ".ipython", "profile_default", "startup")
            os.makedirs(startup)
            with open(os.path.join(startup, "00-planted.py"), "w") as f:
                f.write("print('planted')\n")
            os.chmod(os.path.join(home, ".ipython"), 0o311)
            kernel_parent.remove_inside(home, os.lstat(home).st_dev, [1000])
            left = os.listdir(home)
            os.rmdir(home)
            os._exit(0 if left == [] else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_folder_nested_deeper_than_a_path_can_name_ends_the_sandbox(scratch, monkeypatch):
    """Removing by path fails past PATH_MAX (4096): such a tree in /tmp would outlive the clear between students.
    The parent cannot remove it, so it says the sandbox is not cleared, and the grader ends it (its tmpfs with it)."""
    monkeypatch.setattr(os, "kill", lambda *args: None)  # clear_sandbox kills all it may: here, never
    monkeypatch.setattr(kernel_parent, "PRIVATE_FOLDERS", (str(scratch),))
    fd = os.open(scratch, os.O_RDONLY)
    for _ in range(20):  # 20 names of 250 characters: 5,000 characters from the scratch down
        os.mkdir("d" * 250, dir_fd=fd)
        fd, above = os.open("d" * 250, os.O_RDONLY, dir_fd=fd), fd
        os.close(above)
    os.close(fd)
    try:
        assert kernel_parent.clear_sandbox() is False
    finally:
        shutil.rmtree(scratch / ("d" * 250))  # (it removes by folder descriptor, as the sandbox's end does)
    assert kernel_parent.clear_sandbox() is True  # what the parent found at its start may stay: here, nothing


def test_a_deep_folder_inside_one_found_at_the_start_ends_the_sandbox_too(scratch, monkeypatch):
    """As an ordinary user, the folder bwrap makes in /tmp on the way to the connection folder is the kernel's: the
    check of what the parent found at its start looked at top-level names only, and a deep tree inside it stayed."""
    monkeypatch.setattr(os, "kill", lambda *args: None)
    monkeypatch.setattr(kernel_parent, "PRIVATE_FOLDERS", (str(scratch),))
    (scratch / "made-by-bwrap").mkdir()
    monkeypatch.setitem(kernel_parent._found_at_start, str(scratch), {"made-by-bwrap"})
    fd = os.open(scratch / "made-by-bwrap", os.O_RDONLY)
    for _ in range(20):
        os.mkdir("d" * 250, dir_fd=fd)
        fd, above = os.open("d" * 250, os.O_RDONLY, dir_fd=fd), fd
        os.close(above)
    os.close(fd)
    try:
        assert kernel_parent.clear_sandbox() is False
    finally:
        shutil.rmtree(scratch / "made-by-bwrap" / ("d" * 250))

"""The copy stage of an ordinary user's grading worker (``autograder/sandbox/stage.py``): what a student's kernel
parent is shown of their folder when the worker cannot mount it there. The slow tier grades the hostile class
through it (tests/slow/test_nothing_flows_back.py, as an ordinary user)."""

import os

import pytest

from autograder.sandbox import stage
from autograder.sandbox.stage import CopyStage


def listing(folder) -> dict:
    """relative path -> file bytes, or None for a folder (links and other kinds would show as their kind)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        kind = "link" if path.is_symlink() else "folder" if path.is_dir() else "file" if path.is_file() else "other"
        found[str(path.relative_to(folder))] = path.read_bytes() if kind == "file" else kind
    return found


def test_only_folders_and_regular_files_are_copied_and_each_showing_replaces_the_last(tmp_path):
    ada, bob = tmp_path / "ada", tmp_path / "bob"
    (ada / "sub").mkdir(parents=True)
    (ada / "ex1.ipynb").write_bytes(b"{ada}")
    (ada / "sub" / "note.txt").write_bytes(b"sub")
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"the host's")
    (ada / "link.txt").symlink_to(secret)  # a link to a file, and to a folder: neither is followed
    (ada / "folder-link").symlink_to(tmp_path)
    os.mkfifo(ada / "pipe")  # a pipe: not opened for reading (it would block)
    bob.mkdir()
    (bob / "ex1.ipynb").write_bytes(b"{bob}")

    on = CopyStage(str(tmp_path / "stage"))
    on.show(str(ada))
    assert listing(tmp_path / "stage" / "student") == {"ex1.ipynb": b"{ada}", "sub": "folder", "sub/note.txt": b"sub"}
    (ada / "ex2.ipynb").write_bytes(b"{ada 2}")  # nbgrader writes the next notebook: the next kernel sees it
    on.show(str(ada))
    assert listing(tmp_path / "stage" / "student")["ex2.ipynb"] == b"{ada 2}"
    on.show(str(bob))
    assert on.shown == str(bob) and listing(tmp_path / "stage" / "student") == {"ex1.ipynb": b"{bob}"}
    assert on.close() and listing(tmp_path / "stage" / "student") == {} and on.shown is None


def test_a_folder_of_too_many_entries_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(stage, "MAX_ENTRIES", 10)
    flood = tmp_path / "flood"
    flood.mkdir()
    for i in range(11):
        (flood / f"{i}.txt").write_text("x")
    on = CopyStage(str(tmp_path / "stage"))
    with pytest.raises(OSError, match="more than 10 entries"):
        on.show(str(flood))


def test_the_copy_is_readable_by_the_kernels_uid_whatever_the_umask(tmp_path):
    """As root the kernels run as a uid of their own: an instructor's umask of 077 must not hide the copy."""
    ada = tmp_path / "ada"
    (ada / "sub").mkdir(parents=True)
    (ada / "sub" / "ex1.ipynb").write_bytes(b"{}")
    kept = os.umask(0o077)
    try:
        on = CopyStage(str(tmp_path / "stage"))
        on.show(str(ada))
    finally:
        os.umask(kept)
    modes = {p.name: p.stat().st_mode & 0o777 for p in [tmp_path / "stage", *(tmp_path / "stage").rglob("*")]}
    assert modes == {"stage": 0o755, "student": 0o755, "sub": 0o755, "ex1.ipynb": 0o644}

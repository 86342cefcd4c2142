"""A newcomer's machine: nothing activated, no network, no data to fetch."""

import hashlib
import importlib.util
import os
import subprocess
import sys

import pytest
from support.course import NEWCOMER_ENV, REPO

from autograder.data import EMBEDDED_NAMES, NAMES_SHA256, names_path


def test_nbgraders_tools_are_found_without_an_activated_venv():
    """nbgrader runs alembic by name: the course's nbgrader_config.py, which every nbgrader command loads, finds the
    one installed beside this Python (importing the package alone changes nothing: no code runs on import)."""
    probe = (
        "import os\n"
        "before = os.environ['PATH']\n"
        "import shutil, autograder.grading, autograder.sandbox, autograder.preprocessors\n"
        "unchanged = before == os.environ['PATH']\n"
        "from traitlets.config import Config\n"
        "config = Config()\n"
        "exec(open('nbgrader_config.py').read(), {'get_config': lambda: config})\n"
        "print(unchanged, shutil.which('alembic'))"
    )
    result = subprocess.run([sys.executable, "-c", probe], env=NEWCOMER_ENV, capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    alembic = os.path.join(os.path.dirname(sys.executable), "alembic")
    assert result.stdout.split() == ["True", alembic], result.stdout


def test_the_install_has_no_jsonschema_that_builds_a_grammar_as_it_is_imported():
    """From 4.24, jsonschema imports rfc3987_syntax when it is there (its "iri" format check), which builds a grammar
    with lark at import: every process that imports nbformat took 1.2 s more (each nbgrader command, each worker).
    pyproject.toml holds jsonschema below 4.24, whose format checks have no such module."""
    assert importlib.util.find_spec("rfc3987_syntax") is None and importlib.util.find_spec("lark") is None


def test_the_data_set_ships_with_the_course():
    assert hashlib.sha256(EMBEDDED_NAMES.read_bytes()).hexdigest() == NAMES_SHA256
    assert (REPO / "source" / "backprop_ninja" / "names.txt").resolve() == EMBEDDED_NAMES  # released beside them
    assert (REPO / "release" / "backprop_ninja" / "names.txt").read_bytes() == EMBEDDED_NAMES.read_bytes()
    assert "MIT" in (EMBEDDED_NAMES.parent / "README.md").read_text()


def test_the_grader_finds_the_data_without_any_setting(monkeypatch, tmp_path):
    monkeypatch.delenv("BACKPROP_NINJA_NAMES")
    monkeypatch.chdir(tmp_path)
    assert names_path() == str(EMBEDDED_NAMES)
    monkeypatch.setenv("BACKPROP_NINJA_NAMES", str(tmp_path / "elsewhere.txt"))
    with pytest.raises(FileNotFoundError, match="elsewhere.txt.*BACKPROP_NINJA_NAMES"):
        names_path()


def test_an_install_for_ordinary_users_copies_a_linked_venv_and_never_writes_into_it(tmp_path, monkeypatch):
    """A clone whose .venv links to the main checkout's (as helpers' clones do): the ordinary users' install copied
    the link, and its changes (the scripts' #! lines, pyvenv.cfg, the Python links, the editable map) went into the
    main checkout's venv, which then ran another folder's package. Now the venv's files are copied, and the copy runs
    the package it was given."""
    from support import users

    real = tmp_path / "main" / ".venv"
    (real / "bin").mkdir(parents=True)
    (real / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    (real / "bin" / "tool").write_text(f"#!{real}/bin/python\nprint('tool')\n")
    (real / "pyvenv.cfg").write_text("home = /somewhere\n")
    site = real / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    (site / "__editable___course_finder.py").write_text(f"MAPPING = {{'autograder': '{tmp_path}/main/autograder'}}\n")
    state = lambda: {p: (p.lstat().st_ino, os.readlink(p) if p.is_symlink() else p.is_dir() or p.read_bytes())
                     for p in real.rglob("*")}  # fmt: skip
    before = state()
    (tmp_path / "clone").mkdir()
    (tmp_path / "clone" / ".venv").symlink_to(real)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "clone" / ".venv"))
    install = users.reachable_install(tmp_path / "install", probe_uid=os.getuid())
    assert state() == before
    venv = install / "venv"
    assert venv.is_dir() and not venv.is_symlink()
    assert (venv / "bin" / "tool").read_text().startswith(f"#!{venv}/bin/python\n")
    finder = venv / site.relative_to(real) / "__editable___course_finder.py"
    assert f"'{install}/repo/autograder'" in finder.read_text()

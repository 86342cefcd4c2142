"""A newcomer's machine: nothing activated, no network, no data to fetch."""

import hashlib
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

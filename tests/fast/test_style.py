"""The code keeps the project's style: ruff's lint rules and its formatter, as configured in pyproject.toml."""

import shutil
import subprocess
import sys

from support.course import REPO

RUFF = shutil.which("ruff", path=str(REPO / ".venv" / "bin")) or [sys.executable, "-m", "ruff"]


def ruff(*args):
    command = [RUFF, *args] if isinstance(RUFF, str) else [*RUFF, *args]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True)


def test_lint_rules_hold():
    result = ruff("check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_code_is_formatted():
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, f"run: ruff format .\n{result.stdout}{result.stderr}"

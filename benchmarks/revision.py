"""The ``autograder`` package as it was at a git revision, for benchmarks that compare before and after."""

import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def package_at(revision: str, *paths: str) -> Path:
    """A temporary folder holding ``autograder/`` and ``pyproject.toml`` at ``revision`` (and ``paths``, such as its
    ``source/``): put it first on PYTHONPATH to run that code (the package reads the repository's address from
    pyproject.toml for the feedback's links).

    (Python's path finder comes before the editable install's finder, so the folder wins.)"""
    folder = Path(tempfile.mkdtemp(prefix=f"autograder-{revision.replace('/', '-')}-", dir="/var/tmp"))
    folder.chmod(0o755)  # sandboxed kernels of the old code import from it as another uid
    archive = subprocess.run(
        ["git", "archive", revision, "autograder", "pyproject.toml", *paths], cwd=REPO, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder

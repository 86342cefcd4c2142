"""What every process of the grader sets up first (``start_up``): the tools nbgrader runs by name, and how it runs
Python's modules in a course root (``python_module``).

nbgrader runs ``alembic`` from PATH when it creates a gradebook, and a venv that is not activated is not on PATH:
``use_own_tools`` puts this Python's bin folder first. Nothing runs on import.
"""

import os
import shutil
import sys

NEEDED_TOOLS = ("alembic",)


class MissingTool(RuntimeError):
    """A program nbgrader runs by name is not installed."""


def use_own_tools() -> None:
    """Put the running interpreter's bin folder first on PATH (once)."""
    own = os.path.dirname(sys.executable)  # not resolved: a venv's python is a symlink to the base one
    if own and os.environ.get("PATH", "").split(os.pathsep)[0] != own:
        os.environ["PATH"] = os.pathsep.join([own, *(p for p in os.environ.get("PATH", "").split(os.pathsep) if p)])


def start_up() -> None:
    """Before a grading process imports nbgrader: its tools on PATH. (jsonschema is held below 4.24 in pyproject.toml:
    from 4.24 its import built an IRI grammar, 1.2 s of every process that imports nbformat.)"""
    use_own_tools()


def python_module(module: str, *args: str) -> list:
    """The command line that runs ``module`` with this Python in a course root: with ``-P``, so that the folder it
    runs in is not searched for modules first (an instructor's random.py or code.py beside nbgrader_config.py
    stopped every worker: ``cannot import name 'Random' from 'random'``)."""
    return [sys.executable, "-P", "-m", module, *args]


def require_tools() -> None:
    missing = [tool for tool in NEEDED_TOOLS if shutil.which(tool) is None]
    if missing:
        raise MissingTool(
            f"{', '.join(missing)} not found on PATH or beside {sys.executable}: install the course with "
            "`tools/install.sh` (or `pip install -e .` in the environment you run it from)"
        )

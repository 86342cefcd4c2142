"""The tools nbgrader runs by name, found without an activated virtual environment.

nbgrader runs the ``alembic`` executable from PATH whenever it creates a gradebook. Installed in a
venv that is not activated (``.venv/bin/backprop-ninja``, ``.venv/bin/python -m nbgrader``), the
venv's bin folder is not on PATH, so it is put first here, for this process and its children.
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


def require_tools() -> None:
    missing = [tool for tool in NEEDED_TOOLS if shutil.which(tool) is None]
    if missing:
        raise MissingTool(
            f"{', '.join(missing)} not found on PATH or beside {sys.executable}: install the course with "
            "`tools/install.sh` (or `pip install -e .` in the environment you run it from)"
        )

"""What every process of the grader sets up first (``start_up``): the tools nbgrader runs by name, a quicker import.

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


def skip_iri_grammar() -> None:
    """jsonschema builds an IRI grammar when it is imported (rfc3987_syntax, with lark: 1.4 s of CPU in each process
    that imports nbgrader, half of nbgrader's import), for its "iri" format check, which neither nbformat nor
    nbgrader asks for. Without the module jsonschema skips that check. Only if nothing has imported it yet."""
    sys.modules.setdefault("rfc3987_syntax", None)


def start_up() -> None:
    """Before a grading process imports nbgrader: its tools on PATH, the IRI grammar skipped."""
    use_own_tools()
    skip_iri_grammar()


def require_tools() -> None:
    missing = [tool for tool in NEEDED_TOOLS if shutil.which(tool) is None]
    if missing:
        raise MissingTool(
            f"{', '.join(missing)} not found on PATH or beside {sys.executable}: install the course with "
            "`tools/install.sh` (or `pip install -e .` in the environment you run it from)"
        )

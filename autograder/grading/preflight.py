"""What must hold before anyone is graded: a course root, its assignment and notebooks, the release
and the gradebook's copy of it, and the sandbox's tools on this machine."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..common.errors import GradingError

# What the sandbox runs: bubblewrap, and util-linux's prlimit (and setpriv, to leave root)
SANDBOX_TOOLS = ("bwrap", "prlimit") + (("setpriv",) if os.geteuid() == 0 else ())
UNSANDBOXED_WARNING = (
    "WARNING: grading WITHOUT the sandbox (--unsandboxed): student code runs with your "
    "permissions and can read the gradebook, change other grades and reach the network."
)


def course_root(folder: Path) -> Path:
    """The course root ``folder`` (absolute); it must hold nbgrader_config.py."""
    root = Path(folder).resolve()
    if not (root / "nbgrader_config.py").is_file():
        raise GradingError(f"{root} is not a course root: it has no nbgrader_config.py")
    return root


def find_assignment(root: Path) -> str:
    """The one assignment in source/."""
    found = sorted(p.name for p in (root / "source").iterdir() if p.is_dir()) if (root / "source").is_dir() else []
    if len(found) != 1:
        raise GradingError(f"{root}: expected one assignment in source/, found {found or 'none'}; pass --assignment")
    return found[0]


def notebook_names(root: Path, assignment: str) -> list:
    """The assignment's notebooks, read from source/ (never a fixed list)."""
    names = sorted(p.stem for p in (root / "source" / assignment).glob("*.ipynb"))
    if not names:
        raise GradingError(f"no notebooks in {root / 'source' / assignment}")
    return names


def run_nbgrader(root: Path, *args) -> None:
    """One nbgrader command in the course root; GradingError with its stderr when it fails."""
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args, "--log-level=ERROR"], cwd=root, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise GradingError(f"nbgrader {' '.join(args)} failed:\n{result.stderr[-3000:]}")


def ensure_release(root: Path, assignment: str, notebooks: list, gradebook: str) -> None:
    """Generate the release (and the gradebook's copy of the notebooks) when they are missing."""
    from nbgrader.api import Gradebook, MissingEntry

    from .results.gradebook import exists

    known = set()
    if exists(gradebook):
        with Gradebook(gradebook) as gb:
            try:
                known = {n.name for n in gb.find_assignment(assignment).notebooks}
            except MissingEntry:
                pass
    released = {p.stem for p in (root / "release" / assignment).glob("*.ipynb")}
    if not set(notebooks) <= known & released:
        print(
            f"nbgrader generate_assignment {assignment} (the gradebook or release/ lacks "
            f"{', '.join(sorted(set(notebooks) - (known & released)))})",
            file=sys.stderr,
        )
        run_nbgrader(root, "generate_assignment", assignment, "--force")


def check_sandbox(sandbox: bool) -> None:
    """Refuse to grade when the sandbox's tools are missing; warn loudly when grading without it."""
    if not sandbox:
        print(UNSANDBOXED_WARNING, file=sys.stderr)
        return
    missing = [tool for tool in SANDBOX_TOOLS if shutil.which(tool) is None]
    if missing:
        raise GradingError(
            f"cannot grade in the sandbox: {', '.join(missing)} not found (apt-get install bubblewrap "
            "util-linux). Nothing was graded. Pass --unsandboxed only for notebooks you trust."
        )

"""What must hold before anyone is graded: a course root, its assignment and notebooks, the release
and the gradebook's copy of it, and the sandbox's tools on this machine."""

import contextlib
import datetime
import fcntl
import hashlib
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

from ..common.errors import GradingError
from ..common.tools import python_module

# What the sandbox runs: bubblewrap, and util-linux's prlimit (and setpriv, to leave root)
SANDBOX_TOOLS = ("bwrap", "prlimit") + (("setpriv",) if os.geteuid() == 0 else ())
UNSANDBOXED_WARNING = (
    "WARNING: grading WITHOUT the sandbox (--unsandboxed): student code runs with your "
    "permissions and can read the gradebook, change other grades and reach the network."
)


def course_root(folder: Path) -> Path:
    """The course root ``folder`` (absolute); it must hold nbgrader_config.py."""
    root = Path(folder).resolve()
    if not root.is_dir():
        raise GradingError(f"{root} does not exist: --course names the course root, the folder with nbgrader_config.py")
    if not (root / "nbgrader_config.py").is_file():
        raise GradingError(
            f"{root} is not a course root: it has no nbgrader_config.py (run the command in the course root, the "
            "repository's top folder, or name it with --course)"
        )
    return root


# What grade writes in the course root (the gradebook may also be a server's: docs/postgres.md), and the folders it
# writes in: checked before anything is written, so that a run it cannot finish is not begun.
WRITTEN_FILES = (
    "gradebook.db",
    "grades.csv",
    "problems.json",
    "grade_history.csv",
    "class_report.html",
    ".grading/running",
)
WRITTEN_FOLDERS = (".grading", "autograded", "feedback", "submitted")


def _name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def check_writable(root: Path, profile: Path | None = None) -> None:
    """GradingError, in one line that names the path and what to do, if grade could not write all it writes (the
    course's files, and the ``--profile`` file)."""
    me = _name(os.geteuid())
    if not os.access(root, os.W_OK | os.X_OK):
        if root.stat().st_uid != os.geteuid():
            raise GradingError(
                f"the course folder {root} belongs to {_name(root.stat().st_uid)}, and you ({me}) cannot write in "
                f"it: grade as its owner, or have them let you write (a group you share, and chmod -R g+w {root}). "
                "Nothing was graded."
            )
        raise GradingError(f"the course folder {root} is read-only: chmod u+w {root}, then grade. Nothing was graded.")
    blocked = [root / name for name in WRITTEN_FILES if (root / name).is_file() and not os.access(root / name, os.W_OK)]
    for name in WRITTEN_FOLDERS:
        for folder, dirs, _ in os.walk(root / name):  # (folders only: nbgrader's and the LMS download's, no links)
            blocked += [Path(folder)] if not os.access(folder, os.W_OK | os.X_OK) else []
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
    if blocked:
        shown = ", ".join(str(p) for p in blocked[:3]) + (f" and {len(blocked) - 3} more" if len(blocked) > 3 else "")
        raise GradingError(
            f"grade writes {shown}, which you ({me}) cannot write: make them yours to write (chmod -R u+w, or chown "
            f"-R {me}), then grade. Nothing was graded."
        )
    if profile is not None:
        try:
            open(profile, "a").close()
        except OSError as error:
            raise GradingError(f"cannot write the profile {profile} ({error.strerror}): name another file") from None


def check_one_grader(root: Path) -> None:
    """The grading workers and the exchange's collect start as ``python -m autograder...`` in the course root, and
    Python imports the root's own ``autograder/`` before the installed one: a course root with another version of
    the package (an instructor's clone beside the admin's install, docs/jupyterhub.md) graded with two versions in
    one run, the collect and the workers the clone's, the rest the install's. Stops before anything runs."""
    ours, theirs = Path(__file__).resolve().parents[1], root / "autograder"  # (this module: autograder/grading/)
    if not (theirs / "__init__.py").is_file() or theirs.resolve() == ours or _digest(theirs) == _digest(ours):
        return
    raise GradingError(
        f"{theirs} is another version of the grader than the one this command runs ({ours}): its grading workers "
        f"would run the course root's (Python imports it first there). Bring the course root to the installed "
        f"version (git pull, or git checkout of the install's commit), then grade again. Nothing was graded."
    )


def _digest(package: Path) -> str:
    """A hash of the package's Python files, names and contents."""
    h = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" not in path.parts:
            h.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@contextlib.contextmanager
def course_lock(root: Path):
    """Held while grade runs in the course: a second grade of it stops at once, having written nothing (two at once
    each cleared the other's autograded/ and .grading/ and left grader_error or empty grades behind)."""
    (root / ".grading").mkdir(exist_ok=True)
    with open(root / ".grading" / "running", "a+") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            who = file.read().strip() or "another process"
            raise GradingError(
                f"another backprop-ninja grade is running in {root} ({who}): wait for it to end, then grade again. "
                "Nothing was graded."
            ) from None
        file.seek(0)
        file.truncate()
        now = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        file.write(f"process {os.getpid()} of {_name(os.geteuid())}, started {now}")
        file.flush()
        yield


def check_temporary_folder() -> None:
    """$TMPDIR, when set, must be a folder this user can write in: the sandbox's private folders are made there
    (Python would quietly take another, and other programs would fail). The private folders that earlier runs' killed
    workers left there are removed."""
    folder = os.environ.get("TMPDIR")
    if folder and not (os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK)):
        raise GradingError(
            f"TMPDIR is {folder}, which is not a folder you can write in: set TMPDIR to one you can (or unset it, for "
            "/tmp). Nothing was graded."
        )
    from ..sandbox.stage import remove_stale_private_folders

    remove_stale_private_folders()


def find_assignment(root: Path) -> str:
    """The one assignment in source/."""
    found = sorted(p.name for p in (root / "source").iterdir() if p.is_dir()) if (root / "source").is_dir() else []
    if len(found) != 1:
        raise GradingError(f"{root}: expected one assignment in source/, found {found or 'none'}; pass --assignment")
    return found[0]


def notebook_names(root: Path, assignment: str) -> list:
    """The assignment's notebooks, read from source/ (never a fixed list)."""
    if not (root / "source" / assignment).is_dir():
        found = sorted(p.name for p in (root / "source").iterdir() if p.is_dir()) if (root / "source").is_dir() else []
        raise GradingError(f"{root / 'source'} has no assignment {assignment}: it has {', '.join(found) or 'none'}")
    names = sorted(p.stem for p in (root / "source" / assignment).glob("*.ipynb"))
    if not names:
        raise GradingError(f"no notebooks in {root / 'source' / assignment}")
    return names


def run_nbgrader(root: Path, *args) -> None:
    """One nbgrader command in the course root; GradingError with its stderr when it fails."""
    result = subprocess.run(
        python_module("nbgrader", *args, "--log-level=ERROR"), cwd=root, capture_output=True, text=True
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
            f"running nbgrader generate_assignment {assignment} --force, since the gradebook or release/ lacks "
            f"{', '.join(sorted(set(notebooks) - (known & released)))} (once, before the first grading)",
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

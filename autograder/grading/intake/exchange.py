"""The grader's side of nbgrader's exchange, which imports no nbgrader (``grade`` starts its workers first):
``from_exchange`` runs ``owned_collect`` (nbgrader's collect, changed) in the course root and reads what it took and
refused; ``secret_beside_feedback`` puts each graded submission's secret beside its feedback; ``read_owned`` reads a
regular file (of one user's), never through a link: for both, and for staging a student (``prepare``).
docs/jupyterhub.md says how a course uses the exchange.
"""

import json
import os
import pwd
import secrets
import stat
import subprocess
from pathlib import Path

from ...common.errors import GradingError
from ...common.problems import Problem
from ...common.tools import python_module

KEPT = ("timestamp.txt", "submission_secret.txt")  # besides the notebooks
MAX_SMALL_BYTES = 4096  # a timestamp or a secret
REFUSED_NAMED = 20  # the folders of a student's in inbound/ that are not collected, each named in a problem of its own


def owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def read_owned(path: str, uid: int | None, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of ``uid`` (None: of anyone) of at most ``limit`` bytes (never
    following a link nor opening a pipe), else None."""
    got = read_owned_at(path, uid, limit)
    return None if got is None else got[0]


def read_owned_at(path: str, uid: int | None, limit: int, folder: int | None = None) -> tuple[bytes, float] | None:
    """``read_owned``'s bytes (of ``path`` in the open ``folder``, if given), and the last change of the file once
    they were read (its ctime, which its owner can move forward only: writing into a file of a submission, as the
    owner of that file may long after submitting, changes no time of its folder)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None
    st = os.fstat(fd)  # before fdopen, which raises IsADirectoryError on a folder's (one named ex1.ipynb)
    if not stat.S_ISREG(st.st_mode) or uid is not None and st.st_uid != uid or st.st_size > limit:
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)[:limit]
        return data, os.fstat(f.fileno()).st_ctime


def from_exchange(root: Path, assignment: str) -> list:
    """Collect ``assignment`` from the exchange into ``root``'s submitted/ (``owned_collect.collect_exchange``, run in
    the course root as nbgrader runs there); the submissions refused, as problems."""
    result = subprocess.run(
        python_module(f"{__package__}.owned_collect", assignment),
        cwd=root,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    try:
        answer = json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise GradingError(f"collecting from nbgrader's exchange failed:\n{result.stderr[-3000:]}") from None
    if "error" in answer:
        raise GradingError(
            f"cannot collect {assignment} from nbgrader's exchange: {answer['error']} (the exchange is set in "
            f"{root / 'nbgrader_config.py'} or the system's: c.Exchange.root and c.CourseDirectory.course_id, "
            "docs/jupyterhub.md). Nothing was collected."
        )
    refused, named_by = [], {}  # a student's 5,000 folders named after another were 5,000 problems: a 1 MB report
    for folder, named, owner in sorted(answer["refused"], key=lambda r: (r[2], r[1] != r[2], r[0])):
        named_by[owner] = named_by.get(owner, 0) + 1
        if named_by[owner] <= REFUSED_NAMED:
            words = f"{folder} in the exchange names {named} but was made by {owner}"
            if named == owner:  # (refused for what it is: a link, say, which was said to be made by its student)
                words = f"{folder} in the exchange is {owner}'s but no folder (a link?): not collected"
            refused.append(Problem(owner, None, "not_their_submission", words))
    for owner, n in named_by.items():
        if n > REFUSED_NAMED:
            words = f"and {n - REFUSED_NAMED} more folders in the exchange made by {owner}, not named here"
            refused.append(Problem(owner, None, "not_their_submission", words))
    return refused + [  # as collect.collect words it for a download
        Problem(
            student,
            notebook,
            "duplicate_file",
            f"{1 + len(others)} files for {notebook}: took {taken} (the newest); ignored {', '.join(others)}",
        )
        for student, notebook, taken, others in answer.get("duplicates", [])
    ]


def secret_beside_feedback(root: Path, assignment: str, student: str) -> None:
    """``nbgrader release_feedback`` names each page in the exchange after the submission's secret, which only its
    student's nbgrader knows: the secret of the submission just graded goes beside its feedback pages.

    release_feedback reads the secret beside every page it releases, as text, and stops at the first folder that has
    none, an empty one or one that is not text: the students after it got no feedback. A secret that nbgrader did not
    write (ASCII: hex), as a student may make one by hand in the exchange, is replaced by a new one, which nobody
    holds: its pages are released where nobody finds them, and the class's are released. (The exchange's collect
    gives a submission without one a new one, ``owned_collect``; a download's submissions have none, and none is
    put beside their pages.)"""
    feedback = root / "feedback" / student / assignment
    secret = read_owned(str(root / "submitted" / student / assignment / KEPT[1]), os.geteuid(), MAX_SMALL_BYTES)
    if feedback.is_dir():
        (feedback / KEPT[1]).unlink(missing_ok=True)
        if secret is not None:
            if not secret.strip() or not secret.isascii():
                secret = secrets.token_hex(64).encode()
            (feedback / KEPT[1]).write_bytes(secret)


def __getattr__(name: str):
    """``OwnedCollect``, for the nbgrader_config.py of a course made before it moved to ``owned_collect``
    (``c.ExchangeFactory.collect`` named it here); loaded only then, with nbgrader."""
    if name == "OwnedCollect":
        from .owned_collect import OwnedCollect

        return OwnedCollect
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

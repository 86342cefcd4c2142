"""Collect from nbgrader's exchange (a JupyterHub's ``nbgrader submit``): ``OwnedCollect``, nbgrader's own collect
with three changes, and ``collect_exchange``, which ``grade --from-exchange`` runs in the course root.

nbgrader's collect takes the newest folder *named* after a student, whoever made it (``nbgrader submit --student
ada`` run by ben, or a folder written into inbound by hand: it only logs a warning); it trusts the time the student's
own process wrote; and it copies the whole folder, following links and reading pipes. Here a submission counts only
when its folder and every file taken from it belong to the student it names; its time is the later of the time it
claims and the last change of its folder (which no student can set back); and only the notebooks, timestamp.txt and
submission_secret.txt (which ``nbgrader release_feedback`` reads) are copied, as regular files, never through a link.
"""

import datetime
import glob
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from nbgrader.exchange import ExchangeError
from nbgrader.exchange.default.collect import ExchangeCollect

from ...common.errors import GradingError
from ...common.problems import Problem
from .collect import MAX_ENTRY_BYTES

KEPT = ("timestamp.txt", "submission_secret.txt")  # besides the notebooks
MAX_SMALL_BYTES = 4096  # a timestamp or a secret


def owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def read_owned(path: str, uid: int, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of ``uid`` of at most ``limit`` bytes (never following a link
    nor opening a pipe), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != uid or st.st_size > limit:
            return None
        return f.read(limit + 1)[:limit]


class OwnedCollect(ExchangeCollect):
    """nbgrader's ``ExchangeCollect``, taking for each student the newest submission they made themselves
    (``c.ExchangeFactory.collect``, set in the course's nbgrader_config.py: ``nbgrader collect``, the Formgrader's
    Collect and ``grade --from-exchange`` all use it)."""

    def init_src(self):
        super().init_src()  # nbgrader's checks and the due date; its choice, by name alone, is made again here
        self.refused, self.collected = [], []  # (folder, the student it names, its owner); student ids
        pattern = os.path.join(
            self.inbound_path, f"{self.coursedir.student_id or '*'}+{self.coursedir.assignment_id}+*"
        )
        theirs = {}
        for path in glob.glob(pattern):
            record = self._path_to_record(path)
            st = os.lstat(path)
            owner = owner_name(st.st_uid)
            if self.check_owner and (owner != record["username"] or not stat.S_ISDIR(st.st_mode)):
                self.log.warning(f"{path} names {record['username']} but was made by {owner}: not collected")
                self.refused.append((record["filename"], record["username"], owner))
                continue
            changed = datetime.datetime.fromtimestamp(st.st_ctime, datetime.timezone.utc).replace(tzinfo=None)
            record.update(uid=st.st_uid, timestamp=max(record["timestamp"], changed))
            theirs.setdefault(record["username"], []).append(record)
        self.src_records = []
        for records in theirs.values():
            records = self._sort_by_timestamp(records)
            on_time = [r for r in records if self.duedate and r["timestamp"] <= self.duedate]
            self.src_records.append(on_time[0] if self.before_duedate and on_time else records[0])

    def notebooks(self) -> list:
        """The assignment's notebooks by name, as released (else as in source/): what is looked for in a submission,
        by name, so that a folder of a million entries or of many large notebooks costs no more than the few that
        are graded."""
        for folder in (self.coursedir.release_directory, self.coursedir.source_directory):
            path = Path(self.coursedir.format_path(folder, ".", self.coursedir.assignment_id))
            if found := sorted(p.name for p in path.glob("*.ipynb")):
                return found
        return []

    def copy_files(self):
        wanted = self.notebooks()
        for record in self.src_records:
            student, source = record["username"], os.path.join(self.inbound_path, record["filename"])
            dest = Path(
                self.coursedir.format_path(self.coursedir.submitted_directory, student, self.coursedir.assignment_id)
            )
            existing = self.coursedir.get_existing_timestamp(str(dest)) if dest.is_dir() else None
            if dest.is_dir() and not (self.update and (existing is None or record["timestamp"] > existing)):
                self.log.info(f"Submission already collected: {student} {self.coursedir.assignment_id}")
                continue
            new = dest.with_name(f".{dest.name}.collecting")  # written whole, then put in place
            shutil.rmtree(new, ignore_errors=True)
            new.mkdir(parents=True)
            for name in [*wanted, *KEPT]:  # one at a time: at most one notebook is held
                if not os.path.lexists(os.path.join(source, name)):
                    continue
                limit = MAX_ENTRY_BYTES if name.endswith(".ipynb") else MAX_SMALL_BYTES
                data = read_owned(os.path.join(source, name), record["uid"], limit)
                if data is None:
                    self.log.warning(f"{source}/{name}: not a regular file of {student}'s: not collected")
                else:
                    (new / name).write_bytes(data)
            (new / "timestamp.txt").write_text(f"{record['timestamp']:%Y-%m-%d %H:%M:%S.%f} UTC")
            shutil.rmtree(dest, ignore_errors=True)
            new.rename(dest)
            self.collected.append(student)
            self.log.info(
                f"Collected {student} {self.coursedir.assignment_id} ({record['timestamp']:%Y-%m-%d %H:%M} UTC)"
            )


def collect_exchange(assignment: str) -> dict:
    """In the course root (the working folder), collect ``assignment`` from the exchange as ``nbgrader collect
    --update`` would, configured as it is: {"collected": [...], "refused": [[folder, named, owner], ...]}, or
    {"error": why}."""
    from nbgrader.apps.baseapp import NbGrader
    from nbgrader.auth import Authenticator

    app = NbGrader()
    app.initialize([])
    app.log.setLevel("ERROR")
    app.coursedir.assignment_id = assignment
    collect = OwnedCollect(coursedir=app.coursedir, authenticator=Authenticator(parent=app), parent=app)
    collect.update = True
    try:
        collect.start()
    except ExchangeError as error:
        return {"error": str(error)}
    return {"collected": sorted(collect.collected), "refused": collect.refused, "course": app.coursedir.course_id}


def from_exchange(root: Path, assignment: str) -> list:
    """Collect ``assignment`` from the exchange into ``root``'s submitted/ (``collect_exchange``, run in the course
    root as nbgrader runs there); the submissions refused, as problems."""
    result = subprocess.run(
        [sys.executable, "-m", __name__, assignment], cwd=root, capture_output=True, text=True, timeout=3600
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
    return [
        Problem(owner, None, "not_their_submission", f"{folder} in the exchange names {named} but was made by {owner}")
        for folder, named, owner in answer["refused"]
    ]


def secret_beside_feedback(root: Path, assignment: str, student: str) -> None:
    """``nbgrader release_feedback`` names each page in the exchange after the submission's secret, which only its
    student's nbgrader knows: the secret of the submission just graded goes beside its feedback pages."""
    feedback = root / "feedback" / student / assignment
    secret = read_owned(str(root / "submitted" / student / assignment / KEPT[1]), os.geteuid(), MAX_SMALL_BYTES)
    if feedback.is_dir():
        (feedback / KEPT[1]).unlink(missing_ok=True)
        if secret is not None:
            (feedback / KEPT[1]).write_bytes(secret)


if __name__ == "__main__":
    print(json.dumps(collect_exchange(sys.argv[1])))

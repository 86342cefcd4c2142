"""Collect from nbgrader's exchange (a JupyterHub's ``nbgrader submit``): ``OwnedCollect``, nbgrader's own collect
with three changes, and ``collect_exchange``, which ``grade --from-exchange`` runs in the course root (as
``python -m autograder.grading.intake.owned_collect``, ``exchange.from_exchange``).

nbgrader's collect takes the newest folder *named* after a student, whoever made it (``nbgrader submit --student
ada`` run by ben, or a folder written into inbound by hand: it only logs a warning); it trusts the time the student's
own process wrote; and it copies the whole folder, following links and reading pipes. Here a submission counts only
when its folder and every file taken from it belong to the student it names; its time is the later of the time it
claims and the last change of its folder and of each file taken from it (which no student can set back; a folder
whose name claims no time that can be read counts from its arrival, and never stops the class's collect); and only
the notebooks, timestamp.txt and submission_secret.txt (which ``nbgrader release_feedback`` reads) are copied, as
regular files, never through a link.
A notebook the student kept working on in a copy (JupyterLab's ``ex1_atomic_backward-Copy1.ipynb``, a browser's
``(1)``) is handed in beside the one of its own name: the newest of them is taken, as from an LMS's download
(``collect.collect``), and the others are listed as duplicate_file; before, the copy was never looked at, and the
untouched notebook of its name was graded, silently, to 0.
"""

import datetime
import glob
import itertools
import json
import os
import secrets
import shutil
import stat
import sys
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange import ExchangeError
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.utils import check_mode

from .collect import MAX_ENTRY_BYTES
from .exchange import KEPT, MAX_SMALL_BYTES, owner_name, read_owned_at
from .which_notebook import match_notebook

LOOKED_AT = 500  # the entries of a submission looked at for a copy of a notebook (a folder may hold a million)


class OwnedCollect(ExchangeCollect):
    """nbgrader's ``ExchangeCollect``, taking for each student the newest submission they made themselves
    (``c.ExchangeFactory.collect``, set in the course's nbgrader_config.py: ``nbgrader collect``, the Formgrader's
    Collect and ``grade --from-exchange`` all use it)."""

    def init_src(self):
        # nbgrader's checks and the due date (its init_src, whose choice by name alone is made again below, and which
        # read the time in every folder's name of inbound/ with no care: one folder named with no time in it, which
        # any student of the course can make there, stopped the collect of the whole class)
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        if not check_mode(self.inbound_path, read=True, execute=True):
            self.fail(f"You don't have read permissions for the directory: {self.inbound_path}")
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                self.duedate = gb.find_assignment(self.coursedir.assignment_id).duedate
            except MissingEntry:
                self.duedate = None
        self.refused, self.collected = [], []  # (folder, the student it names, its owner); student ids
        self.duplicates = []  # (student, notebook, the file taken, [the files ignored])
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

    def _path_to_record(self, path: str) -> dict:
        """nbgrader's record of a folder of inbound/: the student its name names and the time it claims. A name is the
        choice of whoever made the folder: a time that cannot be read (or that no datetime holds) claims none, and
        the folder counts from its arrival, as any folder whose claim is earlier."""
        try:
            return super()._path_to_record(path)
        except Exception:  # dateutil's ParserError (a ValueError), OverflowError, ...
            name = os.path.basename(path)
            return {"username": name.rsplit("+", 3)[0], "filename": name, "timestamp": datetime.datetime.min}

    def notebooks(self) -> list:
        """The assignment's notebooks by name, as released (else as in source/): what is looked for in a submission,
        by name, so that a folder of a million entries or of many large notebooks costs no more than the few that
        are graded."""
        for folder in (self.coursedir.release_directory, self.coursedir.source_directory):
            path = Path(self.coursedir.format_path(folder, ".", self.coursedir.assignment_id))
            if found := sorted(p.name for p in path.glob("*.ipynb")):
                return found
        return []

    def copies(self, folder: int, uid: int, wanted: list) -> dict:
        """notebook file name -> the student's own regular files in the open ``folder`` that hand it in, newest first
        (its own name first of equals): the file of its name and its copies under other names (``match_notebook``, as
        a download's files are matched), among the folder's first LOOKED_AT entries."""
        stems, found = [n[: -len(".ipynb")] for n in wanted], {}
        try:
            listing = os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=folder)  # (a folder one may not list: none)
        except OSError:
            names = []
        else:
            try:
                with os.scandir(listing) as entries:
                    names = [e.name for e in itertools.islice(entries, LOOKED_AT)]
            finally:
                os.close(listing)
        for name in dict.fromkeys([*wanted, *names]):  # its own name always, however many entries come first
            notebook = match_notebook(name, stems)
            try:
                st = os.stat(name, dir_fd=folder, follow_symlinks=False)
            except OSError:
                continue
            if notebook is not None and (name in wanted or stat.S_ISREG(st.st_mode) and st.st_uid == uid):
                found.setdefault(f"{notebook}.ipynb", []).append((st.st_mtime_ns, name == f"{notebook}.ipynb", name))
        return {notebook: [c[2] for c in sorted(c, reverse=True)] for notebook, c in found.items()}

    def take(self, student: str, folder: int, uid: int, notebook: str, names: list) -> tuple[bytes, float] | None:
        """The bytes of the newest of ``names`` (``copies``) that is the student's regular file in the open ``folder``,
        and its last change once read; the others that differ from it are listed in ``duplicates``."""
        limit = MAX_ENTRY_BYTES
        for i, name in enumerate(names):
            got = read_owned_at(name, uid, limit, folder)
            if got is None:
                self.log.warning(f"{student}'s {name}: not a regular file of theirs: not collected")
                continue
            others = [n for n in names[i + 1 :] if not self.same(folder, n, uid, got[0])]
            if others:
                self.duplicates.append((student, notebook[: -len(".ipynb")], name, others))
            return got
        return None

    @staticmethod
    def same(folder: int, name: str, uid: int, data: bytes) -> bool:
        """Whether ``name`` in ``folder`` holds ``data`` (or is no file of the student's to take): no copy to tell of.
        Only a file of the same size is read (a student's flood of large copies is not read whole at every run)."""
        try:
            st = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except OSError:
            return True
        if not stat.S_ISREG(st.st_mode) or st.st_uid != uid or st.st_size > MAX_ENTRY_BYTES:
            return True
        return st.st_size == len(data) and (read_owned_at(name, uid, MAX_ENTRY_BYTES, folder) or (data,))[0] == data

    def opened(self, record: dict) -> int | None:
        """The submission's folder, opened once for all that is read of it: the folder init_src chose, never a link, a
        folder of its student's. Every name is then looked up in it, so that no folder put under its name while the
        collect runs (a link to a folder of answers kept since before the due date, while the collect reads the
        notebooks after their folder was chosen) is read instead."""
        try:
            path = os.path.join(self.inbound_path, record["filename"])
            folder = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)  # (to look in, not to list)
        except OSError:
            folder = None
        if folder is not None and os.fstat(folder).st_uid == record["uid"]:
            return folder
        self.log.warning(f"{record['filename']} in the exchange changed while it was collected: not collected")
        if folder is not None:
            os.close(folder)
        return None

    def copy_files(self):
        wanted = self.notebooks()
        for record in self.src_records:
            if (folder := self.opened(record)) is not None:
                try:
                    self.copy_folder(record, folder, wanted)
                finally:
                    os.close(folder)

    def copy_folder(self, record: dict, folder: int, wanted: list) -> None:
        """The submission of ``record``, its ``folder`` open, into submitted/ (unless it was collected already)."""
        student = record["username"]
        copies = self.copies(folder, record["uid"], wanted)
        dest = Path(
            self.coursedir.format_path(self.coursedir.submitted_directory, student, self.coursedir.assignment_id)
        )
        existing = self.coursedir.get_existing_timestamp(str(dest)) if dest.is_dir() else None
        if dest.is_dir() and not (self.update and (existing is None or record["timestamp"] > existing)):
            self.log.info(f"Submission already collected: {student} {self.coursedir.assignment_id}")
            for name, names in copies.items():  # its duplicates, listed again (problems.json is each run's)
                if len(names) > 1:
                    self.take(student, folder, record["uid"], name, names)
            return
        new = dest.with_name(f".{dest.name}.collecting")  # written whole, then put in place
        shutil.rmtree(new, ignore_errors=True)
        new.mkdir(parents=True)
        # the submission's time: the later of its folder's and the last change of each file taken, as each was read
        # (a student who writes into a notebook of a folder submitted in time, after the due date, changes no time
        # of the folder: that notebook was collected as on time)
        changes = [os.fstat(folder).st_ctime]
        for name, names in copies.items():  # one at a time: at most one notebook is held
            got = self.take(student, folder, record["uid"], name, names)
            if got is not None:
                (new / name).write_bytes(got[0])
                changes.append(got[1])
        for name in KEPT:
            try:
                os.stat(name, dir_fd=folder, follow_symlinks=False)
            except OSError:
                continue
            got = read_owned_at(name, record["uid"], MAX_SMALL_BYTES, folder)
            if got is None:
                self.log.warning(f"{student}'s {name}: not a regular file of theirs: not collected")
            else:
                (new / name).write_bytes(got[0])
                changes.append(got[1])
        secret = new / KEPT[1]
        if not secret.is_file():  # made by hand: release_feedback stops at the first submission without one
            secret.write_bytes(secrets.token_hex(64).encode())  # (its pages go where nobody finds them)
        changed = datetime.datetime.fromtimestamp(max(changes), datetime.timezone.utc)
        record["timestamp"] = max(record["timestamp"], changed.replace(tzinfo=None))
        (new / "timestamp.txt").write_text(f"{record['timestamp']:%Y-%m-%d %H:%M:%S.%f} UTC")
        shutil.rmtree(dest, ignore_errors=True)
        new.rename(dest)
        self.collected.append(student)
        self.log.info(f"Collected {student} {self.coursedir.assignment_id} ({record['timestamp']:%Y-%m-%d %H:%M} UTC)")


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
    return {
        "collected": sorted(collect.collected),
        "refused": collect.refused,
        "duplicates": collect.duplicates,
        "course": app.coursedir.course_id,
    }


if __name__ == "__main__":
    print(json.dumps(collect_exchange(sys.argv[1])))

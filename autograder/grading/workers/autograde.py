"""nbgrader's autograde and feedback for one student, as a grading worker runs them.

``StudentAutograde`` is nbgrader's Autograde converter that keeps each notebook's incidents (and the sandbox's
message, when it could not start a kernel); ``feedback_pages`` makes the feedback pages alone.
"""

import os
import re
import stat
import sys
from pathlib import Path

from nbgrader.converters import Autograde
from nbgrader.utils import capture_log, temp_attrs

from ...common.shown import for_terminal
from ...sandbox import SandboxError

TIMESTAMP_BYTES = 1000
ROUTINE = "Removing existing assignment"  # nbgrader's warning at every regrade, which says nothing
# in nbgrader's log lines, the notebook they are about. A name starts after a slash or a space: searched from every
# character of a long word, as it was, a line of one 15 MB word (a kernel's value in nbformat's error) took days, and
# the search held the GIL, so the worker's watchdog never ran
NOTEBOOK_NAME = re.compile(r"(?<![^/\s])[^/\s]+\.ipynb")
LINE_CHARS = 2000  # of each warning written to the worker's log


class StudentAutograde(Autograde):
    """Autograde of one student; ``incidents`` and ``sandbox_failure`` once it has run."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.incidents = []  # the Problems of every notebook graded
        self.sandbox_failure = ""  # the sandbox's message when it could not start a kernel

    def convert_single_notebook(self, notebook_filename: str) -> None:
        try:
            super().convert_single_notebook(notebook_filename)
        except SandboxError as error:
            self.sandbox_failure = str(error)
            raise

    def write_single_notebook(self, output, resources) -> None:
        # both passes: the sanitizing one's RestoreLockedCells, the autograde one's GradingExecute and JudgeAnswers
        self.incidents += resources.get("backprop_ninja", {}).get("incidents", [])
        super().write_single_notebook(output, resources)


def autograde(api, assignment: str, student: str) -> tuple:
    """(nbgrader's result dict, the StudentAutograde that ran): ``NbGraderAPI.autograde``, forced, with the
    student created if new."""
    with temp_attrs(api.coursedir, assignment_id=assignment, student_id=student):
        app = StudentAutograde(coursedir=api.coursedir, parent=api)
        app.force, app.create_student = True, True
        result = capture_log(app)
    log_warnings(student, result.get("log"))
    return result, app


def log_warnings(student: str, log: str | None, out=None) -> list:
    """nbgrader's warnings and errors in the student's autograde, each with the student and the notebook, written to
    the worker's log (``.grading/logs/`` after the run). nbgrader's captured log was dropped whole when the autograde
    succeeded."""
    found, notebook = [], "-"
    for line in (log or "").splitlines():
        named = NOTEBOOK_NAME.search(line)
        notebook = named.group(0) if named else notebook
        if line.startswith(("[WARNING]", "[ERROR]", "[CRITICAL]")) and ROUTINE not in line:
            # a submission's words may be in it: no control character reaches the terminal that shows the log
            found.append(for_terminal(f"{student} {notebook} {line}"[: LINE_CHARS + 1], LINE_CHARS))
    if found:
        print("\n".join(found), file=out or sys.stderr, flush=True)
    return found


def read_regular(path: Path, limit: int) -> tuple | None:
    """(permission bits, bytes) of ``path`` if it is a regular file, never following a link nor opening a pipe; None
    when there is none. ValueError when it is over ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # missing, a link (ELOOP), a socket (ENXIO)
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path.name} is over {limit} bytes")
    return st.st_mode & 0o777, data


def feedback_pages(api, assignment: str, student: str) -> dict:
    """nbgrader's generate_feedback, making only the pages: none of the other files of the autograded folder is
    copied (nbgrader would copy them all, names.txt among them), but timestamp.txt, which release_feedback reads."""
    ignored = api.coursedir.ignore
    api.coursedir.ignore = ["*"]  # (the folder itself matches: nbgrader walks nothing)
    try:
        made = api.generate_feedback(assignment, student, force=True)
    finally:
        api.coursedir.ignore = ignored
    folder = Path(api.coursedir.format_path(api.coursedir.autograded_directory, student, assignment))
    try:
        stamp = read_regular(folder / "timestamp.txt", TIMESTAMP_BYTES)
    except ValueError:  # (staged from the submission, whose timestamp.txt was checked: never, in practice)
        stamp = None
    feedback = Path(api.coursedir.format_path(api.coursedir.feedback_directory, student, assignment))
    if made["success"] and stamp is not None and feedback.is_dir():
        (feedback / "timestamp.txt").write_bytes(stamp[1])
    return made

"""A real course folder driven by the real nbgrader commands, the grade command as a newcomer runs it, and
the feedback page read as a student reads it."""

import atexit
import contextlib
import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook

from autograder.data import EMBEDDED_NAMES

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"  # screenshots the browser tests keep
NAMES = EMBEDDED_NAMES
ASSIGNMENT = "backprop_ninja"
# The real commands run as a newcomer's fresh shell runs them: no venv on PATH, nothing else set.
NEWCOMER_ENV = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/local/bin:/usr/bin:/bin"}


class Course:
    """A temporary course root with this repository's config and source notebooks."""

    def __init__(self, root: Path, copy: bool = True):
        self.root = root
        if copy:  # else the course is there already
            shutil.copy(REPO / "nbgrader_config.py", root)
            shutil.copytree(REPO / "source", root / "source")

    def nbgrader(self, *args, check=True):
        result = subprocess.run(
            [sys.executable, "-m", "nbgrader", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=3600,
            env=NEWCOMER_ENV,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"nbgrader {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
        return result

    def notebook(self, kind: str, name: str):
        return nbformat.read(self.root / kind / ASSIGNMENT / f"{name}.ipynb", as_version=4)

    def submit(self, student: str, name: str, nb) -> None:
        folder = self.root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, folder / f"{name}.ipynb")

    def scores(self, student: str, name: str) -> dict:
        """grade_id -> auto score of every graded cell of one notebook."""
        with Gradebook(f"sqlite:///{self.root / 'gradebook.db'}") as gb:
            nb = gb.find_submission_notebook(name, ASSIGNMENT, student)
            return {g.name: g.auto_score for g in nb.grades}

    def max_scores(self, name: str) -> dict:
        with Gradebook(f"sqlite:///{self.root / 'gradebook.db'}") as gb:
            nb = gb.find_notebook(name, ASSIGNMENT)
            return {c.name: c.max_score for c in nb.grade_cells}

    def messages(self, student: str, name: str) -> dict:
        """grade_id -> the text the grader wrote in each graded cell of the autograded notebook."""
        nb = nbformat.read(self.root / "autograded" / student / ASSIGNMENT / f"{name}.ipynb", as_version=4)
        found = {}
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
            if cell.metadata.get("nbgrader", {}).get("grade"):
                found[gid] = "".join(
                    o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"
                )
        return found

    def feedback(self, student: str, name: str) -> "FeedbackPage":
        return FeedbackPage((self.root / "feedback" / student / ASSIGNMENT / f"{name}.html").read_text())

    def summary_rows(self, student: str, name: str, order: list) -> list:
        """What the feedback's table must say of each graded cell in ``order``, from the gradebook and the
        autograded notebook: (grade_id, ✔ or ✘, "score / max", the grader's first reason)."""
        scores, maximum, messages = self.scores(student, name), self.max_scores(name), self.messages(student, name)
        return [
            (g, "✔" if scores[g] == maximum[g] else "✘", f"{scores[g]:g} / {maximum[g]:g}", reasons(messages[g])[0])
            for g in order
        ]


def reasons(message: str) -> list:
    """The lines of a grader's verdict after its first (``✔ d<name>: p of m points``)."""
    return [line.strip() for line in message.splitlines()[1:] if line.strip()]


@dataclass
class StepRow:
    """One row of the table of steps at the top of a feedback page."""

    mark: str  # ✔ or ✘
    step: str  # as the grader names it
    anchor: str  # where its link goes (without the #)
    points: str  # "0 / 1"
    first: bool  # marked as the first step to fix
    reasons: list = field(default_factory=list)


class FeedbackPage(HTMLParser):
    """A feedback HTML page as its reader meets it: the table of steps on top, every link, every anchor."""

    def table(self) -> list:
        """The table's rows as ``Course.summary_rows`` gives them."""
        return [(r.anchor, r.mark, r.points, r.reasons[0] if r.reasons else None) for r in self.rows]

    def first_to_fix(self) -> list:
        return [r.anchor for r in self.rows if r.first]

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.text, self.headline, self.notes, self.rows = text, "", [], []
        self.anchors, self.links = set(), []  # names and ids on the page; every href
        self._open = []  # the class lists of the open <div>s of the summary
        self.feed(text)

    def _inside(self, name: str) -> bool:
        return any(name in classes for classes in self._open)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.anchors.update(v for k, v in attrs.items() if k in ("id", "name") and v)
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
            if self._inside("step-name"):
                self.rows[-1].anchor = attrs["href"].removeprefix("#")
        if tag != "div" or not (self._open or "steps-summary" in (attrs.get("class") or "")):
            return
        classes = (attrs.get("class") or "").split()
        if "steps-row" in classes and "steps-head" not in classes:
            self.rows.append(StepRow("", "", "", "", "step-first" in classes))
        elif "steps-notes" in classes:
            self.notes.append("")
        elif self._open and "step-reason" in self._open[-1]:
            self.rows[-1].reasons.append("")
        self._open.append(classes)

    def handle_endtag(self, tag):
        if tag == "div" and self._open:
            self._open.pop()

    def handle_data(self, data):
        if not self._open:
            return
        row = self.rows[-1] if self.rows else None
        if self._inside("steps-headline"):
            self.headline += data
        elif self._inside("steps-notes"):
            self.notes[-1] += data
        elif self._inside("step-mark"):
            row.mark += data.strip()
        elif self._inside("step-name") and data != "fix first":
            row.step += data.strip()
        elif self._inside("step-points"):
            row.points += data
        elif self._inside("step-reason") and row.reasons:
            row.reasons[-1] += data


@functools.cache
def _generated(only: tuple | None, demo: bool) -> Path:
    """A course folder made once in this process (one per test worker): this repository's config and source
    (the notebooks ``only``, or all), then ``nbgrader generate_assignment``; with ``demo``, the demo course
    (``make_demo_course``: the same, and the demo class's submissions). Courses are copies of it: the command
    costs 5-7 s of CPU (nbgrader's start, alembic's new gradebook, every notebook) and makes the same course each
    time; its folder holds no path of its own (the gradebook included)."""
    parent = Path(tempfile.mkdtemp(prefix="backprop-ninja-generated-"))
    atexit.register(shutil.rmtree, parent, True)
    if demo:
        from autograder.authoring.demo import make_demo_course

        return make_demo_course(parent / "course")
    course = Course(parent)
    for other in (parent / "source" / ASSIGNMENT).glob("*.ipynb"):
        if only and other.stem not in only:
            other.unlink()
    course.nbgrader("generate_assignment", ASSIGNMENT, "--force")
    return parent


def generated_copy(root: Path, only: str | tuple | None = None, demo: bool = False) -> Path:
    """``root`` (made if missing) as the course ``_generated`` makes, that a sandboxed kernel (another uid) can
    enter."""
    only = (only,) if isinstance(only, str) else tuple(sorted(only)) if only else None
    shutil.copytree(_generated(only, demo), root, dirs_exist_ok=True)
    root.chmod(0o755)
    return root


@contextlib.contextmanager
def temporary_course(prefix: str = "backprop-ninja-course-", only: str | tuple | None = None):
    """A course in a fresh folder whose release was generated by ``nbgrader generate_assignment`` (of the
    notebook `only` or the notebooks in it, or of all); removed afterwards unless $KEEP_TEST_COURSE is set."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield Course(generated_copy(root, only), copy=False)
    finally:
        if not os.environ.get("KEEP_TEST_COURSE"):
            shutil.rmtree(root, ignore_errors=True)


DEMO_FOUR = ["ada_perfect", "ben_sign", "cleo_keepdim", "finn_blank"]  # four students of the demo class


def demo_course(root: Path, students=None) -> Path:
    """The demo course at ``root`` (``make_demo_course``), with only ``students`` of its class if given; graded by
    nobody yet. A course already at ``root`` is replaced, as make_demo_course replaces it."""
    shutil.rmtree(root, ignore_errors=True)
    generated_copy(root, demo=True)
    for student in (root / "submitted").iterdir():
        if students is not None and student.name not in students:
            shutil.rmtree(student)
    return root


def demo_four(folder: Path) -> Path:
    """The demo course with four of its students (DEMO_FOUR), graded by nobody yet."""
    return demo_course(folder / "course", DEMO_FOUR)


def copy_of(course: Path, tmp_path: Path) -> Path:
    """A copy of ``course`` in ``tmp_path``, that a sandboxed kernel (another uid) can enter."""
    root = tmp_path / "course"
    shutil.copytree(course, root)
    root.chmod(0o755)
    tmp_path.chmod(0o755)
    return root


def grade_argv(root: Path, *args) -> list:
    """``backprop-ninja grade`` on the course at ``root``, as a newcomer types it (no venv activated)."""
    return [sys.executable, "-m", "autograder.cli", "grade", "--course", str(root), *args]


def run_grade(root: Path, *args, check=True, env=None, timeout=3600) -> subprocess.CompletedProcess:
    """Run ``grade_argv``; with ``check``, a failed run fails the test with grade's own output."""
    env = NEWCOMER_ENV if env is None else env
    result = subprocess.run(grade_argv(root, *args), capture_output=True, text=True, timeout=timeout, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"grade failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
    return result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(condition, timeout: float, what: str, step: float = 0.5):
    end = time.time() + timeout
    while not (found := condition()):
        assert time.time() < end, f"timed out after {timeout:g} s waiting for {what}"
        time.sleep(step)
    return found

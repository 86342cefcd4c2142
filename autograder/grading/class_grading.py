"""``backprop-ninja grade``: grade a whole class with one command, sandboxed and in parallel.

  1. collect   an LMS download (``collect``) into submitted/<student>/<assignment>/, if given
  2. check     every submitted notebook against the release (``repair``): what is not a notebook
               or is missing is reported; duplicated, deleted or stripped nbgrader cells are
               repaired for that student alone. The repaired copies are staged in
               .grading/staged/ (submitted/ keeps what the students handed in)
  3. autograde the students whose files changed since the last run (a sha256 of every
               submitted file, of the source notebooks and of nbgrader_config.py), each with
               nbgrader's real autograde and generate_feedback (``grading_worker``), in N
               worker processes. Each kernel runs in the sandbox (GradingExecute.sandbox) with a
               wall-clock limit per notebook (GradingExecute.notebook_timeout)
  4. merge     each worker grades into its own copy of the gradebook; the parent copies every
               finished student's grades into gradebook.db, one student at a time, so no write
               is ever lost to SQLite's single-writer lock
  5. report    grades.csv (one row per student: total, per notebook, per graded step),
               problems.json (every student without a full grade says why), and the class
               report (``class_report``) when it is installed

A student's problems are kept with their last grading in .grading/state.json, so a re-run that
regrades nobody reports the same problems.

Limits: a cell that runs over Execute.timeout is interrupted and the notebook goes on; at
GradingExecute.notebook_timeout the notebook stops (points earned so far stay); a worker that
has not answered within (notebooks x (limit + 60 s) + 120 s) is killed and restarted, and that
student gets a time_limit problem. As root, worker i's kernels run as uid 61000 + i (the first
unused uids from ``Options.first_sandbox_uid``): RLIMIT_NPROC counts per uid, so one student's
fork bomb cannot starve the kernel of the student graded beside it. With W workers on C cores,
each worker and its kernels get C/W torch/OpenMP threads.
"""

import csv
import hashlib
import json
import os
import pwd
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from . import collect as collecting
from .repair import repair

GRADING_DIR = ".grading"
# What the sandbox runs: bubblewrap, and util-linux's prlimit (and setpriv, to leave root)
SANDBOX_TOOLS = ("bwrap", "prlimit") + (("setpriv",) if os.geteuid() == 0 else ())
UNSANDBOXED_WARNING = (
    "WARNING: grading WITHOUT the sandbox (--unsandboxed): student code runs with your "
    "permissions and can read the gradebook, change other grades and reach the network."
)


@dataclass
class Options:
    course: Path = Path(".")
    assignment: str | None = None
    download: Path | None = None  # an LMS zip or folder, collected into submitted/ first
    workers: int = os.cpu_count() or 1
    sandbox: bool = True
    regrade_all: bool = False
    notebook_timeout: int | None = None  # None: nbgrader_config.py's GradingExecute.notebook_timeout
    cell_timeout: int | None = None  # None: nbgrader_config.py's Execute.timeout
    memory_limit_gb: float | None = None  # None: SandboxedKernelManager.memory_limit
    out: Path | None = None  # where grades.csv and problems.json go (default: the course root)
    feedback: bool = True
    progress: bool = True
    first_sandbox_uid: int = 61000  # as root, worker i's kernels run as uid first_sandbox_uid + i
    extra_nbgrader_args: list = field(default_factory=list)


@dataclass
class Summary:
    students: list
    graded: list  # regraded in this run
    unchanged: list
    problems: list
    grades_csv: Path
    problems_json: Path
    report: Path | None
    seconds: float


# ---------------------------------------------------------------- the course


def find_assignment(root: Path) -> str:
    found = sorted(p.name for p in (root / "source").iterdir() if p.is_dir()) if (root / "source").is_dir() else []
    if len(found) != 1:
        raise SystemExit(f"{root}: expected one assignment in source/, found {found or 'none'}; pass --assignment")
    return found[0]


def notebook_names(root: Path, assignment: str) -> list:
    """The assignment's notebooks, read from source/ (never a fixed list)."""
    names = sorted(p.stem for p in (root / "source" / assignment).glob("*.ipynb"))
    if not names:
        raise SystemExit(f"no notebooks in {root / 'source' / assignment}")
    return names


def _nbgrader(root: Path, *args) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args, "--log-level=ERROR"], cwd=root, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise SystemExit(f"nbgrader {' '.join(args)} failed:\n{result.stderr[-3000:]}")


def ensure_release(root: Path, assignment: str, notebooks: list) -> None:
    """Generate the release (and the gradebook's copy of the notebooks) when they are missing."""
    from nbgrader.api import Gradebook, MissingEntry

    known = set()
    if (root / "gradebook.db").is_file():
        with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
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
        _nbgrader(root, "generate_assignment", assignment, "--force")


def check_sandbox(sandbox: bool) -> None:
    if not sandbox:
        print(UNSANDBOXED_WARNING, file=sys.stderr)
        return
    missing = [tool for tool in SANDBOX_TOOLS if shutil.which(tool) is None]
    if missing:
        raise SystemExit(
            f"cannot grade in the sandbox: {', '.join(missing)} not found (apt-get install bubblewrap "
            "util-linux). Nothing was graded. Pass --unsandboxed only for notebooks you trust."
        )


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def grading_key(root: Path, assignment: str, notebooks: list) -> str:
    """Changes when an exercise or the grading configuration changes: everyone is regraded then."""
    parts = [(root / "source" / assignment / f"{n}.ipynb").read_bytes() for n in notebooks]
    parts.append((root / "nbgrader_config.py").read_bytes() if (root / "nbgrader_config.py").is_file() else b"")
    return _digest(b"\0".join(parts))


# ---------------------------------------------------------------- checking and staging


def stage_student(root: Path, assignment: str, student: str, notebooks: list, releases: dict) -> tuple:
    """Repair the student's notebooks into .grading/staged/; ([notebooks staged], [problems])."""
    source = root / "submitted" / student / assignment
    staged = root / GRADING_DIR / "staged" / student / assignment
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(parents=True)
    ok, problems = [], []
    for notebook in notebooks:
        path = source / f"{notebook}.ipynb"
        if not path.is_file():
            problems.append(
                {"notebook": notebook, "problem": "missing_notebook", "detail": f"no {notebook}.ipynb was handed in"}
            )
            continue
        nb, found = repair(path.read_bytes(), releases[notebook], notebook)
        problems += found
        if nb is not None:
            nbformat.write(nb, staged / f"{notebook}.ipynb")
            ok.append(notebook)
    if (source / "timestamp.txt").is_file():
        shutil.copy(source / "timestamp.txt", staged / "timestamp.txt")
    return ok, [{"student": student, **p} for p in problems]


def student_key(root: Path, assignment: str, student: str, notebooks: list, course_key: str) -> str:
    folder = root / "submitted" / student / assignment
    files = {
        n: _digest((folder / f"{n}.ipynb").read_bytes()) if (folder / f"{n}.ipynb").is_file() else None
        for n in notebooks
    }
    stamp = (folder / "timestamp.txt").read_text().strip() if (folder / "timestamp.txt").is_file() else ""
    return _digest(json.dumps([course_key, files, stamp], sort_keys=True).encode())


# ---------------------------------------------------------------- workers


class Worker:
    """One ``grading_worker`` process with its own gradebook copy; restarted when it has to be killed."""

    def __init__(self, index: int, root: Path, assignment: str, options: Options, main_db: Path, threads: int = 0):
        self.index, self.root, self.assignment, self.options = index, root, assignment, options
        self.threads = threads  # torch/OpenMP threads of the worker and its kernels (0: their default)
        self.folder = root / GRADING_DIR / "workers"
        self.db = self.folder / f"gradebook-{index}.db"
        self.log = self.folder / f"worker-{index}.log"
        self.main_db = main_db
        self.proc = None
        self.lines = queue.Queue()

    def argv(self) -> list:
        o = self.options
        args = [
            sys.executable,
            "-m",
            "autograder.grading.worker",
            self.assignment,
            f"--CourseDirectory.root={self.root}",
            f"--CourseDirectory.db_url=sqlite:///{self.db}",
            f"--CourseDirectory.submitted_directory={GRADING_DIR}/staged",
            f"--SandboxedKernelManager.course_root={self.root}",
            "--log-level=WARN",
        ]
        if not o.sandbox:
            args.append("--GradingExecute.sandbox=False")
        if o.notebook_timeout is not None:
            args.append(f"--GradingExecute.notebook_timeout={int(o.notebook_timeout)}")
        if o.cell_timeout is not None:
            args.append(f"--Execute.timeout={int(o.cell_timeout)}")
        if o.memory_limit_gb is not None:
            args.append(f"--SandboxedKernelManager.memory_limit={int(o.memory_limit_gb * 2**30)}")
        if os.geteuid() == 0:  # RLIMIT_NPROC counts per uid: one uid per worker keeps a fork bomb to itself
            uid = sandbox_uid(o.first_sandbox_uid, self.index)
            args += [f"--SandboxedKernelManager.sandbox_uid={uid}", f"--SandboxedKernelManager.sandbox_gid={uid}"]
        if not o.feedback:
            args.append("--no-feedback")
        return args + list(o.extra_nbgrader_args)

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        copy_database(self.main_db, self.db)
        self.lines = queue.Queue()
        env = dict(os.environ)
        if self.threads:  # W workers on C cores: C/W threads each, not C each (OpenMP oversubscribed spins)
            for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
                env.setdefault(variable, str(self.threads))
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv(),
                cwd=self.root,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                bufsize=1,
                start_new_session=True,
                env=env,
            )
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()
        ready = self._next(300)
        if not ready or not ready.get("ready"):
            self.kill()
            raise SystemExit(f"a grading worker did not start; see {self.log}")

    @staticmethod
    def _read(proc, lines) -> None:
        for line in proc.stdout:
            try:
                lines.put(json.loads(line))
            except ValueError:
                pass
        lines.put(None)

    def _next(self, timeout: float):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def grade(self, student: str, timeout: float):
        """The worker's result for ``student``, or None when it died or ran out of time (it is killed)."""
        try:
            self.proc.stdin.write(student + "\n")
            self.proc.stdin.flush()
        except OSError:
            return None
        result = self._next(timeout)
        if result is None or result.get("student") != student:
            self.kill()
            return None
        return result

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()


def sandbox_uid(first: int, index: int) -> int:
    """The index-th uid from ``first`` on that no account uses."""
    uid, free = first, -1
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            free += 1
            if free == index:
                return uid
        uid += 1


def copy_database(src: Path, dst: Path) -> None:
    import sqlite3

    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(str(dst) + suffix).unlink(missing_ok=True)
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)
    a.close()
    b.close()


def merge_student(main_db: Path, worker_db: Path, assignment: str, student: str) -> None:
    """Copy one student's submission (scores, comments, timestamp) from a worker's gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    with warnings.catch_warnings(), Gradebook(f"sqlite:///{worker_db}") as gw, Gradebook(f"sqlite:///{main_db}") as gm:
        warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy warnings, as in every autograde
        try:
            sw = gw.find_submission(assignment, student)
        except MissingEntry:
            return
        who = gw.find_student(student)
        gm.update_or_create_student(
            student, first_name=who.first_name, last_name=who.last_name, email=who.email, lms_user_id=who.lms_user_id
        )
        gm.update_or_create_submission(assignment, student, timestamp=sw.timestamp, extension=sw.extension)
        for nw in sw.notebooks:
            nm = gm.find_submission_notebook(nw.name, assignment, student)
            nm.flagged, nm.late_submission_penalty = nw.flagged, nw.late_submission_penalty
            grades, comments = {g.name: g for g in nm.grades}, {c.name: c for c in nm.comments}
            for g in nw.grades:  # manual scores stay as the instructor left them in gradebook.db
                grades[g.name].auto_score, grades[g.name].needs_manual_grade = g.auto_score, g.needs_manual_grade
            for c in nw.comments:
                comments[c.name].auto_comment = c.auto_comment
        gm.db.commit()


def forget_student(main_db: Path, root: Path, assignment: str, student: str) -> None:
    """No gradable notebook any more: drop the old grades, autograded notebooks and feedback."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{main_db}") as gb:
        try:
            gb.remove_submission(assignment, student)
        except MissingEntry:
            pass
    for kind in ("autograded", "feedback"):
        shutil.rmtree(root / kind / student / assignment, ignore_errors=True)


class Progress:
    """One line on stderr, rewritten in place on a terminal; a line per student otherwise."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled, self.start = total, 0, enabled and total > 0, time.monotonic()
        self.tty = sys.stderr.isatty()
        self.lock = threading.Lock()
        self.show("")

    def show(self, last: str) -> None:
        if not self.enabled:
            return
        width = 30
        filled = width * self.done // max(1, self.total)
        line = (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} students  "
            f"{time.monotonic() - self.start:5.0f} s  {last}"
        )
        print(
            ("\r" + line[:110].ljust(110)) if self.tty else line,
            end="" if self.tty else "\n",
            file=sys.stderr,
            flush=True,
        )

    def tick(self, student: str) -> None:
        with self.lock:
            self.done += 1
            self.show(student)

    def close(self) -> None:
        if self.enabled and self.tty:
            print(file=sys.stderr)


# ---------------------------------------------------------------- outputs


def step_columns(root: Path, assignment: str, notebooks: list) -> dict:
    """notebook -> graded grade_ids (every test_* cell, and any other cell worth points), in cell order."""
    steps = {}
    for notebook in notebooks:
        nb = nbformat.read(root / "release" / assignment / f"{notebook}.ipynb", as_version=4)
        steps[notebook] = [
            m["grade_id"]
            for m in (c.metadata.get("nbgrader", {}) for c in nb.cells)
            if m.get("grade") and (m.get("grade_id", "").startswith("test_") or m.get("points", 0))
        ]
    return steps


def _fmt(x) -> str:
    return "" if x is None else f"{float(x):g}"


def write_grades_csv(
    path: Path, main_db: Path, assignment: str, notebooks: list, steps: dict, students: list, graded_notebooks: dict
) -> None:
    """One row per student; an empty cell means that notebook or step has no grade (see problems.json)."""
    from nbgrader.api import Gradebook, MissingEntry

    header = ["student", "total", "max_total", *notebooks, *(f"{n}:{s}" for n in notebooks for s in steps[n])]
    rows = []
    with Gradebook(f"sqlite:///{main_db}") as gb:
        max_total = gb.find_assignment(assignment).max_score
        for student in students:
            row = {"student": student, "max_total": _fmt(max_total)}
            total = None
            for notebook in notebooks:
                if notebook not in graded_notebooks.get(student, ()):
                    continue
                try:
                    snb = gb.find_submission_notebook(notebook, assignment, student)
                except MissingEntry:
                    continue
                scores = {g.name: g.score for g in snb.grades}
                row[notebook] = _fmt(snb.score)
                total = (total or 0) + snb.score
                for step in steps[notebook]:
                    row[f"{notebook}:{step}"] = _fmt(scores.get(step))
            row["total"] = _fmt(total)
            rows.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header, restval="")
        writer.writeheader()
        writer.writerows(rows)


def _problem(p: dict) -> dict:
    """A problem with its keys in the documented order."""
    return {"student": p["student"], "notebook": p.get("notebook"), "problem": p["problem"], "detail": p["detail"]}


def _problem_order(p):
    return (p["student"], p["notebook"] or "", p["problem"], p["detail"])


# ---------------------------------------------------------------- the command


class ClassGrading:
    """One run of ``backprop-ninja grade``; ``run()`` does it all and returns the Summary."""

    def __init__(self, o: Options):
        self.o = o
        self.root = Path(o.course).resolve()
        if not (self.root / "nbgrader_config.py").is_file():
            raise SystemExit(f"{self.root} is not a course root: it has no nbgrader_config.py")
        self.assignment = o.assignment or find_assignment(self.root)
        self.notebooks = notebook_names(self.root, self.assignment)
        self.main_db = self.root / "gradebook.db"
        self.grading = self.root / GRADING_DIR
        self.state_path = self.grading / "state.json"
        self.records = {}  # student -> {"key", "graded": [notebooks], "problems": [...], "complete"}
        self.lock = threading.Lock()
        self.failure = []
        self.worker_db_of = {}

    def run(self) -> Summary:
        started = time.monotonic()
        check_sandbox(self.o.sandbox)
        ensure_release(self.root, self.assignment, self.notebooks)
        self.grading.mkdir(exist_ok=True)
        self.state = json.loads(self.state_path.read_text()) if self.state_path.is_file() else {}
        self.state.setdefault("students", {})
        if self.o.download:
            _, found = collecting.collect(self.o.download, self.root, self.assignment, self.notebooks)
            self.state["collect_problems"] = found
            print(f"collected {self.o.download} into {self.root / 'submitted'}", file=sys.stderr)
        students, todo, unchanged = self.plan()
        self.autograde(todo)
        problems = sorted(
            (
                _problem(p)
                for p in self.state.get("collect_problems", [])
                + [p for s in students for p in self.records[s]["problems"]]
            ),
            key=_problem_order,
        )
        grades_csv, problems_json, report = self.write(students, problems)
        return Summary(
            students, todo, unchanged, problems, grades_csv, problems_json, report, time.monotonic() - started
        )

    def plan(self) -> tuple:
        """Stage every student whose files (or the exercises) changed; (students, todo, unchanged)."""
        submitted = self.root / "submitted"
        students = sorted(p.name for p in submitted.iterdir() if p.is_dir()) if submitted.is_dir() else []
        releases = {
            n: nbformat.read(self.root / "release" / self.assignment / f"{n}.ipynb", as_version=4)
            for n in self.notebooks
        }
        course_key = grading_key(self.root, self.assignment, self.notebooks)
        todo, unchanged = [], []
        for student in students:
            key = student_key(self.root, self.assignment, student, self.notebooks, course_key)
            old = self.state["students"].get(student)
            if (
                old
                and old.get("key") == key
                and old.get("complete")
                and not self.o.regrade_all
                and all(
                    (self.root / "autograded" / student / self.assignment / f"{n}.ipynb").is_file()
                    for n in old["graded"]
                )
            ):
                unchanged.append(student)
                self.records[student] = old
                continue
            graded, problems = stage_student(self.root, self.assignment, student, self.notebooks, releases)
            self.records[student] = {"key": key, "graded": graded, "problems": problems, "complete": not graded}
            if graded:
                todo.append(student)
            else:  # nothing gradable any more: no stale grade may stay behind
                forget_student(self.main_db, self.root, self.assignment, student)
                self.state["students"][student] = self.records[student]
        for student in set(self.state["students"]) - set(students):  # its folder was removed
            self.state["students"].pop(student)
        return students, todo, unchanged

    def autograde(self, todo: list) -> None:
        """Grade ``todo`` in parallel workers; merge each finished student into gradebook.db."""
        jobs = queue.Queue()
        for student in todo:
            jobs.put(student)
        self.progress = Progress(len(todo), self.o.progress)
        n = max(1, min(int(self.o.workers or 1), len(todo)))
        threads = max(1, (os.cpu_count() or 1) // n) if n > 1 else 0
        workers = [Worker(i, self.root, self.assignment, self.o, self.main_db, threads) for i in range(n)]
        servers = [threading.Thread(target=self.serve, args=(w, jobs), daemon=True) for w in workers] if todo else []
        try:
            for t in servers:
                t.start()
            for t in servers:
                while t.is_alive():
                    t.join(0.5)
        except KeyboardInterrupt:
            self.failure.append("interrupted")
            for w in workers:
                w.kill()
            raise SystemExit("interrupted: the students graded so far are in gradebook.db; run again to go on")
        finally:
            self.progress.close()
            self.state_path.write_text(json.dumps(self.state, indent=1, sort_keys=True))
        if self.failure:
            sandbox = "sandbox" in self.failure[0]
            raise SystemExit(
                f"grading stopped: {self.failure[0]}\n"
                + (
                    "No student was graded outside the sandbox. Fix the sandbox (bubblewrap, user "
                    "namespaces) or pass --unsandboxed to grade notebooks you trust without it.\n"
                    if sandbox
                    else ""
                )
                + f"The workers' logs are in {self.grading / 'workers'}; the students graded so far "
                "are in gradebook.db, and a new run goes on from there."
            )
        shutil.rmtree(self.grading / "workers", ignore_errors=True)

    def serve(self, worker: Worker, jobs: queue.Queue) -> None:
        """One worker's loop: take the next student until none is left (or grading has failed)."""
        per_notebook = self.o.notebook_timeout or 3600
        try:
            worker.start()
            while not self.failure:
                try:
                    student = jobs.get_nowait()
                except queue.Empty:
                    break
                allowed = len(self.records[student]["graded"]) * (per_notebook + 60) + 120
                self.worker_db_of[student] = worker.db
                result = worker.grade(student, allowed)
                if result is not None and result.get("sandbox_error"):
                    self.failure.append(
                        f"the sandbox could not start a kernel for {student}: {result['sandbox_error']}"
                    )
                    break
                self.finish(student, result, allowed)
                if result is None:  # killed: give the folder back from the sandbox's uid, start afresh
                    restore_owner(self.root / "autograded" / student)
                    worker.start()
            worker.stop()
        except BaseException as error:  # noqa: BLE001 (reported by autograde(); the other workers stop)
            self.failure.append(f"grading worker {worker.index} failed: {error}")
            worker.kill()

    def finish(self, student: str, result, allowed: float) -> None:
        record = self.records[student]
        with self.lock:
            if result is not None and result["success"]:
                merge_student(self.main_db, self.worker_db_of[student], self.assignment, student)
                record["problems"] += [{**p, "student": student} for p in result["incidents"]]
            else:
                if result is None:
                    problem = {
                        "problem": "time_limit",
                        "detail": (
                            f"grading did not finish within {allowed:.0f} s (the worker was stopped and restarted); "
                            "not graded"
                        ),
                    }
                else:
                    last = (result["error"].strip().splitlines() or ["?"])[-1][:300]
                    problem = {"problem": "grader_error", "detail": f"nbgrader could not grade it: {last}"}
                record["problems"].append({"student": student, "notebook": None, **problem})
                record["graded"] = []
                forget_student(self.main_db, self.root, self.assignment, student)
            # what timed out would time out again: it is retried only with --regrade-all
            record["complete"] = result is None or result["success"]
            self.state["students"][student] = record
        self.progress.tick(student)

    def write(self, students: list, problems: list) -> tuple:
        out = Path(self.o.out).resolve() if self.o.out else self.root
        out.mkdir(parents=True, exist_ok=True)
        grades_csv, problems_json = out / "grades.csv", out / "problems.json"
        write_grades_csv(
            grades_csv,
            self.main_db,
            self.assignment,
            self.notebooks,
            step_columns(self.root, self.assignment, self.notebooks),
            students,
            {s: self.records[s]["graded"] for s in students},
        )
        problems_json.write_text(json.dumps(problems, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        try:
            from .report import write_report
        except ImportError:
            return grades_csv, problems_json, None
        try:
            return grades_csv, problems_json, Path(write_report(self.root, grades_csv, problems_json))
        except Exception as error:  # noqa: BLE001 (the grades are written; the report is a bonus)
            print(f"the class report failed: {error}", file=sys.stderr)
            return grades_csv, problems_json, None


def grade_class(o: Options) -> Summary:
    """Run ``backprop-ninja grade`` with these options."""
    return ClassGrading(o).run()


def restore_owner(folder: Path) -> None:
    """A killed worker cannot give a student's folder back from the sandbox's uid: do it here."""
    if os.geteuid() == 0 and folder.exists():
        from ..sandbox import _chown_tree

        _chown_tree(str(folder), os.getuid(), os.getgid())


def print_summary(summary: Summary, file=sys.stdout, shown: int = 30) -> None:
    s = summary
    idle = len(s.students) - len(s.graded) - len(s.unchanged)
    print(
        f"{len(s.students)} students: {len(s.graded)} (re)graded, {len(s.unchanged)} unchanged since the last run"
        + (f", {idle} with nothing gradable" if idle else "")
        + f", in {s.seconds:.0f} s",
        file=file,
    )
    if s.problems:
        counts = {}
        for p in s.problems:
            counts[p["problem"]] = counts.get(p["problem"], 0) + 1
        print(
            f"{len(s.problems)} problems: " + ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())), file=file
        )
        for p in s.problems[:shown]:
            print(f"  {p['student']:20s} {(p['notebook'] or '-'):28s} {p['problem']:18s} {p['detail']}", file=file)
        if len(s.problems) > shown:
            print(f"  ... and {len(s.problems) - shown} more", file=file)
    else:
        print("no problems", file=file)
    print(f"grades:   {s.grades_csv}\nproblems: {s.problems_json}", file=file)
    if s.report:
        print(f"report:   {s.report}", file=file)

"""``backprop-ninja grade``: grade a whole class with one command, sandboxed and in parallel.

One run at a time in a course: preflight, collect, check and repair, choose who changed, autograde in the pool or on
a cluster, merge, name shared bug hunt ids, write the files. Each step and its reasons: docs/design/class-grading.md.
"""

import datetime
import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from ..common.problems import Problem, write_problems
from . import preflight
from .intake import changes
from .intake.collect import collect
from .intake.exchange import from_exchange, secret_beside_feedback
from .intake.prepare import GRADING_DIR, read_releases, stage_student, submitted_students
from .intake.state import GradingState, StudentRecord
from .results.bug_hunt_ids import shared_ids
from .results.gradebook import course_url, make_template
from .results.grades_csv import grade_rows, step_columns, write_grades_csv
from .results.history import Change, append_history
from .results.lookalike_ids import name_problems
from .results.merge import Lateness, Merger
from .results.ungraded_pages import write_pages
from .stopping import keep_logs
from .summary import Summary, for_terminal  # what the command prints: a student's words shown literally
from .workers.pool import GraderSettings, Worker, WorkerPool
from .workers.worker import error_cause


@dataclass
class Options:
    course: Path = Path(".")
    assignment: str | None = None
    download: Path | None = None  # an LMS zip or folder, collected into submitted/ first
    exchange: bool = False  # collect from nbgrader's exchange into submitted/ first (intake.exchange)
    workers: int = os.cpu_count() or 1
    sandbox: bool = True
    regrade_all: bool = False
    notebook_timeout: int | None = None  # None: nbgrader_config.py's GradingExecute.notebook_timeout
    cell_timeout: int | None = None  # None: nbgrader_config.py's Execute.timeout
    memory_limit_gb: float | None = None  # None: SandboxedKernelManager.memory_limit
    out: Path | None = None  # where grades.csv and problems.json go (default: the course root)
    feedback: bool = True
    progress: bool = True
    first_sandbox_uid: int = 61000  # as root, kernels run as the first free uids from here, one per worker
    warm_kernels: bool = True  # fork a student's kernels from a warm kernel parent in their sandbox
    grader_time_limit: float | None = None  # None: worker.GRADER_SECONDS
    profile: Path | None = None  # a JSON line per student graded: where the worker's time went (common.phases)
    extra_nbgrader_args: list = field(default_factory=list)
    scheduler: str | None = None  # a Dask scheduler's address: grade there (cluster.coordinator), not locally
    insecure_cluster: bool = False  # allow a scheduler on another machine without TLS (coordinator.check_address)

    def grader(self) -> GraderSettings:
        """What every worker needs to know of these options, here or on a Dask worker."""
        return GraderSettings(
            self.sandbox,
            self.notebook_timeout,
            self.cell_timeout,
            self.memory_limit_gb,
            self.feedback,
            self.first_sandbox_uid,
            tuple(self.extra_nbgrader_args),
            self.warm_kernels,
            self.grader_time_limit,
        )


STATE_SAVE_SECONDS = 1.0  # state.json is saved as students finish, at most this often (and at the end)


class ClassGrading:
    """One run of ``backprop-ninja grade``; ``run()`` does it all and returns the Summary."""

    def __init__(self, o: Options):
        self.o = o
        self.root = preflight.course_root(o.course)
        self.assignment = o.assignment or preflight.find_assignment(self.root)
        self.notebooks = preflight.notebook_names(self.root, self.assignment)
        self.grading = self.root / GRADING_DIR
        self.template = self.grading / "template.db"  # the gradebook every worker grades into, made per run
        self.records = {}  # student -> StudentRecord of this run
        self.reasons = {}  # student graded (or ungradable) in this run -> (total before it, why)
        self.ungradable = set()  # students of this run with no gradable notebook
        self.lock = threading.Lock()

    def run(self) -> Summary:
        started = time.monotonic()
        preflight.check_temporary_folder()
        preflight.check_writable(self.root, self.o.profile)
        preflight.check_one_grader(self.root)
        self.started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        cluster = None
        if self.o.scheduler:  # reach the cluster before anything is graded (its workers check their own tools)
            from .cluster.coordinator import DaskCluster

            cluster = DaskCluster.connect(self.o.scheduler, insecure_cluster=self.o.insecure_cluster)
        if not (cluster and self.o.sandbox):
            preflight.check_sandbox(self.o.sandbox)
        try:
            with preflight.course_lock(self.root):  # one run at a time: two at once undo each other's work
                return self._run(started, cluster)
        finally:
            if cluster:
                cluster.close()

    def _run(self, started: float, cluster) -> Summary:
        self.grading.mkdir(exist_ok=True)
        self.state = GradingState(self.grading / "state.json")
        if self.o.download:
            self.state.collected(*collect(self.o.download, self.root, self.assignment, self.notebooks))
        elif self.o.exchange:
            self.state.collect_problems = from_exchange(self.root, self.assignment)
        if self.o.download or self.o.exchange:
            where = self.o.download or f"{self.assignment} in nbgrader's exchange"
            print(f"collected {where} into {self.root / 'submitted'}", file=sys.stderr)
        pool, submitted = None, submitted_students(self.root)  # every student with a folder in submitted/
        if not cluster:  # the workers that surely get a student start now: their imports overlap the planning
            pool = self.local_pool(len(submitted))
            old = {} if self.o.regrade_all else self.state.students
            pool.spawn(len(changes.files_changed(old, self.root, self.assignment, submitted, self.notebooks)))
        try:
            self.gradebook = course_url(self.root)
            preflight.ensure_release(self.root, self.assignment, self.notebooks, self.gradebook)
            students, todo, unchanged = self.plan()
            hosts = self.autograde(todo, pool, cluster)
            problems = sorted(
                self.state.collect_problems
                + [p for s in students for p in self.records[s].problems]
                + shared_ids(self.root, self.assignment, students)
                + name_problems(self.root, students),
                key=lambda p: p.order,
            )
            outputs = self.write(students, problems)  # while the last worker ends its sandbox
        finally:
            if pool:
                pool.close()
        graded = [s for s in todo if s not in self.ungradable]
        return Summary(students, graded, unchanged, problems, *outputs, time.monotonic() - started, hosts)

    def plan(self) -> tuple:
        """Who is graded: every student whose files (or the exercises) changed; (students, todo, unchanged). Each is
        staged as the pool hands them out (``stage``), beside the grading of the others."""
        students = submitted_students(self.root)
        self.releases = read_releases(self.root, self.assignment, self.notebooks)
        course = changes.course_key(self.root, self.assignment, self.notebooks, self.gradebook)
        todo, unchanged = [], []
        for student in students:
            key = changes.student_key(self.root, self.assignment, student, self.notebooks, course)
            old = self.state.students.get(student)
            if old and old.key == key and old.complete and not self.o.regrade_all and self._autograded(student, old):
                unchanged.append(student)
                self.records[student] = old
                continue
            submission = changes.submission_key(self.root, self.assignment, student, self.notebooks)
            self.records[student] = StudentRecord(key, submission, course, [], [], complete=False)
            why = changes.regrade_reason(old, submission, course, self.o.regrade_all)
            self.reasons[student] = (old.total if old else None, why)
            todo.append(student)
        for student in set(self.state.students) - set(students):  # its folder was removed
            self.state.students.pop(student)
        return students, todo, unchanged

    def stage(self, student: str) -> bool:
        """Check, repair and stage the student's notebooks as the pool hands them out; False when none is gradable."""
        args = self.root, self.assignment, student, self.notebooks, self.releases, self.state.collect_problems
        graded, problems = stage_student(*args)  # (with what was collected: a page tells of its duplicate_file)
        with self.lock:
            record = self.records[student]
            record.graded, record.problems, record.complete = graded, problems, not graded
            if not graded:
                self.ungradable.add(student)
                self.merger.add(student, None)  # not graded: the merge drops their old grades (none may stay)
        return bool(graded)

    def _autograded(self, student: str, record: StudentRecord) -> bool:
        folder = self.root / "autograded" / student / self.assignment
        return all((folder / f"{n}.ipynb").is_file() for n in record.graded)

    def allowed(self, student: str, notebook_seconds: int | None = None) -> float:
        """Seconds a worker has for ``student`` before it is killed: each notebook's limit (as configured), a margin."""
        return len(self.records[student].graded) * ((self.o.notebook_timeout or notebook_seconds or 3600) + 60) + 120

    def autograde(self, todo: list, pool: WorkerPool | None, cluster=None) -> list:
        """Grade ``todo`` in the local ``pool``, else on the cluster; each finished student is merged into the
        gradebook beside the grading (``Merger``), and all of them before this returns."""
        self.progress = tqdm(
            total=len(todo), desc="grading", unit="student", file=sys.stderr, disable=not (self.o.progress and todo)
        )
        self.saved_at = time.monotonic()
        try:
            if todo:
                make_template(self.gradebook, self.assignment, self.template)
                with Merger(self.gradebook, self.root, self.assignment, self.merged) as self.merger:
                    (pool or self.dask_pool(cluster)).run(todo, self.stage)
        finally:
            self.progress.close()
            self.state.save()
        keep_logs(self.grading)
        self.template.unlink(missing_ok=True)
        return self.dask.host_times() if cluster and todo else []  # which host graded how many, how fast

    def dask_pool(self, cluster):
        """The Dask workers of ``cluster``, each sent the course (with the template made for this run)."""
        from .cluster.coordinator import DaskPool
        from .cluster.payload import CourseBundle

        bundle = CourseBundle.build(self.root, self.assignment, self.notebooks, self.o.grader(), self.template)
        self.dask = DaskPool(cluster, self.root, bundle, self.allowed, self.finish)
        return self.dask

    def local_pool(self, students: int) -> WorkerPool:
        """Worker processes for at most ``students`` students (none started yet)."""
        n = max(1, min(int(self.o.workers or 1), students))
        threads = max(1, (os.cpu_count() or 1) // n) if n > 1 else 0
        workers = [Worker(i, self.root, self.assignment, self.o.grader(), self.template, threads) for i in range(n)]
        return WorkerPool(workers, self.allowed, self.finish)

    def finish(self, student: str, result, allowed: float) -> None:
        """One student's result (None: the worker was killed), handed to the merge; ``merged`` records it."""
        record = self.records[student]
        with self.lock:
            if self.o.profile and result is not None:
                with open(self.o.profile, "a") as f:
                    f.write(json.dumps({"student": student, **result.profile}) + "\n")
            grades = result.grades if result is not None and result.success else None
            if grades:
                secret_beside_feedback(self.root, self.assignment, student)  # for nbgrader release_feedback
                record.problems += [Problem(student, p.notebook, p.kind, p.detail) for p in result.incidents]
                if result.error:  # graded, but its feedback could not be made
                    record.problems.append(Problem(student, None, "feedback_failed", error_cause(result.error)))
            else:
                if result is None:
                    killed = f"the grading worker died or did not finish within {allowed:.0f} s (it was stopped)"
                    problems = [Problem(student, None, "worker_killed", f"{killed}; not graded")]
                elif result.worker_ended:  # its watchdog stopped it, and said why
                    problems = [Problem(student, p.notebook, p.kind, p.detail) for p in result.incidents]
                else:
                    cause = error_cause(result.error)
                    problems = [Problem(student, None, "grader_error", f"nbgrader could not grade it: {cause}")]
                record.problems += problems
                record.graded = []
            # what timed out would time out again: it is retried only with --regrade-all
            record.complete = result is None or result.success
            self.merger.add(student, grades or None)  # None: their old grades and files go

    def merged(self, student: str, late: Lateness | None) -> None:
        """``student`` is in the gradebook (late: how late), or out of it (None): into the state, saved now and then."""
        record = self.records[student]
        with self.lock:
            if late is not None:
                record.problems += late.problems(student)
            self.state.students[student] = record
            if time.monotonic() - self.saved_at >= STATE_SAVE_SECONDS:
                self.state.save()
                self.saved_at = time.monotonic()
            self.progress.set_postfix_str(for_terminal(student, 40), refresh=False)  # a student's id: their words
            self.progress.update()

    def write(self, students: list, problems: list) -> tuple:
        """grades.csv, problems.json, pages for notebooks not graded, grade_history.csv, the report; (paths, report)."""
        out = Path(self.o.out).resolve() if self.o.out else self.root
        out.mkdir(parents=True, exist_ok=True)
        grades_csv, problems_json, history_csv = out / "grades.csv", out / "problems.json", out / "grade_history.csv"
        steps = step_columns(self.root, self.assignment, self.notebooks)
        graded = {s: self.records[s].graded for s in students}
        rows = grade_rows(self.gradebook, self.assignment, self.notebooks, steps, students, graded)
        write_grades_csv(grades_csv, rows, self.notebooks, steps)
        write_problems(problems_json, problems)
        write_pages(self.root, self.assignment, self.notebooks, graded, problems, self.o.feedback, set(self.reasons))
        totals = {row["student"]: row["total"] for row in rows}
        for student, record in self.records.items():
            record.total = totals.get(student)
        self.state.save()
        changed = [
            Change(self.started_at, s, old, totals.get(s), why) for s, (old, why) in sorted(self.reasons.items())
        ]
        append_history(history_csv, changed)
        try:
            from .report.class_report import write_report

            report = write_report(self.root, grades_csv, problems_json, history_csv, self.assignment, self.gradebook)
        except Exception as error:  # noqa: BLE001 (the grades are written; the report is a bonus)
            print(f"the class report failed: {error}", file=sys.stderr)
            report = None
        return grades_csv, problems_json, history_csv, report


def grade_class(o: Options) -> Summary:
    """Run ``backprop-ninja grade`` with these options."""
    return ClassGrading(o).run()

"""Seconds per student: the floor, stock ``nbgrader autograde`` and ``backprop-ninja grade``, side by side.

    python benchmarks/bench_class_grading.py --students 6           # the usual configurations
    python benchmarks/bench_class_grading.py --students 50 --configs floor grade-2-sandbox grade-2-sandbox-warm

Builds a demo class in a fresh course (every notebook present in source/, each student a
perfect, a blank or a one-mistake submission of each), then grades the same class from scratch
with each configuration and prints seconds per student, that as a multiple of the two-core floor,
and the hours 1,000 students would take at that rate:

  floor                  starting a plain kernel and ``import torch`` in it, per notebook: what no grader
                         can avoid. The figure is per student (all its notebooks, one after another); the
                         two-core floor is that over the machine's cores (two here), the best W workers can do
  stock                  ``nbgrader autograde`` with the course config, GradingExecute.sandbox=False:
                         nbgrader's own Execute loop, one process, one student after another
  stock-sandbox          ``nbgrader autograde`` as the course configures it: sandboxed, each kernel forked from a
                         kernel parent that serves every student of the run, each student shown on its stage
  stock-sandbox-student  the same with one kernel parent per student (``stage_students`` False)
  grade-W-sandbox        ``backprop-ninja grade --workers W --cold-kernels`` (W = 1, 2), every kernel started in
                         a bubblewrap sandbox of its own, importing torch anew
  grade-W-sandbox-warm   ``--warm-kernels``, grade's default: kernels are forked from a kernel parent in the
                         sandbox, which imported torch once (``autograder/sandbox/in_sandbox.py``); one parent per
                         worker, each student's folder shown on its stage in turn (``sandbox/stage.py``)
  grade-2-sandbox-warm-student   the same with one parent per student (``SandboxedKernelManager.stage_students``
                         set False in the course's nbgrader_config.py for the run)
  grade-2-sandbox-warm-user   the default ``grade`` run by an ordinary user (as root, one the benchmark makes,
                         ``tests/support/users.py``, owning the course and a copy of the install): the kernels get
                         a user namespace instead of a uid of their own, and the stage is a copy, not a mount
  grade-W-plain          ``--unsandboxed``, cold kernels

``grade`` runs here with ``--no-feedback`` (stock autograde writes none); the feedback's cost is
measured on its own (``grade-2-sandbox-warm-feedback``). CPU is the CPU time of everything a configuration
started, sandboxed kernels included (from a cgroup when the benchmark runs as root, else only the
processes it reaped). After the table comes the profile of each ``grade`` configuration: seconds per
notebook in each phase, as its workers measured them (``grade --profile``, ``autograder/common/phases.py``).

``--before REV`` also grades the same class of REV's own course (its source notebooks and nbgrader_config.py)
with REV's autograder package, next to each ``grade`` configuration (``grade-2-sandbox@REV``: after it in the first
round, before it in the second, and so on; REV's own profile too if it has ``grade --profile``), and prints the two
side by side:

    python benchmarks/bench_class_grading.py --configs floor grade-2-sandbox --before main --repeat 3
"""

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from revision import package_at  # noqa: E402
from support.users import ordinary_user, reachable_install, remove_user, root_tools_on_path  # noqa: E402

from autograder.authoring.submissions import grade_id, solved  # noqa: E402

ASSIGNMENT = "backprop_ninja"
CONFIGS = [
    "floor",
    "stock",
    "stock-sandbox",
    "stock-sandbox-student",
    "grade-1-plain",
    "grade-1-sandbox",
    "grade-1-sandbox-warm",
    "grade-2-plain",
    "grade-2-sandbox",
    "grade-2-sandbox-warm",
    "grade-2-sandbox-warm-student",
    "grade-2-sandbox-warm-feedback",
    "grade-2-sandbox-warm-user",
]
DEFAULT_CONFIGS = ["floor", "stock", "grade-2-sandbox", "grade-2-sandbox-warm"]


def build_course(root: Path, students: int, only=None, tree: Path = REPO) -> list:
    """The demo class in a course at ``root``, from the notebooks and nbgrader_config.py of ``tree`` (this repository,
    or another revision's files)."""
    root.mkdir(parents=True)
    root.chmod(0o755)
    shutil.copy(tree / "nbgrader_config.py", root)
    shutil.copytree(tree / "source", root / "source")
    for path in (root / "source" / ASSIGNMENT).glob("*.ipynb"):
        if only and path.stem not in only:
            path.unlink()
    run(root, [sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT, "--force", "--log-level=ERROR"])
    notebooks = sorted(p.stem for p in (root / "source" / ASSIGNMENT).glob("*.ipynb"))
    for notebook in notebooks:
        release = nbformat.read(root / "release" / ASSIGNMENT / f"{notebook}.ipynb", as_version=4)
        source = nbformat.read(root / "source" / ASSIGNMENT / f"{notebook}.ipynb", as_version=4)
        answers = [grade_id(c) for c in release.cells if grade_id(c).startswith("answer_")]
        for k in range(students):
            if k % 5 == 4:
                nb = release  # blank
            elif k % 5 in (1, 3) and answers:
                nb = solved(release, source, {answers[(k * 7) % len(answers)]: "pass"})  # one step left out
            else:
                nb = solved(release, source)
            folder = root / "submitted" / f"student{k:03d}" / ASSIGNMENT
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, folder / f"{notebook}.ipynb")
    shutil.copy(root / "gradebook.db", root / "gradebook.pristine.db")
    return notebooks


class CpuMeter:
    """CPU seconds of one command and everything it starts. As root, from a cgroup of its own (cgroup v1's
    cpuacct or v2): the sandboxed kernels count too, though nobody reaps them (they are killed with their
    sandbox). Otherwise from the reaped children only, which leaves sandboxed kernels out."""

    V1, V2 = Path("/sys/fs/cgroup/cpuacct"), Path("/sys/fs/cgroup")

    def __init__(self, children_only: bool = False):
        self.group = None
        for parent in () if children_only else (self.V1, self.V2):
            try:
                group = Path(tempfile.mkdtemp(prefix="bench-class-", dir=parent))
            except OSError:
                continue
            if (group / "cgroup.procs").exists() and self._usage(group) is not None:
                self.group = group
                break
            group.rmdir()
        self.started = self.now()

    @staticmethod
    def _usage(group: Path):
        if (group / "cpuacct.usage").exists():
            return int((group / "cpuacct.usage").read_text()) / 1e9
        if (group / "cpu.stat").exists():
            return int((group / "cpu.stat").read_text().split("usage_usec")[1].split()[0]) / 1e6
        return None

    def now(self) -> float:
        if self.group:
            return self._usage(self.group)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def enter(self) -> None:
        """In the child, before it runs the command: join the cgroup."""
        if self.group:
            (self.group / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        used = self.now() - self.started
        for _ in range(50) if self.group else ():  # a killed sandbox's last processes may still be going
            try:
                self.group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
        return used


def run(cwd: Path, argv: list, env=None, meter=None) -> float:
    start = time.monotonic()
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, preexec_fn=meter and meter.enter)
    if result.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
    return time.monotonic() - start


def reset(root: Path) -> None:
    for folder in ("autograded", "feedback", ".grading"):
        shutil.rmtree(root / folder, ignore_errors=True)
    shutil.copy(root / "gradebook.pristine.db", root / "gradebook.db")


def _pairs_swapped(runs: list) -> list:
    """``runs`` with each configuration and its ``@REV`` twin in the other order."""
    swapped = list(runs)
    for i, (config, package) in enumerate(runs):
        if package is not None:
            swapped[i - 1], swapped[i] = runs[i], runs[i - 1]
    return swapped


def floor(repeats: int = 3) -> float:
    """Seconds to start a plain ipykernel and import torch in it (the median of a few)."""
    from jupyter_client.manager import start_new_kernel

    times = []
    for _ in range(repeats):
        start = time.monotonic()
        km, kc = start_new_kernel(kernel_name="python3")
        kc.execute_interactive("import torch", timeout=120)
        times.append(time.monotonic() - start)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return statistics.median(times)


def measure(root: Path, config: str, notebooks: list, meter: CpuMeter, package=None, profile=None) -> float:
    """Seconds for one configuration; ``package``: a folder holding another revision's autograder package;
    ``profile``: where ``grade --profile`` writes (if that revision has it)."""
    if config == "floor":
        return floor() * len(notebooks)
    reset(root)
    if config.startswith("stock"):  # nbgrader's own command, one student after the other: unsandboxed, or as configured
        argv = [sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--log-level=ERROR"]
        argv += [] if "sandbox" in config else ["--GradingExecute.sandbox=False"]
        env = {**os.environ, "PYTHONPATH": str(package)} if package else None
        with one_parent_per_student(root, "student" in config):
            return run(root, argv, env=env, meter=meter)
    _, workers, kind, *rest = config.split("-")
    argv = [sys.executable, "-m", "autograder.cli", "grade", "--course", str(root), "--workers", workers, "--quiet"]
    argv += ["--unsandboxed"] if kind == "plain" else []
    argv += [] if "feedback" in rest else ["--no-feedback"]
    knows = lambda option: option in ((package or REPO) / "autograder" / "cli.py").read_text()
    kernels = "--warm-kernels" if "warm" in rest else "--cold-kernels"
    argv += [kernels] if knows(kernels) else []
    argv += ["--profile", str(profile)] if profile and knows("--profile") else []
    env = {**os.environ, "PYTHONPATH": str(package)} if package else None
    if "user" in rest:
        user = ORDINARY.get("user") or ordinary(root)
        if os.geteuid() == 0:
            user.owns(root)  # each course it grades: this tree's, and REV's
        argv, env = user.argv(user.python, *argv[1:]), {**user.env, **({"PYTHONPATH": str(package)} if package else {})}
    with one_parent_per_student(root, "student" in rest):
        return graded(root, argv, env, meter)


@contextlib.contextmanager
def one_parent_per_student(root: Path, asked: bool):
    """When ``asked``: the course's configuration with a kernel parent per student (``stage_students`` False)."""
    config_file = root / "nbgrader_config.py"
    kept = config_file.read_text()
    if asked:
        config_file.write_text(kept + "\nc.SandboxedKernelManager.stage_students = False\n")
    try:
        yield
    finally:
        config_file.write_text(kept)


GRADER_FAILURES = ("worker_killed", "grader_error", "grader_time_limit", "feedback_failed")


def graded(root: Path, argv: list, env, meter) -> float:
    """Seconds for one ``grade`` run, which must have graded every student and made their feedback if asked: a run
    whose grader failed for a student did less work, and its figure means nothing."""
    took = run(root, argv, env=env, meter=meter)
    failed = [p for p in json.loads((root / "problems.json").read_text()) if p["problem"] in GRADER_FAILURES]
    if failed:
        sys.exit(f"{' '.join(argv)}: the grader failed for {len(failed)} students, e.g. {failed[0]}")
    return took


ORDINARY = {}  # "user": the ordinary user of the -user configurations, made once


def ordinary(root: Path):
    """The ordinary user who grades in the -user configurations (as root: made for the run), given a course."""
    root.parent.chmod(0o755)  # (a temporary folder: its owner's alone)
    root_tools_on_path()
    install = reachable_install(root.parent / "install")
    user = ORDINARY["user"] = ordinary_user("bn-bench", install, root.parent / "home")
    if os.geteuid() == 0:
        os.chown(root.parent, user.uid, user.gid)  # where its profile is written (the folder alone: not the install)
    return user


def print_profile(path: Path, config: str) -> None:
    """Mean seconds per notebook in each phase, per notebook and over all, from ``grade --profile``'s lines."""
    from autograder.common.phases import KERNEL_CPU, NOTEBOOK_PHASES

    students = [json.loads(line) for line in path.read_text().splitlines()]
    by_notebook = {}
    for s in students:
        for notebook, phases in s["notebooks"].items():
            by_notebook.setdefault(notebook, []).append(phases)
    count = sum(len(v) for v in by_notebook.values())
    if not count:
        return
    mean = lambda phases, name: sum(p.get(name, 0.0) for p in phases) / max(1, len(phases))
    everything = [p for v in by_notebook.values() for p in v]
    measured = sum(p.get(phase, 0.0) for p in everything for phase in NOTEBOOK_PHASES)
    student_wide = {
        "nbgrader's own steps": (sum(s["autograde"] for s in students) - measured) / count,
        "  of them, gradebook SQL": sum(s["database"] for s in students) / count,
        "feedback": sum(s["feedback"] for s in students) / count,
    }
    names = sorted(by_notebook)
    print(f"profile of {config}: seconds per notebook in each phase ({len(students)} students, {count} notebooks)")
    print(f"  {'phase':26s}" + "".join(f"{n[:10]:>11s}" for n in names) + f"{'mean':>9s}")
    for phase in NOTEBOOK_PHASES:
        row = "".join(f"{mean(by_notebook[n], phase):11.2f}" for n in names)
        print(f"  {phase:26s}{row}{mean(everything, phase):9.2f}")
    for phase, seconds in student_wide.items():
        print(f"  {phase:26s}{'':{11 * len(names)}s}{seconds:9.2f}")
    total = sum(s["autograde"] + s["feedback"] for s in students) / count
    print(f"  {'a notebook in all':26s}{'':{11 * len(names)}s}{total:9.2f}")
    row = "".join(f"{mean(by_notebook[n], KERNEL_CPU):11.2f}" for n in names)
    print(f"  {'kernel CPU (not wall)':26s}{row}{mean(everything, KERNEL_CPU):9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--configs", nargs="+", default=DEFAULT_CONFIGS, choices=CONFIGS)
    parser.add_argument("--notebooks", nargs="+", help="grade only these notebooks (default: all in source/)")
    parser.add_argument("--dir", help="course folder to use (default: a temporary one, removed afterwards)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--before", help="also grade this git revision's notebooks, config and package (e.g. main)")
    parser.add_argument("--repeat", type=int, default=1, help="run all configurations this many times; medians")
    args = parser.parse_args()
    before = package_at(args.before, "source", "nbgrader_config.py") if args.before else None
    root = Path(args.dir or tempfile.mkdtemp(prefix="bench-class-", dir="/var/tmp")) / "course"
    notebooks = build_course(root, args.students, args.notebooks)
    if before:  # REV's own notebooks and course configuration, graded by its package
        build_course(root.parent / "course-before", args.students, args.notebooks, tree=before)
    cores = os.cpu_count() or 1
    print(
        f"{args.students} students x {len(notebooks)} notebooks ({', '.join(notebooks)}), "
        f"{cores} cores, load average {os.getloadavg()[0]:.1f} at start",
        flush=True,
    )
    runs = []
    for config in args.configs:  # with --before, each grade configuration twice in a row: now, then at REV
        runs.append((config, None))
        if before and config.startswith("grade"):  # REV's own --warm-kernels or --cold-kernels, if it has them
            runs.append((f"{config}@{args.before}", before))
    profiles = {c: root.parent / f"profile-{c}.jsonl" for c, _ in runs if c.startswith("grade")}
    seconds, cpu, complete = {}, {}, True
    # A busy machine slows every configuration of a round alike. The second of a pair ran 4 to 6 % faster than the
    # first whichever it was (two runs with the roles swapped, 2026-12-03), so every second round runs REV first.
    rounds = [runs if i % 2 == 0 else _pairs_swapped(runs) for i in range(args.repeat)]
    for config, package in [run for round_ in rounds for run in round_]:
        meter = CpuMeter(children_only=config == "floor")  # the floor's kernels are this process's own children
        complete = complete and (meter.group is not None or config == "floor")
        course = root.parent / "course-before" if package else root
        took = measure(course, config.split("@")[0], notebooks, meter, package, profiles.get(config))
        per = 1 if config == "floor" else args.students
        seconds.setdefault(config, []).append(took / per)
        cpu.setdefault(config, []).append(meter.seconds() / per)
        print(
            f"  {config:30s} {seconds[config][-1]:7.2f} s/student  CPU {cpu[config][-1]:6.2f} s/student  "
            f"load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    per_student = {c: statistics.median(s) for c, s in seconds.items()}
    cpu = {c: statistics.median(s) for c, s in cpu.items()}
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    two_core_floor = per_student["floor"] / cores if "floor" in per_student else None
    print(
        (f"medians of {args.repeat} runs; " if args.repeat > 1 else "")
        + (f"the {cores}-core floor is {two_core_floor:.2f} s/student" if two_core_floor else "")
        + ("" if complete else "; CPU counts only reaped processes (not sandboxed kernels): run as root for all")
    )
    print(f"  {'configuration':30s} {'s/student':>9s} {'x floor':>8s} {'CPU s/student':>14s} {'h/1000':>7s}")
    for c, s in per_student.items():
        ratio = f"{s / two_core_floor:8.2f}" if two_core_floor and c != "floor" else f"{'':8s}"
        hours = f"{s * 1000 / 3600:7.2f}" if c != "floor" else f"{'':7s}"
        print(f"  {c:30s} {s:9.2f} {ratio} {cpu[c]:14.2f} {hours}")
    if "stock" in per_student:
        for c in per_student:
            if c.startswith("grade"):
                print(f"  speed-up of {c} over stock nbgrader: {per_student['stock'] / per_student[c]:.2f}x")
    for config, path in profiles.items():
        if path.is_file():
            print_profile(path, config)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "students": args.students,
                    "notebooks": notebooks,
                    "seconds_per_student": per_student,
                    "cpu_per_student": cpu,
                    "two_core_floor": two_core_floor,
                },
                indent=1,
            )
        )
    if "user" in ORDINARY:
        remove_user(ORDINARY["user"])
    if not args.dir:
        shutil.rmtree(root.parent, ignore_errors=True)
    if before:
        shutil.rmtree(before, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Local workers against a Dask cluster of as many workers, side by side on the same classes.

    python benchmarks/bench_cluster.py                                   # 4 and 12 students, 2 workers
    python benchmarks/bench_cluster.py --small 4 --large 20 --repeat 2   # medians of 2 runs each
    python benchmarks/bench_cluster.py --netns --small 6 --large 50      # separate hosts (as root), over TLS

Builds two classes of Exercise 1 (--small and --large students; bench_class_grading's mix of perfect,
one-step-missing and blank notebooks), starts a Dask scheduler and --workers workers on 127.0.0.1 (each one
task at a time, one torch thread: what ``grade --workers`` gives each of its workers on this machine), and
grades each class from scratch with ``backprop-ninja grade --workers W`` and with ``grade --scheduler``, one
after the other (--repeat rounds; medians), sandboxed, with feedback.

Each run is measured in wall-clock seconds and in CPU seconds of every process it used (``grade`` and its
workers and kernels; for the Dask path also the scheduler and the Dask workers with their graders and
kernels). On a machine that others share, wall-clock time follows their load; CPU time much less so. As
root, everything is counted in a cgroup; otherwise a sandboxed kernel's CPU time is left out (a process in
bubblewrap's PID namespace is not counted to the process that started it), and --unsandboxed counts it. Prints
for each path the seconds per student of each class, the fixed cost of a run and the marginal cost of one
more student (the slope between the two class sizes), the Dask path's overhead per student, and the sizing
rule: students graded per worker-core per hour, 3600 / (marginal CPU seconds per student).

``--netns`` grades the two classes on the test suite's cluster of separate hosts instead
(``tests/slow/netns_cluster.py``: a coordinator host with the scheduler and ``grade``, --workers worker hosts of one
task each, network and mount namespaces on a private bridge, TLS), and prints for each class the wall-clock and CPU
seconds per student (the worker hosts', the coordinator's ``grade`` and the scheduler's), the bytes per student that
crossed the coordinator host's link each way, and the scheduler's peak memory; then what merging a student into the
course's gradebook costs (``merge_costs``: SQLite, and PostgreSQL when it is installed; one student at a time through
nbgrader's API as before the merger, and by the merger), and what 1,000 students on 64 worker cores would take, and
what limits it. The projection is made from these figures alone: the slope per student between the two classes, the
run's fixed cost, and the merge's cost in batches. (The staging of a student's notebooks on the coordinator,
``staging_cost``, is printed beside them: it is part of grade's CPU.)
"""

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "slow")]

from bench_class_grading import ASSIGNMENT, CpuMeter, build_course, reset, run  # noqa: E402
from servers import LoopbackCluster, Postgres  # noqa: E402


def process_cpu(pids: list) -> float:
    """CPU seconds of these processes and their descendants, those alive and those they have reaped."""
    import psutil

    total = 0.0
    for pid in pids:
        parent = psutil.Process(pid)
        for process in [parent, *parent.children(recursive=True)]:
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


def grade(root: Path, meter: CpuMeter, cluster_pids: list, *args) -> tuple:
    """(wall seconds, CPU seconds) of one ``grade`` run, and of the cluster's processes meanwhile. In a cgroup
    (as root) that holds this benchmark, the cluster and every kernel; else from the processes themselves."""
    cpu = lambda: meter.now() + (0 if meter.group else process_cpu(cluster_pids))
    before = cpu()
    wall = run(root, [sys.executable, "-m", "autograder.cli", "grade", "--course", str(root), "--quiet", *args])
    return wall, cpu() - before


def netns_grade(cluster, root, inside: str) -> dict:
    """One ``grade`` of the course at ``inside`` on the coordinator host, from scratch, with what it cost where."""
    import psutil

    reset(root)
    hosts, scheduler = cluster.hosts, psutil.Process(cluster.coordinator.processes["scheduler"].pid)
    before = {n: h.cpu_seconds() for n, h in hosts.items()}
    link, sched, reaped = (
        cluster.coordinator.net_bytes(),
        scheduler.cpu_times(),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    peak, start = scheduler.memory_info().rss, time.monotonic()
    run = cluster.grade(inside, "--scheduler", cluster.address)
    while run.poll() is None:
        peak = max(peak, scheduler.memory_info().rss)
        time.sleep(0.5)
    wall = time.monotonic() - start
    out, err = run.communicate()
    if run.returncode != 0:
        sys.exit(f"grade failed:\n{out[-2000:]}\n{err[-4000:]}")
    done, after = resource.getrusage(resource.RUSAGE_CHILDREN), scheduler.cpu_times()
    received, sent = (now - then for now, then in zip(cluster.coordinator.net_bytes(), link))
    return {
        "wall": wall,
        "workers": sum(h.cpu_seconds() - before[n] for n, h in hosts.items() if n != "coordinator"),
        "grade": done.ru_utime + done.ru_stime - reaped.ru_utime - reaped.ru_stime,
        "scheduler": after.user + after.system - sched.user - sched.system,
        "sent": sent,
        "received": received,
        "scheduler_mb": peak / 2**20,
    }


def scheduler_idle(cluster, seconds: float = 20) -> float:
    """CPU seconds a second the scheduler spends with its workers and no task (their heartbeats)."""
    import psutil

    scheduler = psutil.Process(cluster.coordinator.processes["scheduler"].pid)
    before = sum(scheduler.cpu_times()[:2])
    time.sleep(seconds)
    return (sum(scheduler.cpu_times()[:2]) - before) / seconds


def staging_cost(root: Path) -> tuple:
    """(wall, CPU) seconds it takes to check, repair and stage a student's notebooks on the coordinator
    (``stage_student``, as ``grade`` does right before it hands a student out): the class at ``root`` staged again,
    in a copy."""
    from autograder.grading.intake.prepare import read_releases, stage_student

    folder = Path(tempfile.mkdtemp(prefix="bench-stage-"))
    try:
        for part in ("submitted", "release"):
            shutil.copytree(root / part, folder / part)
        notebooks = sorted(p.stem for p in (folder / "release" / ASSIGNMENT).glob("*.ipynb"))
        releases = read_releases(folder, ASSIGNMENT, notebooks)
        students = sorted(p.name for p in (folder / "submitted").iterdir())
        wall, cpu = time.monotonic(), time.process_time()
        for student in students:
            stage_student(folder, ASSIGNMENT, student, notebooks, releases)
        return (time.monotonic() - wall) / len(students), (time.process_time() - cpu) / len(students)
    finally:
        shutil.rmtree(folder)


def merge_costs(root: Path, postgres=None) -> dict:
    """(database, way) -> (wall, CPU) seconds a student costs the merge: the class at ``root``'s grades, as its workers
    sent them, merged again into its gradebook as it was before grading, in SQLite (and PostgreSQL, on ``postgres``,
    a ``servers.Postgres``). Three ways: one student at a time through nbgrader's API (the merge before the merger),
    and by the merger, one student a transaction (students arriving slower than it writes) or all at once (in
    batches of up to ``BATCH``: its capacity). The CPU is this process's (the database server's is left out)."""
    from support.gradebooks import copy_gradebook, graded_at, merge_one_by_one

    from autograder.grading.results.gradebook import sqlite_url
    from autograder.grading.results.merge import Merger

    folder = Path(tempfile.mkdtemp(prefix="bench-merge-"))
    shutil.copy(root / "gradebook.db", folder / "graded.db")  # SQLite resolves a path's links: a host's file, copied
    shutil.copy(root / "gradebook.pristine.db", folder / "pristine.db")
    graded = graded_at(sqlite_url(folder / "graded.db"), ASSIGNMENT)

    def fresh(database: str, name: str) -> str:
        """The gradebook as it was before grading, in a new file or database ``name``."""
        if database == "SQLite":
            return sqlite_url(shutil.copy(folder / "pristine.db", folder / f"{name}.db"))
        url = postgres.database(name)
        copy_gradebook(sqlite_url(folder / "pristine.db"), url)
        return url

    def one_by_one(url: str) -> None:
        for student, grades in graded.items():
            merge_one_by_one(url, ASSIGNMENT, student, grades)

    def merger(url: str, wait: bool) -> None:
        arrived = threading.Semaphore(0)
        merging = Merger(url, folder, ASSIGNMENT, lambda *_: arrived.release())
        for student, grades in graded.items():
            merging.add(student, grades)
            if wait:
                arrived.acquire()
        merging.close()

    ways = {
        "one at a time, nbgrader's API (before)": one_by_one,
        "the merger, a student a transaction": lambda url: merger(url, True),
        f"the merger, {len(graded)} at once": lambda url: merger(url, False),
    }
    costs = {}
    try:
        for database in ["SQLite"] + (["PostgreSQL"] if postgres else []):
            for number, (way, merge) in enumerate(ways.items()):
                url = fresh(database, f"merge{number}")
                wall, cpu = time.monotonic(), time.process_time()
                merge(url)
                costs[database, way] = (
                    (time.monotonic() - wall) / len(graded),
                    (time.process_time() - cpu) / len(graded),
                )
    finally:
        shutil.rmtree(folder)
    return costs


def netns_main(args) -> None:
    """The two classes graded on separate namespace hosts: the per-student figures, and the projection."""
    from netns_cluster import NetnsCluster, unavailable
    from support.users import root_tools_on_path

    root_tools_on_path()  # (ip)
    if unavailable():
        sys.exit(unavailable())
    folder = Path(tempfile.mkdtemp(prefix="bench-netns-", dir="/var/tmp"))
    folder.chmod(0o755)
    cluster = NetnsCluster(folder, workers=args.workers)
    measured, courses = {}, {}
    print(
        f"{args.small} and {args.large} students x {', '.join(args.notebooks)} on {args.workers} worker hosts of one "
        f"task each and a coordinator host (scheduler and grade), over TLS; {os.cpu_count()} cores in all",
        flush=True,
    )
    try:
        idle = scheduler_idle(cluster)
        for n in (args.small, args.large):
            build_course(folder / f"class-{n}", n, args.notebooks)  # here: nbgrader's SQLite needs a plain path
            inside = f"{cluster.coordinator.home}/courses/class-{n}"
            courses[n] = root = cluster.coordinator.path(inside)
            shutil.copytree(folder / f"class-{n}", root)
            runs = [netns_grade(cluster, root, inside) for _ in range(args.repeat)]
            measured[n] = m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print(
                f"  {n:3d} students: {m['wall'] / n:5.2f} s/student wall; CPU s/student: workers "
                f"{m['workers'] / n:5.2f}, grade {m['grade'] / n:5.3f}, scheduler {m['scheduler'] / n:5.3f}; "
                "per student to the workers "
                f"{m['sent'] / n / 1e3:6.1f} kB, back {m['received'] / n / 1e3:6.1f} kB; scheduler at most "
                f"{m['scheduler_mb']:4.0f} MB; load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
        staging = staging_cost(courses[args.large])
        postgres = None if Postgres.unavailable() else Postgres()
        try:
            merge = merge_costs(courses[args.large], postgres)
        finally:
            if postgres:
                postgres.stop()
    finally:
        cluster.close()
        shutil.rmtree(folder, ignore_errors=True)
    print(
        f"staging, per student ({args.large} students staged again): {staging[0] * 1e3:.1f} ms (CPU "
        f"{staging[1] * 1e3:.1f} ms)"
    )
    print(f"the merge, per student ({args.large} students' grades merged again; load {os.getloadavg()[0]:.1f}):")
    for (database, way), (wall, cpu) in merge.items():
        print(f"  {database:10s} {way:40s} {wall * 1e3:7.1f} ms (CPU {cpu * 1e3:6.1f} ms)")
    small, large = measured[args.small], measured[args.large]
    slope = {k: (large[k] - small[k]) / (args.large - args.small) for k in large}
    fixed = small["wall"] - slope["wall"] * args.small
    tasks = slope["scheduler"] - idle * slope["wall"]  # the scheduler's own work per student, its heartbeats aside
    batched = max(wall for (_, way), (wall, _) in merge.items() if " at once" in way)
    before = max(wall for (_, way), (wall, _) in merge.items() if "(before)" in way)
    print(
        f"marginal per student: {slope['workers']:.2f} worker CPU s, {slope['grade']:.3f} s of grade's CPU on the "
        f"coordinator (staging and the merge's thread included), {tasks * 1e3:.0f} ms of the scheduler's (beside "
        f"{idle * 1e3:.0f} ms "
        f"a second of heartbeats), {slope['sent'] / 1e3:.0f} kB out and {slope['received'] / 1e3:.0f} kB back; a run's "
        f"fixed cost {fixed:.0f} s wall; the scheduler grows {slope['scheduler_mb'] * 1e3:.0f} kB a student"
    )
    limits = {  # each goes on beside the others: the slowest sets the pace
        "grading, on the 64 worker cores": 1000 * slope["workers"] / 64,
        "the coordinator's CPU, on its one core": 1000 * slope["grade"],
        "the merge, in batches": 1000 * batched,
        "the scheduler's tasks, on its one core": 1000 * tasks,
    }
    bound = max(limits, key=limits.get)
    print(
        "1,000 students on 64 worker cores, beside one another: "
        + ", ".join(f"{what} {seconds / 60:.2f} min" for what, seconds in limits.items())
        + f" (the merge one student at a time, as before: {1000 * before / 60:.1f} min); so about "
        + f"{(fixed + limits[bound]) / 60:.1f} min with the run's fixed cost, limited by {bound}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=4, help="students in the small class")
    parser.add_argument("--large", type=int, default=12, help="students in the large class")
    parser.add_argument("--workers", type=int, default=2, help="local workers, and Dask workers (default 2)")
    parser.add_argument("--notebooks", nargs="+", default=["ex1_atomic_backward"])
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every measurement (medians)")
    parser.add_argument("--netns", action="store_true", help="on separate namespace hosts over TLS (as root)")
    parser.add_argument(
        "--unsandboxed",
        action="store_true",
        help="grade without the sandbox (not as root, the kernels' CPU time is then counted too: a process in "
        "bubblewrap's PID namespace is not counted to the process that started it)",
    )
    args = parser.parse_args()
    if args.netns:
        return netns_main(args)
    folder = Path(tempfile.mkdtemp(prefix="bench-cluster-", dir="/var/tmp"))
    folder.chmod(0o755)
    classes = {n: folder / f"class-{n}" for n in (args.small, args.large)}
    for students, root in classes.items():
        build_course(root, students, args.notebooks)
    (folder / "dask").mkdir()
    meter = CpuMeter()
    meter.enter()  # this process, and so the cluster and every run, into the cgroup (as root)
    cluster = LoopbackCluster(folder / "dask", args.workers)
    paths = {"local": ["--workers", str(args.workers)], "dask": ["--scheduler", cluster.address]}
    if args.unsandboxed:
        paths = {path: options + ["--unsandboxed"] for path, options in paths.items()}
    pids = {"local": [], "dask": [p.pid for p in cluster.processes.values()]}
    print(
        f"{args.small} and {args.large} students x {', '.join(args.notebooks)}; {args.workers} local workers against "
        f"{args.workers} Dask workers on 127.0.0.1; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start",
        flush=True,
    )
    measured = {(path, n): [] for path in paths for n in classes}
    try:
        for _ in range(args.repeat):
            for students, root in classes.items():
                for path, options in paths.items():
                    reset(root)
                    wall, cpu = grade(root, meter, pids[path], *options)
                    measured[path, students].append((wall, cpu))
                    print(
                        f"  {path:5s} {students:3d} students: {wall:6.1f} s, CPU {cpu:6.1f} s, "
                        f"load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
    finally:
        cluster.close()
        if meter.group:  # out of the cgroup, so that it can be removed
            (meter.group.parent / "cgroup.procs").write_text(str(os.getpid()))
            meter.seconds()
    print(f"medians of {args.repeat} round(s):")
    marginal = {}
    for kind, column in (("wall", 0), ("CPU", 1)):
        for path in paths:
            small, large = (statistics.median(m[column] for m in measured[path, n]) for n in (args.small, args.large))
            marginal[path, kind] = (large - small) / (args.large - args.small)
            print(
                f"  {kind:4s} {path:5s} {small / args.small:5.2f} s/student ({args.small}), {large / args.large:5.2f} "
                f"s/student ({args.large}); a run: {small - marginal[path, kind] * args.small:5.1f} s + "
                f"{marginal[path, kind]:5.2f} s per student"
            )
        overhead = marginal["dask", kind] - marginal["local", kind]
        print(f"  {kind:4s} overhead of the Dask path: {overhead:+.2f} s per student")
    for path in paths:
        print(
            f"  {path:5s} {3600 / marginal[path, 'CPU']:5.0f} students per worker-core per hour (CPU), "
            f"{3600 / (marginal[path, 'wall'] * args.workers):5.0f} from the wall-clock time on {args.workers} cores"
        )
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

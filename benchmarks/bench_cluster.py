"""Local workers against a Dask cluster of as many workers, side by side on the same classes.

    python benchmarks/bench_cluster.py                                   # 4 and 12 students, 2 workers
    python benchmarks/bench_cluster.py --small 4 --large 20 --repeat 2   # medians of 2 runs each

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
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from bench_class_grading import CpuMeter, build_course, reset, run  # noqa: E402
from conftest import LoopbackCluster  # noqa: E402


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=4, help="students in the small class")
    parser.add_argument("--large", type=int, default=12, help="students in the large class")
    parser.add_argument("--workers", type=int, default=2, help="local workers, and Dask workers (default 2)")
    parser.add_argument("--notebooks", nargs="+", default=["ex1_atomic_backward"])
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every measurement (medians)")
    parser.add_argument(
        "--unsandboxed",
        action="store_true",
        help="grade without the sandbox (not as root, the kernels' CPU time is then counted too: a process in "
        "bubblewrap's PID namespace is not counted to the process that started it)",
    )
    args = parser.parse_args()
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

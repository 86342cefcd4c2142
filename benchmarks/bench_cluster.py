"""Local workers against a Dask cluster of as many workers, side by side on the same classes.

    python benchmarks/bench_cluster.py                                   # 4 and 12 students, 2 workers
    python benchmarks/bench_cluster.py --small 4 --large 20 --repeat 2   # medians of 2 runs each

Builds two classes of Exercise 1 (--small and --large students; bench_class_grading's mix of perfect,
one-step-missing and blank notebooks), starts a Dask scheduler and --workers workers on 127.0.0.1 (each one
task at a time, one torch thread: what ``grade --workers`` gives each of its workers on this machine), and
grades each class from scratch with ``backprop-ninja grade --workers W`` and with ``grade --scheduler``, one
after the other (--repeat rounds; medians), sandboxed, with feedback. Prints for each path the seconds per
student of each class, then the fixed cost of a run and the marginal seconds per student (the slope between
the two class sizes), the Dask path's overhead per student, and the sizing rule: students graded per worker
core per hour, 3600 / (marginal seconds per student x workers).
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

from bench_class_grading import build_course, reset, run  # noqa: E402
from conftest import LoopbackCluster  # noqa: E402


def grade(root: Path, *args) -> float:
    return run(root, [sys.executable, "-m", "autograder.cli", "grade", "--course", str(root), "--quiet", *args])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=4, help="students in the small class")
    parser.add_argument("--large", type=int, default=12, help="students in the large class")
    parser.add_argument("--workers", type=int, default=2, help="local workers, and Dask workers (default 2)")
    parser.add_argument("--notebooks", nargs="+", default=["ex1_atomic_backward"])
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every measurement (medians)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-cluster-", dir="/var/tmp"))
    folder.chmod(0o755)
    classes = {n: folder / f"class-{n}" for n in (args.small, args.large)}
    for students, root in classes.items():
        build_course(root, students, args.notebooks)
    (folder / "dask").mkdir()
    cluster = LoopbackCluster(folder / "dask", args.workers)
    paths = {"local": ["--workers", str(args.workers)], "dask": ["--scheduler", cluster.address]}
    print(
        f"{args.small} and {args.large} students x {', '.join(args.notebooks)}; {args.workers} local workers against "
        f"{args.workers} Dask workers on 127.0.0.1; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start",
        flush=True,
    )
    seconds = {(path, n): [] for path in paths for n in classes}
    try:
        for _ in range(args.repeat):
            for students, root in classes.items():
                for path, options in paths.items():
                    reset(root)
                    seconds[path, students].append(grade(root, *options))
                    print(f"  {path:5s} {students:3d} students: {seconds[path, students][-1]:6.1f} s", flush=True)
    finally:
        cluster.close()
    median = {key: statistics.median(values) for key, values in seconds.items()}
    print(f"load {os.getloadavg()[0]:.1f} at the end; medians of {args.repeat} round(s):")
    marginal = {}
    for path in paths:
        small, large = median[path, args.small], median[path, args.large]
        marginal[path] = (large - small) / (args.large - args.small)
        fixed = small - marginal[path] * args.small
        print(
            f"  {path:5s} {small / args.small:5.2f} s/student ({args.small}), {large / args.large:5.2f} s/student "
            f"({args.large}); a run: {fixed:5.1f} s + {marginal[path]:5.2f} s per student; "
            f"{3600 / (marginal[path] * args.workers):5.0f} students per worker-core per hour"
        )
    print(
        f"  overhead of the Dask path: {marginal['dask'] - marginal['local']:+.2f} s per student, "
        f"{(median['dask', args.large] - median['local', args.large]) / args.large:+.2f} s per student "
        f"in the class of {args.large} (fixed costs included)"
    )
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

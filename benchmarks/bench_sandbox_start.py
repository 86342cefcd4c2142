"""Seconds to start one grading kernel: plain, in the sandbox as it is now, and in the sandbox of another revision.

    python benchmarks/bench_sandbox_start.py --rounds 7 --before main

Each measurement is a fresh process that starts one kernel in a student folder of a course in /var/tmp
(as in production: a kernel's cwd is autograded/<student>/<assignment>), waits until it answers, then
runs the first lines every notebook runs (``import torch``, ``import matplotlib.pyplot``: with its font
cache built afresh in the kernel's private /tmp). The kinds take turns, round after round, so that a
busy machine slows them alike; the medians are printed side by side.

  plain           jupyter_client's AsyncKernelManager, no sandbox (the floor)
  sandbox         SandboxedKernelManager of this checkout
  sandbox@REV     SandboxedKernelManager of the autograder package at git revision REV (--before REV)
"""

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from revision import package_at

FIRST_LINES = "import torch\nimport matplotlib.pyplot"


async def one_kernel(kind: str) -> dict:
    """Start one kernel of ``kind`` ('plain' or 'sandbox'), run FIRST_LINES; the seconds of each part."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets.config import Config

    import autograder
    from autograder.sandbox import SandboxedKernelManager

    course = Path(tempfile.mkdtemp(prefix="bench-sandbox-", dir="/var/tmp"))
    course.chmod(0o755)
    student = course / "autograded" / "student" / "assignment"
    student.mkdir(parents=True)
    config = Config()
    config.SandboxedKernelManager.course_root = str(course)
    manager = SandboxedKernelManager if kind == "sandbox" else AsyncKernelManager
    km = manager(config=config, kernel_name="python3")
    try:
        started = time.monotonic()
        await km.start_kernel(cwd=str(student))
        kc = km.client()
        kc.start_channels()
        await kc.wait_for_ready(timeout=120)
        ready = time.monotonic()
        reply = await kc.execute_interactive(FIRST_LINES, timeout=300)
        assert reply["content"]["status"] == "ok", reply["content"]
        done = time.monotonic()
        kc.stop_channels()
    finally:
        await km.shutdown_kernel(now=True)
        shutil.rmtree(course, ignore_errors=True)
    return {"start": ready - started, "imports": done - ready, "package": os.path.dirname(autograder.__file__)}


def measure(kind: str, packages: dict) -> dict:
    """One kernel of ``kind`` in a fresh process (another revision's package first on its PYTHONPATH)."""
    env = dict(os.environ)
    base = "plain" if kind == "plain" else "sandbox"
    if kind in packages:
        env["PYTHONPATH"] = str(packages[kind])
    result = subprocess.run(
        [sys.executable, __file__, "--one", base], capture_output=True, text=True, env=env, timeout=600
    )
    if result.returncode != 0:
        raise RuntimeError(f"{kind}: {result.stderr[-3000:]}")
    measured = json.loads(result.stdout.splitlines()[-1])
    expected = str(packages[kind]) if kind in packages else str(Path(__file__).resolve().parent.parent)
    assert measured["package"].startswith(expected), (kind, measured["package"])  # the code meant to be measured
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", help="also measure the sandbox of this git revision (e.g. main)")
    parser.add_argument("--one", choices=["plain", "sandbox"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(one_kernel(args.one))))
        return
    packages = {f"sandbox@{args.before}": package_at(args.before)} if args.before else {}
    kinds = ["plain", *packages, "sandbox"]
    print(f"{args.rounds} rounds, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start", flush=True)
    times = {kind: [] for kind in kinds}
    try:
        for _ in range(args.rounds):
            for kind in kinds:
                times[kind].append(measure(kind, packages))
    finally:
        for folder in packages.values():
            shutil.rmtree(folder, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end; medians in seconds:")
    print(f"  {'kernel':22s} {'start':>7s} {'+ imports':>10s} {'total':>7s}")
    for kind in kinds:
        start = statistics.median(t["start"] for t in times[kind])
        imports = statistics.median(t["imports"] for t in times[kind])
        total = statistics.median(t["start"] + t["imports"] for t in times[kind])
        print(f"  {kind:22s} {start:7.2f} {imports:10.2f} {total:7.2f}")


if __name__ == "__main__":
    main()

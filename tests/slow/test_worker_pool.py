"""The local worker pool of ``backprop-ninja grade`` under faults, its workers forked by the pool's fork server.

The class is four students of the demo class (Exercise 1), graded by two workers. The faults are really made,
while a student's kernel runs: one worker killed by its pid, its kernel parent stopped first (its sandbox ends
at once, though the fork server may have started it; that student alone loses their grade, with a worker_killed
problem; a new worker is forked for the rest), and the coordinator itself killed outright
(nothing it started may be left running: fork server, workers, sandboxes, kernels).
"""

import csv
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from support.course import DEMO_FOUR, NEWCOMER_ENV, copy_of, demo_four, grade_argv, wait_until

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

STUDENTS = DEMO_FOUR
FORK_SERVER = "autograder.grading.workers.fork_server"
KERNEL_PARENT = "autograder.sandbox.in_sandbox"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return demo_four(tmp_path_factory.mktemp("demo"))


def processes() -> dict:
    """pid -> (parent pid, command line) of every process on the machine."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            found[int(entry)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmdline)
    return found


def descendants(pid: int, table: dict) -> set:
    below, todo = set(), [pid]
    while todo:
        pid = todo.pop()
        children = [p for p, (parent, _) in table.items() if parent == pid]
        below.update(children)
        todo += children
    return below


def pipes(pid: int) -> set:
    """The pipes process ``pid`` holds an end of."""
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
    return {link for link in found if link.startswith("pipe:")}


def worker_with_a_running_kernel(run: subprocess.Popen):
    """(a worker the fork server forked, whose kernel parent runs a student's kernel, its kernel's pid, the process
    table) or None. The server starts the first workers' kernel parents itself: a worker is told from a parent's
    sandbox by its command line (a forked worker keeps the server's), and its parent by its stdin, the worker's pipe."""
    table = processes()
    servers = [p for p in descendants(run.pid, table) if FORK_SERVER in table[p][1] and table[p][0] == run.pid]

    def python(pid):  # the kernel parent's Python, or a kernel it forked (bwrap's command line names it too)
        line = table.get(pid, (0, ""))[1]
        return KERNEL_PARENT in line and not os.path.basename(line.split()[0]).startswith("bwrap")

    kernels = [p for p, (up, _) in table.items() if python(p) and python(up)]  # forked by a kernel parent
    try:
        for server in servers:
            for worker in (p for p, (up, line) in table.items() if up == server and FORK_SERVER in line):
                for kernel in kernels:
                    if os.readlink(f"/proc/{table[kernel][0]}/fd/0") in pipes(
                        worker
                    ):  # the parent's stdin: its worker's
                        return worker, kernel, table
    except OSError:  # a process ended meanwhile: look again
        return None
    return None


def alive(kernel: int, table: dict) -> list:
    """The kernel and the processes above it up to the worker's, with their state now (for a failure's message)."""
    found, pid = [], kernel
    for _ in range(4):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "gone"
        found.append((pid, table.get(pid, (0, ""))[1][:40], state))
        pid = table.get(pid, (0, ""))[0]
    return found


def start_grading(root: Path) -> subprocess.Popen:
    argv = grade_argv(root, "--quiet", "--workers", "2")
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=NEWCOMER_ENV)


def test_a_worker_killed_mid_student_costs_that_student_alone(demo, tmp_path):
    root = copy_of(demo, tmp_path)
    run = start_grading(root)
    found = wait_until(lambda: worker_with_a_running_kernel(run), 600, "a worker with a kernel running")
    worker, kernel, table = found
    os.kill(table[kernel][0], signal.SIGSTOP)  # its kernel parent, stopped (a kernel can): it reads nothing more
    os.kill(worker, signal.SIGKILL)
    # the sandbox ends with its worker at once, though the fork server may have started it (then the pool ends it)
    try:
        wait_until(lambda: not os.path.exists(f"/proc/{kernel}"), 30, "the killed worker's kernel to end")
    except AssertionError as error:
        raise AssertionError(f"{error}: the kernel and the processes above it now: {alive(kernel, table)}") from None
    # (the run may end soon after: the killed student was perhaps the last; the problem below shows the kill was seen)
    out, err = run.communicate(timeout=1800)
    assert run.returncode == 0, err[-4000:]
    killed = [p for p in json.loads((root / "problems.json").read_text()) if p["problem"] == "worker_killed"]
    assert len(killed) == 1, killed
    with open(root / "grades.csv", newline="", encoding="utf-8-sig") as f:
        totals = {row["student"]: row["total"] for row in csv.DictReader(f)}
    graded = {s: float(t) for s, t in totals.items() if t}
    assert set(graded) == set(STUDENTS) - {killed[0]["student"]}, totals
    expected = {"ada_perfect": 34, "ben_sign": 33, "cleo_keepdim": 33.5, "finn_blank": 0}
    assert graded == {s: expected[s] for s in graded}


def test_the_coordinator_killed_leaves_nothing_of_the_run_running(demo, tmp_path):
    root = copy_of(demo, tmp_path)
    run = start_grading(root)
    *_, table = wait_until(lambda: worker_with_a_running_kernel(run), 600, "a worker with a kernel running")
    started = descendants(run.pid, table)
    assert any(FORK_SERVER in table[p][1] for p in started) and any(KERNEL_PARENT in table[p][1] for p in started)
    run.kill()
    run.communicate(timeout=60)

    def left() -> dict:
        now = processes()
        return {p: now[p][1] for p in started if p in now and now[p][1] == table[p][1]}

    wait_until(lambda: not left(), 60, "every process the killed run started to end")

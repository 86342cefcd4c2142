"""``backprop-ninja grade --scheduler`` on a cluster of separate hosts: network, mount and UTS namespaces on a private
bridge, made by ``netns_cluster`` for this module and removed at its end. The coordinator host runs the scheduler and
``grade``; worker hosts w1 and w2 run a Dask worker each (one task at a time), each with its own checkout of the course
at a path of its own, its own /tmp, nothing writable shared; w2's wall clock is six hours ahead (libfaketime) all the
time. Everything goes over TLS, with a CA made by docs/cluster.md's openssl commands.

The class is the demo's four students with a due date three hours from now: ada hands in an hour early, ben 26 hours
late, cleo with no timestamp, finn blank. Each one's late penalty changes if anything read a clock instead of the
timestamp: w2's clock is three hours past the due date. A local ``grade`` run of the class is the reference: the
cluster's grades.csv, problems.json, autograded and feedback files, and gradebook timestamps must be the same.

The faults are made for real: a worker host's link taken down (``ip link set ... down`` at the switch) mid-student
and brought back after the scheduler gave the student to the other host; a host throttled by a CPU quota on its
cgroup; the scheduler host's link down for seconds; a worker with a certificate of another CA.
"""

import contextlib
import csv
import datetime
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from netns_cluster import SUBNET, NetnsCluster, documented_tls, has_netem, unavailable
from support.course import ASSIGNMENT, REPO, FeedbackPage, demo_four, run_grade, wait_until

from autograder.grading.results.gradebook import opened

REASON = unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))

NB = "ex1_atomic_backward"
STUDENTS = ["ada_perfect", "ben_sign", "cleo_keepdim", "finn_blank"]
WORKERS = ["w1", "w2"]
SKEW_HOURS = 6
SKEW = f"+{SKEW_HOURS}h"
DUE = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0) + datetime.timedelta(hours=3)
STAMPS = {"ada_perfect": datetime.timedelta(hours=-1), "ben_sign": datetime.timedelta(hours=26)}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    hosts = NetnsCluster(tmp_path_factory.mktemp("netns"), workers=len(WORKERS), clocks={"w2": SKEW})
    yield hosts
    hosts.close()


@pytest.fixture(scope="module")
def late_class(tmp_path_factory):
    """The four students, the due date, and the timestamps of ada and ben."""
    root = demo_four(tmp_path_factory.mktemp("late"))
    with opened(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment(ASSIGNMENT, duedate=DUE)
    for student, offset in STAMPS.items():
        stamp = f"{DUE + offset:%Y-%m-%d %H:%M:%S} UTC"
        (root / "submitted" / student / ASSIGNMENT / "timestamp.txt").write_text(stamp)
    return root


@contextlib.contextmanager
def gradebook(root: Path):
    """The course's gradebook, opened from a copy: SQLite resolves a path's links, and a host's files are seen here
    through one (/proc/<pid>/root)."""
    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(root / "gradebook.db", folder)
        with opened(f"sqlite:///{folder}/gradebook.db") as gb:
            yield gb


def only(course: Path, students: list, folder: Path) -> Path:
    """A copy of ``course`` with these students only, that a sandboxed kernel (another uid) can enter."""
    root = folder / "course"
    shutil.copytree(course, root)
    for student in set(STUDENTS) - set(students):
        shutil.rmtree(root / "submitted" / student)
    for path in (folder, root):
        path.chmod(0o755)
    return root


@pytest.fixture(scope="module")
def reference(late_class, tmp_path_factory):
    """The class graded by local workers on this machine, as without a cluster."""
    root = only(late_class, STUDENTS, tmp_path_factory.mktemp("local"))
    run_grade(root, "--quiet", "--workers", "2", timeout=1800)
    return outcome(root, STUDENTS)


def outcome(root: Path, students: list) -> dict:
    """What a run leaves for the instructor, for ``students``: their rows of grades.csv, their problems, every
    autograded and feedback file (name and permissions: each run grades with its own unseen seed), and the gradebook's
    submission time and late penalties."""
    with open(root / "grades.csv", newline="", encoding="utf-8-sig") as f:
        rows = {r["student"]: r for r in csv.DictReader(f) if r["student"] in students}
    problems = [p for p in json.loads((root / "problems.json").read_text()) if p["student"] in students]
    files = sorted(
        (str(p.relative_to(root)), oct(p.stat().st_mode & 0o777))
        for kind in ("autograded", "feedback")
        for student in students
        for p in (root / kind / student).rglob("*")
        if p.is_file()
    )
    with gradebook(root) as gb:
        late = {
            s.student.id: (s.timestamp, [nb.late_submission_penalty for nb in s.notebooks])
            for s in gb.find_assignment(ASSIGNMENT).submissions
            if s.student.id in students
        }
    return {"grades": rows, "problems": problems, "files": files, "late": late}


def same(got: dict, expected: dict, summary: str = "") -> bool:
    """``got == expected``; else fail with what differs (the files each side has alone) and grade's summary."""
    for key in expected:
        if key == "files":
            alone = sorted(set(got[key]) ^ set(expected[key]))
            assert not alone, f"files of one side only (cluster's: {sorted(set(got[key]) - set(expected[key]))})"
        assert got[key] == expected[key], f"{key} differ; the cluster's run:\n{summary}"
    return True


def submissions(root: Path) -> dict:
    """student -> how many submissions of the assignment the gradebook has for them."""
    with gradebook(root) as gb:
        found = [s.student.id for s in gb.find_assignment(ASSIGNMENT).submissions]
    return {s: found.count(s) for s in found}


def on_coordinator(cluster, course: Path, name: str) -> tuple:
    """``course`` copied into the coordinator host's own /srv: (its path there, where this machine sees it)."""
    inside = f"{cluster.coordinator.home}/courses/{name}"
    shutil.copytree(course, cluster.coordinator.path(inside))
    cluster.coordinator.path(inside).chmod(0o755)
    return inside, cluster.coordinator.path(inside)


def finish(run: subprocess.Popen, timeout: float = 900) -> tuple:
    out, err = run.communicate(timeout=timeout)
    return run.returncode, out, err


def hosts_in(summary: str) -> dict:
    """host -> (students, the rest of its line) from the summary's ``graded on N hosts`` lines."""
    lines = summary.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("graded on ")), None)
    found = {}
    for line in lines[start + 1 :] if start is not None else []:
        if not line.startswith("  "):
            break
        host, _, rest = line.strip().partition(")")
        found[host + ")"] = (int(rest.split()[0]), rest)
    return found


def test_a_scheduler_on_another_host_without_tls_is_refused(cluster, late_class, tmp_path):
    """``tcp://`` to the scheduler host's address: one line that says how to use TLS, and nothing is written; with
    --insecure-cluster the check is passed, and the TLS scheduler does not speak to a plain client either."""
    inside, root = on_coordinator(cluster, only(late_class, STUDENTS, tmp_path), "refused")
    plain = f"tcp://{SUBNET}.1:8786"
    code, out, err = finish(cluster.grade(inside, "--scheduler", plain))
    assert code != 0 and err.strip().splitlines() == [
        f"refusing {plain}: whoever reaches a scheduler without TLS can run code on every worker. Use "
        f"tls://{SUBNET}.1:8786 with the course's CA (Dask's distributed.comm.tls settings: ca-file, client.cert, "
        "client.key; see the README), or pass --insecure-cluster on a network only the course's machines reach. "
        "Nothing was graded."
    ], err
    assert not any((root / name).exists() for name in ("grades.csv", ".grading", "autograded"))
    fast = {"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "3s"}
    for tls, reason in [(True, "encryption required by Dask configuration"), (False, "")]:
        code, out, err = finish(cluster.grade(inside, "--scheduler", plain, "--insecure-cluster", env=fast, tls=tls))
        (line,) = err.strip().splitlines()  # past the check: Dask's own refusal, or no plain scheduler there
        assert code != 0 and line.startswith(f"cannot reach the Dask scheduler at {plain}: {reason}"), err
        assert line.endswith("Nothing was graded.") and not (root / "grades.csv").exists()


def test_over_tls_the_class_is_graded_as_by_a_local_run_and_another_cas_worker_is_refused(
    cluster, late_class, reference, tmp_path
):
    """A third worker host, w3, has the course's CA but a certificate of another CA (made by the same documented
    commands): the scheduler refuses it, it never holds the course, and the class is graded on w1 and w2 exactly as
    by a local run, late penalties included (w2's clock is six hours ahead)."""
    cluster.ensure_workers(WORKERS)
    rogue = tmp_path / "rogue-tls"
    shutil.copytree(documented_tls(tmp_path / "rogue"), rogue)
    shutil.copy(cluster.tls / "ca.pem", rogue / "ca.pem")  # it trusts the scheduler; the scheduler must not trust it
    cluster.add_host("w3", f"{SUBNET}.13", tls=rogue)
    inside, root = on_coordinator(cluster, only(late_class, STUDENTS, tmp_path), "tls")
    run = cluster.grade(inside, "--scheduler", cluster.address)
    cluster.start_worker("w3")  # while the class is graded
    log, worker = cluster.folder / "scheduler.log", cluster.hosts["w3"].processes["worker"]
    refused = f"TLS handshake failed with remote 'tls://{SUBNET}.13:"
    while run.poll() is None:
        assert not cluster.courses("w3") and not cluster.kernels("w3")
        time.sleep(1)
    code, out, err = finish(run)
    assert code == 0, err[-4000:]
    wait_until(lambda: refused in log.read_text(), 120, "the scheduler to refuse w3's certificate")
    assert "CERTIFICATE_VERIFY_FAILED" in log.read_text().split(refused)[1].splitlines()[0]
    assert worker.wait(120) != 0 and "w3" not in cluster.workers()  # w3 gave up: its nanny could not start
    assert not cluster.courses("w3") and not list(cluster.hosts["w3"].path("/srv/w3/dask").glob("**/*.ipynb"))
    registered = {line.split(" name: ")[-1] for line in log.read_text().splitlines() if "Register worker" in line}
    assert registered == set(WORKERS), registered  # the scheduler's log: w3 never joined
    assert same(outcome(root, STUDENTS), reference, out)
    assert submissions(root) == dict.fromkeys(STUDENTS, 1)
    hosts = hosts_in(out)
    assert set(hosts) <= {f"w1 ({SUBNET}.11)", f"w2 ({SUBNET}.12)"} and sum(n for n, _ in hosts.values()) == 4, out
    assert hosts.get(f"w2 ({SUBNET}.12)", (0,))[0] >= 1, f"w2, the host whose clock is off, graded nobody:\n{out}"
    late = reference["late"]  # ben: 26 hours late is two days, 10 % a day of his 33 points
    assert late["ben_sign"][1] == [6.6] and not any(p for s in ("ada_perfect", "cleo_keepdim") for p in late[s][1])
    skewed = cluster.hosts["w2"].python("import time, json; print(json.dumps(time.time()))")
    assert abs(skewed - time.time() - 6 * 3600) < 120  # the graders on w2 read a clock six hours ahead


def test_a_worker_cut_off_mid_student_comes_back_and_the_student_is_merged_once(
    cluster, late_class, reference, tmp_path
):
    """The link of the host grading a student is taken down mid-student; the host finishes the student, cut off;
    the scheduler gives up the host (worker-ttl) and gives the student to the other host; then the link comes back.
    The student is merged once, with the files and grades of one complete run (the other host's)."""
    cluster.ensure_workers(WORKERS)
    students = ["ada_perfect", "ben_sign"]
    inside, root = on_coordinator(cluster, only(late_class, students, tmp_path), "cut")
    run = cluster.grade(inside, "--scheduler", cluster.address)
    started = time.time()

    def grading():
        return next(((w, s) for w in WORKERS for s in cluster.staged(w)), None)

    victim, student = wait_until(grading, 600, "a student graded on a worker host", step=0.1)
    rescuer = next(w for w in WORKERS if w != victim)
    cluster.link(victim, up=False)
    cut, finished_cut_off, moved = time.time(), None, None
    try:
        while not (finished_cut_off and moved):  # both, in either order
            assert time.time() - cut < 300, (finished_cut_off, moved)
            if not finished_cut_off and student not in cluster.staged(victim):
                finished_cut_off = time.time()
                assert cluster.courses(victim), f"{victim} gave up the course instead of finishing {student}"
            if not moved and student in cluster.staged(rescuer):
                moved = time.time()  # the scheduler gave up the victim and gave the student to the rescuer
            time.sleep(0.2)
    finally:
        cluster.link(victim, up=True)
    back = time.time()
    code, out, err = finish(run)
    assert code == 0, err[-4000:]
    assert same(outcome(root, students), restrict(reference, students), out)
    assert submissions(root) == dict.fromkeys(students, 1)
    with open(root / "grade_history.csv", newline="", encoding="utf-8-sig") as f:
        assert sorted(r["student"] for r in csv.DictReader(f)) == sorted(students)
    hosts = hosts_in(out)
    assert list(hosts) == [f"{rescuer} ({cluster.hosts[rescuer].address})"], out  # both students: the rescuer's
    one_complete_run(root, student, after=moved - 1)  # the rescuer's run: it began when the student moved
    print(
        f"cut {victim} at {cut - started:.0f} s while it graded {student}; it finished it cut off at "
        f"{finished_cut_off - started:.0f} s; {rescuer} took it at {moved - started:.0f} s; link back at "
        f"{back - started:.0f} s; class done at {time.time() - started:.0f} s"
    )


def restrict(reference: dict, students: list) -> dict:
    """The reference outcome for some of its students only."""
    files = [f for f in reference["files"] if f[0].split("/")[1] in students]
    return {
        "grades": {s: r for s, r in reference["grades"].items() if s in students},
        "problems": [p for p in reference["problems"] if p["student"] in students],
        "files": files,
        "late": {s: v for s, v in reference["late"].items() if s in students},
    }


def one_complete_run(root: Path, student: str, after: float) -> None:
    """The student's autograded notebook ran entirely after ``after`` (its cells' times, from the kernel), and its
    feedback page shows the scores the gradebook has: notebook, feedback and grades of one run."""
    nb = json.loads((root / "autograded" / student / ASSIGNMENT / f"{NB}.ipynb").read_text())
    times = [
        datetime.datetime.fromisoformat(c["metadata"]["execution"]["iopub.execute_input"].replace("Z", "+00:00"))
        for c in nb["cells"]
        if c["cell_type"] == "code" and "execution" in c["metadata"]
    ]
    assert times and min(times).timestamp() > after, (min(times), after)
    page = FeedbackPage((root / "feedback" / student / ASSIGNMENT / f"{NB}.html").read_text())
    with gradebook(root) as gb:
        scores = {g.name: g.score for g in gb.find_submission_notebook(NB, ASSIGNMENT, student).grades}
    shown = {anchor: float(points.split("/")[0]) for anchor, _, points, _ in page.table()}
    assert shown and all(scores[cell] == points for cell, points in shown.items()), (shown, scores)


def test_a_slow_host_holds_a_student_past_the_others_and_the_summary_names_it(cluster, late_class, reference, tmp_path):
    """w1 throttled to a tenth of a core while it grades (a CPU quota on its cgroup; and netem latency on its link
    where the kernel has netem): the class finishes as the local run's, w2 idle while w1 still grades, and the
    summary says that w1 was slow. The quota starts when w1's nbgrader begins its student, which is where the
    seconds the summary compares start, and ends once w1 has graded three times as long as w2 took for its student
    (10 s at least): the summary's factor is 2, and the test does not wait for the whole student at a tenth of a core
    (about 70 s). (Throttled before that, a worker taking the course in at a fifth of a core blocks its event loop
    past the scheduler's 10 s worker-ttl, 18.6 s measured, and is given up and restarted, again and again. So slowed,
    the grader's own work can pass its 120 s watchdog, and that student would get grader_time_limit: the run allows
    it 900 s, as an instructor with slow nodes would.)"""
    cluster.ensure_workers(WORKERS)
    students = ["ben_sign", "cleo_keepdim"]
    inside, root = on_coordinator(cluster, only(late_class, students, tmp_path), "slow")
    slow, fast = cluster.hosts["w1"], cluster.hosts["w2"]
    netem = has_netem() and cluster.delay("w1", "100ms")
    try:
        run = cluster.grade(inside, "--scheduler", cluster.address, "--grader-time-limit", "900")
        throttled = lifted = w2_from = w2_took = None
        held, last = 0.0, time.time()  # seconds when w1 grades and w2 has nothing left to grade
        while run.poll() is None:
            time.sleep(0.2)
            now = time.time()
            if throttled is None and cluster.autograding("w1"):
                slow.cpu_quota(10)
                throttled = now
            on_w2 = cluster.staged("w2")
            if w2_from is None and cluster.autograding("w2"):
                w2_from = now
            if w2_from is not None and w2_took is None and not on_w2:
                w2_took = now - w2_from
            if cluster.staged("w1") and not on_w2 and (root / ".grading" / "state.json").is_file():
                held += now - last
            last = now
            if throttled and not lifted and w2_took and now - throttled >= max(10.0, 3 * w2_took):
                slow.cpu_quota(None)
                lifted = now
        code, out, err = finish(run)
    finally:
        slow.cpu_quota(None)
        if netem:
            cluster.delay("w1", None)
    assert code == 0, err[-4000:]
    assert same(outcome(root, students), restrict(reference, students), out)
    hosts = hosts_in(out)
    line = hosts.get(f"w1 ({SUBNET}.11)")
    assert line and "SLOW" in line[1] and "SLOW" not in hosts[f"w2 ({SUBNET}.12)"][1], out
    assert held > 0, "w2 never waited for w1"
    w2 = hosts[f"w2 ({SUBNET}.12)"][0]
    throttle = f"{lifted - throttled:.1f} s" if lifted else "to its end"
    print(
        f"w1 throttled {throttle}, held a student alone {held:.1f} s (w2: {w2_took} s); {fast.name} graded {w2}; {out}"
    )


def test_the_scheduler_host_cut_off_for_seconds_is_ridden_out_or_resumed(cluster, late_class, reference, tmp_path):
    """The scheduler host's link is down for 6 s while both worker hosts grade. ``grade`` rides it out (or stops with
    one line, and the next run grades only what is missing): the class ends as the local run's, each student once."""
    cluster.ensure_workers(WORKERS)
    students = ["ada_perfect", "cleo_keepdim"]
    inside, root = on_coordinator(cluster, only(late_class, students, tmp_path), "scheduler-cut")
    run = cluster.grade(inside, "--scheduler", cluster.address)
    wait_until(lambda: any(cluster.staged(w) and cluster.kernels(w) for w in WORKERS), 600, "a student being graded")
    cluster.link("coordinator", up=False)
    time.sleep(6)
    cluster.link("coordinator", up=True)
    code, out, err = finish(run)
    if code != 0:  # stopped: one line, then the next run grades what is missing
        assert len(err.strip().splitlines()) == 1, err
        cluster.ensure_workers(WORKERS)
        code, out, err = finish(cluster.grade(inside, "--scheduler", cluster.address))
        assert code == 0 and " unchanged since the last run" in out, err[-4000:]
    assert same(outcome(root, students), restrict(reference, students), out)
    assert submissions(root) == dict.fromkeys(students, 1)
    with open(root / "grade_history.csv", newline="", encoding="utf-8-sig") as f:
        assert sorted(r["student"] for r in csv.DictReader(f)) == students
    print(out)


def test_the_hosts_are_separate_and_share_no_writable_folder(cluster):
    """Each host has namespaces of its own, sees this machine's filesystem read-only, has its own /tmp and its
    checkout at a path of its own; w2's wall clock is six hours ahead, and libfaketime leaves nothing in this
    machine's /dev/shm (a stale semaphore there makes the faketime command of another test fail)."""
    probe = (
        "import json, os, socket, sys, time, autograder\n"
        "open('/tmp/only-here', 'w').close()\n"
        f"shared = ['/work', '/root', '/etc', '/usr', {str(REPO)!r}, sys.prefix]\n"
        "print(json.dumps([socket.gethostname(), autograder.__file__, [os.access(p, os.W_OK) for p in shared],"
        " sorted(os.listdir('/tmp')), sorted(os.listdir('/srv')), time.time()]))"
    )
    seen, namespaces = set(), set()
    shm = set(os.listdir("/dev/shm"))
    for name in ["coordinator", *WORKERS]:
        host = cluster.hosts[name]
        hostname, package, writable, tmp, srv, clock = host.python(probe)
        ahead = clock - time.time()
        assert abs(ahead - (SKEW_HOURS * 3600 if name == "w2" else 0)) < 600, f"{name}'s clock is {ahead:.0f} s ahead"
        assert hostname == name and srv == [name] and "only-here" in tmp
        assert writable == [False] * 6, writable  # not this machine's checkout of the course, nor the venv
        assert package == f"/srv/{name}/backprop-ninja/autograder/__init__.py"
        seen.add(package)
        namespaces.add(tuple(os.readlink(f"/proc/{host.pid}/ns/{kind}") for kind in ("net", "mnt", "uts")))
    assert len(seen) == len(namespaces) == 3
    assert os.readlink("/proc/self/ns/net") not in {n[0] for n in namespaces}
    assert not os.path.exists("/tmp/only-here")
    assert not {name for name in set(os.listdir("/dev/shm")) - shm if "faketime" in name}

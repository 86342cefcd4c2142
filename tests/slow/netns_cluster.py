"""A Dask cluster of separate hosts made of Linux namespaces, for the slow tests and the cluster benchmark.

Every host has:
  a network namespace, with one interface (eth0) and one address on a private bridge; the bridge lives in a
      switch namespace of its own, so that the hosts reach each other and nothing else (this machine's own
      network is not on it);
  a mount namespace where this machine's filesystem is read-only, and /tmp, /var/tmp, /dev/shm, /run and /srv
      are empty tmpfs of its own (HOME is /srv/<host>/home): nothing writable is shared between hosts;
  a hostname of its own (a UTS namespace), and its own copy of the course's checkout at a path of its own,
      /srv/<host>/backprop-ninja, which its Pythons import the autograder package from (this machine's venv is
      shared, read-only, at /srv/<host>/venv);
  a cgroup (cpu and cpuacct) that every process started on it joins: its CPU time, and a CPU quota for a slow host.

The "coordinator" host runs the Dask scheduler (TLS, with a CA made by docs/cluster.md's openssl commands) and
``backprop-ninja grade``; "w1", "w2"... run ``dask worker`` with a nanny, one task at a time. The faults are real:
``link(host, up=False)`` takes the host's cable out of the switch (``ip link set ... down``), ``cpu_quota`` throttles
a host's cgroup, ``delay`` adds ``tc netem`` latency (where the kernel has netem), and a worker host started with
``clock`` runs its Dask worker and graders under libfaketime, its wall clock that far off (monotonic clocks
untouched: a time namespace shifts only those, and the realtime clock has no namespace).

This is test support: nothing here is part of the product. ``unavailable()`` says in one line why this machine
cannot make the hosts (None when it can); ``NetnsCluster.close()`` stops every process and removes every namespace,
interface and cgroup it made.
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from servers import ends_with_parent

REPO = Path(__file__).resolve().parents[2]
ASSIGNMENT = "backprop_ninja"
VENV = sys.prefix  # the venv, which every host sees read-only at a path of its own (it may be under /tmp)
SUBNET = "10.28.0"
SCHEDULER_PORT = 8786
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"  # Debian's libfaketime (tools/install.sh --test)
CGROUPS = Path("/sys/fs/cgroup")
TC = shutil.which("tc", path="/usr/sbin:/sbin:/usr/bin:/bin") or "tc"  # in sbin, off a newcomer's PATH
PRIVATE = ("/tmp", "/var/tmp", "/dev/shm", "/run")  # each host's own tmpfs, and /srv (its HOME, checkout, venv)
# The scheduler gives up a worker that missed its heartbeats for 10 s (Dask's default is 5 minutes) and a connection
# it cannot make in 5 s (30 s), so that a cut-off worker's student moves on soon. A worker keeps an unanswered
# connection for 120 s (30 s): cut off for a minute, it is still there, with its finished student, when its link
# comes back (with Dask's 30 s it would give up by itself first).
SCHEDULER_SETTINGS = {
    "DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": "10s",
    "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s",
}
WORKER_SETTINGS = {"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s", "DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP": "120s"}
# The hosts share one kernel, and so its uids: a sandboxed kernel's RLIMIT_NPROC counts the processes of its uid on
# the whole machine. Each host's init holds the grader's uid locks (autograder/sandbox/uids.py) below a range of its
# own, so that its graders claim uids no other host, and no grader outside the hosts, uses at the same time.
FIRST_UID, UIDS_PER_HOST = 61000, 100
HOLD_UIDS = (
    "import fcntl, signal, sys\n"
    'locks = [open(f"/tmp/backprop-ninja-sandbox-uid-{u}.lock", "w") for u in range(*map(int, sys.argv[1:]))]\n'
    "[fcntl.flock(f, fcntl.LOCK_EX) for f in locks]\n"
    'print("ready", flush=True)\n'
    "signal.pause()"
)
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"}


def unavailable() -> str | None:
    """Why this machine cannot make the namespace hosts, in one line; None when it can."""
    if os.geteuid() != 0:
        return "the namespace cluster needs root (network and mount namespaces, a bridge, cgroups)"
    missing = [tool for tool in ("ip", "unshare", "nsenter", "openssl", "bwrap") if shutil.which(tool) is None]
    missing += [] if Path(FAKETIME).exists() else ["libfaketime"]
    if missing:
        return f"the namespace cluster needs {', '.join(missing)} (tools/install.sh --test installs them)"
    probe = f"bnprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"this machine cannot make network namespaces: {made.stderr.strip() or 'ip netns add failed'}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    if not (CGROUPS / "cpu" / "cgroup.procs").exists() or not (CGROUPS / "cpuacct" / "cgroup.procs").exists():
        return "the namespace cluster needs cgroup v1's cpu and cpuacct controllers at /sys/fs/cgroup"
    return None


def has_netem() -> bool:
    """Whether this kernel has tc's netem queueing discipline (CONFIG_NET_SCH_NETEM)."""
    probe = f"bnq{os.getpid()}"
    subprocess.run(["ip", "link", "add", probe, "type", "dummy"], capture_output=True)
    try:
        added = subprocess.run([TC, "qdisc", "add", "dev", probe, "root", "netem", "delay", "1ms"], capture_output=True)
        return added.returncode == 0
    finally:
        subprocess.run(["ip", "link", "del", probe], capture_output=True)


def sh(*argv, check=True) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} failed: {result.stderr.strip()}")
    return result


def documented_tls(folder: Path) -> Path:
    """A CA and the scheduler's, the workers' and grade's certificates, made in ``folder``/tls by docs/cluster.md's own
    openssl commands, as an instructor copies them."""
    lines = (REPO / "docs" / "cluster.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("mkdir tls && cd tls"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("done; cd .."))
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["bash", "-euc", "\n".join(lines[start : end + 1])], cwd=folder, check=True, capture_output=True)
    return folder / "tls"


class Host:
    """One host: its namespaces (held by an init process that sleeps), its cgroups, and what runs on it."""

    def __init__(self, cluster: "NetnsCluster", name: str, index: int, address: str, clock: str | None = None):
        self.cluster, self.name, self.address, self.clock = cluster, name, address, clock
        self.netns = f"{cluster.prefix}-{name}"
        self.home = f"/srv/{name}"
        self.checkout = f"{self.home}/backprop-ninja"  # a path of its own on every host
        self.interpreter = f"{self.home}/venv/bin/python"
        self.processes = {}
        self.groups = [CGROUPS / kind / f"{cluster.prefix}-{name}" for kind in ("cpu", "cpuacct")]
        for group in self.groups:
            group.mkdir()
        script = "\n".join(
            [
                "set -e",
                f"hostname {name}",
                "mount -o remount,bind,ro /",  # this machine's filesystem: read-only here
                "mount -t tmpfs -o mode=0755 tmpfs /srv",
                f"mkdir -p {self.home}/home {self.home}/venv",
                f"mount --bind {VENV} {self.home}/venv",  # before /tmp is covered: a CI clone's venv is in /tmp
                f"mount -o remount,bind,ro {self.home}/venv",
                *(f"mount -t tmpfs -o mode=0755 tmpfs {path}" for path in PRIVATE),
                "chmod 1777 /tmp /var/tmp /dev/shm",
                f"exec {self.interpreter} -c '{HOLD_UIDS}' {FIRST_UID} {FIRST_UID + UIDS_PER_HOST * index}",
            ]
        )
        self.init = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, "unshare", "--mount", "--uts", "--propagation", "private"]
            + ["--fork", "--kill-child", "sh", "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: self._join(signal.SIGKILL),  # unshare --fork ignores SIGTERM; --kill-child
        )
        if self.init.stdout.readline().strip() != "ready":
            raise RuntimeError(f"host {name} did not start: {self.init.stderr.read()}")
        self.pid = self.init.pid
        shutil.copytree(REPO, self.path(self.checkout), ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__"))

    def _join(self, sig: int = signal.SIGTERM) -> None:
        """In a child about to become one of this host's processes: into its cgroups, and ending with pytest."""
        ends_with_parent(sig)  # no host outlives the test
        for group in self.groups:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    def path(self, inside: str) -> Path:
        """Where this machine sees the host's path ``inside`` (through its mount namespace)."""
        return Path(f"/proc/{self.pid}/root") / inside.lstrip("/")

    def clock_settings(self) -> list:
        """``env``'s assignments for this host's wall clock, that far off; monotonic clocks as they are (Dask's
        timeouts use them). They go on ``env`` inside the host, not on ``nsenter``: libfaketime leaves a semaphore
        in /dev/shm named by each process it loads in, and only the host's /dev/shm goes with the host."""
        return (
            [f"LD_PRELOAD={FAKETIME}", f"FAKETIME={self.clock}", "FAKETIME_DONT_FAKE_MONOTONIC=1"] if self.clock else []
        )

    def environment(self, extra: dict | None = None) -> dict:
        return {**BASE_ENV, "HOME": f"{self.home}/home", "PYTHONPATH": self.checkout, **(extra or {})}

    def popen(self, argv: list, name: str | None = None, env: dict | None = None, log: str | None = None, **kw):
        """Start ``argv`` on this host (in its namespaces and cgroups), in its checkout; its output to ``log``."""
        inside = ["env", "-C", self.checkout, *self.clock_settings(), *map(str, argv)]
        command = ["nsenter", "-t", str(self.pid), "-m", "-u", "-n", "--", *inside]
        if log:
            kw.update(stdout=open(self.cluster.folder / log, "ab"), stderr=subprocess.STDOUT)
        process = subprocess.Popen(command, env=self.environment(env), preexec_fn=self._join, **kw)
        if name:
            self.processes[name] = process
        return process

    def run(self, argv: list, env: dict | None = None, timeout: float = 1800) -> subprocess.CompletedProcess:
        process = self.popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = process.communicate(timeout=timeout)
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    def python(self, code: str, env: dict | None = None, timeout: float = 300):
        """Run Python ``code`` on this host; the JSON it prints last, read back."""
        result = self.run([self.interpreter, "-c", code], env=env, timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"on {self.name}: {result.stderr[-3000:]}")
        return json.loads(result.stdout.strip().splitlines()[-1])

    def pids(self) -> list:
        """Every process on this host (its cgroup's)."""
        text = (self.groups[1] / "cgroup.procs").read_text()
        return [int(pid) for pid in text.split()]

    def cpu_seconds(self) -> float:
        """CPU time of every process the host ran so far, sandboxed kernels included."""
        return int((self.groups[1] / "cpuacct.usage").read_text()) / 1e9

    def net_bytes(self) -> tuple:
        """(bytes received, bytes sent) on the host's interface."""
        stats = self.path("/sys/class/net/eth0/statistics")
        return tuple(int((stats / f"{way}_bytes").read_text()) for way in ("rx", "tx"))

    def cpu_quota(self, percent: float | None) -> None:
        """Limit the host to ``percent`` of one core (None: no limit), as a slow or overloaded node is."""
        quota = -1 if percent is None else int(1000 * percent)  # of a 100 ms period
        (self.groups[0] / "cpu.cfs_period_us").write_text("100000")
        (self.groups[0] / "cpu.cfs_quota_us").write_text(str(quota))

    def stop(self, name: str, timeout: float = 60) -> None:
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def close(self) -> None:
        for name in list(self.processes):
            self.stop(name, timeout=30)
        if self.init.poll() is None:
            self.init.kill()  # unshare ignores SIGTERM; its --kill-child ends the uid holder with it
            self.init.wait()
        for group in self.groups:
            for _ in range(100):
                if not group.exists():
                    break
                for pid in (group / "cgroup.procs").read_text().split():  # what is left: a sandbox's last kernel
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
                with contextlib.suppress(OSError):
                    group.rmdir()
                time.sleep(0.05)


class NetnsCluster:
    """The coordinator host (the scheduler, and where ``grade`` runs) and ``workers`` worker hosts on a private
    bridge, TLS between them; ``clocks`` gives a worker host's wall-clock offset (libfaketime's, e.g. "+6h")."""

    def __init__(self, folder: Path, workers: int = 2, clocks: dict | None = None):
        self.folder = folder
        self.prefix = f"bnc{os.getpid()}"
        self.switch = f"{self.prefix}-switch"
        self.hosts, self.started = {}, False
        self.address = f"tls://{SUBNET}.1:{SCHEDULER_PORT}"
        remove_stale()
        try:
            sh("ip", "netns", "add", self.switch)
            self.started = True
            sh("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
            sh("ip", "-n", self.switch, "link", "set", "br0", "up")
            self.tls = documented_tls(folder / "ca")
            self.add_host("coordinator", f"{SUBNET}.1")
            self.start_scheduler()
            for number in range(1, workers + 1):
                name = f"w{number}"
                self.add_host(name, f"{SUBNET}.{10 + number}", (clocks or {}).get(name))
                self.start_worker(name)
            self.wait_for_workers([f"w{n}" for n in range(1, workers + 1)])
        except BaseException:
            self.close()
            raise

    @property
    def coordinator(self) -> Host:
        return self.hosts["coordinator"]

    def add_host(self, name: str, address: str, clock: str | None = None, tls: Path | None = None) -> Host:
        """A new host on the bridge, with the course's certificates (or those of ``tls``) in /srv/<name>/tls."""
        netns, index = f"{self.prefix}-{name}", len(self.hosts)
        sh("ip", "netns", "add", netns)
        outer, inner = f"{self.prefix}{index}a", f"{self.prefix}{index}b"
        sh("ip", "link", "add", inner, "type", "veth", "peer", "name", outer)
        sh("ip", "link", "set", inner, "netns", netns)
        sh("ip", "link", "set", outer, "netns", self.switch)
        sh("ip", "-n", netns, "link", "set", inner, "name", "eth0")
        sh("ip", "-n", self.switch, "link", "set", outer, "name", name)
        sh("ip", "-n", self.switch, "link", "set", name, "master", "br0", "up")
        sh("ip", "-n", netns, "addr", "add", f"{address}/24", "dev", "eth0")
        sh("ip", "-n", netns, "link", "set", "eth0", "up")
        sh("ip", "-n", netns, "link", "set", "lo", "up")
        host = self.hosts[name] = Host(self, name, index, address, clock)
        shutil.copytree(tls or self.tls, host.path(f"{host.home}/tls"))
        return host

    def tls_options(self, host: Host, who: str) -> list:
        tls = f"{host.home}/tls"
        return ["--tls-ca-file", f"{tls}/ca.pem", "--tls-cert", f"{tls}/{who}.pem", "--tls-key", f"{tls}/{who}.key"]

    def client_env(self) -> dict:
        """What ``grade`` on the coordinator host is given: docs/cluster.md's Dask TLS settings."""
        tls = f"{self.coordinator.home}/tls"
        return {
            "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": f"{tls}/ca.pem",
            "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True",
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": f"{tls}/grade.pem",
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": f"{tls}/grade.key",
        }

    def start_scheduler(self) -> None:
        host = self.coordinator
        argv = [
            host.interpreter,
            "-m",
            "distributed.cli.dask_scheduler",
            "--host",
            host.address,
            "--port",
            SCHEDULER_PORT,
        ]
        argv += ["--no-dashboard", "--protocol", "tls", *self.tls_options(host, "scheduler")]
        host.popen(argv, "scheduler", env=SCHEDULER_SETTINGS, log="scheduler.log")

    def start_worker(self, name: str) -> None:
        host = self.hosts[name]
        argv = [host.interpreter, "-m", "distributed.cli.dask_worker", self.address, "--host", host.address]
        argv += ["--nthreads", "1", "--no-dashboard", "--name", name, "--local-directory", f"{host.home}/dask"]
        argv += self.tls_options(host, "worker")
        host.popen(argv, "worker", env=WORKER_SETTINGS, log=f"{name}.log")

    def ensure_workers(self, names: list, timeout: float = 180) -> None:
        """Start again the workers that have ended (a Dask worker the scheduler gave up ends with its nanny, as
        a batch job would, a few seconds later: so it is looked at until the scheduler has them all)."""
        end = time.time() + timeout
        while missing := set(names) - set(self.registered()):
            assert time.time() < end, f"workers {sorted(missing)} did not join the scheduler within {timeout:g} s"
            for name in missing:
                process = self.hosts[name].processes.get("worker")
                if process is None or process.poll() is not None:
                    self.start_worker(name)
            time.sleep(1)

    def ask(self, expression: str):
        """``expression`` of a Dask client ``c`` on the coordinator host, as JSON."""
        code = (
            "import json; from distributed import Client\n"
            f"c = Client({self.address!r}, set_as_default=False, timeout=60)\n"
            f"print(json.dumps({expression})); c.close()"
        )
        return self.coordinator.python(code, env=self.client_env())

    def workers(self) -> dict:
        """name -> address of every worker the scheduler has."""
        return self.ask("{w['name']: a for a, w in c.scheduler_info(n_workers=-1)['workers'].items()}")

    def registered(self) -> dict:
        """name -> address of the workers the scheduler has, from its log (no client to start)."""
        found = {}
        for line in (self.folder / "scheduler.log").read_text().splitlines():
            if " worker addr: " in line and " name: " in line:
                address, name = line.split(" worker addr: ")[1].split(" name: ")
                name = name.split()[0]
                if "Register worker" in line:
                    found[name] = address
                elif "Remove worker" in line and found.get(name) == address:
                    del found[name]
        return found

    def wait_for_workers(self, names: list, timeout: float = 180) -> None:
        end = time.time() + timeout
        while not set(names) <= set(self.registered()):
            if time.time() > end:
                raise RuntimeError(f"workers {names} did not join the scheduler within {timeout:g} s")
            time.sleep(1)

    def grade(self, course: str, *args, env: dict | None = None, tls: bool = True) -> subprocess.Popen:
        """``backprop-ninja grade`` of the course at ``course`` on the coordinator host (with docs/cluster.md's TLS
        settings, unless not ``tls``)."""
        argv = [self.coordinator.interpreter, "-m", "autograder.cli", "grade", "--course", course, "--quiet", *args]
        env = {**(self.client_env() if tls else {}), **(env or {})}
        return self.coordinator.popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def link(self, name: str, up: bool) -> None:
        """Plug the host's cable into the switch, or pull it out."""
        sh("ip", "-n", self.switch, "link", "set", name, "up" if up else "down")

    def delay(self, name: str, delay: str | None) -> bool:
        """``tc netem`` latency on the host's port (None: removed); False when the kernel has no netem."""
        if delay is None:
            sh("ip", "netns", "exec", self.switch, TC, "qdisc", "del", "dev", name, "root", check=False)
            return True
        netem = ["qdisc", "add", "dev", name, "root", "netem", "delay", delay]
        return sh("ip", "netns", "exec", self.switch, TC, *netem, check=False).returncode == 0

    def staged(self, name: str) -> set:
        """The students a worker host is grading now (its private course's staged folders)."""
        folder = self.hosts[name].path(f"{self.hosts[name].home}/dask")
        return {p.name for p in folder.glob("**/.grading/staged/*") if p.is_dir()}

    def autograding(self, name: str) -> set:
        """The students whose notebooks a worker host's nbgrader has begun to grade (their autograded folders): the
        part of a student that its grading seconds count, after the host's grader processes started."""
        folder = self.hosts[name].path(f"{self.hosts[name].home}/dask")
        return {p.name for p in folder.glob("**/autograded/*") if p.is_dir()}

    def courses(self, name: str) -> list:
        """The private courses a worker host holds now (``remote.PrivateCourse``: one while it has the course)."""
        folder = self.hosts[name].path(f"{self.hosts[name].home}/dask")
        return [p for p in folder.glob("**/backprop-ninja-*") if p.is_dir()]

    def kernels(self, name: str) -> list:
        """The sandboxes (bwrap processes) running on a host."""
        import psutil

        found = []
        for pid in self.hosts[name].pids():
            with contextlib.suppress(psutil.NoSuchProcess):
                if psutil.Process(pid).name() == "bwrap":
                    found.append(pid)
        return found

    def close(self) -> None:
        for name in [n for n in self.hosts if n != "coordinator"] + ["coordinator"]:
            if name in self.hosts:
                self.hosts[name].close()
        for name in list(self.hosts) + ["switch"]:
            sh("ip", "netns", "del", f"{self.prefix}-{name}", check=False)
        self.hosts = {}


def remove_stale() -> None:
    """Namespaces and cgroups left by a test run that was killed (its pid, in their names, is gone)."""
    listed = sh("ip", "netns", "list", check=False).stdout.split()
    groups = [p for kind in ("cpu", "cpuacct") for p in (CGROUPS / kind).glob("bnc*-*")]
    for name in [n for n in listed if n.startswith("bnc") and "-" in n] + [g.name for g in groups]:
        pid = name[3:].split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            sh("ip", "netns", "del", name, check=False)
            for group in groups:
                if group.name == name:
                    with contextlib.suppress(OSError):
                        group.rmdir()

"""Servers the slow tests start: the Formgrader (nbgrader's web app, through its REST API), a Dask cluster on
loopback, and a PostgreSQL server."""

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.course import NEWCOMER_ENV, free_port


class FormgraderApi:
    """nbgrader's Formgrader HTTP API as its pages call it: ``get``, ``put``, ``post`` a path under /formgrader/api."""

    def __init__(self, base: str, headers: dict):
        self.base, self.headers = base, headers

    def call(self, method: str, path: str, data=None):
        import requests

        answer = requests.request(method, f"{self.base}/{path}", headers=self.headers, json=data, timeout=900)
        answer.raise_for_status()
        return answer.json()

    def get(self, path: str):
        return self.call("GET", path)

    def put(self, path: str, data: dict):
        return self.call("PUT", path, data)

    def post(self, path: str):
        return self.call("POST", path)


@contextlib.contextmanager
def formgrader(root, user=None):
    """A Jupyter server on the course root, with nbgrader's Formgrader as the instructor's JupyterLab has it; run by
    ``user`` (``support.users.User``) when given, else by the suite."""
    import requests

    token, port = secrets.token_hex(16), free_port()
    log_path = root / "formgrader-server.log"  # in the temporary course: removed with it
    log = open(log_path, "w")
    python, env = (user.python, user.env) if user else (sys.executable, NEWCOMER_ENV)
    argv = (
        [python, "-m", "jupyter_server", f"--port={port}", "--ServerApp.ip=127.0.0.1", "--allow-root"]
        + [f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False"]
        # jupyter_lsp's start-up scan for language servers logs into the log that nbgrader captures, at DEBUG
        + ["--ServerApp.jpserver_extensions", "jupyter_lsp=False"]
    )
    server = subprocess.Popen(
        user.argv(*argv) if user else argv,
        cwd=root,
        env={**env, "JUPYTER_RUNTIME_DIR": str(root / "jupyter-runtime")},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    api = FormgraderApi(f"http://127.0.0.1:{port}/formgrader/api", {"Authorization": f"token {token}"})
    try:
        end = time.time() + 120
        while True:
            assert server.poll() is None and time.time() < end, log_path.read_text()[-3000:]
            with contextlib.suppress(requests.ConnectionError):
                if requests.get(f"{api.base}/status", headers=api.headers, timeout=5).ok:
                    break
            time.sleep(0.5)
        yield api
    finally:
        server.terminate()
        server.wait(60)
        log.close()


DASK = [sys.executable, "-m", "distributed.cli.dask_scheduler"], [sys.executable, "-m", "distributed.cli.dask_worker"]
WORKER_ENV = {**NEWCOMER_ENV, "OMP_NUM_THREADS": "1"}  # Dask workers on this machine: one torch thread each


def ends_with_parent(sig: int = signal.SIGTERM) -> None:
    """In a child process: be sent ``sig`` when the process that started it dies (pytest killed, say)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, sig)  # PR_SET_PDEATHSIG


class LoopbackCluster:
    """A Dask cluster on this machine, as machines of their own would run it: ``dask scheduler`` and ``dask worker``
    processes on 127.0.0.1 (each worker one task at a time, with a nanny that restarts it), and a client to watch
    them. ``close()`` stops them all."""

    def __init__(self, folder: Path, workers: int = 2):
        from distributed import Client

        self.folder, self.port = folder, free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.processes, self.client = {}, None
        try:
            self.start("scheduler", DASK[0] + ["--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"])
            for number in range(1, workers + 1):
                self.start_worker(f"worker-{number}")
            self.client = Client(self.address, set_as_default=False, timeout=60)
            self.client.wait_for_workers(workers, timeout=180)
        except BaseException:
            self.close()
            raise

    def start(self, name: str, argv: list, env=None) -> None:
        with open(self.folder / f"{name}.log", "ab") as log:
            self.processes[name] = subprocess.Popen(
                argv,
                cwd=self.folder,
                env=env or WORKER_ENV,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=ends_with_parent,
            )

    def start_worker(self, name: str, env=None) -> None:
        local = self.folder / name
        argv = DASK[1] + [self.address, "--host", "127.0.0.1", "--nthreads", "1", "--no-dashboard"]
        self.start(name, argv + ["--name", name, "--local-directory", str(local)], env)

    def stop(self, name: str) -> None:
        process = self.processes.pop(name)
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def workers(self) -> dict:
        """name -> address of every worker the scheduler knows."""
        return {w["name"]: a for a, w in self.client.scheduler_info(n_workers=-1)["workers"].items()}

    def close(self) -> None:
        if self.client:
            self.client.close()
        for name in [n for n in self.processes if n != "scheduler"] + ["scheduler"]:
            self.stop(name)


class Postgres:
    """A PostgreSQL server of the tests' own (Debian's initdb and pg_ctl): a Unix socket in a private folder, no
    TCP port; as root, run as the unprivileged ``postgres`` user. Stopped and removed at the end."""

    @staticmethod
    def unavailable() -> str | None:
        """Why no server can start here, or None."""
        if not sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
            return "PostgreSQL is not installed (tools/install.sh --test installs it)"
        return None

    def __init__(self):
        import pwd
        import tempfile

        self.bin = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))[-1].parent
        self.folder = Path(tempfile.mkdtemp(prefix="backprop-ninja-postgres-"))
        self.owner = {}
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
            self.owner = {"user": user.pw_uid, "group": user.pw_gid}
        self.run("initdb", "-D", self.folder / "data", "-U", "grader", "--auth=trust", "-E", "UTF8", "--no-locale")
        options = f"-c listen_addresses='' -c unix_socket_directories={self.folder}"
        self.run("pg_ctl", "-D", self.folder / "data", "-o", options, "-l", self.folder / "server.log", "-w", "start")

    def run(self, program: str, *args) -> None:
        env = {"PATH": "/usr/bin:/bin", "LANG": "C"}
        subprocess.run([self.bin / program, *map(str, args)], check=True, capture_output=True, env=env, **self.owner)

    def database(self, name: str) -> str:
        """A new, empty database; its URL as nbgrader_config.py names it."""
        self.run("createdb", "-h", self.folder, "-U", "grader", name)
        return f"postgresql+psycopg://grader@/{name}?host={self.folder}"

    def stop(self) -> None:
        self.run("pg_ctl", "-D", self.folder / "data", "-m", "fast", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)

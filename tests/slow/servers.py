"""Servers the slow tests start: the Formgrader (nbgrader's web app, through its REST API) and a Dask cluster on
loopback."""

import contextlib
import secrets
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

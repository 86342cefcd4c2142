"""Shared by the tests: a real course folder driven by the real nbgrader commands, and a real headless
Chromium driven over its DevTools protocol."""

import base64
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.common.tools import start_up
from autograder.data import EMBEDDED_NAMES, NAMES_VARIABLE

start_up()  # the tests run nbgrader in process too, as the course's entry points do: alembic on PATH

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "tests" / "artifacts"  # screenshots the browser tests keep
NAMES = EMBEDDED_NAMES
ASSIGNMENT = "backprop_ninja"
os.environ[NAMES_VARIABLE] = str(NAMES)  # notebooks run from temporary folders read it too: never download
# The real commands run as a newcomer's fresh shell runs them: no venv on PATH, nothing else set.
NEWCOMER_ENV = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/local/bin:/usr/bin:/bin"}


class Course:
    """A temporary course root with this repository's config and source notebooks."""

    def __init__(self, root: Path):
        self.root = root
        shutil.copy(REPO / "nbgrader_config.py", root)
        shutil.copytree(REPO / "source", root / "source")

    def nbgrader(self, *args, check=True):
        result = subprocess.run(
            [sys.executable, "-m", "nbgrader", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=3600,
            env=NEWCOMER_ENV,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"nbgrader {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
        return result

    def notebook(self, kind: str, name: str):
        return nbformat.read(self.root / kind / ASSIGNMENT / f"{name}.ipynb", as_version=4)

    def submit(self, student: str, name: str, nb) -> None:
        folder = self.root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, folder / f"{name}.ipynb")

    def scores(self, student: str, name: str) -> dict:
        """grade_id -> auto score of every graded cell of one notebook."""
        with Gradebook(f"sqlite:///{self.root / 'gradebook.db'}") as gb:
            nb = gb.find_submission_notebook(name, ASSIGNMENT, student)
            return {g.name: g.auto_score for g in nb.grades}

    def max_scores(self, name: str) -> dict:
        with Gradebook(f"sqlite:///{self.root / 'gradebook.db'}") as gb:
            nb = gb.find_notebook(name, ASSIGNMENT)
            return {c.name: c.max_score for c in nb.grade_cells}

    def messages(self, student: str, name: str) -> dict:
        """grade_id -> the text the grader wrote in each graded cell of the autograded notebook."""
        nb = nbformat.read(self.root / "autograded" / student / ASSIGNMENT / f"{name}.ipynb", as_version=4)
        found = {}
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
            if cell.metadata.get("nbgrader", {}).get("grade"):
                found[gid] = "".join(
                    o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"
                )
        return found

    def feedback(self, student: str, name: str) -> "FeedbackPage":
        return FeedbackPage((self.root / "feedback" / student / ASSIGNMENT / f"{name}.html").read_text())

    def summary_rows(self, student: str, name: str, order: list) -> list:
        """What the feedback's table must say of each graded cell in ``order``, from the gradebook and the
        autograded notebook: (grade_id, ✔ or ✘, "score / max", the grader's first reason)."""
        scores, maximum, messages = self.scores(student, name), self.max_scores(name), self.messages(student, name)
        return [
            (g, "✔" if scores[g] == maximum[g] else "✘", f"{scores[g]:g} / {maximum[g]:g}", reasons(messages[g])[0])
            for g in order
        ]


def reasons(message: str) -> list:
    """The lines of a grader's verdict after its first (``✔ d<name>: p of m points``)."""
    return [line.strip() for line in message.splitlines()[1:] if line.strip()]


@dataclass
class StepRow:
    """One row of the table of steps at the top of a feedback page."""

    mark: str  # ✔ or ✘
    step: str  # as the grader names it
    anchor: str  # where its link goes (without the #)
    points: str  # "0 / 1"
    first: bool  # marked as the first step to fix
    reasons: list = field(default_factory=list)


class FeedbackPage(HTMLParser):
    """A feedback HTML page as its reader meets it: the table of steps on top, every link, every anchor."""

    def table(self) -> list:
        """The table's rows as ``Course.summary_rows`` gives them."""
        return [(r.anchor, r.mark, r.points, r.reasons[0] if r.reasons else None) for r in self.rows]

    def first_to_fix(self) -> list:
        return [r.anchor for r in self.rows if r.first]

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.text, self.headline, self.notes, self.rows = text, "", [], []
        self.anchors, self.links = set(), []  # names and ids on the page; every href
        self._open = []  # the class lists of the open <div>s of the summary
        self.feed(text)

    def _inside(self, name: str) -> bool:
        return any(name in classes for classes in self._open)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.anchors.update(v for k, v in attrs.items() if k in ("id", "name") and v)
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
            if self._inside("step-name"):
                self.rows[-1].anchor = attrs["href"].removeprefix("#")
        if tag != "div" or not (self._open or "steps-summary" in (attrs.get("class") or "")):
            return
        classes = (attrs.get("class") or "").split()
        if "steps-row" in classes and "steps-head" not in classes:
            self.rows.append(StepRow("", "", "", "", "step-first" in classes))
        elif "steps-notes" in classes:
            self.notes.append("")
        elif self._open and "step-reason" in self._open[-1]:
            self.rows[-1].reasons.append("")
        self._open.append(classes)

    def handle_endtag(self, tag):
        if tag == "div" and self._open:
            self._open.pop()

    def handle_data(self, data):
        if not self._open:
            return
        row = self.rows[-1] if self.rows else None
        if self._inside("steps-headline"):
            self.headline += data
        elif self._inside("steps-notes"):
            self.notes[-1] += data
        elif self._inside("step-mark"):
            row.mark += data.strip()
        elif self._inside("step-name") and data != "fix first":
            row.step += data.strip()
        elif self._inside("step-points"):
            row.points += data
        elif self._inside("step-reason") and row.reasons:
            row.reasons[-1] += data


@contextlib.contextmanager
def temporary_course(prefix: str = "backprop-ninja-course-", only: str | tuple | None = None):
    """A course in a fresh folder whose release was generated by ``nbgrader generate_assignment`` (of the
    notebook `only` or the notebooks in it, or of all); removed afterwards unless $KEEP_TEST_COURSE is set."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o755)  # the sandboxed kernels run as other uids and must be able to enter the course
    try:
        course = Course(root)
        for other in (root / "source" / ASSIGNMENT).glob("*.ipynb"):
            if only and other.stem not in ((only,) if isinstance(only, str) else only):
                other.unlink()
        course.nbgrader("generate_assignment", ASSIGNMENT, "--force")
        yield course
    finally:
        if not os.environ.get("KEEP_TEST_COURSE"):
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def course():
    """A course of its own for each test module: modules reuse student names ("solution", "blank"), and
    nbgrader skips a student it already autograded."""
    assert NAMES.is_file(), f"the tests need {NAMES}"
    with temporary_course() as c:
        yield c


DEMO_FOUR = ["ada_perfect", "ben_sign", "cleo_keepdim", "finn_blank"]  # four students of the demo class


def demo_four(folder: Path) -> Path:
    """The demo course with four of its students (DEMO_FOUR), graded by nobody yet."""
    from autograder.authoring.demo import make_demo_course

    root = make_demo_course(folder / "course")
    for student in (root / "submitted").iterdir():
        if student.name not in DEMO_FOUR:
            shutil.rmtree(student)
    return root


def copy_of(course: Path, tmp_path: Path) -> Path:
    """A copy of ``course`` in ``tmp_path``, that a sandboxed kernel (another uid) can enter."""
    root = tmp_path / "course"
    shutil.copytree(course, root)
    root.chmod(0o755)
    tmp_path.chmod(0o755)
    return root


def grade_argv(root: Path, *args) -> list:
    """``backprop-ninja grade`` on the course at ``root``, as a newcomer types it (no venv activated)."""
    return [sys.executable, "-m", "autograder.cli", "grade", "--course", str(root), *args]


def run_grade(root: Path, *args, check=True, env=None, timeout=3600) -> subprocess.CompletedProcess:
    """Run ``grade_argv``; with ``check``, a failed run fails the test with grade's own output."""
    env = NEWCOMER_ENV if env is None else env
    result = subprocess.run(grade_argv(root, *args), capture_output=True, text=True, timeout=timeout, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"grade failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
    return result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
def formgrader(root):
    """A Jupyter server on the course root, with nbgrader's Formgrader as the instructor's JupyterLab has it."""
    import requests

    token, port = secrets.token_hex(16), free_port()
    log_path = root / "formgrader-server.log"  # in the temporary course: removed with it
    log = open(log_path, "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", f"--port={port}", "--ServerApp.ip=127.0.0.1", "--allow-root"]
        + [f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False"]
        # jupyter_lsp's start-up scan for language servers logs into the log that nbgrader captures, at DEBUG
        + ["--ServerApp.jpserver_extensions", "jupyter_lsp=False"],
        cwd=root,
        env={**NEWCOMER_ENV, "JUPYTER_RUNTIME_DIR": str(root / "jupyter-runtime")},
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


class Chromium:
    """Headless Chromium (Debian's ``chromium``) driven through the DevTools protocol: a websocket, no driver."""

    FLAGS = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-background-timer-throttling",
        "--disable-renderer-backgrounding",
        "--window-size=1400,1000",
    ]

    def __init__(self, profile: Path):
        import requests
        import websocket

        self.process = subprocess.Popen(
            [
                shutil.which("chromium"),
                *self.FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file, end = profile / "DevToolsActivePort", time.time() + 60
        while not (port_file.exists() and len(port_file.read_text().split()) == 2):
            assert time.time() < end and self.process.poll() is None, "Chromium did not start"
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        page = next(
            t for t in requests.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json() if t["type"] == "page"
        )
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.calls = 0

    def send(self, method, **params):
        self.calls += 1
        self.socket.send(json.dumps({"id": self.calls, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.calls:
                assert "error" not in message, message
                return message.get("result", {})

    def js(self, expression):
        return self.send("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def wait_for(self, expression, timeout=180):
        end = time.time() + timeout
        while not (value := self.js(expression)):
            assert time.time() < end, f"timed out waiting for {expression}"
            time.sleep(0.2)
        return value

    def key(self, key, code, keycode, modifiers=0, text=None):
        event = dict(key=key, code=code, windowsVirtualKeyCode=keycode, modifiers=modifiers)
        self.send("Input.dispatchKeyEvent", type="keyDown", **event, **({"text": text} if text else {}))
        self.send("Input.dispatchKeyEvent", type="keyUp", **event)

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        """A PNG of the viewport, or of the whole page (as tall as its content)."""
        params = {"format": "png"}
        if full_page:
            width, height = self.js("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params.update(
                captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", **params)["data"]))
        return path

    def close(self):
        self.socket.close()
        self.process.terminate()
        self.process.wait(30)


DASK = [sys.executable, "-m", "distributed.cli.dask_scheduler"], [sys.executable, "-m", "distributed.cli.dask_worker"]
WORKER_ENV = {**NEWCOMER_ENV, "OMP_NUM_THREADS": "1"}  # Dask workers on this machine: one torch thread each


def ends_with_parent() -> None:
    """In a child process: be sent SIGTERM when the process that started it dies (pytest killed, say)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def wait_until(condition, timeout: float, what: str, step: float = 0.5):
    end = time.time() + timeout
    while not (found := condition()):
        assert time.time() < end, f"timed out after {timeout:g} s waiting for {what}"
        time.sleep(step)
    return found


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

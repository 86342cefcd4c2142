"""The sandboxed grading kernel, with real kernels in bubblewrap (no mocks)."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import zmq
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from nbformat.v4 import new_code_cell, new_notebook
from support.processes import linger, named
from traitlets.config import Config

from autograder.data import EMBEDDED_NAMES
from autograder.preprocessors import GradingExecute
from autograder.sandbox import SandboxedKernelManager, SandboxError, environment, policy
from autograder.sandbox.kernel_manager import PACKAGE_DIR

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap); CI installs it"
)

ROOT = os.geteuid() == 0
SANDBOX_UID = SandboxedKernelManager().sandbox_uid
MEMORY_LIMIT = 4 * 2**30


@pytest.fixture(scope="module")
def course():
    """A course root outside /tmp, as in production, where a tmpfs over it hides it."""
    base = Path(tempfile.mkdtemp(prefix="sandbox-test-", dir="/var/tmp"))
    base.chmod(0o755)  # like any course's parent: the kernel's uid may pass through
    course = base / "course"
    for student in ("alice", "bob"):
        (course / "autograded" / student / "ps1").mkdir(parents=True)
    (course / "autograded" / "bob" / "ps1" / "answers.txt").write_text("bob's work")
    (course / "source" / "ps1").mkdir(parents=True)
    (course / "source" / "ps1" / "ps1.ipynb").write_text("hidden tests")
    (course / "submitted").mkdir()
    (course / "gradebook.db").write_text("grades")
    yield course
    shutil.rmtree(base)


@pytest.fixture(scope="module")
def grader_tmp(tmp_path_factory):
    """The grader's /tmp: hidden from the kernel, except for the names file bound back."""
    tmp = tmp_path_factory.mktemp("grader")
    (tmp / "grader-secret.txt").write_text("not for students")
    (tmp / "names.txt").write_text("emma\nolivia\n")
    return tmp


def config(course, **traits):
    c = Config()
    c.SandboxedKernelManager.course_root = str(course)
    c.SandboxedKernelManager.memory_limit = MEMORY_LIMIT
    for name, value in traits.items():
        setattr(c.SandboxedKernelManager, name, value)
    return c


def client(course, student, cells=(), **kw):
    nb = new_notebook(cells=[new_code_cell(src) for src in cells])
    return NotebookClient(
        nb,
        kernel_manager_class=SandboxedKernelManager,
        config=config(course),
        timeout=60,
        allow_errors=True,
        resources={"metadata": {"path": str(course / "autograded" / student / "ps1")}},
        **kw,
    )


class Kernel:
    def __init__(self, nbclient):
        self.client = nbclient

    def run(self, code):
        """Run a cell; return its stdout, raising AssertionError on an error output."""
        cell = new_code_cell(code)
        self.client.nb.cells.append(cell)
        self.client.execute_cell(cell, len(self.client.nb.cells) - 1)
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, f"{errors[0].ename}: {errors[0].evalue}"
        return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")

    def json(self, code):
        return json.loads(self.run(code + "\nimport json; print(json.dumps(result))"))


@pytest.fixture(scope="module")
def kernel(course, grader_tmp):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NBGRADER_EXECUTION", "autograde")
        mp.setenv("BACKPROP_NINJA_NAMES", str(grader_tmp / "names.txt"))
        mp.setenv("BACKPROP_NINJA_SEED", "7")
        mp.setenv("GRADER_SECRET_TOKEN", "do-not-leak")
        mp.setenv("JPY_API_TOKEN", "do-not-leak")
        c = client(course, "alice")
        with c.setup_kernel():
            yield Kernel(c)


LINGERER = "sandbox-linger"  # a process a kernel leaves behind (``linger``)


def test_runs_code_and_torch_unprivileged(kernel):
    r = kernel.json(
        "import os, torch\n"
        "status = open('/proc/self/status').read()\n"
        "result = [torch.ones(3).sum().item(), os.getuid(),\n"
        "          [l.split()[1] for l in status.splitlines() if l.startswith('CapEff')][0],\n"
        "          os.path.realpath(os.getcwd()), open('/proc/self/oom_score_adj').read()]"
    )
    assert r[0] == 3.0
    assert r[2] == "0000000000000000"  # no capabilities
    assert r[3] == "/scratch"  # a copy of the student's folder, in memory
    assert r[4].strip() == "1000"  # under memory pressure the OOM killer takes a sandbox first
    if ROOT:
        assert r[1] == SANDBOX_UID


def test_writes_only_to_its_scratch_and_nothing_reaches_the_machine(kernel, course):
    own = course / "autograded" / "alice" / "ps1"
    targets = {
        "own": "out.txt",
        "own folder": str(own / "out.txt"),
        "tmp": "/tmp/scratch.txt",
        "course": str(course / "hack.txt"),
        "bob": str(course / "autograded" / "bob" / "ps1" / "answers.txt"),
        "root": "/hack.txt",
        "package": os.path.join(PACKAGE_DIR, "hack.txt"),
    }
    r = kernel.json(
        f"targets = {targets!r}\nresult = {{}}\n"
        "for name, path in targets.items():\n"
        "    try:\n"
        "        open(path, 'w').write('x'); result[name] = 'ok'\n"
        "    except OSError as e:\n"
        "        result[name] = type(e).__name__\n"
    )
    assert r["own"] == "ok" and r["tmp"] == "ok"
    assert not (own / "out.txt").exists()  # it wrote its copy; the student's folder itself is read-only
    for name in ("own folder", "course", "bob", "root", "package"):
        assert r[name] != "ok", name
    assert not (course / "hack.txt").exists() and not os.path.exists("/hack.txt")
    assert (course / "autograded" / "bob" / "ps1" / "answers.txt").read_text() == "bob's work"


def test_course_secrets_are_invisible(kernel, course, grader_tmp):
    """Alice's folder is shown on the kernel parent's stage, not where it lies: nothing of the course is in sight."""
    r = kernel.json(
        f"import os\ncourse, tmp = {str(course)!r}, {str(grader_tmp)!r}\n"
        "def listing(path):\n"
        "    try:\n        return sorted(os.listdir(path))\n"
        "    except OSError as e:\n        return type(e).__name__\n"
        "result = {'course': listing(course), 'tmp': listing(tmp), 'scratch': listing('.')}\n"
        "for path in ('/gradebook.db', '/source/ps1/ps1.ipynb', '/autograded/bob/ps1/answers.txt'):\n"
        "    try:\n"
        "        open(course + path).read(); result[path] = 'read'\n"
        "    except OSError as e:\n"
        "        result[path] = type(e).__name__\n"
    )
    assert r["course"] == "FileNotFoundError" and "answers.txt" not in r["scratch"]  # (bob's)
    assert r["/gradebook.db"] == r["/source/ps1/ps1.ipynb"] == "FileNotFoundError"
    assert r["/autograded/bob/ps1/answers.txt"] == "FileNotFoundError"
    assert r["tmp"] == ["names.txt"]  # no grader-secret.txt: the kernel's /tmp is private


def test_environment_is_filtered(kernel):
    r = kernel.json(
        "import os\nresult = [os.environ.get('NBGRADER_EXECUTION'),\n"
        "  os.environ.get('BACKPROP_NINJA_SEED'), open(os.environ['BACKPROP_NINJA_NAMES']).read(), dict(os.environ)]"
    )
    assert r[:3] == ["autograde", "7", "emma\nolivia\n"]
    assert "do-not-leak" not in json.dumps(r[3]) and "GRADER_SECRET_TOKEN" not in r[3] and "JPY_API_TOKEN" not in r[3]
    assert r[3]["JPY_PARENT_PID"] == "1" and r[3]["HOME"] == "/tmp"


MINIMAL_DEV = {"core", "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout", "tty"}
MINIMAL_DEV |= {"urandom", "zero", "console"}


def test_the_kernel_sees_only_its_allow_list(kernel, course, grader_tmp):
    """What a curious kernel finds when it looks around: /, /etc, /proc, /sys, /dev."""
    r = kernel.json(
        "import os\n"
        "def listing(path):\n"
        "    try:\n        return sorted(os.listdir(path))\n"
        "    except OSError as e:\n        return type(e).__name__\n"
        "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
        "result = {path: listing(path) for path in ('/', '/etc', '/sys', '/dev', '/srv', '/opt', '/home', '/run')}\n"
        "result['etc files'] = {n: len(open('/etc/' + n, 'rb').read()) for n in ('passwd', 'group', 'ld.so.cache')}\n"
        "result['passwd'] = open('/etc/passwd').read()\n"
        "result['processes'] = [open(f'/proc/{p}/cmdline', 'rb').read().split(b'\\0')[0].decode() for p in pids]\n"
        "result['me'] = [os.getpid(), os.getuid()]"
    )
    granted_tops = {p.split("/")[1] for p in (sys.prefix, sys.base_prefix, PACKAGE_DIR, str(course), str(grader_tmp))}
    tops = {"bin", "lib", "lib64", "usr", "etc", "proc", "dev", "tmp", "scratch", "sockets"} | granted_tops
    assert set(r["/"]) <= tops, set(r["/"]) - tops
    assert not set(r["/"]) & ({"srv", "opt", "home", "run", "sys", "boot", "mnt", "media", "root"} - granted_tops)
    assert r["/etc"] == ["fonts", "group", "ld.so.cache", "passwd"]
    assert r["passwd"] == f"student:x:{r['me'][1]}:{r['me'][1]}:student:/tmp:/usr/sbin/nologin\n"
    for absent in ("/sys", "/srv", "/opt", "/run"):
        assert r[absent] == "FileNotFoundError", absent
    assert set(r["/dev"]) <= MINIMAL_DEV, set(r["/dev"]) - MINIMAL_DEV
    # its own pid namespace: the kernel parent and the kernel (and as root, bubblewrap's init, pid 1); nothing of the
    # grader's or of other kernels
    assert len(r["processes"]) <= 3, r["processes"]
    assert all(os.path.basename(p) in ("bwrap", "python", "python3") for p in r["processes"]), r["processes"]


@pytest.mark.skipif(not ROOT, reason="without root, every kernel above already runs in the unprivileged sandbox")
def test_the_unprivileged_sandbox_works_too(course):
    """The command line a grader that is not root uses (a user namespace, no setpriv), run as 'nobody', with the
    system's Python (the venv's base Python is not readable by 'nobody' on every machine), and a copy of the
    package and the data that 'nobody' can read (a checkout under a private folder is not)."""
    folder = course / "autograded" / "carol" / "ps1"
    folder.mkdir(parents=True)
    run = Path(tempfile.mkdtemp(prefix="sandbox-run-"))
    try:
        (run / "connection").mkdir()
        package = shutil.copytree(PACKAGE_DIR, run / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
        names = shutil.copy(EMBEDDED_NAMES, run / "names.txt")
        for path, text in zip((run / "passwd", run / "group"), policy.account_files(65534, 65534)):
            path.write_text(text)
        for path in (folder, run, run / "connection"):
            os.chown(path, 65534, 65534)
        run.chmod(0o755)
        paths = policy.KernelPaths(
            str(folder), str(course), str(run / "connection"), ("/usr",), str(package), str(names),
            str(run / "passwd"), str(run / "group"),
        )  # fmt: skip
        tools = policy.Tools(bwrap=shutil.which("bwrap"), prlimit=shutil.which("prlimit"))
        probe = (
            "import os, json\n"
            "def attempt(path):\n"
            "    try:\n        open(path, 'w').write('x'); return 'wrote'\n"
            "    except OSError as e:\n        return type(e).__name__\n"
            "print(json.dumps([os.getuid(), sorted(os.listdir('/')), sorted(os.listdir('/etc')), attempt('own.txt'),\n"
            f"    attempt('/x'), attempt('{course}/gradebook.db'), len(open('{names}').read()),\n"
            f"    os.path.exists('{course}/source'), os.environ.get('SECRET_TOKEN')]))"
        )
        argv = policy.command_line(["/usr/bin/python3", "-c", probe], paths, tools, {"as": MEMORY_LIMIT}, 2**20)
        env = environment.kernel_environment(
            {**os.environ, "SECRET_TOKEN": "do-not-leak"}, "/usr/bin/python3", PACKAGE_DIR
        )
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        result = subprocess.run(nobody + argv, capture_output=True, text=True, env=env, timeout=60)
        assert result.returncode == 0, result.stderr
        uid, top, etc, own, root, gradebook, names, source, secret = json.loads(result.stdout)
        assert uid == 65534 and "--unshare-user" in argv and "--cap-drop" not in argv
        granted_tops = {p.split("/")[1] for p in (str(course), str(run))}
        assert (
            set(top) <= {"bin", "lib", "lib64", "usr", "etc", "proc", "dev", "tmp", "scratch", "sockets"} | granted_tops
        ), top
        assert etc == ["fonts", "group", "ld.so.cache", "passwd"]
        assert own == "wrote" and not (folder / "own.txt").exists()  # in its scratch
        assert root != "wrote" and gradebook != "wrote" and (course / "gradebook.db").read_text() == "grades"
        assert names == EMBEDDED_NAMES.stat().st_size and not source and secret is None
    finally:
        shutil.rmtree(run)
        shutil.rmtree(folder.parent)


def test_no_network(kernel):
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # it is reachable here
        r = kernel.json(
            "import socket\ntry:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2); result = 'connected'\n"
            "except OSError as e:\n    result = type(e).__name__"
        )
    assert r == "ConnectionRefusedError"


def test_memory_limit(kernel):
    r = kernel.json(
        "import torch\nresult = []\n"
        "for make in (lambda: bytearray(50 * 2**30), lambda: torch.empty(50 * 2**30, dtype=torch.uint8)):\n"
        "    try:\n        make(); result.append('allocated')\n"
        "    except (MemoryError, RuntimeError) as e:\n        result.append(type(e).__name__)\n"
        "chunks = []  # address space adds up, even untouched\ntry:\n"
        "    while True: chunks.append(torch.empty(256 * 2**20, dtype=torch.uint8))\n"
        "except RuntimeError:\n    result.append(len(chunks))\ndel chunks"
    )
    assert r[:2] == ["MemoryError", "RuntimeError"]
    assert 0 < r[2] * 256 * 2**20 < MEMORY_LIMIT
    assert kernel.run("print(1 + 1)") == "2\n"


def test_memory_that_outlives_the_kernel_cannot_be_made(kernel):
    # A System V segment stays after its maker has ended, outside RLIMIT_AS; files in /dev/shm count in its tmpfs
    r = kernel.json(
        "import ctypes, errno, torch\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "made = libc.shmget(0, 2**30, 0o1600)\n"
        "result = [made, errno.errorcode.get(ctypes.get_errno())]\n"
        "result.append(torch.zeros(64, dtype=torch.uint8).share_memory_().numel())"  # a /dev/shm file
    )
    assert r == [-1, "EPERM", 64]


def test_a_user_namespace_cannot_be_made(kernel):
    # As root the kernel is a plain uid, which Linux lets make a user namespace: every capability inside it.
    # (The kernel's own process has threads, so unshare(2) there fails anyway: a fork of it asks.)
    r = kernel.json(
        "import ctypes, errno, os\nlibc = ctypes.CDLL(None, use_errno=True)\nanswer, answered = os.pipe()\n"
        "if os.fork() == 0:\n    made = libc.unshare(0x10000000)\n"  # CLONE_NEWUSER
        "    os.write(answered, (errno.errorcode[ctypes.get_errno()] if made else 'made').encode())\n"
        "    os._exit(0)\nresult = [os.read(answer, 64).decode()]"
    )
    assert r == ["EPERM"], r


def test_a_kernel_starts_no_program(kernel):
    """A new Python would have autograd whole (process_guards.refuse_exec): the kernel can fork, but not exec."""
    r = kernel.json(
        "import os, subprocess, sys\nresult = []\n"
        "for argv in ([sys.executable, '-c', 'pass'], ['/bin/sh', '-c', 'true']):\n"
        "    try:\n        subprocess.run(argv)\n        result.append('ran')\n"
        "    except OSError as error:\n        result.append(type(error).__name__)\n"
        "result.append(os.system('true'))"
    )
    assert r == ["PermissionError", "PermissionError", 127 << 8], r


def test_what_no_request_asked_for_reaches_no_queue_of_the_graders(kernel):
    """nbclient never reads stdin: what a kernel sent there stayed in ZeroMQ's queue until the kernel ended (1,000
    messages of up to 1 MiB each, 1.1 GB; control the same). The relay passes none of it, and the kernel goes on."""
    kernel.run(
        "k = get_ipython().kernel\n"
        "for _ in range(20):\n"
        "    k.session.send(k.stdin_socket, 'input_request', {'prompt': 'x' * 10000, 'password': False},\n"
        "                   parent=k.get_parent(), ident=k._parent_ident['shell'])"
    )
    stdin = zmq.Socket.shadow(kernel.client.kc.stdin_channel.socket.underlying)
    assert stdin.poll(2000) == 0, "a message of the kernel's waits unread on the grader's stdin socket"
    assert kernel.client.km.relay.unasked >= 20
    assert kernel.run("print('still here')") == "still here\n"


def test_fork_bomb_is_stopped(kernel):
    r = kernel.json(
        "import os, signal, time\npids, error = [], None\ntry:\n"
        "    for _ in range(1000):\n        pid = os.fork()\n"
        "        if pid == 0:\n            time.sleep(60)\n            os._exit(0)\n        pids.append(pid)\n"
        "except OSError as e:\n    error = type(e).__name__\n"
        "for p in pids: os.kill(p, signal.SIGKILL); os.waitpid(p, 0)\nresult = [len(pids), error]"
    )
    assert r[0] < SandboxedKernelManager().process_limit and r[1] == "BlockingIOError"
    assert kernel.run("print('still here')") == "still here\n"


def test_dead_kernel_is_contained(kernel, course):
    bob = course / "autograded" / "bob" / "ps1"
    owner = bob.stat().st_uid
    c = client(
        course,
        "bob",
        [
            "import os\nprint([n for n in os.listdir('/tmp') if n.startswith('nbgrader-')])\n"
            + linger(LINGERER, 300, new_session=True)
            + "open('left.txt', 'w').write('x')",
            "import os; os._exit(1)",
        ],
    )
    with pytest.raises(DeadKernelError):
        c.execute()
    # alice's kernel was running: bob's sees its own socket directory and no other
    assert c.nb.cells[0].outputs[0].text.count("nbgrader-sandbox-") == 1
    assert kernel.run("print('alice unaffected')") == "alice unaffected\n"
    assert not (bob / "left.txt").exists() and bob.stat().st_uid == owner  # it wrote in its scratch, now gone
    if ROOT:  # the detached process died with the sandbox; alice's kernel has the same uid
        deadline = time.monotonic() + 5
        while named(LINGERER, SANDBOX_UID):
            assert time.monotonic() < deadline, "a sandboxed process outlived its kernel"
            time.sleep(0.1)


def test_timeout_interrupts_through_the_courses_execute(course):
    nb = new_notebook(cells=[new_code_cell("while True: pass"), new_code_cell("print('after')")])
    pre = GradingExecute(config=config(course), timeout=3)  # sandboxed, as nbgrader_config.py runs it
    assert pre.kernel_manager_class is SandboxedKernelManager
    start = time.monotonic()
    nb, resources = pre.preprocess(nb, {"metadata": {"path": str(course / "autograded" / "bob" / "ps1")}})
    assert time.monotonic() - start < 30
    errors = [o.ename for o in nb.cells[0].outputs if o.output_type == "error"]
    assert "CellTimeoutError" in errors and "KeyboardInterrupt" in errors  # interrupted
    assert nb.cells[1].outputs[0].text == "after\n"  # and the kernel carried on
    assert [p.kind for p in resources["backprop_ninja"]["incidents"]] == ["cell_timeout"]


ONE_LARGE_MESSAGE = """
kernel = get_ipython().kernel
kernel.session.send(  # one message, as a student could send it: a frame of 8 MB beside a stream's text
    kernel.iopub_socket, "stream", {"name": "stdout", "text": "hidden"}, parent=kernel.get_parent(),
    ident=kernel._topic("stream"), buffers=[bytearray(8 * 2**20)],
)
print("x" * 3 * 2**20, flush=True)  # and a print of 3 MB
print("small")
"""


def test_a_message_over_the_limit_is_dropped_and_named_and_the_notebook_goes_on(course):
    """The relay keeps at most max_message_bytes of one message: the two large ones are dropped as they arrive,
    the cell's small print and the next cell's output arrive, and the cell is named in a message_limit problem."""
    cells = [new_code_cell(ONE_LARGE_MESSAGE), new_code_cell("print('after')")]
    pre = GradingExecute(config=config(course, max_message_bytes=2 * 2**20), timeout=60)
    nb, resources = pre.preprocess(
        new_notebook(cells=cells), {"metadata": {"path": str(course / "autograded" / "bob" / "ps1")}}
    )
    texts = [o.text for o in nb.cells[0].outputs if o.output_type == "stream"]
    assert "small\n" in texts and not [t for t in texts if "hidden" in t or "xxx" in t], texts
    assert "this cell sent a message of more than 2 MB" in texts[-1], texts
    assert nb.cells[1].outputs[0].text == "after\n"
    (problem,) = resources["backprop_ninja"]["incidents"]
    assert problem.kind == "message_limit" and problem.detail.startswith("cell 1 (In [1], "), problem
    assert "sent 2 messages of 8 MB and 3 MB" in problem.detail, problem


MANY_EMPTY_FRAMES = """
kernel = get_ipython().kernel
kernel.session.send(  # one message of 100,000 empty frames: nearly nothing on the wire, much to hold
    kernel.iopub_socket, "stream", {"name": "stdout", "text": "hidden"}, parent=kernel.get_parent(),
    ident=kernel._topic("stream"), buffers=[b""] * 100_000,
)
print("small")
"""


def test_a_message_of_many_empty_frames_counts_what_holding_them_costs(course):
    """Each frame the relay holds costs it more than its bytes: a message of 100,000 empty frames is over a 2 MB
    bound, dropped and named, as a large one is."""
    pre = GradingExecute(config=config(course, max_message_bytes=2 * 2**20), timeout=60)
    nb, resources = pre.preprocess(
        new_notebook(cells=[new_code_cell(MANY_EMPTY_FRAMES)]),
        {"metadata": {"path": str(course / "autograded" / "bob" / "ps1")}},
    )
    texts = [o.text for o in nb.cells[0].outputs if o.output_type == "stream"]
    assert "small\n" in texts and not [t for t in texts if "hidden" in t], texts
    (problem,) = resources["backprop_ninja"]["incidents"]
    assert problem.kind == "message_limit" and problem.detail.startswith("cell 1 (In [1], "), problem
    assert "sent 1 message of" in problem.detail, problem


def test_a_kernel_cannot_touch_the_sockets_the_grader_connects_to(course, tmp_path):
    """A kernel swaps each of its sockets for a link to a socket of the host and tries to plant a file beside its
    connection file: the host's socket is never connected to, a new connection to the relay is refused, and the
    connections already made go on working."""
    host = socket.socket(socket.AF_UNIX)
    host.bind(str(tmp_path / "host.sock"))
    host.listen()
    host.settimeout(1)
    c = client(course, "bob")
    with c.setup_kernel():
        k = Kernel(c)
        r = k.json(
            "import errno, glob, os\n"
            "from ipykernel import get_connection_file\n"
            "mine = sorted(glob.glob('/sockets/*'))\n"
            "for path in mine:\n"
            f"    os.unlink(path); os.symlink({str(tmp_path / 'host.sock')!r}, path)\n"
            "try:\n"
            "    open(os.path.join(os.path.dirname(get_connection_file()), 'planted'), 'w'); planted = 'wrote'\n"
            "except OSError as e:\n    planted = errno.errorcode[e.errno]\n"
            "result = [len(mine), planted]"
        )
        assert r == [5, "EROFS"], r  # its five sockets; the connection folder is read-only
        relay = c.km.relay
        for name in relay.names:  # a new connection: the relay finds a link where the socket was, and closes it
            with socket.socket(socket.AF_UNIX) as new:
                new.connect(relay.path(name))
                new.settimeout(10)
                assert new.recv(64) == b"", name
        with pytest.raises(TimeoutError):
            host.accept()
        assert k.run("print('still here')") == "still here\n"  # the connections made before the swap
        assert not any(p.name == "planted" for p in Path(c.km.connection_file).parent.iterdir())
    host.close()


def test_fails_closed(course):
    bob = str(course / "autograded" / "bob" / "ps1")
    for traits, cwd, words in (
        ({"bwrap": "/nonexistent/bwrap"}, bob, "bwrap"),
        ({}, str(course), "folder inside the course root"),
        ({"memory_limit": 2**20}, bob, "exited with status"),
    ):
        c = client(course, "bob", ["1"])
        c.config = config(course, **traits)
        with pytest.raises(SandboxError, match=words):
            c.execute(cwd=cwd)
    assert os.stat(bob).st_uid == os.stat(course).st_uid

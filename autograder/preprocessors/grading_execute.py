"""Execute the submission with a seed the student never saw."""

import contextlib
import hashlib
import os
import secrets
import shutil
import tempfile
import time

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbclient.exceptions import DeadKernelError
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer, Unicode

from ..common.editions import EDITION_VARIABLE, ENGLISH, notebook_edition
from ..common.naming import SETUP_PREFIX
from ..common.phases import (
    EXECUTING,
    KERNEL_CPU,
    KERNEL_SHUTDOWN,
    KERNEL_START,
    OTHER_CELLS,
    PHASES,
    SETUP_CELLS,
    process_tree_cpu,
)
from ..common.setup_cells import due_at, execution_order, setup_to_run_ahead
from ..common.words import say
from ..data import NAMES_VARIABLE, SEED_VARIABLE, names_path
from ..sandbox import SandboxedKernelManager
from ..sandbox.relay import TOGETHER
from .incidents import Limits, notebook_incidents, record_incident
from .output_budget import OutputBudget


@contextlib.contextmanager
def environment(**variables):
    saved = {k: os.environ.get(k) for k in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class GradingExecute(OutputBudget, Execute):
    """nbgrader's Execute, in the sandbox, with ``$BACKPROP_NINJA_SEED`` set for the kernel.

    The seed is drawn anew for every grading run and notebook, so the batch and the parameters the answers are
    graded on are ones the student never saw; ``JudgeAnswers`` reads it back from ``resources['backprop_ninja']``
    to build the same reference in the grader. It is the same for every student of the run: a worker builds each
    notebook's reference once (Exercise 4's is an autograd training run), not once a student.
    """

    names_path = Unicode(
        "", help="Path of names.txt (default: $BACKPROP_NINJA_NAMES, else the copy shipped in autograder/data/)."
    ).tag(config=True)

    sandbox = Bool(
        True,
        help="Run every kernel in the bubblewrap sandbox (autograder/sandbox/). Grading fails when the "
        "sandbox cannot start; set False only to grade trusted notebooks on a machine without bubblewrap.",
    ).tag(config=True)

    notebook_timeout = Integer(
        600,
        help="Wall-clock seconds one notebook may take in all, kernel start included (0: no limit). "
        "Execute.timeout interrupts one slow cell and goes on; at this deadline the running cell is "
        "interrupted, the cells after it are not run, and the points earned before it stay.",
    ).tag(config=True)
    max_output_bytes = Integer(
        4 * 2**20,
        help="Output kept per cell, in bytes (0: no limit). Output beyond it is dropped as it arrives, so a "
        "notebook that prints gigabytes cannot exhaust the grader (output_budget.py: what counts).",
    ).tag(config=True)
    max_notebook_output_bytes = Integer(
        32 * 2**20,
        help="Output kept per notebook, all its cells together, in bytes (0: no limit): a notebook of many cells, "
        "each within max_output_bytes, cannot exhaust the grader either.",
    ).tag(config=True)

    kernel_trace = Bool(
        False,
        help="Log nbclient's DEBUG trace of the kernel: every cell's source and every message, the answers as "
        "encoded tensors (megabytes a notebook). Off, the executor logs from INFO up: nbgrader's captured logs (the "
        "Formgrader's autograde dialog, the workers of backprop-ninja grade) keep DEBUG whatever --log-level says.",
    ).tag(config=True)

    # drawn for each grading run, never configured: a seed the same in every run would let a student paste into a
    # resubmission the values the graded cells showed on their feedback page
    _run_secret = secrets.token_hex(16)
    _deadline = None
    _notebook = None  # the notebook being executed, as the profile names it
    _kernel_asked = 0.0
    _left_behind = None  # what the notebook's kernel left in its folder (kernel_parent.left_behind), or None
    _oversized, _message_bytes = None, 0  # {cell index: [bytes of each message the relay dropped]}, and its limit
    _edition = ENGLISH  # the language of the lines this step adds to the notebook (the student's edition)
    _due = None  # the index of a cell nbconvert comes to -> the cells to run then, in execution_order
    _setup_ahead = None  # the setup cells the sandbox's kernel parent may run ahead of the kernel (setup_to_run_ahead)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.kernel_manager_class = SandboxedKernelManager if self.sandbox else AsyncKernelManager

    def create_kernel_manager(self):
        self._kernel_asked = time.perf_counter()
        km = super().create_kernel_manager()
        km.setup_ahead = self._setup_ahead  # (SandboxedKernelManager's)
        return km

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        PHASES.add(self._notebook, KERNEL_START, time.perf_counter() - self._kernel_asked)
        return kc

    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    async def _async_cleanup_kernel(self):
        km = self.km
        process = getattr(getattr(km, "provisioner", None), "process", None)
        if process is not None:
            PHASES.add(self._notebook, KERNEL_CPU, process_tree_cpu(process.pid))
        with PHASES.phase(self._notebook, KERNEL_SHUTDOWN):
            await super()._async_cleanup_kernel()
        self._left_behind = getattr(km, "left_behind", None)

    _cleanup_kernel = run_sync(_async_cleanup_kernel)

    def kernel_variables(self, seed: int) -> dict:
        """What the grader tells a notebook's kernel, in its environment: the seed, where names.txt is, and the
        edition (the language of what the kernel prints while grading)."""
        return {
            SEED_VARIABLE: str(seed),
            NAMES_VARIABLE: names_path(self.names_path),
            EDITION_VARIABLE: str(self._edition or ENGLISH),
        }

    def start_kernel_parent(self):
        """Start the sandbox's kernel parent now, before the first notebook, in the environment the kernels will
        have (nbgrader's own variable included), and return it: a grading worker's fork server does, while it
        loads. Only a staged parent, one for all of the worker's students, is started ahead
        (``SandboxedKernelManager.start_staged_parent``); None when there is none."""
        if self.sandbox:
            env = {**os.environ, **self.kernel_variables(0), "NBGRADER_EXECUTION": "autograde"}
            return self.kernel_manager_class(config=self.config).start_staged_parent(env)
        return None

    def grading_seed(self, resources) -> int:
        nbgrader = resources.get("nbgrader", {})
        names = [str(nbgrader.get(k, "")) for k in ("assignment", "notebook")]
        key = "/".join([self._run_secret, *names])
        return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") % 2**31

    def preprocess_cell(self, cell, resources, index):
        """The cells due when nbconvert comes to cell ``index``, in ``execution_order``: none of the student's runs
        before the cell that starts grading, which runs right after the setup cells wherever it stands."""
        for due in self._due.pop(index, ()) if self._due is not None else [index]:
            self.nb.cells[due], resources = self._execute_one(self.nb.cells[due], resources, due)
        return self.nb.cells[index], resources

    def _execute_one(self, cell, resources, index):
        """Like Execute's, but a dead kernel ends the run instead of failing the whole submission.

        The cells that ran keep their results; the rest are left unexecuted, and JudgeAnswers
        gives their graded cells 0 with the reason, so the student still gets a grade.
        """
        state = resources["backprop_ninja"]
        if (
            state["kernel_died_in"] is not None
            or state["notebook_time_limit_in"] is not None
            or cell.cell_type != "code"
        ):
            return cell, resources
        setup = cell.metadata.get("nbgrader", {}).get("grade_id", "").startswith(SETUP_PREFIX)
        relay = getattr(self.km, "relay", None)  # sandboxed: every message from the kernel passed through it
        dropped = len(relay.dropped) if relay else 0
        try:
            with PHASES.phase(self._notebook, SETUP_CELLS if setup else OTHER_CELLS):
                cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            state["kernel_died_in"] = index
            process = getattr(getattr(self.km, "provisioner", None), "process", None)
            state["exit_status"] = process.poll() if process is not None else None
            words = say(
                "The kernel died while running this cell (out of memory, os._exit, a crash, or a limit of the "
                "grading sandbox); the cells below did not run."
            )
            cell.outputs.append(new_output("stream", name="stdout", text=words.render(self._edition) + "\n"))
            return cell, resources
        finally:
            if relay and len(relay.dropped) > dropped:
                self._oversized_in(cell, index, [size for _, size in relay.dropped[dropped:]])
        if self._deadline is not None and time.monotonic() >= self._deadline:
            state["notebook_time_limit_in"] = index
            words = say(
                "The notebook ran over its time limit ({seconds} s) in this cell; the cells below did not run.",
                seconds=self.notebook_timeout,
            )
            cell.outputs.append(new_output("stream", name="stdout", text=words.render(self._edition) + "\n"))
        return cell, resources

    def _get_timeout(self, cell):
        """A cell's timeout, cut short by the notebook's deadline."""
        timeout = super()._get_timeout(cell)
        if self._deadline is None:
            return timeout
        left = max(1, int(self._deadline - time.monotonic() + 0.999))
        return left if timeout is None else min(timeout, left)

    def _oversized_in(self, cell, index: int, sizes: list) -> None:
        """The relay dropped messages of ``sizes`` bytes while ``cell`` ran: say so under it, for the problem."""
        self._oversized.setdefault(index, []).extend(sizes)
        self._message_bytes = bound = self.km.max_message_bytes
        if max(sizes) > bound:
            words = say("[output not kept by the grader: this cell sent a message of more than {megabytes:g} MB]",
                        megabytes=bound / 2**20)  # fmt: skip
        else:  # (relay.TOGETHER)
            words = say("[output not kept by the grader: this cell sent large messages after the notebook's messages "
                        "together passed {megabytes:g} MB]", megabytes=TOGETHER * bound / 2**20)  # fmt: skip
        cell.outputs.append(new_output("stream", name="stdout", text=f"\n{words.render(self._edition)}\n"))

    def record_incidents(self, nb, resources) -> None:
        """What went wrong while the notebook ran, named the way the class report names it."""
        limits = Limits(
            self.notebook_timeout,
            self.timeout,
            self.max_output_bytes,
            self._message_bytes,
            self.max_notebook_output_bytes,
            TOGETHER * self._message_bytes,
        )
        state = resources["backprop_ninja"]
        found = notebook_incidents(nb, state, limits, self._truncated, self._left_behind, self._oversized)
        for kind, detail in found:
            record_incident(resources, kind, detail, self.log)

    @contextlib.contextmanager
    def _working_folder(self, resources):
        """Unsandboxed, the kernel works in a temporary copy of the notebook's folder, removed afterwards (sandboxed,
        the sandbox's scratch is that copy): nothing it writes is left in autograded/ for nbgrader to copy."""
        metadata = resources.setdefault("metadata", {})
        folder = metadata.get("path")
        if self.sandbox or not folder:
            yield
            return
        copy = tempfile.mkdtemp(prefix="backprop-ninja-unsandboxed-")
        try:
            for entry in os.scandir(folder):
                if entry.is_file(follow_symlinks=False):
                    shutil.copyfile(entry.path, os.path.join(copy, entry.name))
            metadata["path"] = copy
            yield
        finally:
            metadata["path"] = folder
            shutil.rmtree(copy, ignore_errors=True)

    def preprocess(self, nb, resources, *args, **kwargs):
        seed = self.grading_seed(resources)
        self._notebook = resources.get("nbgrader", {}).get("notebook")
        # the edition the student handed in, as RestoreLockedCells read it: the language of the lines added here
        self._edition = notebook_edition(nb.metadata)
        order = execution_order(nb.cells)
        self._due = due_at(order)
        self._setup_ahead = setup_to_run_ahead([nb.cells[i] for i in order]) if self.sandbox else None
        variables = self.kernel_variables(seed)
        resources["backprop_ninja"] = {
            **resources.get("backprop_ninja", {}),
            "seed": seed,
            "edition": self._edition,
            "names_path": variables[NAMES_VARIABLE],
            "kernel_died_in": None,
            "notebook_time_limit_in": None,
            "incidents": [],
        }
        self._output_bytes, self._truncated, self._left_behind, self._oversized = {}, {}, None, {}
        self._display_bytes = {}
        # Killed, not asked to exit: nothing of the kernel is needed after the last cell, and its sandbox ends with
        # it (--die-with-parent); a graceful exit (ipykernel and torch tearing down) took 0.8 s a notebook.
        self.shutdown_kernel = "immediate"
        self._deadline = time.monotonic() + self.notebook_timeout if self.notebook_timeout else None
        try:
            with EXECUTING, environment(**variables), self._working_folder(resources):
                nb, resources = super().preprocess(nb, resources, *args, **kwargs)
        finally:
            self._deadline = None
            self.log_ends_notebook()
        self.record_incidents(nb, resources)
        return nb, resources

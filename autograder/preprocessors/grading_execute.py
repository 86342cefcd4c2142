"""Execute the submission with a seed the student never saw."""

import contextlib
import hashlib
import os
import secrets

from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import DeadKernelError
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from traitlets import Bool, Unicode

from ..in_kernel import SEED_VARIABLE
from ..sandbox import SandboxedKernelManager

NAMES_VARIABLE = "BACKPROP_NINJA_NAMES"


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


def names_path(configured: str = "") -> str:
    """The instructor's copy of names.txt: configured, or $BACKPROP_NINJA_NAMES, or ./names.txt."""
    path = os.path.abspath(configured or os.environ.get(NAMES_VARIABLE) or "names.txt")
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"names.txt not found at {path}: the grader needs the data set. Set GradingExecute.names_path "
            f"or ${NAMES_VARIABLE}, or put names.txt in the course root.")
    return path


class GradingExecute(Execute):
    """nbgrader's Execute, in the sandbox, with ``$BACKPROP_NINJA_SEED`` set for the kernel.

    The seed differs for every student and notebook, so the batch and the parameters the
    answers are graded on are ones the student never saw; ``JudgeAnswers`` reads it back
    from ``resources['backprop_ninja']`` to build the same reference in the grader.
    """

    seed_secret = Unicode(
        "", help="Secret mixed into every grading seed. Empty: a new random secret for each grading run.",
    ).tag(config=True)
    names_path = Unicode("", help="Path of names.txt (default: $BACKPROP_NINJA_NAMES, else names.txt in the course root).").tag(config=True)

    sandbox = Bool(
        True, help="Run every kernel in the bubblewrap sandbox (autograder/sandbox.py). Grading fails when the "
                   "sandbox cannot start; set False only to grade trusted notebooks on a machine without bubblewrap.",
    ).tag(config=True)

    _run_secret = secrets.token_hex(16)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.kernel_manager_class = SandboxedKernelManager if self.sandbox else AsyncKernelManager

    def grading_seed(self, resources) -> int:
        nbgrader = resources.get("nbgrader", {})
        key = "/".join([self.seed_secret or self._run_secret, str(nbgrader.get("student", "")),
                        str(nbgrader.get("assignment", "")), str(nbgrader.get("notebook", ""))])
        return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") % 2**31

    def preprocess_cell(self, cell, resources, index):
        """Like Execute's, but a dead kernel ends the run instead of failing the whole submission.

        The cells that ran keep their results; the rest are left unexecuted, and JudgeAnswers
        gives their graded cells 0 with the reason, so the student still gets a grade.
        """
        state = resources["backprop_ninja"]
        if state["kernel_died_in"] is not None or cell.cell_type != "code":
            return cell, resources
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            state["kernel_died_in"] = index
            cell.outputs.append(new_output("stream", name="stdout", text=(
                "The kernel died while running this cell (out of memory, os._exit, a crash, or a limit of the "
                "grading sandbox); the cells below did not run.\n")))
            return cell, resources

    def preprocess(self, nb, resources, *args, **kwargs):
        seed = self.grading_seed(resources)
        path = names_path(self.names_path)
        resources["backprop_ninja"] = {"seed": seed, "names_path": path, "kernel_died_in": None}
        with environment(**{SEED_VARIABLE: str(seed), NAMES_VARIABLE: path}):
            return super().preprocess(nb, resources, *args, **kwargs)

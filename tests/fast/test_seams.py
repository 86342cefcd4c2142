"""The private methods of jupyter_client, nbclient and nbgrader that the project overrides (or calls) exist, with the
parameters it expects, in the versions requirements.lock installs: a release that changes one fails here, not in a
grading run. Each line says why no public hook does the job."""

import importlib
import inspect
import re
from importlib.metadata import version
from pathlib import Path

import pytest

LOCK = Path(__file__).resolve().parents[2] / "requirements.lock"
KERNEL_MANAGER = ("jupyter_client.manager", "AsyncKernelManager")
CLIENT = ("jupyter_client.asynchronous", "AsyncKernelClient")
NOTEBOOK_CLIENT = ("nbclient", "NotebookClient")
# (module, class), method, its parameters, where the project overrides it (None: only calls it), why no public hook
SEAMS = [
    (KERNEL_MANAGER, "_async_pre_start_kernel", "self, *, transport_encryption, **kw", "sandbox.kernel_manager",
     "the socket folder and the kernel parent are chosen before the connection file is written"),
    (KERNEL_MANAGER, "_async_launch_kernel", "self, kernel_cmd, **kw", "sandbox.kernel_manager",
     "the launch waits until the forked kernel listens, and names the sandbox's failure"),
    (KERNEL_MANAGER, "_async_wait", "self, pollinterval", "sandbox.kernel_manager",
     "its 0.1 s polling interval is a default of a private method"),
    (KERNEL_MANAGER, "_async_cleanup_resources", "self, restart", "sandbox.kernel_manager",
     "the kernel parent clears the sandbox as jupyter_client cleans up, and says what was left"),
    (CLIENT, "_async_wait_for_ready", "self, timeout", "sandbox.prompt_client",
     "wait_for_ready waits for 0.2 s of IOPub silence, and no setting shortens it"),
    (CLIENT, "_handle_kernel_info_reply", "self, msg", None, "called by the override above, as the client's own is"),
    (NOTEBOOK_CLIENT, "_async_cleanup_kernel", "self", "preprocessors.grading_execute",
     "the kernel's CPU and what it left are read before nbclient drops its manager"),
    (NOTEBOOK_CLIENT, "_get_timeout", "self, cell", "preprocessors.grading_execute",
     "a cell's timeout is cut short by the notebook's deadline; timeout_func knows no notebook"),
    (("nbgrader.converters", "Autograde"), "convert_single_notebook", "self, notebook_filename",
     "grading.workers.autograde", "the sandbox's failure is caught where nbgrader still has the exception"),
    (("nbgrader.converters", "BaseConverter"), "write_single_notebook", "self, output, resources",
     "grading.workers.autograde", "the one place a notebook's resources (its incidents) pass after the preprocessors"),
]  # fmt: skip


def parameters(function) -> str:
    """``self, *, name, **kw``: the names and kinds of a function's parameters, without defaults or annotations."""
    shown, keyword_only = [], False
    for p in inspect.signature(function).parameters.values():
        if p.kind == p.KEYWORD_ONLY and not keyword_only:
            shown.append("*")
            keyword_only = True
        shown.append({p.VAR_KEYWORD: "**", p.VAR_POSITIONAL: "*"}.get(p.kind, "") + p.name)
    return ", ".join(shown)


def test_the_installed_versions_are_the_locked_ones():
    for package in ("jupyter-client", "nbclient", "nbgrader", "nbconvert", "ipykernel", "traitlets"):
        wanted = re.search(rf"^{package}==(\S+)", LOCK.read_text(), re.M).group(1)
        assert version(package) == wanted, f"{package} {version(package)} is installed, the lock says {wanted}"


@pytest.mark.parametrize("where, method, expected, override, why", SEAMS, ids=[s[1] for s in SEAMS])
def test_every_private_method_used_exists_as_expected(where, method, expected, override, why):
    base = getattr(importlib.import_module(where[0]), where[1])
    found = parameters(getattr(base, method))
    assert found == expected, f"{where[1]}.{method} is now ({found}): see autograder.{override} ({why})"
    if override:
        module = importlib.import_module(f"autograder.{override}")
        classes = [c for c in vars(module).values() if inspect.isclass(c) and issubclass(c, base)]
        assert [c for c in classes if method in vars(c)], f"autograder.{override} no longer overrides {method}"

"""The bubblewrap sandbox every student's kernel runs in (grading principle 5: contained).

Deny by default: the kernel sees only what an allow-list grants. The interpreter and its packages, the
system libraries and the few /etc files a Python kernel needs are there read-only, the data file and the
student's own folder read-only; the kernel works in a private copy of that folder in memory (the scratch),
with a private empty /tmp and its socket folder; nothing else of the grading machine exists inside, and
nothing the kernel writes leaves the sandbox but its messages to the grader (``policy.COMES_BACK``). Its
environment holds only the variables the allow-list names (no token, password or key). The lists, with the
reason for every entry, are in ``policy`` and ``environment``.

Besides: no network (a network namespace with loopback only), its own pid/ipc/uts namespaces, no
capabilities, no_new_privs, limits on memory, CPU time, processes and file size, and it dies with the
grader. When the grader runs as root, the kernel runs as an unprivileged uid (root ignores the process
limit); otherwise it gets a user namespace. If ``bwrap``, ``prlimit`` (or, as root, ``setpriv``) is
missing or the sandbox does not come up, starting the kernel raises :class:`SandboxError` and the notebook
is not run unsandboxed (fail closed). Kernels, one notebook at a time, are forked from a kernel parent in
the sandbox, and whatever a kernel leaves (processes, /tmp, /dev/shm, its scratch, its socket folder) is
cleared before the next; what it left in its folder is named for the instructor, never copied. The sandbox
shows one student's folder: a class-grading worker running as root keeps one sandbox for all its students
and shows each student's folder in it in turn, after clearing the one before (``stage``); otherwise each
student gets a sandbox of their own.

How the course uses it: ``nbgrader_config.py`` runs ``GradingExecute``
(``autograder/preprocessors/grading_execute.py``), whose ``sandbox = True`` (the default) starts every
kernel with :class:`SandboxedKernelManager`; ``backprop-ninja grade`` sets ``course_root`` and, as root, one
``sandbox_uid`` per worker. Its limits are configurable as ``c.SandboxedKernelManager.<trait>``.

  policy          the allow-list of files with its reasons, and the bwrap command line built from it: data
                  and pure functions, tested without kernels (tests/fast)
  environment     the allow-list of environment variables, and the kernel's environment made from it
  limits          the sandbox's limits (memory, CPU, processes, file size, in-memory folders), configurable
  kernel_manager  SandboxedKernelManager: has a kernel parent fork the kernel (sockets, what it left behind)
  prompt_client   the kernel client, ready as soon as a forked kernel answers
  in_sandbox      what runs inside the sandbox: the kernel parent, which imported torch, ipykernel and
                  matplotlib once, forks each kernel into a fresh scratch, and clears the sandbox after it
  kernel_parent   the grader's side of a kernel parent: start it, ask it, end it; a forked kernel's handle
  forked_kernels  which parent serves which kernel, and the provisioner through which jupyter_client forks
  stage           the mounts that show a worker's parent one student's folder after another
  uids            as root: the uid each grading worker's kernels run as
"""

from .kernel_manager import SandboxedKernelManager
from .policy import SandboxError

__all__ = ["SandboxError", "SandboxedKernelManager"]

"""The bubblewrap sandbox every student's kernel runs in (grading principle 5: contained).

Deny by default: a kernel sees only what ``policy`` and ``environment`` grant, has no network, works in a scratch
copy of the student's folder that is thrown away, and is forked from a kernel parent that imported torch once. Its
promises and their tests: docs/security.md; how it is built: docs/design/sandbox.md.

  policy          the allow-list of files with its reasons, and the bwrap command line built from it
  environment     the allow-list of environment variables, and the kernel's environment made from it
  limits          the sandbox's limits (memory, CPU, processes, file size, in-memory folders), configurable
  kernel_manager  SandboxedKernelManager: jupyter_client's kernel manager, the kernel forked in the sandbox
  prompt_client   the kernel client, ready as soon as a forked kernel answers
  in_sandbox      the kernel parent, inside the sandbox: forks each kernel into a fresh scratch, clears after it
  kernel_parent   the grader's side of a kernel parent: start it, ask it, end it; a forked kernel's handle
  relay           the grader's end of a kernel's sockets: follows no link, keeps at most max_message_bytes a message,
                  and where the kernel only answers, one message for each of the grader's
  forked_kernels  which parent serves which kernel, and the provisioner through which jupyter_client forks
  stage           how a worker's parent is shown one student's folder after another: mounted as root, else copied
  uids            as root: the uid each grading worker's kernels run as
"""

from .kernel_manager import SandboxedKernelManager
from .policy import SandboxError

__all__ = ["SandboxError", "SandboxedKernelManager"]

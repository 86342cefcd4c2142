"""Warm kernels: the kernel of a student's next notebook starts while the current notebook runs.

Starting a kernel (its sandbox, ipykernel, then ``import torch`` in the first cells) costs
more than most notebooks' own cells. As soon as a notebook's kernel is up, GradingExecute starts the
kernel of the same student's next notebook (the next in nbgrader's own list of this submission), with
exactly what a kernel started for it later would get: the kernel manager class and configuration (the
sandbox), the student's folder as working directory, the next notebook's own seed in its environment.
It imports the heavy modules as it starts (``IPKernelApp.exec_lines``, binding no name in the
notebook's namespace). When that notebook comes, nbclient takes the started kernel manager from
``create_kernel_manager`` (its own seam: a manager that has a kernel is not started again) and shuts
it down after the notebook like any other: one kernel, one sandbox, one notebook.

A kernel started for a notebook that does not come next (another kernel name, a student whose grading
stopped) is shut down unused. The first notebook of each student starts cold: its folder does not
exist before nbgrader's autograde of that student creates it.
"""

from __future__ import annotations

from dataclasses import dataclass

from jupyter_core.utils import ensure_event_loop, run_sync

# Imported as a warm kernel starts: what the setup cells and the hidden tests import first, and matplotlib
# (Exercises 2 and 4 plot; a warm kernel starts while a core is free, so the others lose nothing by it).
WARM_IMPORTS = ("torch", "torch.nn.functional", "matplotlib.pyplot", "urllib.request", "autograder.in_kernel")
WARM_UP = "; ".join(f"__import__({name!r})" for name in WARM_IMPORTS)  # __import__ binds no name


@dataclass(frozen=True)
class KernelFor:
    """The one notebook a warm kernel may serve: everything its start depended on."""

    student: str
    assignment: str
    notebook: str
    folder: str
    kernel_name: str
    seed: int


class WarmKernel:
    """A kernel manager whose kernel is starting (on nbclient's event loop) for one notebook."""

    def __init__(self, km, serves: KernelFor, start_kwargs: dict):
        self.km, self.serves = km, serves
        km.started_ahead = True
        self.task = ensure_event_loop().create_task(km.start_kernel(**start_kwargs))

    def started(self) -> bool:
        """Wait until the kernel is started; False if it could not start or has died since (the notebook before
        it ran the machine out of memory or processes, say): then it is cleaned up."""
        try:
            alive = run_sync(self._alive)()
        except Exception:  # noqa: BLE001 (a cold start says why, if it fails too)
            alive = False
        if not alive:
            self.discard()
        return alive

    async def _alive(self) -> bool:
        await self.task
        return await self.km.is_alive()

    def discard(self) -> None:
        """Shut the kernel down unused."""
        run_sync(self._discard)()

    async def _discard(self):
        if not self.task.done():
            self.task.cancel()
        try:
            await self.task
        except BaseException:  # noqa: BLE001 (cancelled, or failed to start: nothing more to stop than below)
            pass
        if self.km.has_kernel:
            await self.km.shutdown_kernel(now=True)  # cleans up after the kernel too
        else:
            await self.km.cleanup_resources()


class WarmKernels:
    """At most one warm kernel per grading process: the next notebook's."""

    waiting: WarmKernel | None = None

    @classmethod
    def start(cls, km, serves: KernelFor, start_kwargs: dict) -> None:
        cls.discard()
        cls.waiting = WarmKernel(km, serves, start_kwargs)

    @classmethod
    def take(cls, wanted: KernelFor):
        """The started kernel manager for exactly this notebook, or None; any other warm kernel is shut down."""
        warm, cls.waiting = cls.waiting, None
        if warm is None:
            return None
        if warm.serves != wanted:
            warm.discard()
            return None
        if not warm.started():
            return None
        if hasattr(warm.km, "lend_folder"):  # the sandbox's: the folder is the kernel's from now on
            warm.km.lend_folder()
        return warm.km

    @classmethod
    def discard(cls) -> None:
        """Shut down the warm kernel nobody took (the worker calls this after every student)."""
        warm, cls.waiting = cls.waiting, None
        if warm is not None:
            warm.discard()

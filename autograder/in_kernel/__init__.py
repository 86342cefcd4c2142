"""What runs inside the student's kernel, and only while nbgrader autogrades.

The hidden regions of the locked cells call these functions. They never grade: they pick the unseen seed, take
autograd out of the student's reach, and report the student's tensors to the grader (see ``engine.wire``), which
judges them in its own process. Outside autograde (Colab, JupyterLab, ``nbgrader validate``) they change nothing.

  switches       whether this is autograde; the seed; start_grading (autograd's answers hidden, snapshots on)
  reports        report: the named tensors (and a rule probe's result) to the grader
  probe_runner   a rule probe: the student's code for one answer, run again on random inputs
  snapshot_hook  what each statement of a cell read when it ran, for the probes
  bug_hunt       Exercise 6: the grading point kept, backward_pass called on it, the bugs named, numerical_gradient
                 run on the grader's functions
  training       Exercise 4: the graded run's length, extra training stopped, backward_pass and training_step
                 called on the grader's inputs
  setup_ahead    the seed-free setup cells, run once in the kernel parent, and taken by each kernel instead of run
                 again (an IPython extension of the kernels it forks)
"""

from .reports import report
from .switches import AutogradIsOff, grading, grading_seed, start_grading
from .training import graded_steps, limit_forward, report_backward, report_training

__all__ = [
    "AutogradIsOff",
    "graded_steps",
    "grading",
    "grading_seed",
    "limit_forward",
    "report",
    "report_backward",
    "report_training",
    "start_grading",
]

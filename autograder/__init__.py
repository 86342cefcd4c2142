"""Backprop Ninja's autograder: what the hidden tests call, and how a class gets graded.

Where things live, by who uses them:
  engine/         the grading engine, pure (tensors in, verdicts out; never imports nbgrader): the
                  backward rules table, the tolerance, the judges and their diagnostics, honesty
  in_kernel       the only code that runs in the student's kernel (the hidden test regions call it)
  preprocessors/  nbgrader's seams: GradingExecute (runs the kernel), JudgeAnswers (grades its reports)
  sandbox/        the bubblewrap sandbox every student kernel runs in: its allow-list (policy), its kernel manager
  grading/        a whole class: ``backprop-ninja grade`` (collect, repair, parallel workers or a Dask cluster, report)
  authoring/      for maintainers: shared setup cells, badges, submissions, the demo class
  errors          GradingError, the one exception library code raises when a command cannot go on
  cli             ``backprop-ninja``: the one place that turns errors into messages and exit codes
  data/           names.txt, the data set, shipped with the package
"""

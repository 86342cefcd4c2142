"""Backprop Ninja's autograder: what the hidden tests call, and how a class gets graded.

Its layers, bottom first; each imports only its own layer and those listed before it (docs/maintaining.md):
  common/         what several layers share: problem and diagnosis kinds, profile phases, naming, links, errors
  data/           names.txt, the data set, shipped with the package
  engine/         the grading engine, pure (tensors in, verdicts out; never imports nbgrader)
  in_kernel       the only code that runs in the student's kernel (the hidden test regions call it)
  sandbox/        the bubblewrap sandbox every student kernel runs in, and the kernel parents that fork them
  preprocessors/  nbgrader's seams: GradingExecute (runs the kernel), JudgeAnswers (grades its reports), feedback
  grading/        a whole class, ``backprop-ninja grade``: intake, local workers or a Dask cluster, results, report
  authoring/      for maintainers: generated cells, badges, submissions, the demo class
  cli             ``backprop-ninja``: the one place that turns errors into messages and exit codes
"""

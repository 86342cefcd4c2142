"""Backprop Ninja's autograder: what the hidden tests call, and how a class gets graded.

Where things live:
  backward_rules  the local backward rule of every step (the single table the grader reads)
  tolerance       when two gradients count as equal, and why
  judge           the verdict on one graded cell (error carried forward); diagnose: its messages
  value_checks    answers that are not gradients: loss_fast, hpreact_fast, rows of dlogits summing to zero
  training        Exercise 4's network for the grader: its forward pass, the course's backward pass, autograd's run
  training_checks Exercise 4's verdicts: backward_pass's gradients, the training run, the calibration
  honesty         answers taken from autograd earn nothing
  in_kernel       the only code that runs in the student's kernel (hidden regions call it)
  wire            how answers travel from the kernel to the grader
  reference       the grader's own run of a notebook's setup
  exercises       which check grades which cell of which notebook
  preprocessors/  nbgrader's seams: GradingExecute, JudgeAnswers
  sandbox         the bubblewrap sandbox that student kernels run in
  class_grading   ``backprop-ninja grade``: a whole class, sandboxed, in parallel (grading_worker: one worker)
  collect         an LMS download (zip or folder) laid out as submitted/<student>/<assignment>/
  repair          each submitted notebook checked against the release; duplicated, deleted, stripped cells fixed
  class_report    the instructor's class report (class_report.html) from grades.csv and problems.json
  shared_cells/   the setup cells every notebook repeats, defined once (authoring keeps copies equal)
"""

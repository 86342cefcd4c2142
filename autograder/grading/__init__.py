"""Grading a whole class (``backprop-ninja grade``); its rooms follow the run (docs/design/class-grading.md).

class_grading  the command, step by step: preflight, intake, grade, merge, write the outputs
preflight      what must hold before anyone is graded: the course, its release, the sandbox's tools
stopping       how a run stops: Ctrl-C, and the error that says why
summary        what a run did, as the command prints it
intake/        collect (an LMS download into submitted/), repair (each notebook against the release),
               prepare (the staged copies), changes (who must be regraded, and why), state (.grading/state.json)
workers/       pool (N workers, one queue), fork_server (forks them; imports once), worker (nbgrader's autograde
               per student) with autograde (its converter), watchdog and database_clock
cluster/       coordinator (grade --scheduler), remote (what a Dask worker does), payload (what travels and what
               is refused), slurm (the worker's batch job)
results/       gradebook (its URL, the graders' template, a student's grades), merge (into the course's gradebook,
               in batches beside the grading), grades_csv, history (grade_history.csv), roster, lms_export,
               bug_hunt_ids (Exercise 6's ids that several students entered), lookalike_ids (student ids that read
               alike, and folders of submitted/ that are no student)
report/        class_data (the class's files, read once), misconceptions, charts, class_report
"""

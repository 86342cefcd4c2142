"""Grading a whole class (``backprop-ninja grade``): collect, repair, autograde in parallel workers, report,
export.

class_grading  the command, step by step: plan, stage, grade in the pool, merge, write the outputs
preflight      what must hold first: the course root, its assignment and release, the sandbox's tools
collect        an LMS download (zip or folder) laid out as submitted/<student>/<assignment>/
repair         each submitted notebook checked against the release; broken nbgrader cells mended
staging        each student's repaired notebooks staged where the workers grade them
changes        what changed since the last run (digests of submissions and course), and why
state          what the last run left for the next (.grading/state.json)
pool           the worker processes, fed one student at a time, killed and restarted when stuck
fork_server    the process that loads what a worker needs once and forks the pool's workers
worker         one worker process: nbgrader's own autograde and feedback; its JSON-line protocol
stopping       Ctrl-C while grading, and the error that stops a run
cluster        grade --scheduler: the same, a Dask task per student on a cluster (the coordinator's side)
remote         what a Dask worker does: the course rebuilt privately, each student graded by a ``pool.Worker``
payload        what travels to a Dask worker and back, and what each side refuses (not the course's, other versions)
slurm          the Slurm job that runs a Dask worker (``backprop-ninja slurm-script``, written by dask-jobqueue)
profile        where a worker's time goes: seconds per phase of each notebook (grade --profile)
gradebook      the course's gradebook (SQLite or PostgreSQL, as nbgrader_config.py says) and the graders' private
               ones: the template they grade into, merging one student, forgetting one student
problems       the Problem type and the one table of problem kinds (problems.json)
grades_csv     grades.csv from gradebook.db
history        grade_history.csv: what each run changed per student, and why
summary        what a run did, as the command prints it
misconceptions the diagnosis kind of every lost step, read from the autograded notebooks
class_data     the class's files (grades, problems, diagnoses, history), read once for the report
report         the instructor's class report (class_report.html, from templates/)
roster         an LMS's class list (Canvas or Moodle export), and who on it each student is
lms_export     ``backprop-ninja export``: grades.csv as Canvas or Moodle imports it
"""

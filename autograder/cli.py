"""``backprop-ninja``: the course's command line."""

import argparse
import atexit
import gc
import os
import sys
from pathlib import Path

from .common.errors import GradingError
from .common.problems import help_lines
from .common.shown import for_terminal
from .common.tools import MissingTool, require_tools, start_up


def number(kind, least: int):
    """An argparse type: a number of ``kind`` (int or float), at least ``least``; said in one line otherwise."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'a whole number' if kind is int else 'a number'}")
        if not value >= least:  # (NaN too)
            raise argparse.ArgumentTypeError(f"{text} is below {least}" + (" (0: no limit)" if least == 0 else ""))
        return value

    return parse


GRADE_HELP = """Grade every student of the course with nbgrader's autograde, each kernel in the sandbox.

The instructor's workflow, in the course root:
  nbgrader generate_assignment backprop_ninja      # once: release/ and the gradebook
  backprop-ninja grade --from canvas-download.zip  # collect, autograde, feedback, grades.csv
  backprop-ninja grade                             # later: regrades only the students whose files changed

LMS downloads (--from, a .zip or a folder): a folder per student (Moodle, or nbgrader's own
submitted/<student>/<assignment>/ layout), or flat files <student>_<anything>_<notebook>.ipynb
(Canvas). Colab's "Copy of ..." and numbered duplicates "... (1).ipynb" are recognised.
nbgrader's exchange (--from-exchange, on a JupyterHub): <Exchange.root>/<course_id>/inbound/,
each student's newest submission that they made themselves; then nbgrader release_feedback.

Writes grades.csv (student, total, max_total, late_penalty, one column per notebook and per
graded step), problems.json (why a student has no or only a partial grade, as one of the kinds
below), grade_history.csv (what each run changed, and why), feedback/ and the class report.
Grading fails closed: if the sandbox cannot start, no student is graded (unless --unsandboxed).
Late submissions: nbgrader's due date (nbgrader db assignment add <assignment> --duedate=...) and
each submission's timestamp.txt, with the penalty set in nbgrader_config.py (LatePenalty).

Problems, most serious first:
"""

EXPORT_HELP = """Write grades.csv's totals in a file an LMS imports.

  --format canvas  Canvas's gradebook import (Student, ID, SIS User ID, SIS Login ID, Section, then
                   the assignment's column "Name (id)", and a Points Possible row); --roster is the
                   course's Canvas gradebook export (Grades > Export)
  --format moodle  Moodle's grade import (an Email address or ID number column, and a grade column);
                   --roster is a Moodle grade export or participants list
  --format csv     student, name on the roster (with --roster), total, max_total, late_penalty

Students are matched to the roster by the names the LMS download used (or an id on the roster).
Nobody is dropped: every person on the roster without a submission and every submission without a
roster entry is listed on stderr and in <out>.unmatched.csv. nbgrader's own `nbgrader export` keeps
working beside it."""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="backprop-ninja", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="grade a small demo class end to end and print its grades")
    demo.add_argument("--dir", default="demo", help="course folder to create (replaced if it exists)")
    grade = commands.add_parser(
        "grade",
        help="autograde a whole class: collect, sandboxed autograde in parallel, feedback, grades.csv",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=GRADE_HELP + help_lines(),
    )
    grade.add_argument("--course", default=".", help="the course root, with nbgrader_config.py (default: .)")
    grade.add_argument("--assignment", help="default: the one folder in source/")
    sources = grade.add_mutually_exclusive_group()
    sources.add_argument(
        "--from",
        dest="download",
        metavar="DOWNLOAD",
        help="an LMS download (.zip or folder) to collect into submitted/ first; without it (and --from-exchange), "
        "submitted/<student>/<assignment>/*.ipynb is graded as it is",
    )
    sources.add_argument(
        "--from-exchange",
        dest="exchange",
        action="store_true",
        help="collect from nbgrader's exchange into submitted/ first, as `nbgrader collect --update` does: the "
        "newest submission each student made themselves, read from <Exchange.root>/<course_id>/inbound/ as "
        "nbgrader_config.py sets them (a JupyterHub: docs/jupyterhub.md)",
    )
    grade.add_argument(
        "--workers",
        type=number(int, 1),
        default=os.cpu_count() or 1,
        help="students graded at once (default: the number of cores, %(default)s here)",
    )
    grade.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="grade on a Dask cluster: the scheduler's address, tls://HOST:8786 with Dask's TLS settings and the "
        "course's CA (tcp:// only on this machine, unless --insecure-cluster); one task per student, every kernel in "
        "the sandbox of its worker (needs the [cluster] extra)",
    )
    grade.add_argument(
        "--insecure-cluster",
        action="store_true",
        help="allow a tcp:// scheduler on another machine: whoever reaches it can run code on every worker, so only "
        "on a network that nothing but the course's machines reach",
    )
    grade.add_argument(
        "--unsandboxed",
        action="store_true",
        help="run student code WITHOUT the bubblewrap sandbox (GradingExecute.sandbox=False): "
        "only for notebooks you trust, on a machine without bubblewrap",
    )
    grade.add_argument(
        "--regrade-all",
        action="store_true",
        help="regrade every student, not only those whose files changed since the last run",
    )
    grade.add_argument(
        "--notebook-timeout",
        type=number(int, 0),
        metavar="SECONDS",
        help="wall-clock limit of one notebook, 0 for none (default: GradingExecute.notebook_timeout, 600)",
    )
    grade.add_argument(
        "--cell-timeout",
        type=number(int, 0),
        metavar="SECONDS",
        help="limit of one cell, which is then interrupted, 0 for none (default: nbgrader_config.py's Execute.timeout)",
    )
    grade.add_argument(
        "--memory-limit",
        type=number(float, 0),
        metavar="GB",
        help="address space of one sandboxed kernel, 0 for none (default: SandboxedKernelManager.memory_limit, 4)",
    )
    grade.add_argument(
        "--grader-time-limit",
        type=number(float, 1),
        metavar="SECONDS",
        help="limit of the grader's own work for one student, its notebooks' run left out (nbgrader's bookkeeping, "
        "feedback): over it, the student gets grader_time_limit and the worker goes on (default: 120)",
    )
    grade.add_argument("--out", help="folder for grades.csv, problems.json (default: the course root)")
    grade.add_argument("--no-feedback", action="store_true", help="skip nbgrader generate_feedback")
    grade.add_argument("--quiet", action="store_true", help="no progress bar")
    kernels = grade.add_mutually_exclusive_group()
    kernels.add_argument(
        "--warm-kernels",
        dest="warm_kernels",
        action="store_const",
        const=True,
        help="fork kernels from a kernel parent in the sandbox that imported torch once: one per worker, showing "
        "each student's folder in turn (mounted as root, copied otherwise) (the default)",
    )
    kernels.add_argument(
        "--cold-kernels",
        dest="warm_kernels",
        action="store_const",
        const=False,
        help="start every kernel in a new sandbox of its own, importing torch anew",
    )
    grade.add_argument(
        "--profile", metavar="FILE", help="append where the grading time went, a JSON line per student, to FILE"
    )
    export = commands.add_parser(
        "export",
        help="grades.csv as Canvas or Moodle imports it, matched to the LMS's roster",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=EXPORT_HELP,
    )
    export.add_argument("--format", required=True, choices=["canvas", "moodle", "csv"])
    export.add_argument("--roster", help="the LMS's own export of the class (CSV); needed for canvas and moodle")
    export.add_argument("--out", required=True, help="the file to write")
    export.add_argument("--course", default=".", help="the course root (default: .)")
    export.add_argument("--grades", help="grades.csv to export (default: the course root's)")
    export.add_argument("--assignment", help="default: the one folder in source/")
    export.add_argument(
        "--column",
        help='canvas: the roster\'s column to fill, e.g. "Backprop Ninja (12345)" '
        "(default: the one named after the assignment, else a new column)",
    )
    slurm = commands.add_parser(
        "slurm-script",
        help="the Slurm job that runs one Dask worker for grade --scheduler (submit it once per node)",
        description="Print a Slurm batch script (written by dask-jobqueue) that runs one Dask worker for "
        "`backprop-ninja grade --scheduler`: one grading slot per core, one thread per slot, this course's Python.",
    )
    slurm.add_argument("--scheduler", required=True, help="the scheduler's address, e.g. tcp://10.0.0.5:8786")
    slurm.add_argument(
        "--cores", type=number(int, 1), required=True, help="cores per job: the students it grades at once"
    )
    slurm.add_argument("--memory", required=True, help="memory per job, e.g. 16GB (about 2 GB a core)")
    slurm.add_argument("--walltime", required=True, help="the job's time limit, e.g. 02:00:00")
    slurm.add_argument("--queue", help="the Slurm partition (#SBATCH -p)")
    slurm.add_argument("--account", help="the Slurm account (#SBATCH -A)")
    slurm.add_argument(
        "--tls", nargs=3, metavar=("CA", "CERT", "KEY"), help="for a tls:// scheduler: the CA, the worker's cert, key"
    )
    args = parser.parse_args(argv)
    start_up()
    # At exit, Python collects every object of the modules a command loaded (1,600 for a grading run: 0.2 s after
    # its last line); frozen, they are left to the end of the process
    atexit.register(gc.freeze)
    try:
        require_tools()
    except MissingTool as error:
        sys.exit(f"backprop-ninja: {error}")
    try:
        run(args)
    except GradingError as error:  # it may name a file of a download, or a student: shown literally
        sys.exit(for_terminal(error, lines=True))
    except KeyboardInterrupt:
        sys.exit("interrupted: the students graded so far are in the gradebook; run again to go on")


def run(args) -> None:
    """The chosen command; its errors are GradingError (main turns them into a message and an exit code)."""
    if args.command == "demo":
        from .authoring.demo import run_demo  # imported here: each command loads only what it needs

        run_demo(args.dir)
    elif args.command == "grade":
        from .grading.class_grading import Options, grade_class
        from .grading.summary import print_summary

        summary = grade_class(
            Options(
                course=Path(args.course),
                assignment=args.assignment,
                download=args.download and Path(args.download),
                exchange=args.exchange,
                workers=args.workers,
                sandbox=not args.unsandboxed,
                regrade_all=args.regrade_all,
                notebook_timeout=args.notebook_timeout,
                cell_timeout=args.cell_timeout,
                memory_limit_gb=args.memory_limit,
                out=args.out and Path(args.out),
                feedback=not args.no_feedback,
                progress=not args.quiet,
                scheduler=args.scheduler,
                insecure_cluster=args.insecure_cluster,
                warm_kernels=args.warm_kernels is not False,
                grader_time_limit=args.grader_time_limit,
                profile=args.profile and Path(args.profile).resolve(),
            )
        )
        print_summary(summary)
        if not args.no_feedback:  # each student's pages, feedback/<student>/<assignment>/<notebook>.html
            print(f"feedback: {Path(args.course).resolve() / 'feedback'}")
    elif args.command == "slurm-script":
        from .grading.cluster.slurm import job_script

        print(
            job_script(
                args.scheduler,
                args.cores,
                args.memory,
                args.walltime,
                args.queue,
                args.account,
                args.tls and tuple(args.tls),
            ),
            end="",
        )
    elif args.command == "export":
        from .grading.preflight import course_root, find_assignment
        from .grading.results.lms_export import export_grades

        root = course_root(Path(args.course))
        done = export_grades(
            args.format,
            Path(args.grades) if args.grades else root / "grades.csv",
            Path(args.out),
            args.roster and Path(args.roster),
            args.assignment or find_assignment(root),
            args.column,
        )
        for what, who, why in done.unmatched:  # names from the roster and grades.csv: shown literally
            print(f"  {what}: {for_terminal(who)} ({for_terminal(why)})", file=sys.stderr)
        for warning in done.warnings:
            print(f"WARNING: {for_terminal(warning)}", file=sys.stderr)
        print(f"wrote {done.out} ({done.rows} rows); {len(done.unmatched)} listed in {done.unmatched_csv}")


if __name__ == "__main__":
    main()

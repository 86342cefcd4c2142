"""``backprop-ninja``: the course's command line."""

import argparse
import os
import sys
from pathlib import Path

from ._path import MissingTool, require_tools

GRADE_HELP = """Grade every student of the course with nbgrader's autograde, each kernel in the sandbox.

The instructor's workflow, in the course root:
  nbgrader generate_assignment backprop_ninja      # once: release/ and the gradebook
  backprop-ninja grade --from canvas-download.zip  # collect, autograde, feedback, grades.csv
  backprop-ninja grade                             # later: regrades only the students whose files changed

LMS downloads (--from, a .zip or a folder): a folder per student (Moodle, or nbgrader's own
submitted/<student>/<assignment>/ layout), or flat files <student>_<anything>_<notebook>.ipynb
(Canvas). Colab's "Copy of ..." and numbered duplicates "... (1).ipynb" are recognised.

Writes grades.csv (student, total, max_total, one column per notebook and per graded step),
problems.json (why a student has no or only a partial grade: missing_notebook, not_a_notebook,
unmatched_file, metadata_stripped, duplicated_cell, deleted_cell, kernel_died, time_limit,
memory_limit, ...), feedback/ and, when available, the class report. Grading fails closed:
if the sandbox cannot start, no student is graded (unless --unsandboxed)."""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="backprop-ninja", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="grade a small demo class end to end and print its grades")
    demo.add_argument("--dir", default="demo", help="course folder to create (replaced if it exists)")
    grade = commands.add_parser(
        "grade",
        help="autograde a whole class: collect, sandboxed autograde in parallel, feedback, grades.csv",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=GRADE_HELP,
    )
    grade.add_argument("--course", default=".", help="the course root, with nbgrader_config.py (default: .)")
    grade.add_argument("--assignment", help="default: the one folder in source/")
    grade.add_argument(
        "--from",
        dest="download",
        metavar="DOWNLOAD",
        help="an LMS download (.zip or folder) to collect into submitted/ first; without it, "
        "submitted/<student>/<assignment>/*.ipynb is graded as it is",
    )
    grade.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="students graded at once (default: the number of cores, %(default)s here)",
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
        type=int,
        metavar="SECONDS",
        help="wall-clock limit of one notebook (default: GradingExecute.notebook_timeout, 600)",
    )
    grade.add_argument(
        "--cell-timeout",
        type=int,
        metavar="SECONDS",
        help="limit of one cell, which is then interrupted (default: Execute.timeout in nbgrader_config.py)",
    )
    grade.add_argument(
        "--memory-limit",
        type=float,
        metavar="GB",
        help="address space of one sandboxed kernel (default: SandboxedKernelManager.memory_limit, 4)",
    )
    grade.add_argument("--out", help="folder for grades.csv, problems.json (default: the course root)")
    grade.add_argument("--no-feedback", action="store_true", help="skip nbgrader generate_feedback")
    grade.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        require_tools()
    except MissingTool as error:
        sys.exit(f"backprop-ninja: {error}")
    if args.command == "demo":
        from .authoring.demo import run_demo  # imported here: each command loads only what it needs

        run_demo(args.dir)
    elif args.command == "grade":
        from .grading.class_grading import Options, grade_class, print_summary

        summary = grade_class(
            Options(
                course=Path(args.course),
                assignment=args.assignment,
                download=args.download and Path(args.download),
                workers=args.workers,
                sandbox=not args.unsandboxed,
                regrade_all=args.regrade_all,
                notebook_timeout=args.notebook_timeout,
                cell_timeout=args.cell_timeout,
                memory_limit_gb=args.memory_limit,
                out=args.out and Path(args.out),
                feedback=not args.no_feedback,
                progress=not args.quiet,
            )
        )
        print_summary(summary)


if __name__ == "__main__":
    main()

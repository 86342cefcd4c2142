"""One worker of ``backprop-ninja grade``: nbgrader's own autograde, one student at a time.

Started by ``class_grading`` with nbgrader command-line options (``--CourseDirectory.db_url=…``
and the like), in the course root. It loads the course's nbgrader_config.py exactly as
``nbgrader autograde`` does, so GradingExecute (in the sandbox) and JudgeAnswers run as
configured, then reads student ids from stdin, one a line, and for each runs nbgrader's
``NbGraderAPI.autograde`` (and ``generate_feedback``) into its own gradebook, and answers with
one JSON line on stdout::

    {"student", "success", "error", "incidents": [...], "sandbox_error", "seconds"}

Everything else the worker or nbgrader prints goes to stderr. One process serves many
students, so nbgrader, torch and the grader's reference setup are loaded once.
"""

import json
import os
import sys
import time


def sandbox_error(log: str) -> str:
    """The sandbox's own message when it could not start a kernel, else ''."""
    from ..sandbox import SandboxError

    marker = f"{SandboxError.__module__}.{SandboxError.__qualname__}:"  # the traceback's last line
    lines = [line for line in log.splitlines() if marker in line]
    return lines[-1].split(marker, 1)[1].strip() if lines else ""


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    assignment = argv.pop(0)
    feedback = "--no-feedback" not in argv
    argv = [a for a in argv if a != "--no-feedback"]
    results = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # a stray print must not be taken for a result

    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.apps.baseapp import NbGrader

    from ..preprocessors.grading_execute import GradingExecute

    app = NbGrader()
    app.initialize(argv)
    api = NbGraderAPI(coursedir=app.coursedir, parent=app)
    results.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        student = line.strip()
        if not student:
            continue
        started = time.monotonic()
        GradingExecute.incidents.clear()
        result = api.autograde(assignment, student, force=True, create=True)
        error = result.get("error") or ""
        if result["success"] and feedback:
            made = api.generate_feedback(assignment, student, force=True)
            if not made["success"]:
                error = "feedback: " + (made.get("error") or "")
        results.write(
            json.dumps(
                {
                    "student": student,
                    "success": bool(result["success"]),
                    "error": error[-3000:],
                    "incidents": list(GradingExecute.incidents),
                    "sandbox_error": sandbox_error(error + "\n" + result.get("log", "")),
                    "seconds": round(time.monotonic() - started, 2),
                }
            )
            + "\n"
        )


if __name__ == "__main__":
    main()

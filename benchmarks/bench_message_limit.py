"""The grading worker's peak memory while a notebook sends it 2 GiB (in one message, and in 100 messages of 20 MiB),
2.3 GiB in 40 messages faster than it reads them, and one message small in bytes but large once decoded.

    python benchmarks/bench_message_limit.py --before main

Each case is a fresh process that grades a two-cell notebook with the course's GradingExecute, sandboxed, as a
grading worker does, and prints its own peak RSS (``ru_maxrss``) before the notebook's first cell and at the end.
The kernel is allowed 8 GiB (its usual limit is 4 GiB) so that it can make the 2 GiB it sends.

  one message   the cell sends one message with a 2 GiB frame, through the kernel's own session (as any student can)
  100 messages  the cell prints 20 MiB a hundred times, flushing each: 100 stream messages
  a flood       40 messages of 60 MiB (each within the bound), their content encoded once: faster than they are read
  empty lists   one message of 60 MB, under the bound in bytes: 15 million empty lists, an object each once decoded
  nothing       the cell prints one line (the baseline)

``--before REV`` runs the same cases with the autograder package of that git revision, in the same run.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from revision import package_at

CASES = {
    "nothing": "print('one line')",
    "one message": (
        "kernel = get_ipython().kernel\n"
        "kernel.session.send(kernel.iopub_socket, 'display_data', {'data': {}, 'metadata': {}},\n"
        "                    parent=kernel.get_parent(), ident=kernel._topic('display_data'),\n"
        "                    buffers=[bytearray(2 * 2**30)])"
    ),
    "100 messages": "for _ in range(100):\n    print('x' * 20 * 2**20, flush=True)",
    "a flood": (  # 40 messages within the bound for one, their content encoded once: faster than the grader reads
        "kernel, session = get_ipython().kernel, get_ipython().kernel.session\n"
        "content = session.pack({'name': 'stdout', 'text': 'x' * 60 * 2**20})\n"
        "for _ in range(40):\n"
        "    message = session.msg('stream', {}, kernel.get_parent())\n"
        "    parts = [session.pack(message[k]) for k in ('header', 'parent_header', 'metadata')] + [content]\n"
        "    kernel.iopub_socket.send_multipart([kernel._topic('stream'), b'<IDS|MSG>', session.sign(parts), *parts])"
    ),
    "empty lists": (
        "kernel = get_ipython().kernel\n"
        "kernel.session.send(kernel.iopub_socket, 'display_data', {'data': {'application/json': [[]] * 15_000_000},\n"
        "                    'metadata': {}}, parent=kernel.get_parent(), ident=kernel._topic('display_data'))"
    ),
}


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one_case(case: str) -> dict:
    """Grade a notebook of the case's cell in this process; the peak RSS before its first cell and at the end."""
    from nbformat.v4 import new_code_cell, new_notebook
    from traitlets.config import Config

    import autograder
    from autograder.preprocessors import GradingExecute

    course = Path(tempfile.mkdtemp(prefix="bench-message-", dir="/var/tmp"))
    course.chmod(0o755)
    student = course / "autograded" / "student" / "assignment"
    student.mkdir(parents=True)
    config = Config()
    config.SandboxedKernelManager.course_root = str(course)
    config.SandboxedKernelManager.memory_limit = 8 * 2**30
    config.Execute.raise_on_iopub_timeout = False  # as nbgrader_config.py has it
    config.Execute.iopub_timeout = 60  # the old grader takes seconds to receive 2 GiB
    peaks = {}

    class Measured(GradingExecute):
        def preprocess_cell(self, cell, resources, index):
            peaks.setdefault("before", peak_mib())
            return super().preprocess_cell(cell, resources, index)

    cells = [new_code_cell("print('ready')"), new_code_cell(CASES[case])]
    try:
        nb, resources = Measured(config=config, timeout=600).preprocess(
            new_notebook(cells=cells), {"metadata": {"path": str(student)}}
        )
    finally:
        shutil.rmtree(course, ignore_errors=True)
    kinds = [p.kind for p in resources["backprop_ninja"]["incidents"]]
    return {**peaks, "after": peak_mib(), "problems": kinds, "package": os.path.dirname(autograder.__file__)}


def measure(case: str, package: Path | None) -> dict:
    env = dict(os.environ)
    if package is not None:
        env["PYTHONPATH"] = str(package)
    result = subprocess.run(
        [sys.executable, __file__, "--one", case], capture_output=True, text=True, env=env, timeout=1800
    )
    if result.returncode != 0:
        raise RuntimeError(f"{case}: {result.stderr[-3000:]}")
    measured = json.loads(result.stdout.splitlines()[-1])
    expected = str(package) if package else str(Path(__file__).resolve().parent.parent)
    assert measured["package"].startswith(expected), (case, measured["package"])  # the code meant to be measured
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", help="also measure the autograder package of this git revision (e.g. main)")
    parser.add_argument("--one", choices=list(CASES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_case(args.one)))
        return
    packages = {f"@{args.before}": package_at(args.before)} if args.before else {}
    packages["this tree"] = None
    print(f"{os.cpu_count()} cores; peak RSS of the grading worker, MiB (before the notebook's first cell -> end)")
    print(f"  {'case':14s} {'code':14s} {'before':>8s} {'end':>8s} {'grew':>8s}  problems")
    try:
        for case in CASES:
            for name, package in packages.items():
                m = measure(case, package)
                grew = m["after"] - m["before"]
                print(
                    f"  {case:14s} {name:14s} {m['before']:8.0f} {m['after']:8.0f} {grew:8.0f}  "
                    f"{', '.join(m['problems']) or '-'}",
                    flush=True,
                )
    finally:
        for package in packages.values():
            if package is not None:
                shutil.rmtree(package, ignore_errors=True)


if __name__ == "__main__":
    main()

"""``backprop-ninja grade --scheduler`` on a Dask cluster, and a gradebook on a PostgreSQL server.

The cluster is a simulated two-node one: a ``dask scheduler`` and two ``dask worker`` processes (one task at a
time each) on 127.0.0.1, started here once for the module and stopped at its end. The class is four students of
the demo class (Exercise 1). A local ``grade`` run of the same class is the reference every other run must
match: the same grades.csv, problems.json and autograded/feedback files. The faults are really made: a worker
process killed by its pid while a student's kernel runs, the coordinator interrupted (Ctrl-C) and killed, a
worker started from another version of the course, a scheduler address where nobody listens.
"""

import csv
import dataclasses
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from servers import WORKER_ENV, LoopbackCluster, Postgres, formgrader
from support.course import (
    ASSIGNMENT,
    DEMO_FOUR,
    NEWCOMER_ENV,
    REPO,
    copy_of,
    demo_four,
    free_port,
    grade_argv,
    run_grade,
    wait_until,
)

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

NB = "ex1_atomic_backward"
STUDENTS = DEMO_FOUR


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    loopback = LoopbackCluster(tmp_path_factory.mktemp("dask"))
    yield loopback
    loopback.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return demo_four(tmp_path_factory.mktemp("demo"))


def grade(root: Path, *args, check=True, env=None):
    return run_grade(root, "--quiet", *args, check=check, env=env, timeout=1800)


def outcome(root: Path) -> tuple:
    """What a run leaves for the instructor: grades.csv, problems.json, and every autograded and feedback file
    with its permissions (not its bytes: each run grades with its own unseen seed)."""
    with open(root / "grades.csv", newline="", encoding="utf-8-sig") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    problems = json.loads((root / "problems.json").read_text())
    files = sorted(
        (str(p.relative_to(root)), oct(p.stat().st_mode & 0o777))
        for kind in ("autograded", "feedback")
        for p in (root / kind).rglob("*")
        if p.is_file()
    )
    return rows, problems, files


def submissions(url: str) -> dict:
    """student -> how many submissions of the assignment the gradebook has for them."""
    from autograder.grading.results.gradebook import opened

    with opened(url) as gb:
        found = [s.student.id for s in gb.find_assignment(ASSIGNMENT).submissions]
    return {s: found.count(s) for s in found}


def complete(root: Path) -> set:
    """The students that .grading/state.json says are graded."""
    path = root / ".grading" / "state.json"
    if not path.is_file():
        return set()
    return {s for s, r in json.loads(path.read_text())["students"].items() if r["complete"] and r["graded"]}


@pytest.fixture(scope="module")
def local_run(demo, tmp_path_factory):
    """The class graded by local workers, as without a cluster: its course root."""
    root = copy_of(demo, tmp_path_factory.mktemp("local"))
    grade(root, "--workers", "2")
    return root


@pytest.fixture(scope="module")
def reference(local_run):
    """What the local run left: the outcome every other run must match."""
    return outcome(local_run)


def grading_pids(worker_pid: int) -> list:
    """The bubblewrap processes (a student's kernel) under a Dask worker process."""
    import psutil

    try:
        return [p.pid for p in psutil.Process(worker_pid).children(recursive=True) if p.name() == "bwrap"]
    except psutil.NoSuchProcess:
        return []


def test_the_cluster_grades_as_a_local_run_does_even_when_a_worker_is_killed_mid_student(
    cluster, demo, reference, tmp_path
):
    """Through the scheduler and its two workers, one of them killed (by its pid) while a student's kernel runs:
    the task goes to the other worker, and every student is graded once, exactly as by local workers."""
    root = copy_of(demo, tmp_path)
    run = subprocess.Popen(
        grade_argv(root, "--quiet", "--scheduler", cluster.address),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=NEWCOMER_ENV,
    )
    pids = {}

    def a_kernel_runs():
        pids.update(cluster.client.run(os.getpid))
        return next((a for a, pid in pids.items() if grading_pids(pid)), None)

    victim = wait_until(a_kernel_runs, 600, "a student's kernel on a worker")
    busy = [str(k) for k in cluster.client.processing()[victim]]
    assert any(k.startswith("grade-") for k in busy), busy
    os.kill(pids[victim], signal.SIGKILL)  # the worker process itself, mid-notebook
    out, err = run.communicate(timeout=1800)
    assert run.returncode == 0, err[-4000:]
    assert outcome(root) == reference, out
    assert submissions(f"sqlite:///{root / 'gradebook.db'}") == dict.fromkeys(STUDENTS, 1)
    assert [float(reference[0][s]["total"]) for s in STUDENTS] == [34, 33, 33.5, 0]
    wait_until(lambda: len(cluster.client.nthreads()) == 2, 180, "the nanny to restart the killed worker")
    assert victim not in cluster.client.nthreads()


def test_an_interrupted_run_grades_only_what_is_missing(cluster, demo, reference, tmp_path):
    root = copy_of(demo, tmp_path)
    argv = grade_argv(root, "--quiet", "--scheduler", cluster.address)
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=NEWCOMER_ENV)
    wait_until(lambda: complete(root), 900, "a first student to be graded")
    first.send_signal(signal.SIGINT)  # Ctrl-C
    _, err = first.communicate(timeout=300)
    assert first.returncode != 0 and "interrupted" in err, err[-3000:]
    done = complete(root)
    assert 1 <= len(done) < len(STUDENTS)
    second = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=NEWCOMER_ENV)
    wait_until(lambda: complete(root) - done, 900, "one more student to be graded")
    second.kill()  # the coordinator killed outright: no time to save anything more
    second.communicate(timeout=60)
    done = complete(root)
    last = grade(root, "--scheduler", cluster.address)
    assert f"4 students: {len(STUDENTS) - len(done)} (re)graded, {len(done)} unchanged" in last.stdout, last.stdout
    assert outcome(root) == reference
    assert submissions(f"sqlite:///{root / 'gradebook.db'}") == dict.fromkeys(STUDENTS, 1)


def test_a_scheduler_nobody_answers_at_stops_the_run_before_grading(demo, tmp_path):
    root = copy_of(demo, tmp_path)
    nobody = f"tcp://127.0.0.1:{free_port()}"
    env = {**NEWCOMER_ENV, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "3s"}
    result = grade(root, "--scheduler", nobody, check=False, env=env)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        f"cannot reach the Dask scheduler at {nobody}: Timed out trying to connect to {nobody} after 3 s. "
        "Nothing was graded."
    ]
    assert (
        not (root / "grades.csv").exists() and not (root / ".grading").exists() and not (root / "autograded").exists()
    )


def another_version(folder: Path) -> Path:
    """The course's package as another release of it would be: version 0.2.0, one rule's code changed."""
    shutil.copytree(REPO / "autograder", folder / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    with open(folder / "autograder" / "engine" / "tolerance.py", "a") as f:
        f.write("\n# a change of 0.2.0\n")
    info = folder / "backprop_ninja-0.2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: backprop-ninja\nVersion: 0.2.0\n")
    return folder


def test_a_worker_of_another_version_is_refused_before_grading(cluster, demo, tmp_path):
    root = copy_of(demo, tmp_path)
    other = another_version(tmp_path / "other")
    cluster.start_worker("worker-old", env={**WORKER_ENV, "PYTHONPATH": str(other)})
    try:
        wait_until(lambda: "worker-old" in cluster.workers(), 180, "the third worker")
        result = grade(root, "--scheduler", cluster.address, check=False)
    finally:
        cluster.stop("worker-old")
    assert result.returncode != 0
    message = result.stderr
    assert "Dask worker worker-old (tcp://127.0.0.1:" in message and "Nothing was graded" in message, message
    assert "backprop-ninja 0.2.0 (code " in message and "on the worker, 0.1.0 (code " in message
    assert not (root / "grades.csv").exists() and not (root / "autograded").exists()
    assert submissions(f"sqlite:///{root / 'gradebook.db'}") == {}
    wait_until(lambda: sorted(cluster.workers()) == ["worker-1", "worker-2"], 120, "the third worker to leave")


def test_a_worker_refuses_a_job_that_is_not_the_courses(cluster, demo, tmp_path):
    from autograder.grading.cluster import remote
    from autograder.grading.cluster.payload import CourseBundle, Refused, StudentJob
    from autograder.grading.results.gradebook import make_template, sqlite_url
    from autograder.grading.workers.pool import GraderSettings

    root = copy_of(demo, tmp_path)
    make_template(sqlite_url(root / "gradebook.db"), ASSIGNMENT, tmp_path / "template.db")
    bundle = CourseBundle.build(root, ASSIGNMENT, [NB], GraderSettings(), tmp_path / "template.db")
    name = remote.plugin_name(bundle.digest)
    cluster.client.register_plugin(remote.CoursePlugin(bundle), name=name)
    try:
        notebook = (root / "submitted" / "ada_perfect" / ASSIGNMENT / f"{NB}.ipynb").read_bytes()
        hostile = {
            "not a valid notebook": {NB: b"#!/bin/sh\nrm -rf /\n"},
            "not one of the course's notebooks": {"../../../../root/.bashrc": notebook},
            "not the release's": {NB: nbformat.writes(extra_graded_cell(notebook)).encode()},
        }
        for reason, notebooks in hostile.items():
            future = cluster.client.submit(
                remote.grade, StudentJob("mallory", bundle.digest, notebooks), bundle.versions, 60, pure=False
            )
            with pytest.raises(Refused, match=reason):
                future.result(timeout=120)
        future = cluster.client.submit(
            remote.grade, StudentJob("../mallory", bundle.digest, {NB: notebook}), bundle.versions, 60, pure=False
        )
        with pytest.raises(Refused, match="not a student's folder name"):
            future.result(timeout=120)
    finally:
        cluster.client.unregister_worker_plugin(name)


def extra_graded_cell(data: bytes):
    nb = nbformat.reads(data.decode(), as_version=4)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "100.0", metadata={"nbgrader": {"grade": True, "grade_id": "test_bonus", "points": 100, "locked": True}}
        )
    )
    return nb


def documented_slurm_command() -> list:
    """docs/cluster.md's ``backprop-ninja slurm-script`` command line, as an instructor copies it."""
    lines = [ln.strip() for ln in (REPO / "docs" / "cluster.md").read_text().splitlines()]
    line = next(ln for ln in lines if ln.startswith(".venv/bin/backprop-ninja slurm-script "))
    return line.split(">")[0].split()[1:]


def test_the_slurm_job_for_the_documented_settings(capsys):
    from autograder.cli import main

    main(documented_slurm_command())
    script = capsys.readouterr().out
    lines = script.splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    for directive in ["-J backprop-ninja-grading", "-n 1", "--cpus-per-task=8", "--mem=15G", "-t 02:00:00"]:
        assert f"#SBATCH {directive}" in lines, script
    assert [ln for ln in lines if ln.startswith("export ")] == [
        "export OMP_NUM_THREADS=1",
        "export MKL_NUM_THREADS=1",
        "export OPENBLAS_NUM_THREADS=1",
    ]
    (command,) = [ln for ln in lines if "distributed.cli.dask_worker" in ln]
    argv = command.split()
    assert argv[0] == sys.executable and argv[3] == "tls://LOGIN-NODE:8786"
    flags = {flag: value for flag, value in zip(argv, argv[1:] + [""]) if flag.startswith("--")}
    assert flags["--name"] == "backprop-ninja-$SLURM_JOB_ID" and flags["--nthreads"] == "8"
    assert flags["--death-timeout"] == "60" and "--nanny" in flags
    assert flags["--tls-ca-file"] == "tls/ca.pem" and flags["--tls-cert"] == "tls/worker.pem"
    assert flags["--tls-key"] == "tls/worker.key"


@pytest.fixture(scope="module")
def postgres():
    if Postgres.unavailable():
        pytest.skip(Postgres.unavailable())
    server = Postgres()
    yield server
    server.stop()


def test_a_postgresql_gradebook_is_graded_into_while_the_formgrader_uses_it(postgres, demo, reference, tmp_path):
    """The course's gradebook on the server (nbgrader_config.py's db_url, as docs/postgres.md says): a TA corrects a
    score, comments and flags in the Formgrader while ``grade`` is still grading the class into the same gradebook."""
    root = copy_of(demo, tmp_path)
    shutil.rmtree(root / "submitted" / "finn_blank")  # three students: two at a time, then one more
    # the last one a slow student (a cell that waits), so that grade is surely still running while the TA corrects the
    # first: without it the third could be graded before the TA's four requests were made
    slow = root / "submitted" / STUDENTS[2] / ASSIGNMENT / f"{NB}.ipynb"
    nb = nbformat.read(slow, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import time\n\ntime.sleep(20)"))
    nbformat.write(nb, slow)
    (root / "gradebook.db").unlink()  # the course moves to the server: the assignment is added there anew
    url = postgres.database("backprop_ninja")
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(f"c.CourseDirectory.db_url = {url!r}\n")
    from nbgrader.api import Gradebook

    # the course's row, made first: nbgrader's Gradebook inserts it when it is missing, and two opening it at once on
    # an empty server both try (the Formgrader's request then failed with UniqueViolation, a 500)
    with Gradebook(url, ASSIGNMENT):  # (the course id is the assignment's name, as nbgrader_config.py has it)
        pass
    with formgrader(root) as ta:
        run = subprocess.Popen(
            grade_argv(root, "--quiet", "--workers", "2"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=NEWCOMER_ENV,
        )
        listed = lambda: ta.get(f"submitted_notebooks/{ASSIGNMENT}/{NB}") if run.poll() is None else [None]
        (first,) = wait_until(listed, 900, "a first graded student in the Formgrader")[:1]
        ended = "" if first is not None else f" (exit {run.returncode}): {run.communicate()[1][-3000:]}"
        assert first is not None, f"grade ended before the Formgrader saw any student{ended}"
        grades = {g["name"]: g for g in ta.get(f"grades?submission_id={first['id']}")}
        ta.put(f"grade/{grades['test_dprobs']['id']}", {"manual_score": 0.25})
        comment = ta.get(f"comments?submission_id={first['id']}")[0]
        ta.put(f"comment/{comment['id']}", {"manual_comment": "TA: see the chain rule"})
        ta.post(f"submitted_notebook/{first['id']}/flag")
        assert run.poll() is None, "grade ended before the TA's corrections"
        out, err = run.communicate(timeout=1800)
    assert run.returncode == 0, err[-4000:]
    student = first["student"]
    rows, problems, files = outcome(root)
    students = STUDENTS[:3]
    expected = {s: dict(r) for s, r in reference[0].items() if s in students}
    was = float(expected[student][f"{NB}:test_dprobs"])
    assert float(rows[student][f"{NB}:test_dprobs"]) == 0.25
    assert float(rows[student]["total"]) == float(expected[student]["total"]) - was + 0.25
    for column in (f"{NB}:test_dprobs", "total", NB):
        rows[student].pop(column), expected[student].pop(column)
    of_them = lambda path: path.split("/")[1] in students
    assert (rows, problems) == (expected, [p for p in reference[1] if p["student"] in students])
    assert files == [(path, mode) for path, mode in reference[2] if of_them(path)]
    assert submissions(url) == dict.fromkeys(students, 1) and not (root / "gradebook.db").exists()
    from autograder.grading.results.gradebook import opened

    with opened(url) as gb:
        notebook = gb.find_submission_notebook(NB, ASSIGNMENT, student)
        assert notebook.flagged and gb.find_comment(comment["name"], NB, ASSIGNMENT, student).manual_comment == (
            "TA: see the chain rule"
        )


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_the_batched_merge_writes_the_rows_nbgraders_api_wrote_one_student_at_a_time(
    database, demo, local_run, request, tmp_path
):
    """The class's grades as its workers sent them (read back from the local run's gradebook), merged into the
    course's gradebook as it was before grading, by the merger and by nbgrader's API one student at a time
    (``support/gradebooks.py``, the coordinator's way before it): the same rows, ids aside, and the same lateness.
    Then a teaching assistant corrects a score, comments and flags, one student gets an extension, and the class
    is merged again with other grades (each student another's) handed in a day late: still the same."""
    from support.gradebooks import copy_gradebook, graded_at, merge_one_by_one, rows

    from autograder.grading.results.gradebook import opened, sqlite_url
    from autograder.grading.results.merge import Merger

    sent = graded_at(sqlite_url(local_run / "gradebook.db"), ASSIGNMENT)
    assert sorted(sent) == sorted(STUDENTS) and any(
        score for _, (score, _) in sent["ada_perfect"].notebooks[NB].scores.items()
    )
    urls = {}
    for way in ("batched", "one_by_one"):
        if database == "sqlite":
            shutil.copy(demo / "gradebook.db", tmp_path / f"{way}.db")
            urls[way] = sqlite_url(tmp_path / f"{way}.db")
        else:
            urls[way] = request.getfixturevalue("postgres").database(f"merge_{way}")
            copy_gradebook(sqlite_url(demo / "gradebook.db"), urls[way])
    late = datetime.datetime(2026, 12, 1, 12, 0)
    again = {
        s: dataclasses.replace(sent[o], timestamp=late.isoformat())
        for s, o in zip(STUDENTS, STUDENTS[1:] + STUDENTS[:1])
    }
    for number, grades in enumerate((sent, again)):
        expected = {s: merge_one_by_one(urls["one_by_one"], ASSIGNMENT, s, g) for s, g in grades.items()}
        reported = {}
        merger = Merger(urls["batched"], tmp_path, ASSIGNMENT, reported.__setitem__)
        for student, submission in grades.items():
            merger.add(student, submission)
        merger.close()
        assert reported == expected
        assert rows(urls["batched"]) == rows(urls["one_by_one"])
        for url in urls.values() if number == 0 else ():  # the TA, and the extension
            with opened(url) as gb:
                gb.find_assignment(ASSIGNMENT).duedate = late - datetime.timedelta(days=1)
                gb.find_grade("test_dprobs", NB, ASSIGNMENT, "ben_sign").manual_score = 0.25
                gb.find_comment("answer_dprobs", NB, ASSIGNMENT, "ben_sign").manual_comment = "TA: the chain rule"
                gb.find_submission_notebook(NB, ASSIGNMENT, "cleo_keepdim").flagged = True
                gb.find_submission(ASSIGNMENT, "finn_blank").extension = datetime.timedelta(days=2)
                gb.db.commit()
    assert {s: late.seconds for s, late in expected.items()} == {**dict.fromkeys(STUDENTS, 86400), "finn_blank": 0}
    with opened(urls["batched"]) as gb:
        ben = gb.find_grade("test_dprobs", NB, ASSIGNMENT, "ben_sign")
        assert (
            ben.manual_score == 0.25 and ben.auto_score == sent["cleo_keepdim"].notebooks[NB].scores["test_dprobs"][0]
        )

"""The pieces of grading on a Dask cluster and of a shared gradebook that need no kernel and no cluster: what a
worker refuses, the version check, what travels, the gradebook's URL. (The template and the merge:
test_gradebook_merge.py.)"""

import datetime
import json
import shutil
import time

import nbformat
import pytest
from support.course import ASSIGNMENT, REPO

from autograder.common.errors import GradingError
from autograder.common.problems import Problem
from autograder.grading.cluster.payload import (
    CourseBundle,
    Refused,
    StudentJob,
    check_job,
    check_outputs,
    grade_ids,
    version_differences,
    versions,
)
from autograder.grading.intake.repair import MAX_BYTES
from autograder.grading.results import gradebook
from autograder.grading.results.gradebook import GradedSubmission
from autograder.grading.workers.pool import GraderSettings
from autograder.grading.workers.worker import WorkerResult
from autograder.sandbox.uids import claim_sandbox_uid

NB = "ex1_atomic_backward"
RELEASE = REPO / "release" / ASSIGNMENT / f"{NB}.ipynb"


@pytest.fixture(scope="module")
def bundle():
    cells = tuple(grade_ids(nbformat.read(RELEASE, as_version=4)))
    return CourseBundle(ASSIGNMENT, (NB,), {NB: cells}, b"", b"", {}, GraderSettings(), versions(), "c0ffee" * 10)


def job(bundle, notebooks=None, **changes):
    fields = dict(
        student="ada", course=bundle.digest, notebooks={NB: RELEASE.read_bytes()} if notebooks is None else notebooks
    )
    return StudentJob(**{**fields, **changes})


def test_a_worker_takes_the_course_notebooks_of_a_student(bundle):
    check_job(bundle, job(bundle))
    check_job(bundle, job(bundle, student="Ada Lovelace_1234", timestamp=b"2026-12-01 10:00:00 UTC"))


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"course": "another"}, "the job is for course"),
        ({"student": "../ada"}, "not a student's folder name"),
        ({"student": ".."}, "not a student's folder name"),
        ({"student": ""}, "not a student's folder name"),
        ({"student": "a" * 256}, "not a student's folder name"),
        ({"timestamp": b"x" * 5000}, "timestamp.txt is 5000 bytes"),
        ({"notebooks": {}}, "no notebook"),
    ],
)
def test_a_worker_refuses_a_job_that_is_not_a_students(bundle, changes, reason):
    with pytest.raises(Refused, match=reason):
        check_job(bundle, job(bundle, **changes))


def test_a_worker_refuses_what_is_not_a_notebook_of_the_course(bundle):
    release = nbformat.read(RELEASE, as_version=4)
    foreign = nbformat.read(RELEASE, as_version=4)
    foreign.cells[3].metadata["nbgrader"] = {**foreign.cells[3].metadata.get("nbgrader", {}), "grade_id": "test_x"}
    foreign.cells[3].metadata["nbgrader"].update(grade=True, points=100, solution=False, locked=True)
    twice = nbformat.read(RELEASE, as_version=4)
    graded = next(c for c in twice.cells if c.metadata.get("nbgrader", {}).get("grade"))
    twice.cells.append(nbformat.from_dict(json.loads(json.dumps(graded))))
    twice.cells[-1].id = "another-id"
    cases = {
        "../../../etc/passwd": (RELEASE.read_bytes(), "not one of the course's notebooks"),
        "ex9_unknown": (RELEASE.read_bytes(), "not one of the course's notebooks"),
        NB: (b"<html>not found</html>", "not a valid notebook"),
        f"{NB} ": (b"", "not one of the course's notebooks"),
    }
    for name, (data, reason) in cases.items():
        with pytest.raises(Refused, match=reason):
            check_job(bundle, job(bundle, {name: data}))
    for data, reason in [
        (b"\xff\xfe not utf-8", "not a valid notebook"),
        (json.dumps({"cells": "none", "nbformat": 4}).encode(), "not a valid notebook"),
        (b" " * (MAX_BYTES + 1), "over the 100 MB limit"),
        (nbformat.writes(foreign).encode(), "not the release's"),
        (nbformat.writes(twice).encode(), "twice"),
    ]:
        with pytest.raises(Refused, match=reason):
            check_job(bundle, job(bundle, {NB: data}))
    check_job(bundle, job(bundle, {NB: nbformat.writes(release).encode()}))


def test_the_coordinator_refuses_outputs_outside_the_students_folders():
    check_outputs(
        {f"autograded/ada/{ASSIGNMENT}/{NB}.ipynb": (0o444, b""), f"feedback/ada/{ASSIGNMENT}/x.html": (0o644, b"")},
        "ada",
        ASSIGNMENT,
    )
    for name in [
        f"autograded/ben/{ASSIGNMENT}/{NB}.ipynb",
        f"autograded/ada/other/{NB}.ipynb",
        f"submitted/ada/{ASSIGNMENT}/{NB}.ipynb",
        f"autograded/ada/{ASSIGNMENT}/../../../nbgrader_config.py",
        f"/autograded/ada/{ASSIGNMENT}/{NB}.ipynb",
        "gradebook.db",
        f"autograded/ada/{ASSIGNMENT}",
    ]:
        with pytest.raises(Refused, match="outside their folders"):
            check_outputs({name: (0o644, b"")}, "ada", ASSIGNMENT)


def test_versions_name_every_difference():
    import tomllib

    ours = versions()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert set(ours) == {"backprop-ninja", "torch", "nbgrader", "python"}
    assert ours["backprop-ninja"].startswith(f"{project} (code ") and ours["torch"].startswith("2.13.0")
    assert version_differences(ours, dict(ours)) == []
    theirs = {**ours, "torch": "2.12.0", "backprop-ninja": "0.2.0 (code abc)"}
    theirs.pop("python")
    assert version_differences(ours, theirs) == [
        f"backprop-ninja 0.2.0 (code abc) on the worker, {ours['backprop-ninja']} on the coordinator",
        f"python missing on the worker, {ours['python']} on the coordinator",
        f"torch 2.12.0 on the worker, {ours['torch']} on the coordinator",
    ]


def test_the_worker_protocol_carries_the_grades():
    graded = GradedSubmission("2026-12-16T10:00:00", {NB: gradebook.GradedNotebook({"test_dh": [1.0, False]}, {}, 0)})
    result = WorkerResult("ada", True, incidents=[Problem("ada", NB, "kernel_died", "x")], grades=graded)
    assert WorkerResult.from_json(json.loads(result.to_line())) == result


def test_the_gradebook_is_where_nbgrader_config_says(tmp_path):
    shutil.copy(REPO / "nbgrader_config.py", tmp_path)
    assert gradebook.course_url(tmp_path) == f"sqlite:///{tmp_path / 'gradebook.db'}"
    assert not gradebook.exists(gradebook.course_url(tmp_path))
    shared = "postgresql+psycopg://ta@/backprop_ninja?host=/run/postgresql"
    with open(tmp_path / "nbgrader_config.py", "a") as config:
        config.write(f"c.CourseDirectory.db_url = {shared!r}\n")
    assert gradebook.course_url(tmp_path) == shared and gradebook.exists(shared)


def test_a_broken_nbgrader_config_is_named_with_its_line_and_error(tmp_path):
    shutil.copy(REPO / "nbgrader_config.py", tmp_path)
    with open(tmp_path / "nbgrader_config.py", "a") as config:
        config.write("c.CourseDirectory.db_url = undefined_name\n")
    lines = len((tmp_path / "nbgrader_config.py").read_text().splitlines())
    with pytest.raises(GradingError, match=rf"nbgrader_config.py, line {lines} fails: NameError: .*undefined_name"):
        gradebook.course_url(tmp_path)


def test_graders_on_one_machine_claim_sandbox_uids_of_their_own(monkeypatch, tmp_path):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # lock files of this test only
    first, lock = claim_sandbox_uid(61000)
    second, other = claim_sandbox_uid(61000)
    assert first >= 61000 and second > first  # a Dask worker and a local run beside it: never the same uid
    lock.close()
    assert claim_sandbox_uid(61000)[0] == first  # given back when its worker stops
    other.close()


@pytest.mark.parametrize(
    "address, allowed",
    [
        ("tcp://127.0.0.1:8786", True),
        ("tcp://localhost:8786", True),
        ("tcp://[::1]:8786", True),
        ("127.0.0.1:8786", True),
        ("inproc://10.0.0.5/1/2", True),
        ("tls://10.0.0.5:8786", True),
        ("tls://login-node:8786", True),
        ("tcp://10.0.0.5:8786", False),
        ("10.0.0.5:8786", False),  # Dask's default protocol is tcp
        ("ws://10.0.0.5:8786", False),
        ("tcp://[2001:db8::5]:8786", False),
        ("tcp://login-node.invalid:8786", False),  # a name that does not resolve is not known to be this machine
    ],
)
def test_a_scheduler_on_another_machine_is_reached_only_over_tls(address, allowed):
    from autograder.grading.cluster.coordinator import check_address

    if allowed:
        check_address(address)
        return
    with pytest.raises(GradingError) as refused:
        check_address(address)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"refusing {address}: ")
    assert "tls://" in message and "course's CA" in message and "--insecure-cluster" in message
    assert message.endswith("Nothing was graded.")
    check_address(address, insecure_cluster=True)


def test_grade_help_names_the_override(capsys):
    from autograder.cli import main

    with pytest.raises(SystemExit):
        main(["grade", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--insecure-cluster allow a tcp:// scheduler on another machine" in text
    assert "tls://HOST:8786 with Dask's TLS settings and the course's CA" in text


def test_the_summary_names_the_slow_host():
    from autograder.grading.cluster.coordinator import host_times
    from autograder.grading.summary import host_lines

    hosts = host_times({"w1 (10.0.0.11)": [5.0, 6.0, 5.5], "w2 (10.0.0.12)": [23.0], "w3 (10.0.0.13)": [6.5, 5.0]})
    assert [(h.host, h.slow) for h in hosts] == [("w1 (10.0.0.11)", 0), ("w2 (10.0.0.12)", 4.2), ("w3 (10.0.0.13)", 0)]
    lines = host_lines(hosts)
    assert lines[0] == "graded on 3 hosts:"
    slow = "w2 (10.0.0.12) 1 student , median 23.0 s SLOW: 4.2 times the other hosts' median"
    assert lines[2].split() == slow.split()
    assert "SLOW" not in lines[1] + lines[3]
    assert host_lines([]) == [] and [h.slow for h in host_times({"w1": [30.0]})] == [0]


def test_a_timestamp_travels_as_the_instant_this_machine_reads():
    from nbgrader.utils import parse_utc

    from autograder.grading.cluster.payload import submission_time

    cases = {
        b"2026-12-16 10:00:00 Europe/Berlin": b"2026-12-16 09:00:00.000000 UTC",
        b"2026-12-16T10:00:00.5+01:00\n": b"2026-12-16 09:00:00.500000 UTC",
        b"2026-12-16 10:00:00": b"2026-12-16 10:00:00.000000 UTC",  # nbgrader takes a time without a zone as UTC
    }
    for data, sent in cases.items():
        assert submission_time(data) == sent and parse_utc(sent.decode()) == parse_utc(data.decode().strip())
    year = datetime.datetime.now(datetime.timezone.utc).year  # dateutil takes a missing year from the clock: this one
    assert submission_time(b"Dec 16 10:00 UTC") == f"{year}-12-16 10:00:00.000000 UTC".encode()
    for unreadable in (b"next tuesday", b"\xff\xfe", b""):
        assert submission_time(unreadable) == unreadable  # the worker's nbgrader fails on it, as a local run would


def test_a_run_whose_scheduler_has_no_worker_left_stops_with_one_line(monkeypatch):
    from autograder.grading.cluster import coordinator as cluster

    class Scheduler:  # a client whose scheduler has these workers
        workers = {}

        def nthreads(self):
            return self.workers

    monkeypatch.setattr(cluster, "WORKER_TIMEOUT", 0.2)
    monkeypatch.setattr(cluster.WorkersWatch, "EVERY", 0)
    scheduler = Scheduler()
    watch = cluster.WorkersWatch(scheduler)
    watch.check(3)  # alone from now
    scheduler.workers = {"tls://10.0.0.11:4000": 1}
    watch.check(3)  # a worker came back: the count starts again
    time.sleep(0.25)
    watch.check(3)
    scheduler.workers = {}
    watch.check(3)
    time.sleep(0.25)
    with pytest.raises(GradingError) as stopped:
        watch.check(3)
    assert str(stopped.value).startswith("grading stopped: no Dask worker has been at the scheduler for 0.2 s, 3 ")
    assert "\n" not in str(stopped.value) and str(stopped.value).endswith("the next run grades only the rest.")

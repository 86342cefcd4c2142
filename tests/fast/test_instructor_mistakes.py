"""What an instructor gets wrong on the command line (a path, a name, two runs at once) is answered in one line that
says what is wrong and what to do, before anything is written."""

import fcntl
import re
import zipfile
from pathlib import Path

import pytest
from support.course import ASSIGNMENT

from autograder.cli import main
from autograder.common.errors import GradingError
from autograder.grading.intake.collect import collect
from autograder.grading.preflight import course_lock, notebook_names

NB = "ex1_atomic_backward"


def small_course(root):
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    (root / "source" / ASSIGNMENT / f"{NB}.ipynb").write_text("{}")
    (root / "nbgrader_config.py").write_text("c = get_config()\n")
    with zipfile.ZipFile(root / "download.zip", "w") as z:
        z.writestr("Ada Lovelace_1001_assignsubmission_file_/ex1.ipynb", "{}")
    return root


def grade(*args) -> str:
    with pytest.raises(SystemExit) as stop:
        main(["grade", "--quiet", *args])
    return str(stop.value.code)


@pytest.mark.parametrize(
    "args, said",
    [
        (["--course", "{root}/nope"], r"/nope does not exist: --course names the course root"),
        (["--course", "{root}/source"], r"/source is not a course root: it has no nbgrader_config.py \(run the "),
        (["--course", "{root}", "--assignment", "ninja"], rf"has no assignment ninja: it has {ASSIGNMENT}$"),
    ],
)
def test_a_wrong_course_or_assignment_is_named_with_what_is_there(tmp_path, args, said):
    root = small_course(tmp_path)
    message = grade(*(a.format(root=root) for a in args))
    assert re.search(said, message), message
    assert not (root / "submitted").exists() and not (root / ".grading").exists()


@pytest.mark.parametrize(
    "args, said",
    [
        (["--workers", "0"], "argument --workers: 0 is below 1"),
        (["--memory-limit", "-1"], "argument --memory-limit: -1 is below 0 (0: no limit)"),
        (["--cell-timeout", "-5"], "argument --cell-timeout: -5 is below 0 (0: no limit)"),
        (["--notebook-timeout", "10m"], "argument --notebook-timeout: '10m' is not a whole number"),
        (["--grader-time-limit", "0"], "argument --grader-time-limit: 0 is below 1"),
        (["--grader-time-limit", "two"], "argument --grader-time-limit: 'two' is not a number"),
    ],
)
def test_a_number_the_command_cannot_mean_is_refused_before_anything_runs(tmp_path, capsys, args, said):
    """--grader-time-limit 0 put every student over the grader's time at once (not graded); --workers 0 graded with
    one worker, saying nothing; a negative limit meant no limit, as 0 does. Each is one line of argparse now."""
    root = small_course(tmp_path)
    assert grade("--course", str(root), *args) == "2"  # argparse's exit status, with its message on stderr
    assert said in capsys.readouterr().err
    assert not (root / "submitted").exists() and not (root / ".grading").exists()


def test_a_download_that_does_not_exist_is_not_called_a_damaged_zip(tmp_path):
    with pytest.raises(GradingError, match=r"missing.zip: no such file or folder \(--from names the LMS's download"):
        collect(tmp_path / "missing.zip", tmp_path, ASSIGNMENT, [NB])
    with pytest.raises(GradingError, match="has no assignment other: it has none"):
        notebook_names(tmp_path, "other")


def test_a_second_grade_of_a_course_stops_before_it_writes_anything(tmp_path):
    root = small_course(tmp_path)
    (root / ".grading").mkdir()
    with open(root / ".grading" / "running", "a+") as held:  # the first run, as another process holds it
        held.write("process 4242 of ada, started 2026-12-06T15:00:00+00:00")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        message = grade("--course", str(root), "--from", str(root / "download.zip"), "--unsandboxed")
    assert f"another backprop-ninja grade is running in {root} (process 4242 of ada, started 2026" in message
    assert message.endswith("Nothing was graded.")
    assert not (root / "submitted").exists() and not (root / "gradebook.db").exists()
    with course_lock(root):  # once the first run has ended, the next one runs, and says who it is
        assert (root / ".grading" / "running").read_text().startswith("process ")
        with pytest.raises(GradingError, match="another backprop-ninja grade is running"):
            with course_lock(root):
                pass
    with course_lock(root):
        pass


def test_the_summary_says_where_the_students_feedback_is(tmp_path, monkeypatch, capsys):
    from autograder.grading import class_grading
    from autograder.grading.summary import Summary

    done = Summary(
        ["ada"], ["ada"], [], [], tmp_path / "grades.csv", tmp_path / "p.json", tmp_path / "h.csv", None, 1.0
    )
    monkeypatch.setattr(class_grading, "grade_class", lambda options: done)
    main(["grade", "--course", str(tmp_path), "--quiet"])
    assert f"feedback: {tmp_path / 'feedback'}\n" in capsys.readouterr().out
    main(["grade", "--course", str(tmp_path), "--quiet", "--no-feedback"])
    assert "feedback:" not in capsys.readouterr().out


def test_the_release_made_before_the_first_grading_is_told_as_a_step_not_as_a_command_to_type(
    tmp_path, monkeypatch, capsys
):
    from autograder.grading import preflight

    ran = []
    monkeypatch.setattr(preflight, "run_nbgrader", lambda root, *args: ran.append(args))
    preflight.ensure_release(tmp_path, ASSIGNMENT, [NB], f"sqlite:///{tmp_path / 'gradebook.db'}")
    assert ran == [("generate_assignment", ASSIGNMENT, "--force")]
    said = capsys.readouterr().err
    assert said.startswith(f"running nbgrader generate_assignment {ASSIGNMENT} --force, since the gradebook"), said
    assert f"lacks {NB} (once, before the first grading)" in said


def test_a_missing_notebook_names_what_the_student_handed_in_instead(tmp_path):
    from autograder.common.problems import Problem
    from autograder.grading.intake.prepare import stage_student

    (tmp_path / "submitted" / "Eli_1005" / ASSIGNMENT).mkdir(parents=True)
    pdf = "Eli Scatter_1005_assignsubmission_file_/ex1_atomic_backward.pdf: not a notebook file (.ipynb)"
    collected = [
        Problem("Eli_1005", None, "unmatched_file", pdf),
        Problem("Ben_1002", None, "unmatched_file", "Ben_1002_assignsubmission_file_/notes.txt: not a notebook file"),
    ]
    staged, problems = stage_student(tmp_path, ASSIGNMENT, "Eli_1005", [NB], {}, collected)
    assert staged == [] and [(p.kind, p.notebook) for p in problems] == [("missing_notebook", NB)]
    assert problems[0].detail == f"no {NB}.ipynb was handed in; what was handed in matches no notebook: {pdf}"


def test_the_summary_counts_one_problem_as_one_problem():
    import io

    from autograder.common.problems import Problem
    from autograder.grading.summary import Summary, print_summary

    for problems, said in [(1, "1 problem: 1 duplicate_file\n"), (2, "2 problems: 2 duplicate_file\n")]:
        found = [Problem(f"s{i}", NB, "duplicate_file", "2 files") for i in range(problems)]
        out = io.StringIO()
        print_summary(Summary(["s0", "s1"], ["s0", "s1"], [], found, "g", "p", "h", None, 1.0), out)
        assert said in out.getvalue(), out.getvalue()


def test_a_course_root_with_another_version_of_the_grader_is_refused_before_grading(tmp_path):
    """On a hub the instructor's course root is a clone, with its own autograder/, and the commands are the admin's
    install: the workers and the exchange's collect (``python -m`` in the course root) imported the clone's, the rest
    the install's; after the admin updated the install, a fix of the collect did not run at all (measured: cleo's
    copied notebook still graded 0). A root with the same package, or none, is graded as before."""
    import shutil

    import autograder
    from autograder.grading.preflight import check_one_grader

    ours = Path(autograder.__file__).resolve().parent
    check_one_grader(tmp_path)  # no autograder/ in the course root
    shutil.copytree(ours, tmp_path / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    check_one_grader(tmp_path)  # the same version
    (tmp_path / "autograder" / "grading" / "intake" / "owned_collect.py").write_text("# an older collect\n")
    with pytest.raises(GradingError, match=r"another version of the grader.*Nothing was graded"):
        check_one_grader(tmp_path)

"""The pieces of class grading that need no kernel: problems, the worker protocol, the state, change keys,
the command-line layer, and the rules the package keeps (no SystemExit below cli.py, small modules)."""

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile

import pytest
from support.course import ASSIGNMENT, REPO

from autograder.cli import main
from autograder.common.errors import GradingError
from autograder.common.problems import KINDS, Problem, read_problems, write_problems
from autograder.grading.intake import changes
from autograder.grading.intake.collect import collect
from autograder.grading.intake.state import GradingState, StudentRecord
from autograder.grading.preflight import course_root, find_assignment, notebook_names
from autograder.grading.results.gradebook import sqlite_url
from autograder.grading.workers.worker import WorkerResult

NB = "ex1_atomic_backward"


def test_a_problem_has_a_known_kind_and_problems_json_keeps_its_shape(tmp_path):
    with pytest.raises(ValueError, match="time_limit"):
        Problem("ada", NB, "time_limit", "the old name")
    problems = [
        Problem("ben", None, "unmatched_file", "notes.txt: not a notebook file (.ipynb)"),
        Problem("ada", NB, "cell_timeout", "cell 12 ran over the 15 s cell limit"),
    ]
    write_problems(tmp_path / "problems.json", problems)
    entries = json.loads((tmp_path / "problems.json").read_text())
    assert [list(e) for e in entries] == [["student", "notebook", "problem", "detail"]] * 2
    assert [e["student"] for e in entries] == ["ada", "ben"]  # sorted by student
    assert read_problems(tmp_path / "problems.json") == sorted(problems, key=lambda p: p.order)
    # an older file's kind this version has no name for is kept, as "other", with its name in the detail
    old = Problem.from_json({"student": "cy", "notebook": NB, "problem": "time_limit", "detail": "ran over"})
    assert (old.kind, old.detail) == ("other", "time_limit: ran over")


def test_the_new_kinds_are_in_the_one_table():
    for kind in ["no_answer_reported", "cell_timeout", "notebook_time_limit", "worker_killed"]:
        assert kind in KINDS and KINDS[kind]
    assert "time_limit" not in KINDS


def test_grade_help_lists_every_kind_with_its_meaning(capsys):
    with pytest.raises(SystemExit):
        main(["grade", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for kind, meaning in KINDS.items():
        assert f"{kind} {' '.join(meaning.split())}" in text, kind


def test_the_worker_protocol_round_trips():
    result = WorkerResult("ada", True, incidents=[Problem("ada", NB, "kernel_died", "in cell 9")], seconds=3.5)
    assert WorkerResult.from_json(json.loads(result.to_line())) == result
    ended = WorkerResult("bob", False, sandbox_error="bwrap: Can't mount proc", worker_ended=True)
    assert WorkerResult.from_json(json.loads(ended.to_line())) == ended


def test_the_state_round_trips_and_reads_an_older_file(tmp_path):
    path = tmp_path / "state.json"
    state = GradingState(path)
    state.students["ada"] = StudentRecord("k", "s", "c", [NB], [Problem("ada", NB, "deleted_cell", "x")], True, 30.0)
    state.collect_problems = [Problem("(unknown)", None, "unmatched_file", "README")]
    state.save()
    again = GradingState(path)
    assert again.students == state.students and again.collect_problems == state.collect_problems
    path.write_text(json.dumps({"students": {"ben": {"key": "k", "graded": [], "problems": [], "complete": True}}}))
    assert GradingState(path).students["ben"] == StudentRecord("k", complete=True)


def test_why_a_student_is_regraded(tmp_path):
    root = tmp_path
    shutil.copytree(REPO / "source" / ASSIGNMENT, root / "source" / ASSIGNMENT, ignore=shutil.ignore_patterns("*.txt"))
    (root / "nbgrader_config.py").write_text("c = get_config()\n")
    notebooks = notebook_names(root, ASSIGNMENT)
    folder = root / "submitted" / "ada" / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / f"{NB}.ipynb").write_text("{}")
    gradebook = sqlite_url(root / "gradebook.db")  # not there: no due date
    course = changes.course_key(root, ASSIGNMENT, notebooks, gradebook)
    submission = changes.submission_key(root, ASSIGNMENT, "ada", notebooks)
    old = StudentRecord("k", submission, course, [NB], [], True)
    assert changes.regrade_reason(None, submission, course, False) == changes.FIRST_GRADING
    assert changes.regrade_reason(old, submission, course, True) == changes.REQUESTED
    (folder / "timestamp.txt").write_text("2026-12-01 10:00:00 UTC")  # a new hand-in, even with the same notebook
    new = changes.submission_key(root, ASSIGNMENT, "ada", notebooks)
    assert changes.regrade_reason(old, new, course, False) == changes.NEW_SUBMISSION
    (root / "nbgrader_config.py").write_text("c = get_config()\nc.Execute.timeout = 60\n")
    changed = changes.course_key(root, ASSIGNMENT, notebooks, gradebook)
    assert changes.regrade_reason(old, submission, changed, False) == changes.COURSE_CHANGED


def test_the_students_whose_files_changed_are_known_before_the_gradebook_is_read(tmp_path):
    """grade starts a worker for each of them while it plans (a re-run with nothing new starts none)."""
    notebooks = [NB]
    for student in ("ada", "ben", "cy", "dee"):
        folder = tmp_path / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / f"{NB}.ipynb").write_text("{}")
    key = lambda student: changes.submission_key(tmp_path, ASSIGNMENT, student, notebooks)
    old = {
        "ada": StudentRecord("k", key("ada"), "c", [NB], [], True),  # as graded
        "ben": StudentRecord("k", key("ben"), "c", [NB], [], False),  # its grading did not finish
        "cy": StudentRecord("k", key("cy"), "c", [NB], [], True),
    }  # dee: new
    (tmp_path / "submitted" / "cy" / ASSIGNMENT / f"{NB}.ipynb").write_text('{"cells": []}')  # handed in again
    students = ["ada", "ben", "cy", "dee"]
    assert changes.files_changed(old, tmp_path, ASSIGNMENT, students, notebooks) == ["ben", "cy", "dee"]
    assert changes.files_changed({s: old[s] for s in ("ada",)}, tmp_path, ASSIGNMENT, ["ada"], notebooks) == []


def test_library_errors_are_grading_errors_and_the_cli_turns_them_into_messages(tmp_path, capsys):
    with pytest.raises(GradingError, match="not a course root"):
        course_root(tmp_path)
    with pytest.raises(GradingError, match="expected one assignment"):
        find_assignment(tmp_path)
    (tmp_path / "file.zip").write_text("not a zip")
    with pytest.raises(GradingError, match=r"not a zip file \(a download cut short\?\) or a folder"):
        collect(tmp_path / "file.zip", tmp_path, ASSIGNMENT, [NB])
    with pytest.raises(SystemExit) as stop:
        main(["grade", "--course", str(tmp_path)])
    assert "not a course root" in str(stop.value.code)
    with zipfile.ZipFile(tmp_path / "ok.zip", "w") as z:
        z.writestr("ada/ex1.ipynb", "{}")
    assert collect(tmp_path / "ok.zip", tmp_path, ASSIGNMENT, [NB])[0] == {"ada": [NB]}
    # one entry damaged in the download (a bad CRC) was a traceback: the command says which, and what to do
    with zipfile.ZipFile(tmp_path / "damaged.zip", "w") as z:
        z.writestr("ada/ex1.ipynb", '{"cells": ["ada"]}')
        z.writestr("ben/ex1.ipynb", '{"cells": ["ben"]}')
    data = (tmp_path / "damaged.zip").read_bytes()
    at = data.index(b'{"cells": ["ada"]}')
    (tmp_path / "damaged.zip").write_bytes(data[:at] + b'{"cells": ["eve"]}' + data[at + 18 :])
    with pytest.raises(GradingError, match=r"ada/ex1.ipynb is damaged in it \(Bad CRC-32 .*\); download it again"):
        collect(tmp_path / "damaged.zip", tmp_path / "again", ASSIGNMENT, [NB])


def _raises_system_exit(tree) -> list:
    """Lines that end the process with an exit code, but in an ``if __name__ == "__main__":`` block: a maintainer's
    ``python -m`` tool is a command line of its own (catalog_checks exits 1 while a translation is open)."""
    found = []
    mains = [n for n in ast.walk(tree) if isinstance(n, ast.If) and ast.unparse(n.test) == "__name__ == '__main__'"]
    inside_main = {id(sub) for main in mains for sub in ast.walk(main)}
    for node in ast.walk(tree):
        if id(node) in inside_main:
            continue
        if isinstance(node, ast.Raise) and node.exc is not None:
            name = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(name, ast.Name) and name.id == "SystemExit":
                found.append(node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "exit" and isinstance(node.func.value, ast.Name) and node.func.value.id == "sys":
                found.append(node.lineno)
    return found


def test_only_the_command_line_decides_an_exit_code():
    offenders = {}
    for path in sorted((REPO / "autograder").rglob("*.py")):
        if path.name == "cli.py" or "shared_cells" in path.parts:  # shared cells run in notebooks, not the grader
            continue
        if lines := _raises_system_exit(ast.parse(path.read_text())):
            offenders[str(path.relative_to(REPO))] = lines
    assert offenders == {}


def test_loading_the_course_config_imports_no_torch():
    """Every nbgrader command and grade's coordinator load nbgrader_config.py, and none of them judges: the
    preprocessors it names import the grading engine (torch, a second) only when they judge."""
    load = (
        "import sys; from traitlets.config.loader import PyFileConfigLoader; "
        f"PyFileConfigLoader('nbgrader_config.py', path={str(REPO)!r}).load_config(); "
        "import autograder.preprocessors; print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", load], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


def test_the_profile_counts_the_cpu_of_a_kernel_and_of_every_process_it_started():
    """``process_tree_cpu`` (the profile's kernel CPU) and the kernel's host pid (``namespace_pids``) read only the
    process's descendants: a grandchild that spins for 0.3 s is counted, and found."""
    from autograder.common.phases import descendants, process_tree_cpu
    from autograder.sandbox.kernel_parent import namespace_pids

    spin = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\nprint(1, flush=True)\n"
    spin += "time.sleep(30)"
    child = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {spin!r}])"],
        stdout=subprocess.PIPE,
    )
    grandchild = None
    try:
        assert child.stdout.readline() == b"1\n"  # the grandchild has spun
        (grandchild,) = descendants(child.pid)
        assert namespace_pids(child.pid) == {grandchild: grandchild}  # (no pid namespace of its own here)
        assert process_tree_cpu(child.pid) >= process_tree_cpu(grandchild) >= 0.3
    finally:
        if grandchild:
            os.kill(grandchild, signal.SIGKILL)
        child.kill()
        child.wait()


def test_a_kernel_parent_that_is_stopped_is_told_from_one_that_is_busy():
    """The grader waits longer for a busy kernel parent than for a stopped one (``kernel_parent.ask``)."""
    from autograder.sandbox.kernel_parent import running

    def after(sent: int) -> bool:
        os.kill(busy.pid, sent)
        deadline = time.monotonic() + 10
        while running(busy.pid) == (sent == signal.SIGSTOP) and time.monotonic() < deadline:
            time.sleep(0.01)  # (a signal is delivered asynchronously)
        return running(busy.pid)

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert running(busy.pid)
        assert not after(signal.SIGSTOP)
        assert after(signal.SIGCONT)
    finally:
        busy.kill()
        busy.wait()
    assert not running(busy.pid) and not running(None)  # gone, or never known


def test_a_download_zipped_with_the_folder_it_was_unpacked_into_is_collected_student_by_student(tmp_path):
    """A zip of the folder that holds the students' folders (Moodle's): its top folder is not taken for one student
    holding the class, nor is macOS's __MACOSX beside it. A student's own folder is never looked through: one
    student's download is that student's, and files in it named after classmates reach nobody else's folder."""
    moodle, single, forged = tmp_path / "moodle.zip", tmp_path / "single.zip", tmp_path / "forged.zip"
    with zipfile.ZipFile(moodle, "w") as z:
        for name in ("Ada Lovelace_11_assignsubmission_file_", "Ben Bitdiddle_12_assignsubmission_file_"):
            z.writestr(f"class/moodle/{name}/{NB}.ipynb", "{}")
        z.writestr(f"__MACOSX/class/moodle/._{NB}.ipynb", "")
    with zipfile.ZipFile(single, "w") as z:
        z.writestr(f"Ada Lovelace_11_assignsubmission_file_/{NB}.ipynb", "{}")
        z.writestr("Ada Lovelace_11_assignsubmission_file_/ex2_cross_entropy_backward.ipynb", "{}")
    with zipfile.ZipFile(forged, "w") as z:  # one student's folder, its files named like Canvas's, after classmates
        for name in (f"bob_{NB}.ipynb", f"carol_{NB}.ipynb", f"bob_1_2_{NB}.ipynb", f"bob/{NB}.ipynb"):
            z.writestr(f"Mallory Mallet_13_assignsubmission_file_/{name}", "{}")
    for download, students in (
        (moodle, ["Ada_Lovelace_11", "Ben_Bitdiddle_12"]),
        (single, ["Ada_Lovelace_11"]),
        (forged, ["Mallory_Mallet_13"]),
    ):
        course = tmp_path / download.stem
        collected, problems = collect(download, course, ASSIGNMENT, [NB, "ex2_cross_entropy_backward"])
        assert sorted(collected) == students, (download.name, collected, problems)
        assert sorted(p.name for p in (course / "submitted").iterdir()) == students
    assert not collect(moodle, tmp_path / "again", ASSIGNMENT, [NB])[1]


def test_a_run_keeps_its_workers_logs_and_drops_their_gradebooks(tmp_path):
    """The instructors' page sends the reader to the workers' logs for "locked cell ... was changed in the
    submission"; they were deleted at the end of every run, so nobody could. The last run's stay in .grading/logs/."""
    from autograder.grading.stopping import keep_logs

    grading = tmp_path / ".grading"
    (grading / "logs").mkdir(parents=True)
    (grading / "logs" / "worker-0.log").write_text("the run before\n")
    (grading / "workers").mkdir()
    (grading / "workers" / "worker-0.log").write_text("locked cell setup_forward was changed in the submission\n")
    (grading / "workers" / "gradebook-0.db").write_bytes(b"x")
    (grading / "workers" / "gradebook-0.db-journal").write_bytes(b"x")
    logs = keep_logs(grading)
    assert sorted(p.name for p in logs.iterdir()) == ["worker-0.log"]
    assert "was changed" in (logs / "worker-0.log").read_text() and not (grading / "workers").exists()
    assert keep_logs(grading) == logs and (logs / "worker-0.log").is_file()  # a run that graded nobody keeps them


def test_nbgrader_warnings_reach_the_workers_log_with_the_student_and_notebook(capsys):
    """nbgrader's captured log was dropped whenever autograde succeeded: an edited locked cell was said nowhere."""
    from autograder.grading.workers.autograde import log_warnings

    log = (
        "[WARNING] Removing existing assignment: /c/autograded/ada/backprop_ninja\n"
        "[INFO] Converting notebook /c/.grading/staged/ada/backprop_ninja/ex1_atomic_backward.ipynb\n"
        "[WARNING] locked cell setup_forward was changed in the submission: graded with the course's version\n"
    )
    assert log_warnings("ada", log) == [
        "ada ex1_atomic_backward.ipynb [WARNING] locked cell setup_forward was changed in the submission: graded "
        "with the course's version"
    ]
    assert "setup_forward" in capsys.readouterr().err and log_warnings("ada", None) == []
    # a submission's words in a warning: no escape sequence reaches the instructor's terminal
    assert log_warnings("ada", "[WARNING] cell \x1b]0;owned\x07x\x1b[2J changed") == [
        "ada - [WARNING] cell ?]0;owned?x?[2J changed"
    ]


def test_a_long_word_in_a_warning_is_read_at_once_and_written_cut():
    """nbgrader's error names a kernel's value whole: a notebook whose cells' counts were strings of 15 MB stalled its
    worker, past the grader's own time limit (the search for a notebook's name took days, holding the GIL)."""
    import time

    from autograder.grading.workers.autograde import log_warnings

    word = "x" * 100_000  # searched from each of its characters: 17 s; 15 MB: days
    started = time.monotonic()
    found = log_warnings("ada", f"[ERROR] {word} is not of type 'integer', 'null'\n[WARNING] ex1.ipynb {word}")
    assert time.monotonic() - started < 2
    assert [len(line) for line in found] == [2000, 2000] and found[1].startswith("ada ex1.ipynb [WARNING]")


def test_students_named_in_any_script_keep_their_names(tmp_path):
    """Moodle names a student's folder after them, in their own script: "Дмитрий Иванов_1004" and "王小明_1005" were
    collected as students "1004" and "1005", "Chloé Dupont-Müller_1003" as "Chlo_Dupont-M_ller_1003", in grades.csv
    and the report alike. Letters of any script stay; a name a macOS zip spells with a combining accent is the same
    student; nothing that makes a path is kept."""
    moodle = tmp_path / "moodle.zip"
    with zipfile.ZipFile(moodle, "w") as z:
        for name in ("Дмитрий Иванов_1004", "王小明_1005", "Chloe\u0301 Dupont-Mu\u0308ller_1003", "../../x_7"):
            z.writestr(f"{name}_assignsubmission_file_/{NB}.ipynb", "{}")
    collected, problems = collect(moodle, tmp_path / "course", ASSIGNMENT, [NB])
    assert sorted(collected) == sorted(["Дмитрий_Иванов_1004", "王小明_1005", "Chloé_Dupont-Müller_1003"]), problems
    assert sorted(p.name for p in (tmp_path / "course" / "submitted").iterdir()) == sorted(collected)


def test_names_with_marks_keep_them_and_a_letter_that_shows_nothing_is_left_out(tmp_path):
    """A Hindi or Thai name's vowel signs are marks, not letters: "हिन्दी शर्मा_1007" was collected as student
    "ह_न_द_शर_म__1007" (two names could become one). A Hangul filler is a letter that shows nothing: "lovelaceada"
    and "lovelaceada" with one after it were two students in grades.csv and the report who looked like one."""
    canvas = tmp_path / "download.zip"
    with zipfile.ZipFile(canvas, "w") as z:
        for name in ("हिन्दी शर्मा_1007", "สมชาย ใจดี_1008", "Nguyễn Văn An_1009"):
            z.writestr(f"{name}_assignsubmission_file_/{NB}.ipynb", "{}")
        z.writestr(f"lovelaceada\u3164_1006_9006_{NB}.ipynb", "{}")
    collected, _ = collect(canvas, tmp_path / "course", ASSIGNMENT, [NB])
    assert sorted(collected) == sorted(["हिन्दी_शर्मा_1007", "สมชาย_ใจดี_1008", "Nguyễn_Văn_An_1009", "lovelaceada_1006"])


def test_a_file_canvas_marked_late_is_collected_and_named_for_its_missing_time(tmp_path):
    """Canvas puts LATE in a late file's name and gives no time: the file is collected, and a marked_late problem
    says that no penalty was taken (nbgrader's penalty needs a timestamp.txt)."""
    canvas = tmp_path / "canvas.zip"
    with zipfile.ZipFile(canvas, "w") as z:
        z.writestr(f"lovelaceada_LATE_1234_5678_{NB}-1.ipynb", "{}")
        z.writestr(f"bitdiddleben_1235_5679_{NB}.ipynb", "{}")
        z.writestr("hackerly_LATE_1236_5680_notes.txt", "")
    collected, problems = collect(canvas, tmp_path / "course", ASSIGNMENT, [NB])
    assert collected == {"bitdiddleben_1235": [NB], "lovelaceada_1234": [NB]}
    late = [(p.student, p.notebook, p.detail) for p in problems if p.kind == "marked_late"]
    assert late == [
        (
            "lovelaceada_1234",
            NB,
            f"lovelaceada_LATE_1234_5678_{NB}-1.ipynb: marked LATE by the LMS; no time of submission",
        )
    ]


def test_two_canvas_students_of_one_name_are_two_students(tmp_path):
    """Canvas names a file after the student's name (which a student may change) and their user id: two Ada
    Lovelaces were one student "lovelaceada", the newer file was graded and the other Ada's dropped as a
    duplicate_file, in one download or in a later one (a classmate who takes Ada's name hands in a blank notebook
    after her and she scores 0). Each is now her own student, by the user id."""
    for n, files in enumerate([["1001_9001", "1002_9002"], ["1001_9001"], ["1002_9003"]]):
        with zipfile.ZipFile(tmp_path / f"{n}.zip", "w") as z:
            for ids in files:
                z.writestr(f"lovelaceada_{ids}_{NB}.ipynb", ids)
        collected, problems = collect(tmp_path / f"{n}.zip", tmp_path / "course", ASSIGNMENT, [NB])
        assert sorted(collected) == [f"lovelaceada_{ids[:4]}" for ids in files] and problems == []
    submitted = tmp_path / "course" / "submitted"
    assert (submitted / "lovelaceada_1001" / ASSIGNMENT / f"{NB}.ipynb").read_text() == "1001_9001"
    assert (submitted / "lovelaceada_1002" / ASSIGNMENT / f"{NB}.ipynb").read_text() == "1002_9003"


def test_a_canvas_file_marked_late_with_a_time_given_beside_it_is_not_said_to_have_none(tmp_path):
    """To take a late penalty from a Canvas download (flat files, no time), the instructor puts a timestamp.txt in a
    folder named as the student's id (name and user id) beside the files: it was collected, and yet marked_late still
    said "no time of submission", for a student whose penalty was taken. Now the time decides, and marked_late is not
    said."""
    canvas = tmp_path / "canvas.zip"
    with zipfile.ZipFile(canvas, "w") as z:
        z.writestr(f"lovelaceada_LATE_1234_5678_{NB}-1.ipynb", "{}")
        z.writestr("lovelaceada_1234/timestamp.txt", "2026-12-16 10:00:00.000000 UTC")
        z.writestr(f"turingalan_LATE_1235_5679_{NB}.ipynb", "{}")
    collected, problems = collect(canvas, tmp_path / "course", ASSIGNMENT, [NB])
    assert collected == {"lovelaceada_1234": [NB], "turingalan_1235": [NB]}
    stamp = tmp_path / "course" / "submitted" / "lovelaceada_1234" / ASSIGNMENT / "timestamp.txt"
    assert stamp.read_text() == "2026-12-16 10:00:00.000000 UTC"
    assert [(p.student, p.kind) for p in problems] == [("turingalan_1235", "marked_late")]


def test_collecting_submitted_in_place_never_writes_over_the_file_under_its_own_name(tmp_path):
    """``grade --from submitted`` with a student's work under the notebook's name and a newer, blank browser copy
    "(1)" beside it: the newest copy was written over the student's file, which was lost, and the grade fell from
    34 to 0. The file already under its name is taken, and the copy is named, with what to do to grade it."""
    folder = tmp_path / "submitted" / "tom" / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / f"{NB}.ipynb").write_text('{"cells": ["the work"]}')
    (folder / f"{NB} (1).ipynb").write_text('{"cells": []}')
    os.utime(folder / f"{NB}.ipynb", (1, 1))  # the older of the two
    collected, problems = collect(tmp_path / "submitted", tmp_path, ASSIGNMENT, [NB])
    assert collected == {"tom": [NB]}
    assert (folder / f"{NB}.ipynb").read_text() == '{"cells": ["the work"]}'
    assert (folder / f"{NB} (1).ipynb").read_text() == '{"cells": []}'
    [duplicate] = problems
    assert duplicate.kind == "duplicate_file" and duplicate.detail == (
        f"2 files for {NB}: took tom/{ASSIGNMENT}/{NB}.ipynb (already under the notebook's own name, never "
        f"overwritten; to grade another, rename it to that name); ignored tom/{ASSIGNMENT}/{NB} (1).ipynb"
    )
    assert collect(tmp_path / "submitted", tmp_path, ASSIGNMENT, [NB])[1] == problems  # the same, run again
    rita = tmp_path / "submitted" / "rita" / ASSIGNMENT
    rita.mkdir(parents=True)
    (rita / f"{NB} (1).ipynb").write_text('{"cells": ["rita"]}')
    for _ in range(2):  # the normalised copy that the first run wrote is no second file for the second
        collected, problems = collect(tmp_path / "submitted", tmp_path, ASSIGNMENT, [NB])
        assert [p.student for p in problems] == ["tom"] and (rita / f"{NB}.ipynb").read_text() == '{"cells": ["rita"]}'
    download = tmp_path / "download" / "tom"  # a download elsewhere: the newest still wins
    download.mkdir(parents=True)
    (download / f"{NB}.ipynb").write_text('{"cells": ["old"]}')
    os.utime(download / f"{NB}.ipynb", (1, 1))
    (download / f"{NB} (1).ipynb").write_text('{"cells": ["new"]}')
    collect(tmp_path / "download", tmp_path / "course", ASSIGNMENT, [NB])
    assert (tmp_path / "course" / "submitted" / "tom" / ASSIGNMENT / f"{NB}.ipynb").read_text() == '{"cells": ["new"]}'


def test_collecting_submitted_in_place_keeps_each_folder_as_its_student(tmp_path):
    """``grade --from submitted`` with a folder placed by hand as "Ada Lovelace": it was collected into a second
    student, "Ada_Lovelace", beside the first, which stayed: two rows of grades.csv for one student. A folder of
    submitted/ is its student as it is named; a download's folders are still named as before."""
    folder = tmp_path / "submitted" / "Ada Lovelace" / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / f"Copy of {NB}.ipynb").write_text('{"cells": []}')
    collected, problems = collect(tmp_path / "submitted", tmp_path, ASSIGNMENT, [NB])
    assert collected == {"Ada Lovelace": [NB]} and problems == []
    assert [p.name for p in (tmp_path / "submitted").iterdir()] == ["Ada Lovelace"]
    assert (folder / f"{NB}.ipynb").read_text() == '{"cells": []}'
    collected, _ = collect(tmp_path / "submitted", tmp_path / "other", ASSIGNMENT, [NB])  # not in place
    assert collected == {"Ada_Lovelace": [NB]}


def test_collecting_into_submitted_writes_through_no_link_and_into_no_folder(tmp_path):
    """A link in submitted/ under a notebook's name (or timestamp.txt's), and a "Copy of" beside it: ``grade --from
    submitted`` wrote the copy through the link, into whatever file it named (as root: any file of the machine). The
    link is replaced by the file collected; a folder under the notebook's name is left, the copy named, not collected
    (writing into it stopped the command)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    folder = tmp_path / "submitted" / "mal" / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / f"{NB}.ipynb").symlink_to(victim)
    (folder / "timestamp.txt").symlink_to(victim)
    (folder / f"Copy of {NB}.ipynb").write_text('{"cells": []}')
    (tmp_path / "download" / "mal").mkdir(parents=True)
    (tmp_path / "download" / "mal" / "timestamp.txt").write_text("2026-12-16 10:00:00.000000 UTC")
    (tmp_path / "download" / "mal" / f"{NB}.ipynb").write_text('{"cells": []}')
    collected, problems = collect(tmp_path / "submitted", tmp_path, ASSIGNMENT, [NB])
    assert collected == {"mal": [NB]} and problems == [] and victim.read_text() == "precious"
    assert not (folder / f"{NB}.ipynb").is_symlink() and (folder / f"{NB}.ipynb").read_text() == '{"cells": []}'
    collect(tmp_path / "download", tmp_path, ASSIGNMENT, [NB])
    assert victim.read_text() == "precious" and not (folder / "timestamp.txt").is_symlink()

    (folder / f"{NB}.ipynb").unlink()
    (folder / f"{NB}.ipynb").mkdir()
    collected, problems = collect(tmp_path / "submitted", tmp_path, ASSIGNMENT, [NB])
    assert collected == {} and [(p.kind, p.detail) for p in problems] == [
        ("unmatched_file", f"mal/{ASSIGNMENT}/Copy of {NB}.ipynb: not collected: {NB}.ipynb there is a folder")
    ]


def test_the_summary_keeps_its_columns_for_names_in_any_script():
    """A Chinese name takes two columns of a terminal a character, an accent none: the student's column is padded to
    20 columns of the terminal, not 20 characters."""
    import io
    import unicodedata

    from autograder.grading.summary import Summary, print_summary

    chloe = unicodedata.normalize("NFD", "Chloé")  # six characters, five columns
    names = {"ada": 3, "李小龙": 6, chloe: 5, "Дмитрий": 7}  # name -> the columns it takes
    problems = [Problem(name, NB, "locked_cell_changed", "DETAIL") for name in names]
    out = io.StringIO()
    print_summary(Summary(list(names), list(names), [], problems, "g", "p", "h", None, 1.0), out)
    lines = [line for line in out.getvalue().splitlines() if "DETAIL" in line]
    for line, (name, columns) in zip(lines, names.items()):
        assert line.startswith(f"  {name}{' ' * (20 - columns)} {NB}"), line


def test_a_long_list_of_problems_shows_the_most_serious_first():
    """A class that skipped an optional notebook has a missing_notebook a student: the terminal showed the first 30
    problems in the students' order, so a kernel that died for a student late in the alphabet was behind "... and 11
    more". When they do not fit, the most serious are listed; when they do, problems.json's order, as before."""
    import io

    from autograder.grading.summary import Summary, print_summary

    missing = [Problem(f"s{i:02}", NB, "missing_notebook", "no file") for i in range(40)]
    died = Problem("zoe", NB, "kernel_died", "the kernel died")
    out = io.StringIO()
    print_summary(Summary(["zoe"], ["zoe"], [], [*missing, died], "g", "p.json", "h", None, 1.0), out)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("  ")]
    assert "kernel_died" in lines[0] and "s00" in lines[1] and len(lines) == 31
    assert lines[-1] == "  ... and 11 more, less serious (all in p.json)"
    out = io.StringIO()
    print_summary(Summary(["zoe"], ["zoe"], [], [*missing[:3], died], "g", "p.json", "h", None, 1.0), out)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("  ")]
    assert ["s00" in lines[0], "zoe" in lines[3]] == [True, True]


def test_a_worker_has_each_notebooks_configured_limit_before_it_is_killed():
    """The coordinator's limit for a student: the notebook limit the worker read from the course's configuration
    (the command's --notebook-timeout first), not an hour a notebook when the command was given none."""
    from types import SimpleNamespace

    from autograder.grading.class_grading import ClassGrading

    run = lambda given: SimpleNamespace(
        o=SimpleNamespace(notebook_timeout=given), records={"ada": SimpleNamespace(graded=[NB, NB])}
    )
    assert ClassGrading.allowed(run(None), "ada", 600) == 2 * (600 + 60) + 120
    assert ClassGrading.allowed(run(30), "ada", 600) == 2 * (30 + 60) + 120
    assert ClassGrading.allowed(run(None), "ada", None) == ClassGrading.allowed(run(None), "ada", 0) == 2 * 3660 + 120


def test_collecting_into_submitted_writes_through_no_linked_folder(tmp_path):
    """A student's assignment folder in submitted/ that is a link (to another student's, or anywhere), and the notebook
    and timestamp.txt in another folder of the same student: ``grade --from submitted`` wrote both through the link
    (into the folder it named: outside the student's own files, over a classmate's work). The link is replaced by a
    folder of the student's own."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "timestamp.txt").write_text("precious")
    student = tmp_path / "submitted" / "mal"
    (student / "old").mkdir(parents=True)
    (student / "old" / f"{NB}.ipynb").write_text('{"cells": []}')
    (student / "old" / "timestamp.txt").write_text("2026-12-16 10:00:00.000000 UTC")
    (student / ASSIGNMENT).symlink_to(elsewhere, target_is_directory=True)
    collected, _ = collect(tmp_path / "submitted", tmp_path, ASSIGNMENT, [NB])
    assert collected == {"mal": [NB]}
    assert sorted(p.name for p in elsewhere.iterdir()) == ["timestamp.txt"]
    assert (elsewhere / "timestamp.txt").read_text() == "precious"
    assert not (student / ASSIGNMENT).is_symlink() and (student / ASSIGNMENT / f"{NB}.ipynb").is_file()


def test_each_grading_run_draws_its_own_seeds():
    """A notebook's grading seed is the whole class's in a run (its reference is built once), and another in the next
    run: a seed an instructor could fix (the old seed_secret) let a student paste into a resubmission the values their
    feedback page showed."""
    from autograder.preprocessors.grading_execute import GradingExecute

    resources = {"nbgrader": {"assignment": "a", "notebook": "n"}}
    code = f"from {GradingExecute.__module__} import GradingExecute as G\nprint(G().grading_seed({resources!r}))"
    another_run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    this_run = GradingExecute().grading_seed(resources)
    assert GradingExecute().grading_seed(resources) == this_run != int(another_run.stdout)


def test_grading_on_a_hubs_machine_needs_no_hub_user(tmp_path, monkeypatch):
    """docs/jupyterhub.md puts nbgrader.auth.JupyterHubAuthPlugin in the machine's /etc/jupyter. NbGraderAPI lists the
    exchange when it starts, and that plugin then asks the hub, which needs JUPYTERHUB_USER: every worker of a
    ``grade`` run over ssh or cron stopped ("a grading worker did not start"). The worker gives it no exchange."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.auth.jupyterhub import JupyterhubEnvironmentError
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from autograder.grading.workers.worker import no_exchange

    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    config = Config()
    config.Authenticator.plugin_class = "nbgrader.auth.JupyterHubAuthPlugin"
    config.Exchange.root = str(tmp_path / "exchange")
    config.CourseDirectory.root = str(tmp_path)
    (tmp_path / "exchange").mkdir(mode=0o777)
    coursedir = CourseDirectory(config=config)
    with pytest.raises(JupyterhubEnvironmentError):
        NbGraderAPI(coursedir=coursedir, config=config)
    app = NbGraderAPI(coursedir=coursedir, config=config, exchange=no_exchange(None))
    assert app.exchange_missing


def test_a_worker_that_did_not_start_is_told_with_the_exception_that_ended_it(tmp_path):
    from autograder.grading.workers.worker import cause_in_log

    log = tmp_path / "worker-0.log"
    assert cause_in_log(log) == ""  # no log at all
    log.write_text(
        "starting\n" * 20000 + 'Traceback (most recent call last):\n  File "x.py", line 1\n'
        "nbgrader.auth.jupyterhub.JupyterhubEnvironmentError: JUPYTERHUB_USER env is required\x1b[2J\n"
    )
    assert (
        cause_in_log(log)
        == ": nbgrader.auth.jupyterhub.JupyterhubEnvironmentError: JUPYTERHUB_USER env is required?[2J"
    )
    log.write_text("nothing went wrong that it says\n")
    assert cause_in_log(log) == ""


def test_grade_removes_the_private_folders_of_killed_workers_and_no_other(tmp_path, monkeypatch):
    """A worker killed mid-run (out of memory, SIGKILL) left its kernel parent's private folder in /tmp, a copy of the
    last student's notebook in it: about 150 had piled up on a test machine. ``grade`` removes those at its start,
    and only those: a folder still in use (its owner file locked), or one the grader did not make, stays."""
    import tempfile

    from autograder.grading.preflight import check_temporary_folder
    from autograder.sandbox import stage

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("TMPDIR", raising=False)
    in_use = stage.private_folder(os.getuid(), os.getgid())
    pid = os.fork()
    if pid == 0:  # a worker that made its folder and was killed
        with open(os.path.join(stage.private_folder(os.getuid(), os.getgid()), "ex1.ipynb"), "w") as f:
            f.write("{}")
        os._exit(0)
    os.waitpid(pid, 0)
    killed = next(p for p in tmp_path.iterdir() if str(p) != in_use)
    no_owner = tmp_path / f"{stage.PRIVATE_PREFIX}not-ours"
    no_owner.mkdir()
    linked = tmp_path / f"{stage.PRIVATE_PREFIX}linked"
    linked.mkdir()
    (linked / "owner").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").write_text("")
    try:
        assert (killed / "ex1.ipynb").is_file()
        check_temporary_folder()
        assert not killed.exists()
        assert os.path.isdir(in_use) and no_owner.is_dir() and linked.is_dir()
    finally:
        stage.remove_private_folder(in_use)
    assert not os.path.exists(in_use) and in_use not in stage._OWNED

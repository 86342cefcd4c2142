"""What the grader writes for people, from a submission's words (ids, file names, grade_ids, error texts, names on a
roster): the instructor's terminal gets no escape sequence, a spreadsheet no formula, problems.json no control
character and no megabyte of detail; letters of every script read as they were (no kernels)."""

import csv
import io
import json
import zipfile

import nbformat
from support.course import REPO

from autograder.cli import main
from autograder.common.problems import MAX_DETAIL, Problem, read_problems, write_problems
from autograder.grading.intake.collect import collect
from autograder.grading.intake.repair import repair
from autograder.grading.report.class_data import ClassData
from autograder.grading.results.grades_csv import write_grades_csv
from autograder.grading.results.history import Change, append_history, read_history
from autograder.grading.summary import Summary, print_summary

NB = "ex1_atomic_backward"
ESC = "\x1b"
# a title, a cleared screen, an OSC 8 link, a colour, a bell, a carriage return that writes over the line, a bidi
# override and a C1 CSI: what a student can put in a file name, a grade_id or an exception's text
HOSTILE = (
    f"{ESC}]0;PWNED\x07{ESC}[2J{ESC}[H{ESC}]8;;http://evil.example/\x07click{ESC}]8;;\x07{ESC}[31m"
    "\rada_perfect  34 / 34\u202eevil\u009b2J"
)
UNSHOWN = [ESC, "\x07", "\r", "\u202e", "\u009b"]
NAMES = ["Дмитрий_Иванов_1004", "王小明_1005", "Chloé_Dupont-Müller_1003"]  # legitimate: must read as they are
FORMULAS = ["@sum", '=HYPERLINK("http://evil.example","x")', "+cmd|' /C calc'!A0", "-2+3", "'quoted", "\tx"]


def printed(problems) -> str:
    out = io.StringIO()
    students = sorted({p.student for p in problems})
    print_summary(Summary(students, students, [], problems, "g", "p", "h", None, 1.0), out)
    return out.getvalue()


def test_the_summary_shows_a_submissions_words_literally_and_cut_short():
    problems = [
        Problem(HOSTILE, NB, "unmatched_file", f"notes{HOSTILE}.txt: not a notebook file (.ipynb)"),
        Problem("a", NB, "process_limit", f"cell 3 hit the process limit (BlockingIOError: {HOSTILE})"),
        Problem("b", NB, "unknown_cell", "grade_ids not in the release, run as ordinary cells: " + "A" * 300_000),
        *(Problem(name, NB, "missing_notebook", f"{name}: «нет файла», 没有文件") for name in NAMES),
    ]
    text = printed(problems)
    assert not [c for c in UNSHOWN if c in text]
    assert "?]0;PWNED??[2J" in text  # shown, as text
    assert all(len(line) < 2 * MAX_DETAIL for line in text.splitlines())  # 300,000 characters of a grade_id: cut
    for name in NAMES:
        assert f"{name}: «нет файла», 没有文件" in text


def test_a_class_download_with_hostile_names_reaches_the_terminal_as_text(tmp_path):
    """The real path: Canvas's file names and a notebook's own grade_ids, through collect and repair."""
    release = nbformat.read(REPO / "release" / "backprop_ninja" / f"{NB}.ipynb", as_version=4)
    download = tmp_path / "download.zip"
    with zipfile.ZipFile(download, "w") as z:
        z.writestr(f"evilstudent_1004_9004_notes{HOSTILE}.txt", "x")
        z.writestr(f"../{HOSTILE}", "x")  # a path outside the archive
        z.writestr(f"Дмитрий Иванов_1004_assignsubmission_file_/заметки{HOSTILE}.txt", "x")
    _, problems = collect(download, tmp_path / "course", "backprop_ninja", [NB])
    nb = nbformat.from_dict(json.loads(nbformat.writes(release)))
    nb.cells.append(nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": HOSTILE * 10_000}}))
    _, found = repair(nbformat.writes(nb).encode(), release, NB, "Дмитрий_Иванов_1004")
    problems += found
    assert any(p.kind == "unknown_cell" and len(p.detail) <= MAX_DETAIL for p in problems)
    text = printed(problems)
    assert len(problems) >= 4 and not [c for c in UNSHOWN if c in text]
    assert "Дмитрий_Иванов_1004" in text and "заметки?]0;PWNED" in text


def test_problems_json_escapes_every_control_and_reads_back_the_same(tmp_path):
    problems = [Problem(HOSTILE, NB, "unmatched_file", f"{HOSTILE} {name}") for name in NAMES]
    write_problems(tmp_path / "problems.json", problems)
    raw = (tmp_path / "problems.json").read_text(encoding="utf-8")
    assert not [c for c in UNSHOWN if c in raw]
    assert all(name in raw for name in NAMES)  # letters of every script as they are, not \u escapes
    assert sorted(read_problems(tmp_path / "problems.json"), key=lambda p: p.detail) == sorted(
        problems, key=lambda p: p.detail
    )


def formula_cells(path, columns) -> list:
    """The cells of ``columns`` in the CSV file ``path`` that a spreadsheet would run as a formula."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    return [row[i] for row in rows[1:] for i in columns if i < len(row) and row[i][:1] in ("=", "+", "-", "@", "\t")]


def test_grades_csv_and_the_history_hold_no_formula_and_read_back_the_same(tmp_path):
    students = FORMULAS + NAMES
    rows = [{"student": s, "total": 1.0, "max_total": 2.0, NB: 1.0} for s in students]
    write_grades_csv(tmp_path / "grades.csv", rows, [NB], {NB: []})
    append_history(tmp_path / "grade_history.csv", [Change("t", s, None, 1.0, "first grading") for s in students])
    assert formula_cells(tmp_path / "grades.csv", [0]) == []
    assert formula_cells(tmp_path / "grade_history.csv", [1]) == []
    assert [r["student"] for r in ClassData(tmp_path).rows] == students  # the report and its links: the real ids
    assert [c.student for c in read_history(tmp_path / "grade_history.csv")] == students
    with open(tmp_path / "grades.csv", newline="", encoding="utf-8-sig") as f:
        assert [r["student"] for r in csv.DictReader(f)][-3:] == NAMES  # other names as they are


def test_the_lms_exports_hold_no_formula_and_the_terminal_no_escape(tmp_path, capsys):
    """Names on Canvas's roster are the students' to choose; so are the ids in grades.csv."""
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    (tmp_path / "source" / "backprop_ninja").mkdir(parents=True)
    students = [*FORMULAS, "lovelaceada", f"mallory{HOSTILE}"]
    rows = [{"student": s, "total": 3.0, "max_total": 4.0, NB: 3.0} for s in students]
    write_grades_csv(tmp_path / "grades.csv", rows, [NB], {NB: []})
    roster = [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Backprop Ninja (555)"],
        ["    Points Possible", "", "", "", "", "4"],
        ["Lovelace, Ada", "101", "9001", "alovelace", "A", ""],
        ['=HYPERLINK("http://evil.example","Turing, Alan")', "102", "9002", "aturing", "A", ""],
        [f"Hopper{HOSTILE}, Grace", "103", "9003", "ghopper", "A", ""],
    ]
    with open(tmp_path / "roster.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(roster)
    for fmt in ("canvas", "csv"):
        out = tmp_path / f"{fmt}.csv"
        main(
            ["export", "--course", str(tmp_path), "--format", fmt, "--roster", str(tmp_path / "roster.csv")]
            + [
                "--out",
                str(out),
            ]
        )
        assert formula_cells(out, [0, 1]) == []
        assert formula_cells(tmp_path / f"{fmt}.unmatched.csv", [1, 2]) == []
        with open(out, newline="", encoding="utf-8-sig") as f:
            written = list(csv.reader(f))
        if fmt == "canvas":  # Ada's grade where Canvas reads it, by her ID
            assert ["101", "9001", "alovelace", "A", "3"] == written[2][1:]
        else:  # every student, by their id as grades.csv held it
            assert sorted(r[0].removeprefix("'") for r in written[1:]) == sorted(students)
    err = capsys.readouterr().err
    assert "mallory?]0;PWNED" in err and not [c for c in UNSHOWN if c in err]


def test_the_class_report_shows_ids_and_details_as_text(tmp_path):
    """Autoescaped, the report held no markup of a student's, but their control characters as they were: a bidi
    override in an id (a folder of submitted/ placed by hand) or a file name reordered the rest of its cell."""
    from autograder.grading.report.class_report import write_report

    students = [f"<b>{HOSTILE}</b>", *NAMES]
    rows = [{"student": s, "total": 1.0, "max_total": 2.0, NB: 1.0} for s in students]
    write_grades_csv(tmp_path / "grades.csv", rows, [NB], {NB: []})
    write_problems(tmp_path / "problems.json", [Problem(s, NB, "unmatched_file", f"{s}: {HOSTILE}") for s in students])
    page = write_report(tmp_path).read_text(encoding="utf-8")
    assert not [c for c in UNSHOWN if c in page] and "<b>" not in page
    assert "&lt;b&gt;?]0;PWNED" in page and all(name in page for name in NAMES)


def test_a_student_with_thousands_of_stray_files_makes_a_few_problems_not_thousands(tmp_path):
    """Each file that matched no notebook was a problem of its own: one student's 20,000 files of long names (a 62 MB
    download) made problems.json 33 MB and the class report 32 MB. The first 20 are named, the rest counted."""
    download = tmp_path / "download.zip"
    with zipfile.ZipFile(download, "w") as z:
        for i in range(300):
            z.writestr(f"mallory_1_2_{i:05d}{'x' * 500}.txt", b"")
            z.writestr(f"../{i}", b"")  # paths outside the archive: nobody's
        z.writestr(f"ada_3_4_{NB}.ipynb", "{}")
        z.writestr("ada_3_5_notes.txt", "")
    collected, problems = collect(download, tmp_path / "course", "backprop_ninja", [NB])
    assert collected == {"ada_3": [NB]} and ("ada_3", "unmatched_file") in {(p.student, p.kind) for p in problems}
    mallory = [p.detail for p in problems if p.student == "mallory_1"]
    assert len(mallory) == 21 and mallory[-1] == "and 280 more files that match no notebook, not named here"
    assert len([p for p in problems if p.student == "(unknown)"]) == 21


def test_a_lone_surrogate_or_a_name_of_another_encoding_stops_nobodys_grading(tmp_path):
    """JSON can spell a lone surrogate (\\ud800), and a folder unpacked from a zip in another encoding (cp1251, GBK)
    has a name Python reads as lone surrogates: neither can be written as UTF-8. A notebook with one in a cell, or
    such a folder in submitted/, stopped the class's grading ("grading worker 0 failed: 'utf-8' codec can't encode
    character"); now the notebook is graded and the folder is named as a problem."""
    import os

    from autograder.grading.intake.prepare import submitted_students, unnamed_folders

    release = nbformat.read(REPO / "release" / "backprop_ninja" / f"{NB}.ipynb", as_version=4)
    nb = json.loads(nbformat.writes(release))
    nb["cells"].append(nbformat.v4.new_code_cell("# \ud800\nx = 1", metadata={"nbgrader": {"grade_id": "a\udfffb"}}))
    graded, found = repair(json.dumps(nb).encode(), release, NB, "ada")
    nbformat.writes(graded).encode("utf-8")  # written as the grader writes it
    assert "# ?\nx = 1" in [c.source for c in graded.cells]
    (tmp_path / "submitted" / "ada" / "backprop_ninja").mkdir(parents=True)
    os.makedirs(os.path.join(os.fsencode(tmp_path), b"submitted", "Дмитрий".encode("cp1251"), b"backprop_ninja"))
    assert submitted_students(tmp_path) == ["ada"]
    problems = found + unnamed_folders(tmp_path) + [Problem("\udcc4\udcec", NB, "unmatched_file", "x\udcff.txt")]
    write_problems(tmp_path / "problems.json", problems)
    assert "submitted/\ufffd" in (tmp_path / "problems.json").read_text(encoding="utf-8")
    assert "x?.txt" in printed(problems).encode("utf-8").decode()  # the terminal's UTF-8: a ? for a lone surrogate


def test_ids_that_look_alike_are_named_and_a_class_of_other_scripts_is_not(tmp_path):
    """A classmate who takes Ada's name on Canvas in letters of another script ("lоvelaceada", a Cyrillic о) was a
    row of grades.csv and the report that read as hers, with nothing said. Both are now named (lookalike_ids), and
    which letters are not Latin; a Russian or Chinese class of different names is not."""
    from autograder.grading.results.lookalike_ids import name_problems

    download = tmp_path / "download.zip"
    with zipfile.ZipFile(download, "w") as z:
        for name in ("lovelaceada_1001", "l\u043evelaceada_1005", "bitdiddleben_1002"):
            z.writestr(f"{name}_9001_{NB}.ipynb", "{}")
    collected, _ = collect(download, tmp_path, "backprop_ninja", [NB])
    students = sorted(collected) + NAMES + ["Дмитрий_Петров_1006", "王小红_1007", "Chloe_Dupont-Muller_1008"]
    found = {p.student: p.detail for p in name_problems(tmp_path, students) if p.kind == "lookalike_ids"}
    assert sorted(found) == [
        "Chloe_Dupont-Muller_1008",
        "Chloé_Dupont-Müller_1003",
        "lovelaceada_1001",
        "lоvelaceada_1005",
    ]
    assert found["lоvelaceada_1005"].startswith(
        "looks like lovelaceada_1001 (letters of another script: Cyrillic о (U+043E))"
    )
    assert "students of one name?" in found["Chloe_Dupont-Muller_1008"]


def test_two_students_of_one_cyrillic_name_are_not_said_to_write_in_another_script():
    """Two Иван Петров of a Russian class (Moodle tells them apart by number) were named lookalike_ids "letters of
    another script: Cyrillic в, а, н, е, т, р, о": both write in the same script. They are named as one name with two
    numbers; a Cyrillic о in a Latin name is still named as such."""
    from autograder.grading.results.lookalike_ids import lookalike_ids

    found = {p.student: p.detail for p in lookalike_ids(["Иван_Петров_12345", "Иван_Петров_12353", "ivan_12"])}
    assert found["Иван_Петров_12345"] == (
        "looks like Иван_Петров_12353 (one name, another number on the LMS: two students of one name, or one who "
        "handed in twice?); grades stand"
    )
    assert "ivan_12" not in found
    latin = {p.student: p.detail for p in lookalike_ids(["lovelaceada_1", "l\u043evelaceada_2"])}
    assert "letters of another script: Cyrillic о (U+043E)" in latin["l\u043evelaceada_2"]
    assert "one name, another number" not in latin["lovelaceada_1"]

"""``backprop-ninja export``: grades.csv as Canvas and Moodle import it, matched to their rosters (no kernels)."""

import codecs
import csv

import pytest
from support.course import REPO

from autograder.cli import main

GRADES = [  # as backprop-ninja grade writes them (the notebook and step columns do not matter here)
    {"student": "lovelaceada", "total": "29.7", "max_total": "33", "late_penalty": "3.3"},  # Canvas file name
    {"student": "ghopper", "total": "31", "max_total": "33", "late_penalty": ""},  # named by SIS login id
    {"student": "mallory", "total": "33", "max_total": "33", "late_penalty": ""},  # not on the roster
    {"student": "noetheremmy", "total": "", "max_total": "33", "late_penalty": ""},  # handed in, no grade
    {"student": "smithjohn", "total": "20", "max_total": "33", "late_penalty": ""},  # two John Smiths
]
CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_ROSTER = [  # a Canvas gradebook export: header, Points Possible, then the students
    [*CANVAS_HEADER, "Quiz 1 (444)", "Backprop Ninja (555)", "Current Score"],
    ["    Points Possible", "", "", "", "", "10", "33", "(read only)"],
    ["Lovelace, Ada", "101", "9001", "alovelace", "Section A", "9", "", "90"],
    ["Turing, Alan", "102", "9002", "aturing", "Section A", "7", "", "70"],  # handed in nothing
    ["Hopper, Grace", "103", "9003", "ghopper", "Section B", "8", "", "80"],
    ["Noether, Emmy", "104", "9004", "enoether", "Section B", "10", "", "100"],
    ["Smith, John", "105", "9005", "jsmith1", "Section A", "", "", ""],
    ["Smith, John", "106", "9006", "jsmith2", "Section B", "", "", ""],
]


@pytest.fixture
def course(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    (tmp_path / "source" / "backprop_ninja").mkdir(parents=True)
    with open(tmp_path / "grades.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(GRADES[0]))
        writer.writeheader()
        writer.writerows(GRADES)
    return tmp_path


def write_rows(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)


def read_rows(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


def write_grades(course, totals):
    """grades.csv with a row for each (student, total), out of 33."""
    with open(course / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(GRADES[0]))
        writer.writeheader()
        for student, total in totals:
            writer.writerow({"student": student, "total": total, "max_total": "33", "late_penalty": ""})


def export_moodle(course):
    """backprop-ninja export for Moodle with the course's moodle.csv as the roster; the file written."""
    out = course / "moodle_import.csv"
    main(
        ["export", "--course", str(course), "--format", "moodle", "--roster", str(course / "moodle.csv")]
        + ["--out", str(out)]
    )
    return out


def test_canvas_import_file_from_a_canvas_roster(course, capsys):
    write_rows(course / "roster.csv", CANVAS_ROSTER)
    out = course / "canvas_import.csv"
    main(
        ["export", "--course", str(course), "--format", "canvas", "--roster", str(course / "roster.csv")]
        + [
            "--out",
            str(out),
        ]
    )
    rows = read_rows(out)
    assert rows[0] == [*CANVAS_HEADER, "Backprop Ninja (555)"]  # Canvas's import header, the roster's own column
    assert rows[1][0].strip() == "Points Possible" and rows[1][-1] == "33"
    grade = {r[0]: r[-1] for r in rows[2:]}
    assert rows[2][:5] == ["Lovelace, Ada", "101", "9001", "alovelace", "Section A"]
    assert grade == {  # everyone on the roster, in its order; grades.csv's totals (after the late penalty)
        "Lovelace, Ada": "29.7",
        "Turing, Alan": "",
        "Hopper, Grace": "31",
        "Noether, Emmy": "",
        "Smith, John": "",
    }
    assert [r[0] for r in rows[2:]].count("Smith, John") == 2
    listed = read_rows(course / "canvas_import.unmatched.csv")
    assert listed[0] == ["what", "who", "why"]
    who = {(what, name) for what, name, _ in listed[1:]}
    assert who == {
        ("on the roster, no submission", "Turing, Alan"),
        ("on the roster, no submission", "Smith, John"),  # both John Smiths: neither was guessed
        ("submission, not on the roster", "mallory"),
        ("submission, not on the roster", "smithjohn"),
        ("submission, no grade (see problems.json)", "noetheremmy"),
    }
    assert len(listed) == 1 + 6  # the two John Smiths are two rows
    err = capsys.readouterr().err
    assert "Turing, Alan" in err and "mallory" in err and "2 people on the roster have this name" in err


def test_moodle_import_file_from_a_moodle_roster(course):
    with open(course / "grades.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(GRADES[0]))
        writer.writeheader()
        writer.writerow({"student": "Ada_Lovelace_1234", "total": "29.7", "max_total": "33", "late_penalty": "3.3"})
        writer.writerow({"student": "Grace_Hopper_55", "total": "31", "max_total": "33", "late_penalty": ""})
    write_rows(
        course / "moodle.csv",
        [
            ["First name", "Last name", "ID number", "Institution", "Department", "Email address"],
            ["Ada", "Lovelace", "S1", "", "", "ada@example.org"],
            ["Emmy", "Noether", "S4", "", "", "emmy@example.org"],
        ],
    )
    out = course / "moodle_import.csv"
    main(
        ["export", "--course", str(course), "--format", "moodle", "--roster", str(course / "moodle.csv")]
        + [
            "--out",
            str(out),
        ]
    )
    assert read_rows(out) == [["Email address", "backprop_ninja"], ["ada@example.org", "29.7"]]
    who = {(what, name) for what, name, _ in read_rows(course / "moodle_import.unmatched.csv")[1:]}
    assert who == {
        ("on the roster, no submission", "Emmy Noether"),
        ("submission, not on the roster", "Grace_Hopper_55"),
    }


def test_names_in_any_script_are_matched_to_the_roster(course):
    """A Russian or Chinese class: Moodle's folders keep the students' names, and so does the roster; matched by
    name as an English one is (accents aside), never all as one empty name."""
    write_grades(course, [("Дмитрий_Иванов_1004", "30"), ("王小明_1005", "31"), ("Chloé_Dupont-Müller_7", "32")])
    write_rows(
        course / "moodle.csv",
        [
            ["First name", "Last name", "Email address"],
            ["Дмитрий", "Иванов", "dima@example.org"],
            ["小明", "", "wang@example.org"],
            ["王小明", "", "xiaoming@example.org"],
            ["Chloe", "Dupont-Muller", "chloe@example.org"],
            ["Анна", "Смирнова", "anna@example.org"],
        ],
    )
    out = export_moodle(course)
    assert sorted(read_rows(out)[1:]) == [
        ["chloe@example.org", "32"],
        ["dima@example.org", "30"],
        ["xiaoming@example.org", "31"],
    ]


@pytest.mark.parametrize(
    "encoding, separator",
    [("utf-8", ";"), ("utf-8-sig", "\t"), ("utf-16", "\t"), ("utf-16-be", ",")],
    ids=["semicolons", "tabs-with-a-byte-order-mark", "unicode-text", "utf-16-be"],
)
def test_a_roster_saved_by_a_spreadsheet_is_read_as_the_lms_wrote_it(course, encoding, separator):
    """A roster opened in a spreadsheet and saved again: semicolons where decimals are written with commas (Russian,
    German), tabs and UTF-16 for "Unicode text"; Moodle's own export offers the separators too. Each was "neither a
    Canvas gradebook export nor a Moodle export", or could not be read."""
    rows = [["First name", "Last name", "Email address"], ["Дмитрий", "Иванов", "dima@example.org"]]
    text = "\r\n".join(separator.join(row) for row in rows) + "\r\n"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
    (course / "moodle.csv").write_bytes(data)
    write_grades(course, [("Дмитрий_Иванов_1004", "30")])
    out = export_moodle(course)
    assert read_rows(out) == [["Email address", "backprop_ninja"], ["dima@example.org", "30"]]


def test_moodle_names_family_name_first_are_matched(course):
    """A Moodle site that shows names family name first (usual in Chinese) names its download's folders "李娜_1005_…"
    for First name 娜, Last name 李: matched all the same (before, the whole class was "not on the roster"); a name two
    people share in either order matches neither."""
    write_grades(
        course, [("李娜_1005", "46"), ("Иванов_Дмитрий_1004", "30"), ("Ada_Lovelace_7", "33"), ("Kim_Lee_8", "20")]
    )
    write_rows(
        course / "moodle.csv",
        [
            ["First name", "Last name", "Email address"],
            ["娜", "李", "li.na@example.org"],
            ["Дмитрий", "Иванов", "dima@example.org"],
            ["Ada", "Lovelace", "ada@example.org"],
            ["Kim", "Lee", "kim.lee@example.org"],
            ["Lee", "Kim", "lee.kim@example.org"],
        ],
    )
    out = export_moodle(course)
    assert sorted(read_rows(out)[1:]) == [
        ["ada@example.org", "33"],
        ["dima@example.org", "30"],
        ["li.na@example.org", "46"],
    ]
    listed = {(what, name) for what, name, _ in read_rows(course / "moodle_import.unmatched.csv")[1:]}
    assert ("submission, not on the roster", "Kim_Lee_8") in listed  # Kim Lee and Lee Kim: neither guessed


def test_a_roster_in_a_spreadsheets_own_encoding_is_named_with_what_to_do(course):
    (course / "moodle.csv").write_bytes("Имя;Фамилия\r\nДмитрий;Иванов\r\n".encode("cp1251"))
    with pytest.raises(SystemExit) as stop:
        main(
            ["export", "--course", str(course), "--format", "moodle", "--roster", str(course / "moodle.csv")]
            + ["--out", str(course / "x.csv")]
        )
    assert 'is not UTF-8 text. Export it from the LMS again, or save it from your spreadsheet as "CSV UTF-8"' in str(
        stop.value.code
    )


def test_a_grades_csv_written_over_by_nbgrader_export_is_named_not_exported_empty(course):
    """``nbgrader export`` writes grades.csv by default, over the grader's: export then matched no one and wrote a
    Canvas import with every grade empty (and no points possible), exit code 0. Now it stops and says what to do."""
    nbgrader_columns = "assignment,duedate,timestamp,student_id,last_name,first_name,email,raw_score,score,max_score"
    (course / "grades.csv").write_text(nbgrader_columns + "\nbackprop_ninja,,,lovelaceada,,,,29.7,29.7,33.0\n")
    write_rows(course / "roster.csv", CANVAS_ROSTER)
    out = course / "canvas_import.csv"
    with pytest.raises(SystemExit) as stop:
        main(["export", "--course", str(course), "--format", "canvas", "--roster", str(course / "roster.csv")]
             + ["--out", str(out)])  # fmt: skip
    said = str(stop.value.code)
    assert "is not the grades.csv backprop-ninja grade writes (its columns: assignment, duedate" in said, said
    assert "nbgrader export --to nbgrader-grades.csv" in said and not out.exists()


def test_plain_csv_and_the_mistakes_an_instructor_can_make(course):
    out = course / "plain.csv"
    main(["export", "--course", str(course), "--format", "csv", "--out", str(out)])
    assert read_rows(out)[:2] == [
        ["student", "name", "total", "max_total", "late_penalty"],
        ["ghopper", "", "31", "33", ""],
    ]
    write_rows(course / "roster.csv", CANVAS_ROSTER)
    for args, message in [
        (["--format", "canvas"], "--format canvas needs --roster"),
        (["--format", "moodle", "--roster", str(course / "roster.csv")], "is a canvas export"),
        (["--format", "canvas", "--roster", str(course / "roster.csv"), "--column", "Quiz 2"], "no column 'Quiz 2'"),
        (["--format", "canvas", "--roster", str(REPO / "pyproject.toml")], "neither a Canvas gradebook export"),
        (["--format", "canvas", "--roster", str(course / "missing.csv")], "cannot read the roster"),
    ]:
        with pytest.raises(SystemExit) as stop:
            main(["export", "--course", str(course), "--out", str(course / "x.csv"), *args])
        assert message in str(stop.value.code), (args, stop.value.code)


def test_an_export_that_matched_nobody_says_so(course, capsys):
    """A roster of another course (or students named otherwise than the LMS names them): the import file is written,
    every grade empty, and a warning says so rather than only a count of the unmatched."""
    other = [CANVAS_ROSTER[0], CANVAS_ROSTER[1], ["Curie, Marie", "201", "9101", "mcurie", "Section C", "", "", ""]]
    write_rows(course / "roster.csv", other)
    out = course / "canvas_import.csv"
    main(
        ["export", "--course", str(course), "--format", "canvas", "--roster", str(course / "roster.csv")]
        + ["--out", str(out)]
    )
    assert "WARNING: nobody in grades.csv matched anyone on the roster" in capsys.readouterr().err
    assert [row[-1] for row in read_rows(out)[2:]] == [""]


def test_two_students_of_one_name_are_matched_by_their_canvas_user_id(course):
    """Two John Smiths on the roster: a Canvas download names them smithjohn_105 and smithjohn_106 (their user ids),
    and each gets their own grade; a name alone (smithjohn, above) still matches neither."""
    write_rows(
        course / "grades.csv", [list(GRADES[0]), ["smithjohn_105", "20", "33", ""], ["smithjohn_106", "30", "33", ""]]
    )
    write_rows(course / "roster.csv", CANVAS_ROSTER)
    out = course / "canvas_import.csv"
    main(
        [
            "export",
            "--course",
            str(course),
            "--format",
            "canvas",
            "--roster",
            str(course / "roster.csv"),
            "--out",
            str(out),
        ]
    )
    grades = {row[3]: row[-1] for row in read_rows(out)[2:]}
    assert grades["jsmith1"] == "20" and grades["jsmith2"] == "30"


def test_a_student_who_takes_a_classmates_name_takes_no_grade_of_theirs(course):
    """Eve renames herself Ada Lovelace on the LMS after the roster was exported. Moodle names her folder
    Ada_Lovelace_1000: both students matched Ada's row by name, the first in order took it, and Eve's 33 went into
    Ada's row of the import (Ada's own grade listed as unmatched). A row two students claim by name goes to neither;
    on Canvas, each is matched by the user id their id ends in."""
    grades = [["student", "total", "max_total", "late_penalty"], ["Ada_Lovelace_1000", "33", "33", ""]]
    write_rows(course / "grades.csv", [*grades, ["Ada_Lovelace_1234", "20", "33", ""]])
    roster = [["First name", "Last name", "Email address"], ["Ada", "Lovelace", "ada@x.org"], ["Eve", "M", "eve@x.org"]]
    write_rows(course / "moodle.csv", roster)
    out = course / "moodle_import.csv"
    main(
        ["export", "--course", str(course), "--format", "moodle", "--roster", str(course / "moodle.csv")]
        + [
            "--out",
            str(out),
        ]
    )
    assert read_rows(out)[1:] == []  # nobody's grade in Ada's row
    why = {who: why for _, who, why in read_rows(course / "moodle_import.unmatched.csv")[1:]}
    assert "also claimed by Ada_Lovelace_1234: neither is matched" in why["Ada_Lovelace_1000"]

    write_rows(
        course / "grades.csv", [*grades, ["lovelaceada_101", "20", "33", ""], ["lovelaceada_100", "33", "33", ""]]
    )
    canvas = [*CANVAS_ROSTER[:3], ["M, Eve", "100", "9100", "eve", "Section A", "", "", ""]]
    write_rows(course / "roster.csv", canvas)
    out = course / "canvas_import.csv"
    main(
        ["export", "--course", str(course), "--format", "canvas", "--roster", str(course / "roster.csv")]
        + [
            "--out",
            str(out),
        ]
    )
    assert {row[3]: row[-1] for row in read_rows(out)[2:]} == {"alovelace": "20", "eve": "33"}


def test_every_csv_people_open_is_utf8_with_a_byte_order_mark_and_reads_back(course, tmp_path):
    """grades.csv and the LMS files had no byte-order mark: Excel on Windows read "Иван Петров" as "Ð˜Ð²Ð°Ð½
    ÐŸÐµÑ‚Ñ€Ð¾Ð²". They start with one; Moodle's import strips it and Canvas's finds its columns with it; Python reads
    them with "utf-8-sig", which reads a grades.csv without one (an older version's) too."""
    from autograder.grading.results.grades_csv import write_grades_csv

    write_grades_csv(
        course / "grades.csv",
        [{"student": "Иван_Петров_12345", "total": 40, "max_total": 50}, {"student": "李娜_12346", "max_total": 50}],
        [],
        {},
    )
    raw = (course / "grades.csv").read_bytes()
    assert raw.startswith(codecs.BOM_UTF8) and raw.count(codecs.BOM_UTF8) == 1
    assert "Иван_Петров_12345,40,50," in raw.decode("utf-8-sig")
    write_rows(
        course / "moodle.csv",
        [["First name", "Last name", "Email address"], ["Иван", "Петров", "ivan@example.org"]],
    )
    out = export_moodle(course)
    for written in (out, course / "moodle_import.unmatched.csv"):
        assert written.read_bytes().startswith(codecs.BOM_UTF8), written
    assert read_rows(out) == [["Email address", "backprop_ninja"], ["ivan@example.org", "40"]]
    listed = [row[:2] for row in read_rows(course / "moodle_import.unmatched.csv")]
    assert ["submission, no grade (see problems.json)", "李娜_12346"] in listed
    write_grades(course, [("Иван_Петров_12345", "39")])  # no byte-order mark, as an older version wrote it
    assert read_rows(export_moodle(course))[1] == ["ivan@example.org", "39"]


WORKSHEETS = {  # Moodle's grading worksheet as a site in each language writes its columns (its language packs)
    "ru": ["Идентификатор", "Полное имя", "Адрес электронной почты", "Состояние", "Оценка", "Максимальная оценка"]
    + ["Последнее изменение (оценка)", "Отзыв в виде комментария"],
    "zh_cn": ["标识符", "全名", "电子邮件地址", "状态", "成绩", "最高成绩", "上次修改（评分）", "反馈评语"],
    "es": ["Identificador", "Nombre completo", "Dirección de correo", "Estado", "Calificación", "Calificación máxima"]
    + ["Última modificación (calificación)", "Comentarios de retroalimentación"],
    "fr": ["Identifiant", "Nom complet", "Adresse de courriel", "Statut", "Note", "Note maximale"]
    + ["Dernière modification (note)", "Commentaires de feedback"],
    "en": ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum grade", "Last modified (grade)"]
    + ["Feedback comments"],
}
PARTICIPANT = {"ru": "Участник", "zh_cn": "参与者", "es": "Participante", "fr": "Participant", "en": "Participant"}


@pytest.mark.parametrize("language", sorted(WORKSHEETS))
def test_moodle_grading_worksheet_in_the_sites_language_comes_back_filled_in(course, capsys, language):
    """A Moodle site in Russian (or Chinese, Spanish, French) downloads its grading worksheet with its columns in that
    language, and its upload finds them by those names: the roster was refused ("export the roster with your LMS set
    to English"), and a participants list in English matched neither of two Иван Петров. The worksheet is read, each
    student matched by the number their download folder ends in, and written back as it was with the grades in."""
    write_grades(course, [("Иван_Петров_12345", "40"), ("Иван_Петров_12353", "33.5"), ("李娜_12346", "6")])
    header = WORKSHEETS[language]
    rows = [
        [f"{PARTICIPANT[language]} {n}", name, mail, "…", "", "33,00", "-", "=HYPERLINK(1)" * (n == "12346")]
        for n, name, mail in [
            ("12345", "Иван Петров", "ivan1@example.org"),
            ("12353", "Иван Петров", "ivan2@example.org"),
            ("12346", "李娜", "lina@example.org"),
            ("12399", "=cmd|' /C calc'!A0", "petr@example.org"),  # on the roster, handed in nothing
        ]
    ]
    write_rows(course / "moodle.csv", [header, *rows])
    out = export_moodle(course)
    assert out.read_bytes().startswith(codecs.BOM_UTF8)
    written = read_rows(out)
    grade = header.index(WORKSHEETS["en"][4] if language == "en" else header[4])
    assert written[0] == header  # Moodle's upload finds its columns by these names
    assert [row[grade] for row in written[1:]] == ["40", "33.5", "6", ""]
    assert [row[:1] + row[2:grade] + row[grade + 1 :] for row in written[1:]] == [
        row[:1] + row[2:grade] + row[grade + 1 :] for row in rows
    ]  # every other cell as it was, feedback comments included
    assert written[4][1] == "'=cmd|' /C calc'!A0"  # a name a spreadsheet would run
    assert "12399" in capsys.readouterr().err or "=cmd" in (course / "moodle_import.unmatched.csv").read_text(
        "utf-8-sig"
    )


def test_a_moodle_worksheet_of_another_language_is_read_by_its_identifiers_and_a_wrong_maximum_is_said(course, capsys):
    """A German site: its identifier column is told by its values ("Teilnehmer/in 12345"), its grade column by its
    name; a worksheet whose maximum grade is not the totals' is said (Moodle skips a grade over the maximum); one
    without a grade column Moodle would read is refused, naming its columns."""
    write_grades(course, [("Jürgen_Müller_12352", "50")])
    header = ["Kennung", "Vollständiger Name", "E-Mail-Adresse", "Status", "Bewertung", "Bestwertung"]
    write_rows(
        course / "moodle.csv", [header, ["Teilnehmer/in 12352", "Jürgen Müller", "j@example.org", "", "", "100,00"]]
    )
    out = export_moodle(course)
    assert read_rows(out)[1] == ["Teilnehmer/in 12352", "Jürgen Müller", "j@example.org", "", "50", "100,00"]
    err = capsys.readouterr().err
    assert "the worksheet's maximum grade is 100, the totals are out of 33" in err
    write_rows(course / "moodle.csv", [["Kennung", "Name", "Punkte"], ["Teilnehmer/in 12352", "Jürgen Müller", ""]])
    with pytest.raises(SystemExit) as stop:
        export_moodle(course)
    said = str(stop.value.code)
    assert "nor a Moodle grading worksheet" in said and "its columns: Kennung, Name, Punkte" in said

"""A zip a student handed in (intake.student_zip) and what several downloads keep (GradingState.collected): whatever
is wrong with a student's zip is their problem, never the class's, and the host holds a bounded part of it."""

import io
import zipfile

import pytest
from support.course import ASSIGNMENT

from autograder.grading.intake.collect import collect
from autograder.grading.intake.state import GradingState

NB = "ex1_atomic_backward"


def _zip_bytes(members: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buffer.getvalue()


def _damaged(kind: str) -> bytes:
    """A zip holding one notebook whose member is damaged as ``kind`` says (each stopped the whole class's collect)."""
    import struct

    method = {"lzma": zipfile.ZIP_LZMA, "bzip2": zipfile.ZIP_BZIP2}.get(kind, zipfile.ZIP_STORED)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as z:
        z.writestr(zipfile.ZipInfo(f"{NB}.ipynb", (2020, 1, 1, 0, 0, 0)), '{"cells": [1, 2, 3, 4, 5, 6, 7]}' * 20)
    raw = bytearray(buffer.getvalue())
    central, local = raw.find(b"PK\x01\x02"), raw.find(b"PK\x03\x04")
    data = local + 30 + len(f"{NB}.ipynb")
    if kind == "no date":  # month 0 (a DOS date anyone can write)
        raw[central + 14 : central + 16] = struct.pack("<H", 40 << 9)
    elif kind == "bad crc":
        raw[data + 3] ^= 1
    elif kind == "method 99":
        raw[central + 10 : central + 12] = raw[local + 8 : local + 10] = struct.pack("<H", 99)
    elif kind == "version 6.7":  # the version needed to extract it, far past zipfile's (NotImplementedError)
        raw[central + 6 : central + 8] = struct.pack("<H", 67)
    elif kind == "encrypted":
        raw[central + 8 : central + 10] = raw[local + 6 : local + 8] = struct.pack("<H", 1)
    else:  # lzma, bzip2: a stream that cannot be decompressed
        for i in range(data + 4, data + 30):
            raw[i] ^= 0x55
    return bytes(raw)


@pytest.mark.parametrize("kind", ["no date", "bad crc", "method 99", "version 6.7", "encrypted", "lzma", "bzip2"])
def test_a_damaged_zip_a_student_handed_in_is_their_problem_never_the_classs(tmp_path, kind):
    """A zip a student handed in is theirs to make: a member with no date (ValueError), a bad CRC (a GradingError that
    told the instructor to download the class again), a password, a compression method of its own or a broken stream
    stopped collecting the whole class. The notebook in it is not collected, with an unmatched_file that says why, a
    copy handed in beside it is taken instead, and every classmate is collected."""
    download = tmp_path / "moodle.zip"
    with zipfile.ZipFile(download, "w") as z:
        z.writestr("Ada_1001_assignsubmission_file_/work.zip", _damaged(kind))
        z.writestr("Ben_1002_assignsubmission_file_/work.zip", _damaged(kind))
        z.writestr(zipfile.ZipInfo(f"Ben_1002_assignsubmission_file_/{NB}.ipynb", (2000, 1, 1, 0, 0, 0)), '{"ben"}')
        z.writestr(f"Cy_1003_assignsubmission_file_/{NB}.ipynb", "{}")
    collected, problems = collect(download, tmp_path / "course", ASSIGNMENT, [NB])
    if kind == "no date":  # readable: only its time is no time (then the zip's own)
        assert collected == {"Ada_1001": [NB], "Ben_1002": [NB], "Cy_1003": [NB]}, problems
        return
    assert collected == {"Ben_1002": [NB], "Cy_1003": [NB]}, problems
    assert (tmp_path / "course" / "submitted" / "Ben_1002" / ASSIGNMENT / f"{NB}.ipynb").read_text() == '{"ben"}'
    named = {(p.student, p.kind) for p in problems}
    assert named == {("Ada_1001", "unmatched_file"), ("Ben_1002", "unmatched_file")}, problems
    assert all("cannot be " in p.detail for p in problems), problems


def test_a_zip_a_student_handed_in_is_held_one_at_a_time_and_its_names_are_shown_clean(tmp_path, monkeypatch):
    """A student's zip of millions of members held gigabytes once parsed (300,000 empty ones, 25 MB, took 160 MB), and
    every zip opened stayed in memory until the class was collected. A list of members over MAX_ZIPPED_DIRECTORY is
    not opened, one zip is open at a time, and a member's name reaches problems.json without control characters."""
    from autograder.grading.intake import student_zip

    many = io.BytesIO()
    with zipfile.ZipFile(many, "w") as z:
        for i in range(30000):
            z.writestr(f"{i}.txt", b"")
    opened = []
    original = zipfile.ZipFile

    class Counted(original):
        def __init__(self, file, *args, **kwargs):
            super().__init__(file, *args, **kwargs)
            if isinstance(file, io.BytesIO):
                opened.append(self)

    monkeypatch.setattr(student_zip.zipfile, "ZipFile", Counted)
    download = tmp_path / "moodle.zip"
    with zipfile.ZipFile(download, "w") as z:
        z.writestr("Ada_1001_assignsubmission_file_/many.zip", many.getvalue())
        for student in ("Ben_1002", "Cy_1003", "Di_1004"):
            work = _zip_bytes({f"\x1b[2Jwork\n/{NB}.ipynb": "{}", f"{NB} (1).ipynb": "{ }"})
            z.writestr(f"{student}_assignsubmission_file_/work.zip", work)
    collected, problems = collect(download, tmp_path / "course", ASSIGNMENT, [NB])
    assert collected == {"Ben_1002": [NB], "Cy_1003": [NB], "Di_1004": [NB]}, problems
    [ada] = [p for p in problems if p.student == "Ada_1001"]
    assert "a zip archive that cannot be opened (its list of members takes" in ada.detail, ada
    assert len(opened) >= 3 and sum(z.fp is not None for z in opened) <= 1  # each closed when the next is opened
    details = " ".join(p.detail for p in problems)
    assert "?[2Jwork?/" in details and not any(c in details for c in "\x1b\n"), details


def test_a_notebook_in_a_zip_canvas_marked_late_is_marked_late_too(tmp_path):
    """Canvas marks a late file in its name (ada_LATE_1234_5678_work.zip); the notebooks of a zip were collected under
    the student's prefix alone, so its marked_late was lost, as it is not for a notebook handed in loose."""
    download = tmp_path / "canvas.zip"
    with zipfile.ZipFile(download, "w") as z:
        z.writestr("ada_LATE_1234_5678_work.zip", _zip_bytes({f"{NB}.ipynb": "{}"}))
        z.writestr("ben_1235_5679_work.zip", _zip_bytes({f"{NB}.ipynb": "{}"}))
    collected, problems = collect(download, tmp_path / "course", ASSIGNMENT, [NB])
    assert collected == {"ada_1234": [NB], "ben_1235": [NB]}
    assert [(p.student, p.kind) for p in problems] == [("ada_1234", "marked_late")], problems


def _problems_after_each(tmp_path, downloads: dict, notebooks: list, shown) -> list:
    """The collection problems kept after each download of ``downloads`` (name -> {path: text}) in turn, as ``shown``
    gives each."""
    state, seen = GradingState(tmp_path / "state.json"), []
    for name, files in downloads.items():
        with zipfile.ZipFile(tmp_path / f"{name}.zip", "w") as z:
            for path, data in files.items():
                z.writestr(path, data)
        state.collected(*collect(tmp_path / f"{name}.zip", tmp_path / "course", ASSIGNMENT, notebooks))
        seen.append(sorted(shown(p) for p in state.collect_problems))
    return seen


def test_a_later_download_keeps_the_problems_of_a_notebook_it_does_not_hold(tmp_path):
    """ada handed in two copies of Exercise 1 with the class, then Exercise 2 late: the late download dropped every
    problem of hers, so her Exercise 1's page, still graded on the copy the first download chose, no longer said that
    she had handed in two. A notebook's problems go only with a download that holds that notebook of the student's."""
    ex2 = "ex2_cross_entropy_backward"
    downloads = {
        "class": {f"ada/{NB}.ipynb": "{}", f"ada/{NB} (1).ipynb": "{ }", "ada/notes.pdf": ""},
        "late": {f"ada/{ex2}.ipynb": "{}"},
        "ex1 again": {f"ada/{NB}.ipynb": "{  }"},
    }
    assert _problems_after_each(tmp_path, downloads, [NB, ex2], lambda p: (p.notebook or "", p.kind)) == [
        [("", "unmatched_file"), (NB, "duplicate_file")],
        [(NB, "duplicate_file")],  # the notes.pdf of a student the download holds goes, as before
        [],  # Exercise 1 handed in again, alone: what the new download holds for it is what counts
    ]


def test_a_zip_in_a_submitted_folder_collected_in_place_stays_that_students(tmp_path):
    """grade --from submitted takes a folder of submitted/ as the student it is named ("Ada Lovelace"), but the
    notebooks of a zip in it went to the student its name made ("Ada_Lovelace"): one student became two, and a
    classmate of that id had them written into their folder."""
    ex2 = "ex2_cross_entropy_backward"
    submitted = tmp_path / "course" / "submitted"
    ada = submitted / "Ada Lovelace" / ASSIGNMENT
    ada.mkdir(parents=True)
    (ada / f"{NB}.ipynb").write_text("{}")
    (ada / "work.zip").write_bytes(_zip_bytes({f"{ex2}.ipynb": '{"ada"}'}))
    collected, problems = collect(submitted, tmp_path / "course", ASSIGNMENT, [NB, ex2])
    assert collected == {"Ada Lovelace": [NB, ex2]} and not problems, (collected, problems)
    assert (ada / f"{ex2}.ipynb").read_text() == '{"ada"}' and not (submitted / "Ada_Lovelace").exists()


def test_the_notebooks_of_a_zip_past_the_limit_are_named_not_dropped_in_silence(tmp_path):
    """A zip a student handed in is read for its first MAX_ZIPPED_NOTEBOOKS notebooks; the others were dropped
    without a word, where collect drops nothing in silence."""
    from autograder.grading.intake.student_zip import MAX_ZIPPED_NOTEBOOKS

    download = tmp_path / "moodle.zip"
    many = {f"old/{i}/{NB}.ipynb": "{}" for i in range(MAX_ZIPPED_NOTEBOOKS + 2)}
    with zipfile.ZipFile(download, "w") as z:
        z.writestr("Ada_1001_assignsubmission_file_/all.zip", _zip_bytes(many))
    collected, problems = collect(download, tmp_path / "course", ASSIGNMENT, [NB])
    assert collected == {"Ada_1001": [NB]}
    [detail] = [p.detail for p in problems if p.kind == "unmatched_file"]
    assert detail.startswith("Ada_1001_assignsubmission_file_/all.zip: 2 notebooks after its first 50 "), detail
    assert MAX_ZIPPED_NOTEBOOKS == 50


def test_the_notebooks_of_a_zip_are_read_to_200_mb_together(tmp_path):
    """Each notebook of a student's zip is read at most to its stated size, 200 MB, but 50 of them, 200 MB of zeros
    each (200 KB zipped), were all read and compared with each other: 10 GB to decompress for one small zip."""
    from autograder.grading.intake.download import MAX_ENTRY_BYTES

    read = []
    zeros = b"\0" * (MAX_ENTRY_BYTES // 3)
    download = tmp_path / "moodle.zip"
    with zipfile.ZipFile(download, "w") as z:
        z.writestr("Ada_1001_assignsubmission_file_/bomb.zip", _zip_bytes({f"{i}/{NB}.ipynb": zeros for i in range(6)}))
    original = zipfile.ZipFile.read
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(zipfile.ZipFile, "read", lambda self, name, *a: read.append(name) or original(self, name, *a))
        collected, problems = collect(download, tmp_path / "course", ASSIGNMENT, [NB])
    assert collected == {"Ada_1001": [NB]}
    notebooks = [n for n in read if getattr(n, "filename", n).endswith(".ipynb")]
    assert 0 < len(notebooks) <= 3, notebooks  # of the first three, 200 MB together
    [detail] = [p.detail for p in problems if p.kind == "unmatched_file"]
    assert "3 notebooks after its first 3 not looked at" in detail, detail


def test_the_notebooks_in_a_zip_a_student_handed_in_are_collected_as_theirs(tmp_path):
    """Moodle takes any file, and students zip their work: the zip was an unmatched_file and the student got
    missing_notebook. The notebooks in it, and in the zips in it, are collected as the student's, and
    a zip with none, or one that cannot be opened, is named."""
    ex2 = "ex2_cross_entropy_backward"
    moodle = tmp_path / "moodle.zip"
    with zipfile.ZipFile(moodle, "w") as z:
        work = _zip_bytes({f"work/{NB}.ipynb": '{"cells": ["ada"]}', "__MACOSX/work/._x.ipynb": "", "notes.txt": ""})
        z.writestr("Ada Lovelace_1001_assignsubmission_file_/work.zip", work)
        z.writestr("Ada Lovelace_1001_assignsubmission_file_/Exercise 2.ipynb", '{"cells": ["ada 2"]}')
        z.writestr("Ben Bitdiddle_1002_assignsubmission_file_/empty.zip", _zip_bytes({"readme.txt": "hello"}))
        z.writestr("Cy D_1003_assignsubmission_file_/broken.zip", b"PK\x03\x04 cut short")
        nested = _zip_bytes({"inner.zip": _zip_bytes({f"{NB}.ipynb": "{}"})})
        z.writestr("Di E_1004_assignsubmission_file_/nested.zip", nested)
    collected, problems = collect(moodle, tmp_path / "course", ASSIGNMENT, [NB, ex2])
    assert collected == {"Ada_Lovelace_1001": [NB, ex2], "Di_E_1004": [NB]}, problems
    ada = tmp_path / "course" / "submitted" / "Ada_Lovelace_1001" / ASSIGNMENT
    assert (ada / f"{NB}.ipynb").read_text() == '{"cells": ["ada"]}'
    named = {p.student: (p.kind, p.detail) for p in problems}
    assert named["Ben_Bitdiddle_1002"] == (
        "unmatched_file",
        "Ben Bitdiddle_1002_assignsubmission_file_/empty.zip: a zip archive with no notebook (.ipynb) in it",
    )
    assert named["Cy_D_1003"][0] == "unmatched_file" and "a zip archive that cannot be opened" in named["Cy_D_1003"][1]
    assert "Di_E_1004" not in named  # the notebook in the zip in her zip is hers
    assert "Ada_Lovelace_1001" not in named  # the readme and macOS's litter beside the notebook are no problem
    # Canvas's flat files: the zip's name says whose it is, and a copy of a notebook in it is named as a duplicate
    canvas = tmp_path / "canvas.zip"
    with zipfile.ZipFile(canvas, "w") as z:
        z.writestr("lovelaceada_1234_5678_ex1.zip", _zip_bytes({f"{NB}.ipynb": "{}", f"{NB} (1).ipynb": "{ }"}))
    collected, problems = collect(canvas, tmp_path / "canvas-course", ASSIGNMENT, [NB])
    assert collected == {"lovelaceada_1234": [NB]}
    [duplicate] = problems
    assert duplicate.kind == "duplicate_file" and "lovelaceada_1234_5678_ex1.zip/" in duplicate.detail


def test_a_later_download_keeps_the_problems_an_earlier_one_found_for_students_it_does_not_hold(tmp_path):
    """``grade --from class.zip``, then ``grade --from late.zip``: the class's collection problems were replaced by the
    late download's, so that ada's file that matched nothing was said by the first run and by no later one."""
    downloads = {
        "class": {"ada/notes.pdf": "", f"ada/{NB}.ipynb": "{}", f"ben/{NB}.ipynb": "{}"},
        "late": {f"ben/{NB} (1).ipynb": "{}", "cy/essay.docx": ""},
        "ada again": {f"ada/{NB}.ipynb": "{ }"},
    }
    assert _problems_after_each(tmp_path, downloads, [NB], lambda p: (p.student, p.detail.split(":")[0])) == [
        [("ada", "ada/notes.pdf")],
        [("ada", "ada/notes.pdf"), ("cy", "cy/essay.docx")],
        [("cy", "cy/essay.docx")],  # ada handed in again: what her new download holds is what counts
    ]


def test_the_notebooks_of_a_zip_inside_a_students_zip_are_theirs_and_too_deep_is_named(tmp_path):
    """A zip holding a notebook and a zip (a folder zipped with Colab's download in it): the inner zip's notebook was
    dropped without a word, its student missing_notebook for work they handed in. Zips are opened three deep, the
    notebooks of all counted against one limit, and a zip deeper, or one that cannot be opened, is named."""
    ex2, ex3 = "ex2_cross_entropy_backward", "ex3_batchnorm_backward"
    deepest = _zip_bytes({"d.zip": _zip_bytes({f"{ex3}.ipynb": '{"cells": []}'})})
    homework = _zip_bytes(
        {
            f"hw/{NB}.ipynb": '{"cells": ["one"]}',
            "hw/ex2.zip": _zip_bytes({f"{ex2}.ipynb": '{"cells": ["two"]}', "deeper.zip": deepest}),
            "hw/broken.zip": b"PK\x03\x04 cut short",
        }
    )
    download = tmp_path / "moodle.zip"
    with zipfile.ZipFile(download, "w") as z:
        z.writestr("Анна Соколова_12348_assignsubmission_file_/homework.zip", homework)
    collected, problems = collect(download, tmp_path / "course", ASSIGNMENT, [NB, ex2, ex3])
    assert collected == {"Анна_Соколова_12348": [NB, ex2]}, problems
    own = tmp_path / "course" / "submitted" / "Анна_Соколова_12348" / ASSIGNMENT
    assert (own / f"{ex2}.ipynb").read_text() == '{"cells": ["two"]}'
    [problem] = problems
    assert problem.kind == "unmatched_file", problem
    assert "homework.zip/hw/ex2.zip/deeper.zip/d.zip (more than 3 zips deep)" in problem.detail
    assert "homework.zip/hw/broken.zip (a zip archive that cannot be opened" in problem.detail


def test_moodles_flat_download_names_each_student_by_their_number(tmp_path):
    """Moodle's download without "Download submissions in folders" names each file <full name>_<number>_
    assignsubmission_file_<file>: every file was taken as the student named before the first underscore, so two
    Иван Петров were one student, the second's notebook a "duplicate" of the first's and one of them left ungraded. Each
    is the student their folder would name, and a zip so named is theirs too."""
    download = tmp_path / "flat.zip"
    with zipfile.ZipFile(download, "w") as z:
        z.writestr(f"Иван Петров_12345_assignsubmission_file_{NB}.ipynb", '{"cells": ["first"]}')
        z.writestr(f"Иван Петров_12353_assignsubmission_file_{NB} (1).ipynb", '{"cells": ["second"]}')
        z.writestr("Иван Петров_12353_assignsubmission_onlinetext_onlinetext.html", "<p>hi</p>")
        z.writestr("李娜_12346_assignsubmission_file_hw.zip", _zip_bytes({f"hw/{NB}.ipynb": '{"cells": ["li"]}'}))
    collected, problems = collect(download, tmp_path / "course", ASSIGNMENT, [NB])
    assert collected == {"Иван_Петров_12345": [NB], "Иван_Петров_12353": [NB], "李娜_12346": [NB]}, problems
    submitted = tmp_path / "course" / "submitted"
    assert (submitted / "Иван_Петров_12353" / ASSIGNMENT / f"{NB}.ipynb").read_text() == '{"cells": ["second"]}'
    assert (submitted / "李娜_12346" / ASSIGNMENT / f"{NB}.ipynb").read_text() == '{"cells": ["li"]}'
    assert [(p.student, p.kind) for p in problems] == [("Иван_Петров_12353", "unmatched_file")]


def test_a_student_renamed_on_the_lms_stays_one_student_and_a_second_download_changes_nothing(tmp_path):
    """Canvas names a download's files after the student's name now ("kingada" once she changed "Lovelace, Ada"), and
    Moodle its folders: her later download made a second student of her, "kingada_1234" beside "lovelaceada_1234",
    two rows of grades.csv that each claimed her on the roster, so neither grade was exported. Her number on the LMS
    decides: the later file is hers, in her folder. The same download collected again writes nothing and finds the
    same. Each is named (renamed_on_lms): a folder the instructor named "student_42" is taken for Canvas's user 42."""
    course = tmp_path / "course"
    first = tmp_path / "first.zip"
    with zipfile.ZipFile(first, "w") as z:
        z.writestr(f"lovelaceada_1234_9001_{NB}.ipynb", '{"cells": ["first"]}')
        z.writestr(f"Ivan Petrov_77_assignsubmission_file_/{NB}.ipynb", '{"cells": ["ivan"]}')
    assert collect(first, course, ASSIGNMENT, [NB])[0] == {
        "lovelaceada_1234": [NB],
        "Ivan_Petrov_77": [NB],
    }
    (course / "submitted" / "student_42" / ASSIGNMENT).mkdir(parents=True)  # the instructor's own folder
    later = tmp_path / "later.zip"
    with zipfile.ZipFile(later, "w") as z:
        z.writestr(f"kingada_LATE_1234_9002_{NB}-1.ipynb", '{"cells": ["later"]}')
        z.writestr(f"Ivan Petrov-Smirnov_77_assignsubmission_file_/{NB}.ipynb", '{"cells": ["ivan 2"]}')
        z.writestr(f"newcomer_42_9003_{NB}.ipynb", '{"cells": ["new"]}')
    collected, problems = collect(later, course, ASSIGNMENT, [NB])
    assert collected == {"lovelaceada_1234": [NB], "Ivan_Petrov_77": [NB], "student_42": [NB]}
    assert {(p.student, p.kind, p.detail) for p in problems if p.kind != "marked_late"} == {
        (old, "renamed_on_lms", f"named {new} in this download: collected as {old}, the student of that number in "
         "submitted/")
        for new, old in [("kingada_1234", "lovelaceada_1234"), ("Ivan_Petrov-Smirnov_77", "Ivan_Petrov_77"),
                         ("newcomer_42", "student_42")]
    }  # fmt: skip
    assert (
        course / "submitted" / "lovelaceada_1234" / ASSIGNMENT / f"{NB}.ipynb"
    ).read_text() == '{"cells": ["later"]}'
    assert not (course / "submitted" / "kingada_1234").exists()
    again = tmp_path / "again.zip"
    again.write_bytes(later.read_bytes())
    written = {p: p.stat().st_mtime_ns for p in (course / "submitted").rglob("*.ipynb")}
    assert collect(again, course, ASSIGNMENT, [NB]) == (collected, problems)
    assert {p: p.stat().st_mtime_ns for p in (course / "submitted").rglob("*.ipynb")} == written


def test_canvas_files_zipped_in_the_folder_they_were_unpacked_into_are_the_class(tmp_path):
    """Canvas's flat files unpacked into "submissions/" and zipped again were one student, "submissions", holding the
    class: the same notebook of three students was one file, the others unsaid. Files named as an LMS names them, for
    two students or more, are unwrapped; a student's own folder of loose files is not."""
    download = tmp_path / "wrapped.zip"
    with zipfile.ZipFile(download, "w") as z:
        for name in ("lovelaceada_1234_9001", "turingalan_LATE_2345_9002", "noetheremmy_3456_9003"):
            z.writestr(f"submissions/{name}_{NB}.ipynb", '{"cells": []}')
    collected, _ = collect(download, tmp_path / "course", ASSIGNMENT, [NB])
    assert sorted(collected) == ["lovelaceada_1234", "noetheremmy_3456", "turingalan_2345"]
    one = tmp_path / "one.zip"
    with zipfile.ZipFile(one, "w") as z:  # one student's folder: a name that is not the LMS's keeps it theirs
        z.writestr(f"ada/lovelaceada_1234_9001_{NB}.ipynb", '{"cells": []}')
        z.writestr("ada/notes.ipynb", '{"cells": []}')
    assert sorted(collect(one, tmp_path / "one-course", ASSIGNMENT, [NB])[0]) == ["ada"]


def test_a_notebook_saved_with_the_browsers_ending_is_collected_and_a_script_is_still_named(tmp_path):
    """Safari saves a notebook as ex1_atomic_backward.ipynb.txt, other browsers as .ipynb.json: the student's notebook
    was not_a_notebook ("not a notebook file (.ipynb)"), their work ungraded. A file named after a notebook whose
    content is a notebook is that notebook; a script or a page named so is still not_a_notebook."""
    download = tmp_path / "moodle.zip"
    notebook = '{"cells": [], "nbformat": 4}'
    with zipfile.ZipFile(download, "w") as z:
        z.writestr(f"Ada Lovelace_1_assignsubmission_file_/{NB}.ipynb.txt", notebook)
        z.writestr("Ada Lovelace_1_assignsubmission_file_/ex2_cross_entropy_backward.ipynb.json", notebook)
        z.writestr(f"Ben Bit_2_assignsubmission_file_/{NB}.py", "dprobs = 1\n")
        z.writestr(f"Cy D_3_assignsubmission_file_/{NB}.ipynb.txt", "")
    collected, problems = collect(download, tmp_path / "course", ASSIGNMENT, [NB, "ex2_cross_entropy_backward"])
    assert collected == {"Ada_Lovelace_1": [NB, "ex2_cross_entropy_backward"]}
    assert (tmp_path / "course/submitted/Ada_Lovelace_1" / ASSIGNMENT / f"{NB}.ipynb").read_text() == notebook
    assert {(p.student, p.notebook, p.kind) for p in problems} == {
        ("Ben_Bit_2", NB, "not_a_notebook"),
        ("Cy_D_3", NB, "not_a_notebook"),
    }


def test_a_script_or_a_browser_saved_notebook_in_a_zip_is_matched_as_if_handed_in_loose(tmp_path):
    """Only the .ipynb of a student's zip were looked at: a notebook Safari saved as ex3_batchnorm_backward.ipynb.txt
    was lost, and an exported ex2_cross_entropy_backward.py left its student missing_notebook with no word of it. Both
    are matched as if handed in loose; a readme beside them is still no problem."""
    ex2, ex3 = "ex2_cross_entropy_backward", "ex3_batchnorm_backward"
    work = _zip_bytes(
        {f"{NB}.ipynb": '{"cells": ["one"]}', f"{ex2}.py": "dlogits = 1\n", f"{ex3}.ipynb.txt": '{"cells": ["three"]}'}
        | {"notes.txt": "my notes"}
    )
    download = tmp_path / "moodle.zip"
    with zipfile.ZipFile(download, "w") as z:
        z.writestr("Ada Lovelace_1_assignsubmission_file_/work.zip", work)
    collected, problems = collect(download, tmp_path / "course", ASSIGNMENT, [NB, ex2, ex3])
    assert collected == {"Ada_Lovelace_1": [NB, ex3]}
    [problem] = problems
    assert (problem.notebook, problem.kind) == (ex2, "not_a_notebook") and "work.zip/" in problem.detail

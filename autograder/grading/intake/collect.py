"""Lay out an LMS download as nbgrader wants it: submitted/<student>/<assignment>/<notebook>.ipynb.

A zip or a folder, with a folder per student (Moodle, nbgrader) or Canvas's flat files; names are matched to the
assignment's notebooks after removing what Colab and LMSs add. Nothing is dropped in silence: what cannot be
placed is a problem (docs/instructors.md, "Collecting submissions").
"""

import os
import re
import unicodedata
from dataclasses import replace
from pathlib import Path

from ...common.problems import Problem
from ...common.words import say
from .download import MAX_ENTRY_BYTES, SKIPPED, Entry, read
from .download import entries as entries_of
from .lms_names import CANVAS_FILE, MOODLE_FILE, as_before, known_numbers
from .student_zip import newest_readable, opened, read_or_none
from .which_notebook import by_cells, export_of, looks_like_notebook, match_notebook, own_cells, what_it_is

UNKNOWN_STUDENT = "(unknown)"
# letters and marks that show nothing (Unicode's default ignorables among them): Hangul fillers, the combining
# grapheme joiner, Khmer's inherent vowels, Mongolian's variation selectors, variation selectors
INVISIBLE = set("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0") | {
    chr(c) for c in [*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)]
}
UNMATCHED_NAMED = 20  # a student's files that match no notebook, each named in a problem of its own
UNWRAPPED_DEPTH = 3  # the folders around a download that collect looks through at most


def student_id(name: str) -> str:
    """A folder or file-name prefix as an nbgrader student id: letters, digits and marks of any script (NFC: a zip made
    on macOS spells é as e and an accent; a Hindi or Thai vowel sign is a mark of its own), ``_ . @ -``; "Дмитрий
    Иванов_1004" stays a name, not a number. A letter that shows nothing (a Hangul filler) is left out: "ada" and
    "ada" with one after it were two students who looked like one."""
    name = re.sub(r"_assignsubmission_\w*$", "", unicodedata.normalize("NFC", name.strip()))
    kept = "".join(c if c.isalnum() or c in "_.@-" or unicodedata.category(c)[0] == "M" else " " for c in name)
    kept = "".join(c for c in kept if c not in INVISIBLE)
    return re.sub(r" +", "_", kept).strip("._- ") or UNKNOWN_STUDENT


def _owner(parts: tuple) -> str:
    """The student a file of a download belongs to, by its path: its first folder, or a flat file's name prefix."""
    if parts[0] == "submitted" and len(parts) > 2:  # a whole nbgrader submitted/ folder
        parts = parts[1:]
    if len(parts) == 1 and (moodle := MOODLE_FILE.match(parts[0])):  # as its folder would be: "Иван_Петров_12345"
        return student_id(moodle[1])
    if len(parts) == 1:  # a flat file, named by the LMS
        canvas = CANVAS_FILE.match(parts[0])
        if canvas:  # with the user's id, as Moodle's folders: two Ada Lovelaces (or a name copied) are two students
            return student_id(f"{canvas[1]}_{canvas[2]}")
        prefix, sep, _ = parts[0].partition("_")
        return student_id(prefix) if sep else UNKNOWN_STUDENT
    return student_id(parts[0])


def _unwrapped(entries: list) -> list:
    """The entries without a top folder that holds them all, when it holds more than one student's folders: a zip made
    of the folder an LMS download was unpacked into (or of folders around it, three at most). Its name would be taken
    for one student's, holding the class. Never a student's own folder (Moodle's ``..._assignsubmission_...``), nor one
    whose files lie loose in it (their names are the student's to choose, and could name classmates), unless every one
    is named as Canvas or Moodle names the flat files of a download, and they are two students' or more."""
    for depth in range(1, UNWRAPPED_DEPTH + 1):
        if len({e.parts[depth - 1] for e in entries}) != 1 or "_assignsubmission_" in entries[0].parts[depth - 1]:
            break
        # Canvas's flat files (or Moodle's) zipped in the folder they were unpacked into: every file loose in it named
        # as the LMS names one (a class of one student "submissions" was the class; its copies, the same, unsaid)
        lms_files = all(len(e.parts) == depth + 1 and _lms_named(e.parts[depth]) for e in entries)
        if not lms_files and not all(len(e.parts) > depth + 1 for e in entries):
            break
        if len({_owner(e.parts[depth:]) for e in entries}) > 1:
            return [Entry(e.parts[depth:], e.size, e.mtime, e.read, e.path) for e in entries]
    return entries


def _lms_named(name: str) -> bool:
    return bool(MOODLE_FILE.match(name) or CANVAS_FILE.match(name))


def _is_file(entry: Entry, target: Path) -> bool:
    """Whether ``entry`` is the file ``target`` itself (``grade --from submitted``, which collects in place)."""
    try:
        return entry.path is not None and not target.is_symlink() and target.is_file() and entry.path.samefile(target)
    except OSError:
        return False


def _student(entry: Entry, course_root: Path) -> str:
    """Whose file ``entry`` is: its owner by its path, or, in a folder of submitted/ collected in place, that folder as
    it is named (renamed, it was a second one)."""
    if len(entry.parts) > 1 and _in_place(entry, course_root / "submitted" / entry.parts[0]):
        return entry.parts[0]
    return _owner(entry.parts)


def _in_place(entry: Entry, folder: Path) -> bool:
    """Whether ``entry`` lies in ``folder`` (a student's of submitted/, collected in place), no link on the way."""
    try:
        return (
            entry.path is not None and not folder.is_symlink() and entry.path.resolve().is_relative_to(folder.resolve())
        )
    except OSError:
        return False


def _write(target: Path, data: bytes) -> None:
    """``data`` into ``target`` as a regular file, never through a link there (grading reads no link: it names no file
    handed in; written through by ``grade --from submitted``, as root, a link there made any file of the machine the
    notebook collected)."""
    if target.is_symlink():
        target.unlink()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _own_folder(course_root: Path, student: str, assignment: str) -> Path:
    """submitted/<student>/<assignment>, made, each of the two a folder of its own: a link there is replaced (written
    through by ``grade --from submitted``, it put the student's notebook and timestamp.txt into the folder it named,
    a classmate's or any of the machine's)."""
    folder = course_root / "submitted"
    for name in (student, assignment):
        folder = folder / name
        if folder.is_symlink():
            folder.unlink()
        folder.mkdir(parents=True, exist_ok=True)
    return folder


def collect(download, course_root, assignment: str, notebooks) -> tuple[dict, list]:
    """Copy the download's notebooks into ``course_root/submitted``.

    Returns ({student: [notebooks collected]}, [Problem]).
    """
    download, course_root = Path(download), Path(course_root)
    problems, chosen, seen = [], {}, set()  # chosen: (student, notebook) -> [(Entry, name shown)]
    timestamps = {}
    exported = []  # (student, notebook, words): a file named after a notebook that is none (.py, .html, .pdf)
    unnamed = []  # (student, Entry, name shown): a notebook named after none of the course's

    unmatched = {}  # student -> their files that match nothing: the first few named, the rest counted

    def report(student, notebook, problem, detail):
        if problem == "unmatched_file" and notebook is None:
            unmatched[student] = unmatched.get(student, 0) + 1
            if unmatched[student] > UNMATCHED_NAMED:
                return
        problems.append(Problem.said(student, notebook, problem, detail))

    entries, unsafe = entries_of(download)
    known = known_numbers(course_root)
    renamed = {}  # student as this download names them -> as an earlier one did (their number on the LMS the same)

    def whose(entry):
        named = _student(entry, course_root)
        student = as_before(entry, named, known)
        if student != named:
            renamed[named] = student
        return student

    held = {}  # the student's zip open now
    for name in unsafe:
        report(UNKNOWN_STUDENT, None, "unmatched_file", f"{name}: a path outside the archive, ignored")
    entries = _unwrapped([e for e in entries if not any(p in SKIPPED or p.startswith(".") for p in e.parts)])
    for entry in [e for e in entries if e.parts[-1].lower().endswith(".zip") and _owner(e.parts) != UNKNOWN_STUDENT]:
        entries.remove(entry)  # a student's own zip (Moodle takes any file): the notebooks in it, as if handed in
        inside, why = opened(entry, download, held)
        entries += [replace(e, owner=whose(entry)) for e in inside]
        if why:
            report(whose(entry), None, "unmatched_file", f"{'/'.join(entry.parts)}: {why}")
    for entry in entries:
        parts, shown = entry.parts, entry.within or "/".join(entry.parts)
        student = entry.owner or whose(entry)
        if len(parts) == 1 and (moodle := MOODLE_FILE.match(parts[0])):  # Moodle's flat file: the name handed in
            name = moodle[2]
        elif len(parts) == 1:  # a flat file, named by the LMS: the student's prefix, then the name handed in
            prefix, sep, rest = parts[0].partition("_")
            name = rest if sep else parts[0]
        else:
            name = parts[-1]
        if student != UNKNOWN_STUDENT:
            seen.add(student)
        if name == "timestamp.txt" and len(parts) > 1:
            timestamps[student] = entry
            continue
        notebook = match_notebook(name, notebooks)
        if notebook is None and student != UNKNOWN_STUDENT and (meant := export_of(name, notebooks)):
            if entry.size <= MAX_ENTRY_BYTES and looks_like_notebook(read_or_none(entry, download)):
                notebook = meant  # the notebook itself, saved with an ending of the browser's (Safari's .ipynb.txt)
            else:
                why = say("not a notebook file (.ipynb)")
                exported.append((student, meant, say("{file}: {why}", file=shown, why=why)))
                continue
        if notebook is None and student != UNKNOWN_STUDENT and name.lower().endswith(".ipynb"):
            unnamed.append((student, entry, shown))  # Untitled0.ipynb, lab4.ipynb: matched by its cells, below
            continue
        if notebook is None:
            why = (
                say("its name matches none of the notebooks {notebooks}", notebooks=", ".join(notebooks))
                if name.lower().endswith(".ipynb")
                else say("not a notebook file (.ipynb)")
            )
            if student == UNKNOWN_STUDENT:
                why = say("{why}; whose file it is cannot be told from its name", why=why)
            report(student, None, "unmatched_file", say("{file}: {why}", file=shown, why=why))
            continue
        if entry.size > MAX_ENTRY_BYTES:
            report(
                student,
                notebook,
                "too_large",
                say("{file}: {size:.0f} MB, not collected", file=shown, size=entry.size / 2**20),
            )
            continue
        chosen.setdefault((student, notebook), []).append((entry, shown))
    own = own_cells(course_root, assignment, notebooks) if unnamed else {}
    for student, entry, shown in unnamed:  # only for a notebook that no file handed in names
        notebook = by_cells(entry, download, own)
        if notebook is not None and (student, notebook) not in chosen:
            chosen[(student, notebook)] = [(entry, shown)]
            continue
        why = say("its name matches none of the notebooks {notebooks}", notebooks=", ".join(notebooks))
        problems.append(Problem.said(student, None, "unmatched_file", say("{file}: {why}", file=shown, why=why)))

    collected = {}
    for (student, notebook), copies in sorted(chosen.items()):
        folder = course_root / "submitted" / student / assignment
        target = folder / f"{notebook}.ipynb"
        copies.sort(key=lambda c: (_is_file(c[0], target), c[0].mtime, c[1]), reverse=True)
        data, copies = newest_readable(copies, download, lambda why: report(student, notebook, "unmatched_file", why))
        if data is None:
            continue
        # a copy the same as the one taken is no choice (a second --from submitted finds what the first wrote)
        copies = [copies[0]] + [c for c in copies[1:] if c[0].size != len(data) or read_or_none(c[0], download) != data]
        why = "the newest"
        if len(copies) > 1 and not _is_file(copies[0][0], target) and not looks_like_notebook(data):
            # the newest is empty or no notebook (an upload that failed, a file cut short): an older copy that is one
            # is the student's work, which the newest would have cost them (their page said "the file is empty")
            found = next((c for c in copies[1:] if looks_like_notebook(read_or_none(c[0], download))), None)
            if found is not None:
                why = f"the newest that is a notebook; {copies[0][1]}, newer, is {what_it_is(data)}"
                copies.remove(found)
                copies.insert(0, found)
                data = read(found[0], download)
        entry, shown = copies[0]
        if len(copies) > 1:
            if _is_file(entry, target):  # collecting submitted/ in place: the file already under its name stays
                why = (
                    "already under the notebook's own name, never overwritten; to grade another, rename it to that name"
                )
            report(
                student,
                notebook,
                "duplicate_file",
                f"{len(copies)} files for {notebook}: took {shown} ({why}); "
                f"ignored {', '.join(s for _, s in copies[1:])}",
            )
        late = entry.parts[0].partition("_")[2].startswith("LATE_") and student not in timestamps  # Canvas's marker
        if len(entry.parts) == 1 and late:  # (a timestamp.txt beside it, in a folder of the student's name, decides)
            report(student, notebook, "marked_late", f"{shown}: marked LATE by the LMS; no time of submission")
        if target.is_dir() and not target.is_symlink() and not folder.is_symlink() and not folder.parent.is_symlink():
            report(student, notebook, "unmatched_file", f"{shown}: not collected: {notebook}.ipynb there is a folder")
            continue
        folder = _own_folder(course_root, student, assignment)
        if target.is_symlink() or not target.is_file() or target.read_bytes() != data:
            _write(target, data)
        collected.setdefault(student, []).append(notebook)
    for student, notebook, words in exported:  # that notebook's problem when no notebook came for it, else a stray
        kind = "unmatched_file" if notebook in collected.get(student, []) else "not_a_notebook"
        problems.append(Problem.said(student, None if kind == "unmatched_file" else notebook, kind, words))
    for student, n in unmatched.items():  # 20,000 files of one student's were 20,000 problems: a report of 32 MB
        if n > UNMATCHED_NAMED:
            more = f"and {n - UNMATCHED_NAMED} more files that match no notebook, not named here"
            problems.append(Problem(student, None, "unmatched_file", more))
    for named, student in renamed.items():
        why = f"named {named} in this download: collected as {student}, the student of that number in submitted/"
        problems.append(Problem(student, None, "renamed_on_lms", why))
    for student in seen - set(collected):  # handed in nothing gradable: still in the class, with a problem
        _own_folder(course_root, student, assignment)
    for student, entry in timestamps.items():
        if student in collected:
            _write(_own_folder(course_root, student, assignment) / "timestamp.txt", read(entry, download))
    return collected, problems

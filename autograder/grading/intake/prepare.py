"""Each student's notebooks, checked and repaired, staged where the workers grade them.

submitted/ keeps what the students handed in; the copies nbgrader grades are rebuilt by
``repair`` into .grading/staged/<student>/<assignment>/ (with timestamp.txt, for late penalties).
"""

import functools
import os
import shutil
from pathlib import Path

import nbformat

from ...common.problems import Problem, tell_student
from ...common.words import say
from .collect import MAX_ENTRY_BYTES, UNKNOWN_STUDENT
from .exchange import MAX_SMALL_BYTES, read_owned
from .repair import repair
from .which_notebook import match_notebook

GRADING_DIR = ".grading"  # the grader's own working folder in the course root
STAGED = f"{GRADING_DIR}/staged"  # nbgrader's submitted_directory for the workers
LOOKED_AT = 500  # the entries of a student's folder looked at for a notebook handed in under another name
# said to the instructor only (a student's page leaves it out: ungraded_pages)
FOR_THE_INSTRUCTOR = ": `backprop-ninja grade --from submitted` matches such names as it does a download's"


def read_releases(root: Path, assignment: str, notebooks: list) -> dict:
    """notebook -> its release notebook, what every submission is checked against."""
    return {n: nbformat.read(root / "release" / assignment / f"{n}.ipynb", as_version=4) for n in notebooks}


def stage_student(root: Path, assignment: str, student: str, notebooks: list, releases: dict, collected=()) -> tuple:
    """Repair the student's notebooks into the staging folder; ([notebooks staged], [Problem]). ``collected``: the
    problems of collecting the class, whose duplicate_file the student's page tells of, as each repair."""
    source = root / "submitted" / student / assignment
    staged = root / STAGED / student / assignment
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(parents=True)
    ok, problems = [], []
    # a link for the student's folder or its assignment's (mal -> ada) is read through by no one: mal was graded on
    # ada's notebook
    linked = (root / "submitted" / student).is_symlink() or source.is_symlink()
    timestamp = None if linked else read_owned(str(source / "timestamp.txt"), None, MAX_SMALL_BYTES)
    for notebook in notebooks:
        # Read as the regular file it must be, never through a link (as root, a link in a folder put in submitted/
        # by hand could name any file of the machine), never a pipe, never more than a collect takes
        data = None if linked else read_owned(str(source / f"{notebook}.ipynb"), None, MAX_ENTRY_BYTES)
        if data is None and any(
            (p.student, p.kind, p.notebook) == (student, "not_a_notebook", notebook) for p in collected
        ):
            continue  # handed in as a .py or .html, say: the collection's not_a_notebook names the file
        if data is None:
            more, instructor_only = "", ""
            if linked or (source / f"{notebook}.ipynb").is_symlink():
                folder = f"{student}/{assignment}" + ("" if linked else f"/{notebook}.ipynb")
                more = say(" (submitted/{folder} is a link, not read)", folder=folder)
            elif others := named_otherwise(root / "submitted" / student, assignment, notebook, notebooks):
                more = say("; the student's folder holds {files}", files=", ".join(others))
                instructor_only = FOR_THE_INSTRUCTOR
            elif handed := [
                p.words or p.detail
                for p in collected
                if (p.student, p.kind, p.notebook) == (student, "unmatched_file", None)
            ]:  # a PDF, a .py, a .zip
                files = functools.reduce(lambda first, then: say("{first}; {then}", first=first, then=then), handed[:3])
                more = say("; what was handed in matches no notebook: {files}", files=files)
            words = say("no {file} was handed in{more}", file=f"{notebook}.ipynb", more=more)
            problems.append(Problem.said(student, notebook, "missing_notebook", words, instructor_only))
            continue
        try:
            course = {n: r for n, r in releases.items() if n != notebook}
            nb, found = repair(data, releases[notebook], notebook, student, course)
        except Exception as error:  # noqa: BLE001 (a file no check foresaw costs its student, never the class's run)
            nb, found = (
                None,
                [Problem(student, notebook, "grader_error", f"its file could not be read: {error!r:.200}")],
            )
        problems += found
        if nb is not None:
            if any(p.kind == "duplicate_file" and (p.student, p.notebook) == (student, notebook) for p in collected):
                tell_student(nb.metadata, "duplicate_file")
            if timestamp is not None and not readable_time(timestamp):
                tell_student(nb.metadata, "bad_timestamp")
            nbformat.write(nb, staged / f"{notebook}.ipynb")
            ok.append(notebook)
    if timestamp is not None and readable_time(timestamp):
        (staged / "timestamp.txt").write_bytes(timestamp)
    elif timestamp is not None:  # nbgrader fails the whole submission on it ('CourseDirectory' has no 'fail')
        shown = timestamp.decode("utf-8", "replace").strip()[:60]
        problems.append(
            Problem(
                student,
                None,
                "bad_timestamp",
                f"timestamp.txt holds {shown!r}, not a time; graded without it, so without a late penalty "
                "(nbgrader writes 2026-12-16 10:00:00.000000 UTC)",
            )
        )
    return ok, problems


def readable_time(data: bytes) -> bool:
    """Whether nbgrader reads ``data`` as a submission's time (``nbgrader.utils.parse_utc``, without nbgrader: the
    coordinator imports none); an empty file is no time, and nbgrader takes it as none."""
    import dateutil.parser
    import dateutil.tz

    try:
        text = data.decode("utf-8").strip()
        parts = text.split(" ")
        if not text:
            return True
        if len(parts) == 3:
            zone = int(parts[2]) if parts[2].lstrip("+-").isdigit() else dateutil.tz.gettz(parts[2])
            time = dateutil.parser.parse(" ".join(parts[:2] + ["TZ"]), tzinfos={"TZ": zone})
        else:
            time = dateutil.parser.parse(text)
        if time.tzinfo is not None:  # as nbgrader turns it into UTC
            time - time.utcoffset()
        return True
    except (ValueError, OverflowError, TypeError, UnicodeDecodeError):
        return False


def named_otherwise(folder: Path, assignment: str, notebook: str, notebooks: list) -> list:
    """The regular files in a student's folder and its folders (not deeper; no link followed, none read) whose names a
    download's would match to ``notebook``: a browser's "(1)" copy, a notebook beside the assignment's folder; three
    at most."""
    found, looked = [], 0
    for top, dirs, files in os.walk(folder):
        depth = len(Path(top).relative_to(folder).parts)
        dirs[:] = sorted(d for d in dirs if depth < 1 and not os.path.islink(os.path.join(top, d)))
        for name in sorted(files):
            looked += 1
            if looked > LOOKED_AT or len(found) == 3:
                return found
            path = Path(top) / name
            if path.relative_to(folder) == Path(assignment, f"{notebook}.ipynb") or path.is_symlink():
                continue
            if path.is_file() and match_notebook(name, notebooks) == notebook:
                found.append(str(path.relative_to(folder)))
    return found


def submitted_students(root: Path) -> list:
    """Every student with a folder in submitted/, sorted; a folder whose name is no text is none (unnamed_folders)."""
    folder = Path(root) / "submitted"
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and _is_text(p.name)) if folder.is_dir() else []


def unnamed_folders(root: Path) -> list:
    """A problem for each folder of submitted/ whose name is bytes of another encoding than UTF-8 (a Russian or Chinese
    class's zip unpacked by ``unzip``): taken for a student, it stopped the class's grading where it was written."""
    folder = Path(root) / "submitted"
    names = [p.name for p in folder.iterdir() if p.is_dir() and not _is_text(p.name)] if folder.is_dir() else []
    shown = lambda name: name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    why = "a folder whose name is not UTF-8 text (a zip unpacked in another encoding?): not graded; rename it"
    return [Problem(UNKNOWN_STUDENT, None, "unmatched_file", f"submitted/{shown(name)}: {why}") for name in names]


def _is_text(name: str) -> bool:
    """Whether a file name read from the disk is text (Python reads other bytes as lone surrogates)."""
    return not any("\udc80" <= c <= "\udcff" for c in name)

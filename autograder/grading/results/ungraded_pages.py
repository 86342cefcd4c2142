"""A short page for every notebook a student has no feedback page for: it could not be graded, why, and what to do.

nbgrader makes a feedback page only for a notebook it graded; a student whose notebook was not a notebook, was
missing, or whose grading failed would otherwise find nothing. ``write_pages`` runs after a class is graded and puts
such a page where the real one would be (feedback/<student>/<assignment>/<notebook>.html), in the student's language
when it is known, with timestamp.txt and submission_secret.txt beside it as ``nbgrader release_feedback`` needs them.
It never overwrites a real page, and removes its own once the notebook is graded. The reason is the student's most
serious problem for the notebook, ranked by the one table of kinds (``common.problems``).
"""

import html
import os
import re
from pathlib import Path

from ...common.edition_text import edition_of
from ...common.editions import EDITIONS, ENGLISH, edition
from ...common.problems import KINDS, rank
from ...common.words import render, say
from ..intake.exchange import KEPT, MAX_SMALL_BYTES, read_owned, secret_beside_feedback
from ..intake.prepare import FOR_THE_INSTRUCTOR
from ..intake.repair import MAX_BYTES, load

MARK = '<meta name="generator" content="backprop-ninja: not graded">'  # tells this page from nbgrader's
PAGE_LANGUAGE = re.compile(rb'<html\b[^>]*\blang="([^"]+)"')  # as the feedback exporter writes it
# what to do, given the file to hand in
ASK = lambda file: say("If this page is still here after your instructor grades the class again, ask them about it.")
HAND_IN_AGAIN = lambda file: say(
    "Open it in Jupyter or Colab, check that it shows your work, save it, and hand in {file} again.", file=file
)

# kind -> (why, what to do given the file to hand in), in the words a student reads; a kind not here gets DEFAULT
REASONS = {
    "worker_killed": (say("The grader stopped before it finished grading your notebooks."), ASK),
    "grader_error": (say("The grader could not run your notebook."), ASK),
    "grader_time_limit": (say("The grader stopped before it finished grading your notebooks."), ASK),
    "feedback_failed": (
        say("Your notebook was graded, but its feedback page could not be made. Your score stands."),
        lambda file: say("Your instructor has been told; ask them if you want to see your feedback."),
    ),
    "not_a_notebook": (
        say("The file you handed in for this notebook is empty or is not a Jupyter notebook."),
        HAND_IN_AGAIN,
    ),
    "too_large": (
        say("The file you handed in for this notebook is larger than the grader accepts."),
        lambda file: say("Clear its outputs (Edit → Clear All Outputs), save it, and hand in {file} again.", file=file),
    ),
    "wrong_notebook": (say("The file handed in under this notebook's name holds another notebook."), HAND_IN_AGAIN),
    "missing_notebook": (
        say("No file for this notebook was found in what you handed in."),
        lambda file: say(
            "Hand in your work as {file}. If you did hand it in, under another name, tell your instructor.", file=file
        ),
    ),
}
DEFAULT = (say("The grader could not grade this notebook."), ASK)
assert set(REASONS) <= set(KINDS), set(REASONS) - set(KINDS)
SHOWN = {"not_a_notebook", "too_large", "wrong_notebook", "missing_notebook"}  # details about the student's own file
STYLE = """body { font-family: "Helvetica Neue", Helvetica, Arial, sans-serif; color: #333; line-height: 1.45;
  max-width: 50em; margin: 2em auto; padding: 0 1em; }
.panel { border: 1px solid #ddd; border-radius: 4px; }
.panel-heading { background: #f5f5f5; border-bottom: 1px solid #ddd; padding: 10px 15px; }
.panel-heading h4 { margin: 0; }
.panel-body { padding: 0 15px; }
pre { background: #fff; white-space: pre-wrap; overflow-wrap: anywhere; border: 1px solid #ccc; padding: 8px; }"""


def is_ours(path: Path) -> bool:
    """Whether ``path`` is a page this module wrote (a regular file that carries ``MARK``)."""
    if path.is_symlink() or not path.is_file():
        return False
    with path.open("rb") as f:
        return MARK.encode() in f.read(4096)


def reason(problems: list) -> tuple:
    """(kind or None, why, what to do, detail or None) for a notebook with these problems (the student's for it and
    for no single notebook): the most serious one's; the detail only when it is about the student's own file (in words
    a student reads, when the problem has them)."""
    if not problems:
        return None, *DEFAULT, None
    worst = min(problems, key=lambda p: rank(p.kind))
    why, todo = REASONS.get(worst.kind, DEFAULT)
    detail = (worst.words or worst.detail.replace(FOR_THE_INSTRUCTOR, "")) if worst.kind in SHOWN else None
    return worst.kind, why, todo, detail


def page(notebook: str, problems: list, code: str, root: Path | None = None) -> str:
    """The page for ``notebook``, in the language of edition ``code``; every string in it escaped."""
    kind, why, todo, detail = reason(problems)
    file = f"{notebook}.ipynb"
    text = lambda words: html.escape(words.render(code))
    if kind == "feedback_failed":
        title, lead = say("{notebook}: no feedback page", notebook=file), ""
    else:
        title = say("{notebook}: not graded", notebook=file)
        lead = f"<p>{text(say('This notebook could not be graded, so it has no score and no feedback.'))}</p>\n"
    note = ""
    if detail:
        detail = render(detail, code)
        detail = detail.replace(str(root), "…") if root is not None else detail  # (never the grader's own paths)
        note = f"<p>{text(say('What the grader found:'))}</p>\n<pre>{html.escape(detail)}</pre>\n"
    return (
        f'<!DOCTYPE html>\n<html lang="{edition(code).html_lang}">\n<head>\n<meta charset="utf-8">\n{MARK}\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>{text(title)}</title>\n'
        f"<style>\n{STYLE}\n</style>\n</head>\n<body>\n<main>\n"
        f'<div class="panel">\n<div class="panel-heading"><h4>{text(title)}</h4></div>\n<div class="panel-body">\n'
        f'{lead}<p data-problem="{html.escape(kind or "")}">{text(why)}</p>\n{note}<p>{text(todo(file))}</p>\n'
        "</div>\n</div>\n</main>\n</body>\n</html>\n"
    )


def student_edition(root: Path, assignment: str, student: str, notebook: str) -> str:
    """The edition the student reads: that of their feedback pages, which autograde wrote in the language of the
    edition they handed in; else that of the notebook itself, when it is one; else English."""
    languages = {e.html_lang: code for code, e in EDITIONS.items()}
    for path in sorted((root / "feedback" / student / assignment).glob("*.html")):
        if not path.is_symlink() and path.is_file() and not is_ours(path):
            with path.open("rb") as f:
                found = PAGE_LANGUAGE.search(f.read(4096))
            if found and found[1].decode("ascii", "replace") in languages:
                return languages[found[1].decode("ascii")]
    data = read_owned(str(root / "submitted" / student / assignment / f"{notebook}.ipynb"), None, MAX_BYTES)
    try:
        nb = load(data)[0] if data else None
        return edition_of(nb) if nb is not None else ENGLISH
    except Exception:  # noqa: BLE001 (a student's file, of any shape: English is better than no page)
        return ENGLISH


def write_pages(
    root: Path, assignment: str, notebooks: list, graded: dict, problems: list, feedback: bool, regraded=None
) -> list:
    """For each student of ``graded`` (student -> the notebooks graded), a page for every notebook without a feedback
    page (none when ``feedback`` is off), anew for the students ``regraded`` in this run (None: all); this module's
    pages of notebooks now graded are removed. The pages written."""
    written = []
    for student, done in graded.items():
        theirs = [p for p in problems if p.student == student]
        page_failed = any(p.kind == "feedback_failed" for p in theirs)
        folder, wrote = root / "feedback" / student / assignment, False
        for notebook in notebooks:
            path = folder / f"{notebook}.html"
            ours = is_ours(path)
            if path.exists() and not ours or ours and regraded is not None and student not in regraded:
                continue  # nbgrader's page (or anything not ours) is never touched; ours stays until a regrade
            if notebook in done and not page_failed or not feedback:
                if notebook in done and ours:
                    path.unlink()
                continue
            about = [p for p in theirs if p.notebook in (notebook, None)]
            code = student_edition(root, assignment, student, notebook)
            folder.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.tmp")
            temporary.write_text(page(notebook, about, code, root), encoding="utf-8")
            os.replace(temporary, path)
            written.append(path)
            wrote = True
        if wrote:
            beside_pages(root, assignment, student)
    return written


def beside_pages(root: Path, assignment: str, student: str) -> None:
    """timestamp.txt (when the submission has one, and the folder none yet) and submission_secret.txt beside the
    student's pages: ``nbgrader release_feedback`` reads both for every page it releases."""
    folder = root / "feedback" / student / assignment
    if not (folder / KEPT[0]).exists():
        stamp = read_owned(str(root / "submitted" / student / assignment / KEPT[0]), None, MAX_SMALL_BYTES)
        if stamp is not None:
            (folder / KEPT[0]).write_bytes(stamp)
    secret_beside_feedback(root, assignment, student)

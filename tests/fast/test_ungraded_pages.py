"""A notebook that could not be graded gets a short page where its feedback would be: why, in the student's language,
and what to do; escaped, never over a real page, gone once the notebook is graded (no kernels)."""

import html

import nbformat
import pytest
from nbformat.v4 import new_markdown_cell, new_notebook
from support.course import REPO

from autograder.common.editions import TRANSLATED
from autograder.common.problems import KINDS, Problem
from autograder.grading.results.ungraded_pages import DEFAULT, REASONS, is_ours, page, write_pages

NB, OTHER, A = "ex1_atomic_backward", "ex2_cross_entropy_backward", "backprop_ninja"


def text(page_html: str) -> str:
    return html.unescape(page_html)


def test_each_kind_says_why_and_what_to_do_and_only_a_files_own_detail_is_shown():
    assert set(REASONS) <= set(KINDS)
    broken = page(
        NB, [Problem("ada", NB, "not_a_notebook", "not JSON (Expecting value): not a Jupyter notebook")], "en"
    )
    assert "ex1_atomic_backward.ipynb: not graded" in text(broken) and 'data-problem="not_a_notebook"' in broken
    assert "is empty or is not a Jupyter notebook" in broken and "Expecting value" in broken
    assert "hand in ex1_atomic_backward.ipynb again" in broken and is_ours_text(broken)
    # the grader's side: a plain sentence, and nothing of the grader's machine
    failed = page(NB, [Problem("ada", None, "grader_error", "nbgrader could not grade it: /srv/course/x.py")], "en")
    assert "could not run your notebook" in failed and "/srv/course" not in failed and "ask them" in failed
    # the most serious problem of the notebook is named (KINDS' order), a kind without words gets the default
    both = [Problem("ada", NB, "deleted_cell", "put back"), Problem("ada", None, "worker_killed", "stopped")]
    assert 'data-problem="worker_killed"' in page(NB, both, "en")
    assert DEFAULT[0].render() in page(NB, [Problem("ada", NB, "kernel_died", "x")], "en")
    assert DEFAULT[0].render() in page(NB, [], "en")
    graded_anyway = page(NB, [Problem("ada", None, "feedback_failed", "RuntimeError")], "en")
    assert "no feedback page" in graded_anyway and "could not be graded" not in graded_anyway


def is_ours_text(page_html: str) -> bool:
    return '<meta name="generator" content="backprop-ninja: not graded">' in page_html


def test_what_the_student_controls_is_escaped_and_the_courses_own_path_left_out(tmp_path):
    hostile = f'{tmp_path}/submitted/ada/<script>alert("x")</script>.ipynb'
    made = page(NB, [Problem("ada", NB, "missing_notebook", f"the folder holds {hostile}")], "en", root=tmp_path)
    assert "<script>" not in made and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in made
    assert str(tmp_path) not in made


def test_a_notebook_handed_in_under_another_name_is_named_without_the_instructors_command(tmp_path):
    from autograder.grading.intake.prepare import FOR_THE_INSTRUCTOR

    detail = f"no {NB}.ipynb was handed in; the student's folder holds {NB} (1).ipynb"
    made = page(NB, [Problem("ada", NB, "missing_notebook", detail + FOR_THE_INSTRUCTOR)], "en", root=tmp_path)
    assert html.escape(detail) in made and "backprop-ninja grade" not in made


@pytest.mark.parametrize("code", TRANSLATED)
def test_the_page_speaks_the_students_edition(code):
    for kind in [*REASONS, None]:
        problems = [Problem("ada", NB, kind, "detail")] if kind else []
        english, translated = text(page(NB, problems, "en")), text(page(NB, problems, code))
        why = (REASONS[kind] if kind else DEFAULT)[0]
        assert why.render() in english and why.render(code) in translated and why.render(code) != why.render()
    assert '<html lang="en">' in english and '<html lang="ru">' in page(NB, [], "ru")


def submitted(root, student, notebooks: dict, stamp=True):
    folder = root / "submitted" / student / A
    folder.mkdir(parents=True)
    for name, data in notebooks.items():
        (folder / f"{name}.ipynb").write_bytes(data)
    if stamp:
        (folder / "timestamp.txt").write_text("2026-12-16 10:00:00.000000 UTC")
        (folder / "submission_secret.txt").write_text("s3cret")


def test_pages_go_where_feedback_is_never_over_a_real_one_and_leave_once_graded(tmp_path):
    root = tmp_path
    submitted(root, "ada", {NB: b"<html>not a notebook</html>"})  # and OTHER graded, with its real page
    real = root / "feedback" / "ada" / A / f"{OTHER}.html"
    real.parent.mkdir(parents=True)
    real.write_text('<!DOCTYPE html>\n<html lang="ru">\n<head></head><body>the real page</body></html>')
    ru = new_notebook(cells=[new_markdown_cell("Здесь вы пишете градиенты каждого тензора вручную. " * 10)])
    submitted(root, "ben", {NB: nbformat.writes(ru).encode()}, stamp=False)  # wrong_notebook, the Russian edition
    problems = [
        Problem("ada", NB, "not_a_notebook", "not JSON"),
        Problem("ben", NB, "wrong_notebook", "another notebook"),
        Problem("ben", OTHER, "missing_notebook", "no file"),
    ]
    graded = {"ada": [OTHER], "ben": []}
    written = write_pages(root, A, [NB, OTHER], graded, problems, True)
    ada, ben = root / "feedback" / "ada" / A, root / "feedback" / "ben" / A
    assert sorted(written) == sorted([ada / f"{NB}.html", ben / f"{NB}.html", ben / f"{OTHER}.html"])
    assert real.read_text().endswith("the real page</body></html>")  # untouched
    assert '<html lang="ru">' in (ada / f"{NB}.html").read_text()  # the language of ada's real page
    assert '<html lang="ru">' in (ben / f"{NB}.html").read_text()  # read from the notebook handed in
    # what nbgrader release_feedback reads beside every page: the submission's timestamp and secret
    assert (ada / "timestamp.txt").read_text().startswith("2026-12-16") and (ada / "submission_secret.txt").exists()
    assert not (ben / "timestamp.txt").exists()  # none handed in, none made up
    assert not list(ada.glob("*.tmp")) and not list(ada.glob(".*"))

    # a later run: ada's notebook is graded (nbgrader wrote its page), ben's OTHER is graded with no page
    (ada / f"{NB}.html").write_text("<html>nbgrader's page</html>")
    again = write_pages(root, A, [NB, OTHER], {"ada": [NB, OTHER], "ben": [OTHER]}, problems[1:2], False)
    assert again == [] and (ada / f"{NB}.html").read_text() == "<html>nbgrader's page</html>"
    assert not (ben / f"{OTHER}.html").exists() and is_ours(ben / f"{NB}.html")  # no feedback: none made, none gone

    # a student not regraded keeps their page as it was; one regraded gets it anew
    (ben / f"{NB}.html").write_text((ben / f"{NB}.html").read_text().replace("another notebook", "OLD"))
    write_pages(root, A, [NB, OTHER], {"ben": [OTHER]}, problems[1:2], True, regraded=set())
    assert "OLD" in (ben / f"{NB}.html").read_text()
    write_pages(root, A, [NB, OTHER], {"ben": [OTHER]}, problems[1:2], True, regraded={"ben"})
    assert "OLD" not in (ben / f"{NB}.html").read_text()


@pytest.mark.parametrize("code", TRANSLATED)
def test_what_the_grader_found_in_the_students_file_is_in_their_language_and_in_english_for_the_instructor(
    tmp_path, code
):
    """The detail under "What the grader found" on the page of a notebook not graded was the instructor's English
    sentence in a Russian or Chinese page. The intake makes it as words: the page renders them in the student's
    language, problems.json keeps the English (and the instructor's own hint about --from submitted)."""
    from autograder.grading.intake.prepare import FOR_THE_INSTRUCTOR, stage_student
    from autograder.grading.intake.repair import repair

    release = nbformat.read(REPO / "release" / A / f"{NB}.ipynb", as_version=4)
    other = (REPO / "release" / A / f"{OTHER}.ipynb").read_bytes()
    found = [
        repair(b"%PDF-1.7 my notes", release, NB, "ada")[1],
        repair(b'{"cells": 3}', release, NB, "ada")[1],
        repair(other, release, NB, "ada", {OTHER: nbformat.reads(other, as_version=4)})[1],
    ]
    folder = tmp_path / "submitted" / "ada" / A
    folder.mkdir(parents=True)
    (folder / f"{NB} (1).ipynb").write_bytes(b"{}")  # a browser's copy: the instructor is told to use --from
    found.append(stage_student(tmp_path, A, "ada", [NB], {NB: release})[1])
    kinds = [[p.kind for p in problems] for problems in found]
    assert kinds == [["not_a_notebook"], ["not_a_notebook"], ["wrong_notebook"], ["missing_notebook"]]
    problems = [p for problems in found for p in problems]
    english = [p.detail for p in problems]
    assert "a PDF document, not a Jupyter notebook" in english[0] and f"{OTHER}.ipynb saved under" in english[2]
    assert english[3].endswith(FOR_THE_INSTRUCTOR) and f"{NB} (1).ipynb" in english[3]
    for problem in problems:
        shown = text(page(NB, [problem], code, root=tmp_path))
        students = problem.words.render(code)
        assert students in shown and students != problem.words.render()  # their language, not the English
        assert problem.detail.replace(FOR_THE_INSTRUCTOR, "") not in shown and "backprop-ninja grade" not in shown
        assert problem.to_json()["detail"] == problem.detail  # problems.json: the instructor's English
    assert f"{OTHER}.ipynb" in text(page(NB, problems[2:3], code)) and f"{NB} (1).ipynb" in text(
        page(NB, problems[3:], code, root=tmp_path)
    )

"""The students' fetch_feedback (FetchEveryPage) on an exchange made here, as the user running the tests: besides the
pages of the notebooks in their submission, it finds the grader's page of a released notebook they did not hand in
under its name, and no one else's page. tests/slow/test_jupyterhub.py runs it through a real hub."""

import os
import pwd

import nbformat
import pytest
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange.default.fetch_feedback import ExchangeFetchFeedback
from nbgrader.utils import notebook_hash
from traitlets.config import Config

from autograder.grading.results.fetch_every_page import FetchEveryPage

COURSE, ASSIGNMENT, STAMP = "course101", "ps1", "2026-12-01 10:00:00.000000 UTC"


@pytest.mark.parametrize("fetch, fetched", [(ExchangeFetchFeedback, ["ex1"]), (FetchEveryPage, ["ex1", "ex2"])])
def test_the_page_of_a_notebook_not_handed_in_is_fetched_too(tmp_path, fetch, fetched):
    me = pwd.getpwuid(os.getuid()).pw_name
    exchange, cache, home = tmp_path / "exchange", tmp_path / "cache", tmp_path / "home"
    release = exchange / COURSE / "outbound" / ASSIGNMENT
    release.mkdir(parents=True)
    for name in ("ex1", "ex2", "ex3"):
        nbformat.write(nbformat.v4.new_notebook(), release / f"{name}.ipynb")
    submission = cache / COURSE / f"{me}+{ASSIGNMENT}+{STAMP}"  # the student's own copy: ex2 handed in as a copy
    submission.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), submission / "ex1.ipynb")
    nbformat.write(nbformat.v4.new_notebook(), submission / "Copy of ex2.ipynb")
    (submission / "submission_secret.txt").write_text("my secret")
    pages = exchange / COURSE / "feedback"
    pages.mkdir()
    for secret, name in (("my secret", "ex1"), ("my secret", "ex2"), ("another's secret", "ex3")):
        (pages / f"{notebook_hash(secret=secret, notebook_id=name)}.html").write_text(f"{secret}: {name}")

    config = Config()
    config.Exchange.root, config.Exchange.cache, config.Exchange.assignment_dir = map(str, (exchange, cache, home))
    config.CourseDirectory.course_id, config.CourseDirectory.assignment_id = COURSE, ASSIGNMENT
    coursedir = CourseDirectory(config=config)
    fetch(coursedir=coursedir, authenticator=Authenticator(config=config), config=config).start()

    got = home / ASSIGNMENT / "feedback" / STAMP
    assert sorted(p.name for p in got.iterdir()) == [f"{name}.html" for name in fetched]
    assert all((got / f"{name}.html").read_text() == f"my secret: {name}" for name in fetched)

"""A class of Exercise 1 that mixes the three editions, graded by ``backprop-ninja grade``: the slow tests of the
editions (graded alike, answered in kind) and of accessibility (its pages pass axe-core) read the same run.

Each edition has a right and a wrong student (the same wrong answers in every edition), handed in as that edition's
release notebook with the course's solutions; a Russian student's notebook comes back as Colab saves it (its
metadata gone, renamed "Copy of ..."); a blank English notebook; a late student who hands in a fix, graded again so
that the class report has a regrade.
"""

import contextlib

import nbformat
from support.course import ASSIGNMENT, REPO, run_grade, temporary_course

from autograder.authoring.submissions import solved
from autograder.common.editions import EDITIONS

NB = "ex1_atomic_backward"
# (dW2's comment, as long as students write them: a page that does not wrap it scrolls sideways)
LONG_COMMENT = (
    "  # logits = h @ W2 + b2, so dW2 comes from h and dlogits; I swapped the two to make the shapes agree, and the "
    "check said the shape is right now, so the values should follow from the same rule as dh"
)
WRONG = {"answer_dprobs": "dprobs = -(1.0 / probs) * dlogprobs", "answer_dW2": "dW2 = dlogits.T @ h" + LONG_COMMENT}
KINDS = {"right": {}, "wrong": WRONG}
CLASS = {f"{kind}_{code}": (code, changes) for code in EDITIONS for kind, changes in KINDS.items()}
COLAB = "colab_ru"  # a wrong Russian notebook, as Colab's File > Download gives it


def release(code: str, course):
    """The release notebook of edition ``code``: nbgrader's, or the edition's generated one."""
    if code == "en":
        return course.notebook("release", NB)
    return nbformat.read(REPO / "editions" / code / ASSIGNMENT / f"{NB}.ipynb", as_version=4)


def as_colab(nb):
    """What Colab hands back: nbformat 4.0, its own metadata, the notebook's own metadata gone."""
    nb = nbformat.from_dict(nbformat.v4.upgrade(nb))
    nb.metadata = {"colab": {"provenance": [], "name": f"Copy of {NB}.ipynb"}, "kernelspec": {"name": "python3"}}
    for k, cell in enumerate(nb.cells):
        cell.metadata["id"] = f"c0L4b{k:04d}x"
    return nb


def hand_in(course, student: str, code: str, changes: dict | None, stamp: str = None, colab: bool = False):
    source = course.notebook("source", NB)
    nb = release(code, course) if changes is None else solved(release(code, course), source, changes)
    course.submit(student, NB, as_colab(nb) if colab else nb)
    if stamp:
        (course.root / "submitted" / student / ASSIGNMENT / "timestamp.txt").write_text(stamp)


def grade(course):
    return run_grade(course.root, "--workers", "2", "--notebook-timeout", "300", "--quiet")


@contextlib.contextmanager
def editions_class():
    with temporary_course("editions-", only=NB) as course:
        course.nbgrader("db", "assignment", "add", ASSIGNMENT, "--duedate=2026-01-10 12:00:00 UTC")
        for student, (code, changes) in CLASS.items():
            hand_in(course, student, code, changes)
        hand_in(course, COLAB, "ru", WRONG, colab=True)
        hand_in(course, "blank_en", "en", None)
        hand_in(course, "late_en", "en", WRONG, stamp="2026-01-10 15:00:00 UTC")
        grade(course)
        hand_in(course, "late_en", "en", {}, stamp="2026-01-10 16:00:00 UTC")  # the fix, a regrade in the report
        grade(course)
        yield course

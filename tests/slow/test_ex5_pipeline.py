"""Exercise 5 through the real pipeline: generate_assignment, ONE nbgrader autograde run and its feedback for a few
representative students of tests/support/cases_ex5.py (every case is graded in process by the fast tier), then a
small class through ``backprop-ninja grade`` (sandboxed), with its grades.csv, class report and feedback pages.
"""

import csv
import html
import re
import shutil

import nbformat
import pytest
from support.cases_ex5 import ALTERNATIVES, CHEATS, MISTAKES, NB5, POINTS, REBOUND, submissions
from support.course import ASSIGNMENT, REPO, run_grade, temporary_course

from autograder.authoring.submissions import solved
from autograder.common.diagnoses import label
from autograder.engine.operators import OPERATOR_STEPS
from autograder.engine.operators.elementwise import GELU

MISTAKE_REASONS = list(GELU.mistakes)

# one student with a typical mistake in each of four parts (the fast tier grades each mistake alone)
TYPICAL = ["gelu_without_x_phi", "softmax_other_axis", "skip_gradient_lost", "relu_kink"]
STUDENTS = ["solution", "blank", "m_typical", "alt_a", "c_copy_grad"]
BACKWARD = [f"test_d{s.name}" for s in OPERATOR_STEPS]  # the notebook's order is its table's


def typical(release, source):
    changes = {}
    for mistake in TYPICAL:
        cells, _ = MISTAKES[mistake]
        assert not set(cells) & set(changes), "two mistakes in one cell"
        changes.update(cells)
    return solved(release, source, changes)


@pytest.fixture(scope="module")
def graded():
    with temporary_course("ex5-", only=NB5) as course:
        release, source = course.notebook("release", NB5), course.notebook("source", NB5)
        class_ = {**submissions(release, source), "m_typical": typical(release, source)}
        for student in STUDENTS:
            course.submit(student, NB5, class_[student])
        course.nbgrader("autograde", ASSIGNMENT)
        course.nbgrader("generate_feedback", ASSIGNMENT)
        yield course


def lost(course, student) -> list:
    scores, maximum = course.scores(student, NB5), course.max_scores(NB5)
    return sorted(g for g in POINTS if scores[g] != maximum[g])


def test_points_table(graded):
    assert graded.max_scores(NB5) == POINTS and sum(POINTS.values()) == 26


def test_solution_gets_full_marks(graded):
    assert lost(graded, "solution") == []
    messages = graded.messages("solution", NB5)
    assert all(messages[g].startswith("✔") for g in POINTS), messages


def test_blank_release_gets_zero_without_crashing(graded):
    assert sum(graded.scores("blank", NB5).values()) == 0
    for cell, message in graded.messages("blank", NB5).items():
        assert "not answered yet" in message, (cell, message)


def test_each_typical_mistake_costs_its_own_step_with_its_words(graded):
    expected = {cell: words for m in TYPICAL for cell, (_, words) in MISTAKES[m][1].items()}
    assert lost(graded, "m_typical") == sorted(expected)
    messages = graded.messages("m_typical", NB5)
    for cell, words in expected.items():
        assert words in messages[cell], messages[cell]
    assert "correct for your dscores" in messages["test_dq"]  # error carried forward, through nbgrader too


def test_an_alternative_gets_full_marks(graded):
    assert lost(graded, "alt_a") == [], graded.messages("alt_a", NB5)
    assert set(ALTERNATIVES["alt_a"]) == {f"answer_d{s.name}" for s in OPERATOR_STEPS}


def test_answers_from_autograd_earn_nothing(graded):
    _, expected = CHEATS["c_copy_grad"]
    assert lost(graded, "c_copy_grad") == sorted(expected)


def test_hidden_tests_and_solutions_are_not_in_the_release(graded):
    text = (graded.root / "release" / ASSIGNMENT / f"{NB5}.ipynb").read_text()
    for secret in ["HIDDEN TESTS", "report(", "start_grading", "grading_seed", "BEGIN SOLUTION", "(datt * att).sum(2"]:
        assert secret not in text, secret


def test_feedback_opens_with_every_step_in_backward_order_and_the_first_to_fix(graded):
    for student in STUDENTS:
        page = graded.feedback(student, NB5)
        assert page.table() == graded.summary_rows(student, NB5, BACKWARD), student
        wrong = [anchor for anchor, mark, _, _ in page.table() if mark == "✘"]
        assert page.first_to_fix() == wrong[:1], student
        for secret in ["HIDDEN TESTS", "report(", "start_grading", "x-backprop-ninja", "data_dtype"]:
            assert secret not in page.text, (student, secret)
    assert graded.feedback("m_typical", NB5).first_to_fix() == ["test_dhln"]


# ---------------------------------------------------------------------------------- backprop-ninja grade

# student -> (edition, what it hands in: the solution, the typical mistakes, the blank release, or the solution with a
# temporary named x in dhln's cell, which breaks the later dx in the notebook)
CLASS = {
    "adaperfect": ("en", "solution"),
    "benmistakes": ("en", "typical"),
    "cleoblank": ("en", "blank"),
    "ivanmistakes": ("ru", "typical"),
    "lenarebound": ("ru", "rebound"),
    "meiperfect": ("zh", "solution"),
}
SCRIPT = {"ru": re.compile(r"[\u0400-\u04ff]"), "zh": re.compile(r"[\u4e00-\u9fff]")}


@pytest.fixture(scope="module")
def class_graded():
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    with temporary_course("ex5-class-", only=NB5) as course:
        source = course.notebook("source", NB5)
        for student, (code, kind) in CLASS.items():
            release = course.notebook("release", NB5) if code == "en" else edition_release(code)
            nb = {
                "solution": lambda: solved(release, source),
                "typical": lambda: typical(release, source),
                "blank": lambda: release,
                "rebound": lambda: solved(release, source, REBOUND["rebound_x_in_dhln"][0]),
            }[kind]()
            course.submit(student, NB5, nb)
        run_grade(course.root, "--workers", "2", "--notebook-timeout", "300", "--quiet")
        yield course


def edition_release(code: str):
    return nbformat.read(REPO / "editions" / code / ASSIGNMENT / f"{NB5}.ipynb", as_version=4)


def test_the_class_pipeline_grades_exercise_5(class_graded):
    with open(class_graded.root / "grades.csv", newline="", encoding="utf-8-sig") as f:
        grades = {row["student"]: row for row in csv.DictReader(f)}
    mistakes = sum(POINTS[cell] for m in TYPICAL for cell in MISTAKES[m][1])
    assert grades["adaperfect"][NB5] == "26" and grades["cleoblank"][NB5] == "0"
    assert float(grades["benmistakes"][NB5]) == 26 - mistakes


def test_every_edition_is_graded_alike_and_answered_in_kind(class_graded):
    """The Russian and the Chinese notebooks earn what the English ones do, step by step, and their feedback names
    Exercise 5's mistakes in the student's language."""
    assert class_graded.scores("ivanmistakes", NB5) == class_graded.scores("benmistakes", NB5)
    assert class_graded.scores("meiperfect", NB5) == class_graded.scores("adaperfect", NB5)
    for student, code in (("ivanmistakes", "ru"), ("meiperfect", "zh")):
        for gid, text in class_graded.messages(student, NB5).items():
            lines = [line for line in text.splitlines() if line.strip()]
            assert lines and all(SCRIPT[code].search(line) for line in lines), (student, gid, text)
    gelu = next(reason for reason in MISTAKE_REASONS if reason.kind == "product_rule")
    assert gelu.render("ru") in class_graded.messages("ivanmistakes", NB5)["test_dhln"]


def test_a_temporary_named_as_a_forward_tensor_costs_nothing_in_the_sandbox(class_graded):
    """x = hln in dhln's cell: dx's right code raised in the sandboxed kernel, as in the student's notebook; its
    probe's second run on the forward pass's x keeps its points, and the Russian feedback names the line."""
    assert class_graded.scores("lenarebound", NB5) == class_graded.scores("adaperfect", NB5)
    words = class_graded.messages("lenarebound", NB5)["test_dx"]
    assert "`x = hln`" in words and SCRIPT["ru"].search(words), words


def test_the_class_report_names_exercise_5s_misconceptions(class_graded):
    text = html.unescape(re.sub(r"<[^>]+>", " ", (class_graded.root / "class_report.html").read_text()))
    text = re.sub(r"\s+", " ", text).replace(" ,", ",")  # the names are links: "name</a>, name"
    for mistake in TYPICAL:
        ((cell, (kind, _)),) = MISTAKES[mistake][1].items()
        # one kind across the editions: the English and the Russian student with the same mistake
        assert f"{cell} 2 students: {label(kind)} benmistakes, ivanmistakes" in text, (cell, kind)


def test_the_class_feedback_has_exercise_5s_step_table(class_graded):
    page = class_graded.feedback("benmistakes", NB5)
    assert [r.anchor for r in page.rows] == BACKWARD
    assert page.first_to_fix() == ["test_dhln"]
    assert page.rows[BACKWARD.index("test_demb")].reasons[0].startswith("demb is missing the skip connection")

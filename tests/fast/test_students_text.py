"""What students read says what they need, in their terms: no machine's timings or rounding statistics (those are
in docs/performance.md), examples that exist in their notebook, counts that are right, and the questions the
notebooks raise answered."""

import re

import nbformat
import pytest
from support.course import REPO

from autograder.authoring import SOURCE_DIR
from autograder.engine.backward_rules import STEPS

NOTEBOOKS = sorted(SOURCE_DIR.glob("*.ipynb"))
COURSE = sorted((REPO / "course").glob("*.md"))
GUIDE = (REPO / "course" / "README.md").read_text()


def markdown(path):
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")


# a machine, a load, a measured duration, a rounding statistic
MAINTAINERS = re.compile(
    r"2-core|test machine|machine was busy|lightly loaded|(?<![\w=.])\d+(\.\d+)? (ms|s)\b|"
    r"measured on ten batches|\d+ times below the tolerance|4\.7e-10|how-long-things-take"
)


@pytest.mark.parametrize("path", NOTEBOOKS + COURSE, ids=lambda p: p.name)
def test_no_maintainers_words_in_students_text(path):
    text = markdown(path) if path.suffix == ".ipynb" else path.read_text()
    found = [m.group(0) for m in MAINTAINERS.finditer(text)]
    assert not found, f"{path.name}: {found} (timings and statistics belong in docs/performance.md)"


def test_the_timings_went_to_docs():
    text = (REPO / "docs" / "performance.md").read_text()
    assert "0.46 ms a step" in text and "4.7e-10" in text and "1.09" in text


def test_exercise_3_counts_the_batchnorm_steps_of_exercise_1_and_shows_its_own_check():
    names = [s.name for s in STEPS]
    steps = len(names[names.index("bngain") : names.index("hprebn") + 1])
    words = {9: "nine", 11: "eleven"}
    text = markdown(SOURCE_DIR / "ex3_batchnorm_backward.ipynb")
    assert f"in {words[steps]} small steps, from `dbngain` to `dhprebn`" in text
    examples = set(re.findall(r'check_answer\("(\w+)"\)', text))
    assert examples and examples <= {"hprebn", "bngain", "bnbias"}, examples


def test_not_implemented_error_and_the_checklist_are_explained():
    ex1 = markdown(SOURCE_DIR / "ex1_atomic_backward.ipynb")
    for text in (ex1, GUIDE):
        assert "raise NotImplementedError()" in text and "Run All" in text and "on its own" in text


def test_the_questions_the_notebooks_raise_are_answered():
    section = GUIDE.split("## Questions the notebooks raise")[1].split("\n## ")[0]
    assert "Why is `db1` about zero?" in section and "BatchNorm" in section
    assert "identical to autograd's, or only close?" in section and "@" not in section
    assert "`F.cross_entropy`" in section and "log_softmax" in section


def test_exercise_1_asks_for_index_add_for_dc():
    """dC in any way that adds up every occurrence, then dC_index_add, graded, with index_add_ (and said so)."""
    ex1 = nbformat.read(SOURCE_DIR / "ex1_atomic_backward.ipynb", as_version=4)
    text = markdown(SOURCE_DIR / "ex1_atomic_backward.ipynb")
    assert "Write `dC` in any way that adds up every occurrence" in text
    assert "Write `dC_index_add`, the same gradient as `dC`, with `index_add_`" in text
    assert "your `dC` above keeps its points however you wrote it" in text
    graded = [c.metadata["nbgrader"] for c in ex1.cells if c.metadata.get("nbgrader", {}).get("grade")]
    cells, points = len(graded), sum(g["points"] for g in graded)
    # the feedback counts graded cells: this one more than gradients. The total, 34, is pinned on purpose, here and in
    # the README's demo output and the slow tests: docs/maintaining.md, 'Changing a step's points or the tolerance'
    assert (cells, points) == (len(STEPS) + 1, 34), (
        f"Exercise 1 now has {cells} graded cells and {points} points: if you meant it, change 34 here and wherever "
        "docs/maintaining.md says it is pinned ('Changing a step's points or the tolerance')"
    )
    assert (
        f"{cells} graded cells, one per gradient and one more for `dC` written with `index_add_`: {points} points"
        in text
    )
    assert f"{len(STEPS)} gradients, from `dlogprobs` back to `dC`" in text


# dC_index_add's own line: a call of index_add(_) on dimension 0 at the indices of Xb
INDEX_ADD_ANSWER = re.compile(r"index_add_?\(\s*0\s*,\s*Xb")
OPENED = sorted((REPO / "release").rglob("*.ipynb")) + sorted((REPO / "editions").rglob("*.ipynb"))
READ = COURSE + sorted((REPO / "editions").rglob("course/*.md"))


@pytest.mark.parametrize("path", OPENED + READ, ids=lambda p: str(p.relative_to(REPO)))
def test_no_page_a_student_opens_shows_the_line_that_dC_index_add_asks_for(path):
    """Exercise 1 grades dC_index_add (further exercise 1 asks for it): no notebook or page a student opens writes
    that line out for them, in its markdown or its code (Exercise 4 used to, in its note about dC)."""
    if path.suffix == ".ipynb":
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
    else:
        text = path.read_text()
    assert not INDEX_ADD_ANSWER.search(text), f"{path.relative_to(REPO)}: {INDEX_ADD_ANSWER.search(text).group(0)}"


FURTHER = (REPO / "course" / "further_exercises.md").read_text()


def exercise(number: int) -> str:
    return FURTHER.split(f"\n## {number}. ")[1].split("\n## ")[0]


def test_exercise_3_grades_the_biased_variance_and_the_further_exercise_says_so():
    ex3 = nbformat.read(SOURCE_DIR / "ex3_batchnorm_backward.ipynb", as_version=4)
    text = markdown(SOURCE_DIR / "ex3_batchnorm_backward.ipynb")
    points = sum(
        c.metadata["nbgrader"].get("points", 0) for c in ex3.cells if c.metadata.get("nbgrader", {}).get("grade")
    )
    assert f"**How it is graded**: {points} points" in text and points == 10
    assert "## Part 4 · `dhprebn` when the variance divides by `n`" in text and "not graded" not in text
    assert (
        "graded: Part 4 of" in FURTHER and "This one is graded" in exercise(4) and "optional section" not in exercise(4)
    )
    assert "Exercise 1 asks for it\nas `dC_index_add`" in exercise(1)


def test_the_central_difference_check_and_its_further_exercise_say_the_same():
    """The optional check accepts a relative error below 1e-5 (or a difference below 1e-8 where the gradient is tiny)
    against autograd in float64; further exercise 3 and the notebook's text say just that."""
    ex1 = nbformat.read(SOURCE_DIR / "ex1_atomic_backward.ipynb", as_version=4)
    helpers = next(c.source for c in ex1.cells if c.id == "optional-helpers")
    words = next(c.source for c in ex1.cells if c.id == "optional-md-gradcheck")
    assert '"ok" if error < 1e-5 or abs(numeric - exact) < 1e-8 else "wrong"' in helpers
    assert "relative error below 1e-5, or a difference below 1e-8 where the gradient is tiny" in helpers
    assert "with autograd in float64: a right central difference agrees to better than 1e-5" in words
    fx3 = " ".join(exercise(3).split())
    assert "Compare with autograd's gradient in `float64`" in fx3 and "agrees to better than 1e-5" in fx3
    assert "also accepts a difference below 1e-8" in fx3 and "1e-7 or better" not in fx3


def _page_with_repairs(code: str, repairs: dict):
    """The feedback's summary of a notebook of edition ``code`` that the intake repaired as ``repairs`` says."""
    from nbconvert.filters.strings import clean_html
    from nbformat.v4 import new_code_cell, new_notebook
    from support.course import FeedbackPage

    from autograder.preprocessors import SummarizeSteps

    cells = []
    for gid, meta in (("answer_dprobs", {"solution": True}), ("test_dprobs", {"grade": True, "locked": True})):
        cells.append(new_code_cell("pass"))
        cells[-1].metadata.nbgrader = {"grade_id": gid, "points": 1, "score": 1, **meta}
    nb = new_notebook(cells=cells, metadata={"backprop_ninja": {"edition": code, "repairs": repairs}})
    nb, _ = SummarizeSteps().preprocess(nb, {"nbgrader": {"late_penalty": 0}})
    return FeedbackPage(clean_html(nb.cells[0].source))


REPAIRED = {
    "moved_cell": ["answer_dprobs"],
    "deleted_cell": ["test_dprobs", "<script>alert(1)</script>", "another_students_cell"],
    "bad_timestamp": [],
    "no_such_kind": ["answer_dprobs"],
}


@pytest.mark.parametrize(
    "code, said",
    [
        (
            "en",
            [
                "The cell test_dprobs was missing from your notebook; the grader put it back, as the course wrote it, "
                "before grading.",
                "Your answer cell answer_dprobs was out of place (below the graded cell that checks it, or above the "
                "step before it); the grader moved it back just above its graded cell before grading.",
                "The time of your submission (timestamp.txt) could not be read, so your notebook was graded without "
                "it. Your instructor has been told.",
            ],
        ),
        (
            "ru",
            [
                "В вашем ноутбуке не было ячейки test_dprobs; перед проверкой автопроверка вернула её на место в том "
                "виде, в каком она дана в курсе.",
                "Ваша ячейка ответа answer_dprobs стояла не на своём месте (ниже оцениваемой ячейки, которая её "
                "проверяет, или выше предыдущего шага); перед проверкой автопроверка переставила её прямо над её "
                "оцениваемой ячейкой.",
                "Не удалось прочитать время сдачи вашей работы (timestamp.txt), поэтому ноутбук проверен без него. "
                "Преподаватель об этом знает.",
            ],
        ),
        (
            "zh",
            [
                "你的笔记本里缺少单元格 test_dprobs；评分前，评分器已按课程的原样补回。",
                "你的答案单元格 answer_dprobs 位置不对（在检查它的评分单元格下面，或在前一步的上面）；"
                "评分前，评分器已把它移回到对应评分单元格的正上方。",
                "无法读取你的提交时间（timestamp.txt），所以评分时没有用它。你的老师已经知道这件事。",
            ],
        ),
    ],
)
def test_the_feedback_page_says_what_was_repaired_before_grading_in_the_students_language(code, said):
    """A student whose notebook the intake repaired read "2 / 2" and no word of it (the instructor's problems.json
    had it all). The page's first notes say each repair, in the student's edition, naming only the notebook's own
    cells (what came with a plain ``nbgrader autograde`` is the student's file)."""
    page = _page_with_repairs(code, REPAIRED)
    assert page.notes[: len(said)] == said
    assert "script" not in page.text and "another_students_cell" not in page.text
    assert _page_with_repairs(code, {}).notes == page.notes[len(said) :]


def test_every_repair_a_student_is_told_of_is_said_in_words_from_the_catalog(monkeypatch):
    from support.words import pseudo_translated, unmarked

    from autograder.common.problems import TOLD

    pseudo_translated(monkeypatch)
    repairs = {kind: ["answer_dprobs", "test_dprobs"] for kind in TOLD}
    page = _page_with_repairs("ru", repairs)
    assert len(page.notes) == len(TOLD) + 2  # then the seed's note and the ladder's
    for note in page.notes[: len(TOLD)]:
        assert note.startswith("⟦") and unmarked(note, {"answer_dprobs", "test_dprobs"}) == [], note

"""Exercises 2 and 3 through the real pipeline: generate_assignment, then ONE autograde run for a whole class.

Every student of the class hands in both notebooks. A student carries one or more independent mistakes
(each in its own graded cell), so that each mistake is checked on its own cells while the class stays
small; the tests then read the gradebook and the grader's messages cell by cell.
"""

import pytest
from conftest import ASSIGNMENT

from autograder.authoring.submissions import grade_id, solved
from autograder.engine.reference import SETUP_PREFIX, run_setup

NB2, NB3 = "ex2_cross_entropy_backward", "ex3_batchnorm_backward"
POINTS = {
    NB2: {"test_loss_fast": 1, "test_dlogits": 4, "test_dlogits_rows": 1},
    NB3: {"test_hpreact_fast": 2, "test_dbngain": 1, "test_dbnbias": 1, "test_dhprebn": 4},
}

# mistake -> (notebook, answer cells changed, {graded cell that must lose its points: words its message must contain})
ROWS = "not to zero"
MISTAKES = {
    # Exercise 2: the fast loss
    "loss_sum": (
        NB2,
        {"answer_loss_fast": "loss_fast = F.cross_entropy(logits, Yb, reduction='sum')"},
        {"test_loss_fast": "32 times too large"},
    ),
    "loss_from_probs": (
        NB2,
        {"answer_loss_fast": "loss_fast = F.cross_entropy(probs, Yb)"},
        {"test_loss_fast": "from probabilities"},
    ),
    "loss_nll_of_logits": (
        NB2,
        {"answer_loss_fast": "loss_fast = F.nll_loss(logits, Yb)"},
        {"test_loss_fast": "log-probabilities"},
    ),
    "loss_shape": (
        NB2,
        {"answer_loss_fast": "loss_fast = F.cross_entropy(logits, Yb).view(1)"},
        {"test_loss_fast": "shape ()"},
    ),
    # Exercise 2: dlogits
    "dlogits_no_n": (
        NB2,
        {"answer_dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1"},
        {"test_dlogits": "n = 32 times too large"},
    ),
    "dlogits_softmax_dim0": (
        NB2,
        {"answer_dlogits": "dlogits = (F.softmax(logits, 0) - F.one_hot(Yb, 27)) / n"},
        {"test_dlogits": "softmax over the wrong dimension", "test_dlogits_rows": ROWS},
    ),
    "dlogits_one_everywhere": (
        NB2,
        {"answer_dlogits": "dlogits = (F.softmax(logits, 1) - 1) / n"},
        {"test_dlogits": "in every entry of every row", "test_dlogits_rows": ROWS},
    ),
    "dlogits_sign": (
        NB2,
        {"answer_dlogits": "dlogits = (F.one_hot(Yb, 27) - F.softmax(logits, 1)) / n"},
        {"test_dlogits": "wrong sign"},
    ),
    "dlogits_every_target": (
        NB2,
        {"answer_dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[:, Yb] -= 1\ndlogits /= n"},
        {"test_dlogits": "at every example's target", "test_dlogits_rows": ROWS},
    ),
    "dlogits_no_target": (
        NB2,
        {"answer_dlogits": "dlogits = F.softmax(logits, 1) / n"},
        {"test_dlogits": "no term for the target", "test_dlogits_rows": ROWS},
    ),
    "dlogits_log_softmax": (
        NB2,
        {"answer_dlogits": "dlogits = (F.log_softmax(logits, 1) - F.one_hot(Yb, 27)) / n"},
        {"test_dlogits": "log-probabilities", "test_dlogits_rows": ROWS},
    ),
    # Exercise 3: the BatchNorm forward in one expression
    "bn_biased_forward": (
        NB3,
        {
            "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) "
            "/ torch.sqrt(hprebn.var(0, keepdim=True, unbiased=False) + 1e-5) + bnbias"
        },
        {"test_hpreact_fast": "biased variance"},
    ),
    "bn_forward_wrong_dim": (
        NB3,
        {
            "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(1, keepdim=True)) "
            "/ torch.sqrt(hprebn.var(1, keepdim=True) + 1e-5) + bnbias"
        },
        {"test_hpreact_fast": "over its neurons (dimension 1)"},
    ),
    "bn_forward_no_bias": (
        NB3,
        {
            "answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0, keepdim=True)) "
            "/ torch.sqrt(hprebn.var(0, keepdim=True) + 1e-5)"
        },
        {"test_hpreact_fast": "missing bnbias"},
    ),
    "bn_forward_by_variance": (
        NB3,
        {"answer_hpreact_fast": "hpreact_fast = bngain * (hprebn - hprebn.mean(0)) / (hprebn.var(0) + 1e-5) + bnbias"},
        {"test_hpreact_fast": "standard deviation"},
    ),
    # Exercise 3: dbngain, dbnbias
    "dbngain_wrong_axis": (
        NB3,
        {"answer_dbngain": "dbngain = (bnraw * dhpreact).sum(1, keepdim=True)"},
        {"test_dbngain": "summed over dimension 1 instead of dimension 0"},
    ),
    "dbnbias_keepdim": (NB3, {"answer_dbnbias": "dbnbias = dhpreact.sum(0)"}, {"test_dbnbias": "keepdim=True"}),
    # Exercise 3: dhprebn
    "dhprebn_no_bessel": (
        NB3,
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
            "- bnraw * (dhpreact * bnraw).sum(0))"
        },
        {"test_dhprebn": "missing the factor n/(n-1)"},
    ),
    "dhprebn_n_for_n_minus_1": (
        NB3,
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv * (dhpreact - dhpreact.mean(0) "
            "- bnraw * (dhpreact * bnraw).mean(0))"
        },
        {"test_dhprebn": "divides by n where n-1 belongs"},
    ),
    "dhprebn_biased_recomputed": (
        NB3,
        {
            "answer_dhprebn": (
                "s = (((hprebn - hprebn.mean(0)) ** 2).mean(0) + 1e-5) ** -0.5\nxb = (hprebn - hprebn.mean(0)) * s\n"
                "dhprebn = bngain * s / n * (n * dhpreact - dhpreact.sum(0) - xb * (dhpreact * xb).sum(0))"
            )
        },
        {"test_dhprebn": "biased variance"},
    ),
    "dhprebn_no_mean_term": (
        NB3,
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
        },
        {"test_dhprebn": "path through the mean"},
    ),
    "dhprebn_no_projection": (
        NB3,
        {"answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0))"},
        {"test_dhprebn": "path through the variance"},
    ),
    "dhprebn_no_gain": (
        NB3,
        {
            "answer_dhprebn": "dhprebn = bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
        },
        {"test_dhprebn": "missing bngain"},
    ),
    "dhprebn_wrong_axis": (
        NB3,
        {
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv / n * (n * dhpreact "
            "- dhpreact.sum(1, keepdim=True) "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(1, keepdim=True))"
        },
        {"test_dhprebn": "sums over the wrong dimension"},
    ),
}

# Several independent mistakes (different cells) share one submission: fewer kernels, same checks.
STUDENTS = {
    "m_a": ["loss_sum", "dlogits_no_n", "bn_biased_forward", "dbngain_wrong_axis", "dhprebn_no_bessel"],
    "m_b": [
        "loss_from_probs",
        "dlogits_softmax_dim0",
        "bn_forward_wrong_dim",
        "dbnbias_keepdim",
        "dhprebn_n_for_n_minus_1",
    ],
    "m_c": ["loss_nll_of_logits", "dlogits_one_everywhere", "bn_forward_no_bias", "dhprebn_biased_recomputed"],
    "m_d": ["loss_shape", "dlogits_sign", "bn_forward_by_variance", "dhprebn_no_mean_term"],
    "m_e": ["dlogits_every_target", "dhprebn_no_projection"],
    "m_f": ["dlogits_no_target", "dhprebn_no_gain"],
    "m_g": ["dlogits_log_softmax", "dhprebn_wrong_axis"],
}

# student -> {notebook: answer cells changed}; every graded cell must keep its points
ALTERNATIVES = {
    "alt_a": {
        NB2: {
            "answer_loss_fast": "loss_fast = F.nll_loss(F.log_softmax(logits, 1), Yb)",
            "answer_dlogits": "dlogits = (F.softmax(logits, 1) - F.one_hot(Yb, 27)) / n",
        },
        NB3: {
            "answer_hpreact_fast": "hpreact_fast = (hprebn - hprebn.mean(0)) * torch.rsqrt(hprebn.var(0, correction=1) "
            "+ 1e-5) * bngain + bnbias",
            "answer_dbngain": "dbngain = torch.einsum('ij,ij->j', bnraw, dhpreact)[None]",
            "answer_dbnbias": "dbnbias = dhpreact.sum(0).view(1, -1)",
            # written with means instead of sums
            "answer_dhprebn": "dhprebn = bngain * bnvar_inv * (dhpreact - dhpreact.mean(0, keepdim=True) "
            "- bnraw * (dhpreact * bnraw).sum(0, keepdim=True) / (n - 1))",
        },
    },
    "alt_b": {
        NB2: {
            "answer_loss_fast": "loss_fast = F.cross_entropy(logits, Yb, reduction='none').mean()",
            "answer_dlogits": (
                "e = (logits - logits.max(1, keepdim=True).values).exp()\n"
                "dlogits = e / e.sum(1, keepdim=True)\n"
                "dlogits[range(n), Yb] -= 1\ndlogits = dlogits / n"
            ),
        },
        NB3: {
            "answer_hpreact_fast": (
                "xc = hprebn - hprebn.mean(0, keepdim=True)\n"
                "hpreact_fast = bngain * xc / ((xc**2).sum(0, keepdim=True) / (n - 1) + 1e-5)**0.5 "
                "+ bnbias"
            ),
            # from hprebn alone, without the forward pass's bnraw and bnvar_inv
            "answer_dhprebn": (
                "xc = hprebn - hprebn.mean(0, keepdim=True)\n"
                "s = ((xc**2).sum(0, keepdim=True) / (n - 1) + 1e-5) ** -0.5\nxhat = xc * s\n"
                "dhprebn = bngain * s / n * (n * dhpreact - dhpreact.sum(0, keepdim=True) "
                "- n / (n - 1) * xhat * (dhpreact * xhat).sum(0, keepdim=True))"
            ),
        },
    },
    "alt_c": {
        NB2: {"answer_dlogits": "dlogits = (logits.softmax(-1) - torch.eye(27)[Yb]) / n"},
        NB3: {
            "answer_dhprebn": (  # the atomic chain of Exercise 1, in one cell
                "dbnraw = bngain * dhpreact\ndbndiff = bnvar_inv * dbnraw\n"
                "dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)\n"
                "dbnvar = -0.5 * (bnvar + 1e-5) ** -1.5 * dbnvar_inv\n"
                "dbndiff += 2 * bndiff * torch.ones_like(bndiff2) / (n - 1) * dbnvar\n"
                "dhprebn = dbndiff.clone()\ndhprebn += -dbndiff.sum(0, keepdim=True) / n"
            )
        },
    },
}

# student -> ({notebook: answer cells changed}, {notebook: {graded cell that must earn nothing: words}})
CHEATS = {
    "c_copy_grad": (
        {
            NB2: {"answer_dlogits": "dlogits = logits.grad.clone()"},
            NB3: {"answer_dbngain": "dbngain = bngain.grad", "answer_dhprebn": "dhprebn = hprebn.grad * 1.0"},
        },
        {
            NB2: {"test_dlogits": "autograd", "test_dlogits_rows": "autograd"},
            NB3: {"test_dbngain": "autograd", "test_dhprebn": "autograd"},
        },
    ),
    "c_hidden_grad": (
        {
            NB2: {"answer_dlogits": "import operator\ndlogits = operator.attrgetter('g' + 'rad')(logits)"},
            NB3: {"answer_dhprebn": "import operator\ndhprebn = operator.attrgetter('g' + 'rad')(hprebn)"},
        },
        {
            NB2: {"test_dlogits": "logits.grad", "test_dlogits_rows": "logits.grad"},
            NB3: {"test_dhprebn": "hprebn.grad"},
        },
    ),
    # the given upstream gradient zeroed: every answer is then zero, and must earn nothing
    "c_zero_upstream": (
        {
            NB3: {
                "answer_dbngain": "dhpreact = torch.zeros_like(dhpreact)\n"
                "dbngain = (bnraw * dhpreact).sum(0, keepdim=True)"
            }
        },
        {NB3: {"test_dbngain": "all zeros", "test_dbnbias": "all zeros", "test_dhprebn": "all zeros"}},
    ),
}


def _changes(student: str, notebook: str) -> dict:
    changes = {}
    for mistake in STUDENTS.get(student, []):
        book, cells, _ = MISTAKES[mistake]
        if book == notebook:
            assert not set(cells) & set(changes), f"{student}: two mistakes in one cell"
            changes.update(cells)
    return changes


@pytest.fixture(scope="module")
def graded(course):
    release = {nb: course.notebook("release", nb) for nb in (NB2, NB3)}
    source = {nb: course.notebook("source", nb) for nb in (NB2, NB3)}
    for nb in (NB2, NB3):
        course.submit("solution", nb, solved(release[nb], source[nb]))
        course.submit("blank", nb, release[nb])
        for student in STUDENTS:
            course.submit(student, nb, solved(release[nb], source[nb], _changes(student, nb)))
        for student, changes in ALTERNATIVES.items():
            course.submit(student, nb, solved(release[nb], source[nb], changes.get(nb, {})))
        for student, (changes, _) in CHEATS.items():
            if nb in changes:
                course.submit(student, nb, solved(release[nb], source[nb], changes[nb]))
    visible = run_setup(tuple(c.source for c in source[NB2].cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647)
    course.submit(
        "c_pasted_values",
        NB2,
        solved(
            release[NB2], source[NB2], {"answer_dlogits": f"dlogits = torch.tensor({visible['logits'].grad.tolist()})"}
        ),
    )
    course.submit(
        "c_pasted_values",
        NB3,
        solved(
            release[NB3], source[NB3], {"answer_dbnbias": f"dbnbias = torch.tensor({visible['bnbias'].grad.tolist()})"}
        ),
    )
    course.nbgrader("autograde", ASSIGNMENT)
    return course


def lost(course, student, notebook) -> list:
    scores, maximum = course.scores(student, notebook), course.max_scores(notebook)
    return sorted(g for g in POINTS[notebook] if scores[g] != maximum[g])


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_points_table(graded, notebook):
    assert graded.max_scores(notebook) == POINTS[notebook]  # the setup cells are locked cells, not 0-point grade cells


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_solution_gets_full_marks(graded, notebook):
    assert lost(graded, "solution", notebook) == []
    messages = graded.messages("solution", notebook)
    assert all(messages[g].startswith("✔") for g in POINTS[notebook]), messages


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_blank_release_gets_zero_without_crashing(graded, notebook):
    assert sum(graded.scores("blank", notebook).values()) == 0
    messages = graded.messages("blank", notebook)
    for cell in POINTS[notebook]:
        assert "not answered yet" in messages[cell], messages[cell]


@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_mistake_costs_its_own_cells_with_its_message(graded, mistake):
    notebook, _, expected = MISTAKES[mistake]
    student = next(s for s, ms in STUDENTS.items() if mistake in ms)
    lost_here = set(lost(graded, student, notebook))
    assert set(expected) <= lost_here
    messages = graded.messages(student, notebook)
    for cell, words in expected.items():
        assert words in messages[cell], messages[cell]
    # ... and the student loses nothing beyond the cells of their own mistakes
    own = {cell for m in STUDENTS[student] if MISTAKES[m][0] == notebook for cell in MISTAKES[m][2]}
    assert lost_here == own


@pytest.mark.parametrize("student", ALTERNATIVES)
@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_other_correct_formulas_get_full_marks(graded, student, notebook):
    assert lost(graded, student, notebook) == [], graded.messages(student, notebook)


@pytest.mark.parametrize("student", CHEATS)
def test_answers_from_autograd_earn_nothing(graded, student):
    changes, expected = CHEATS[student]
    for notebook in changes:
        assert lost(graded, student, notebook) == sorted(expected[notebook])
        messages = graded.messages(student, notebook)
        for cell, words in expected[notebook].items():
            assert words in messages[cell], messages[cell]


def test_pasted_values_earn_nothing(graded):
    assert lost(graded, "c_pasted_values", NB2) == ["test_dlogits", "test_dlogits_rows"]
    assert "this batch" in graded.messages("c_pasted_values", NB2)["test_dlogits_rows"]
    assert lost(graded, "c_pasted_values", NB3) == ["test_dbnbias"]


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_hidden_tests_and_solutions_are_not_in_the_release(graded, notebook):
    text = (graded.root / "release" / ASSIGNMENT / f"{notebook}.ipynb").read_text()
    for secret in [
        "HIDDEN TESTS",
        "report(",
        "start_grading",
        "grading_seed",
        "BEGIN SOLUTION",
        "dlogits[range(n), Yb] -= 1",
        "n / (n - 1) * bnraw",
        "hprebn.var(0, keepdim=True, unbiased=True)",
    ]:
        assert secret not in text, secret


@pytest.fixture(scope="module")
def feedback(graded):
    graded.nbgrader("generate_feedback", ASSIGNMENT)
    return graded


@pytest.mark.parametrize("notebook", [NB2, NB3])
def test_feedback_opens_with_every_graded_cell_and_the_first_to_fix(feedback, notebook):
    students = sorted(
        p.parent.parent.name for p in (feedback.root / "submitted").glob(f"*/{ASSIGNMENT}/{notebook}.ipynb")
    )
    assert len(students) > 10
    for student in students:
        page = feedback.feedback(student, notebook)
        assert page.table() == feedback.summary_rows(student, notebook, list(POINTS[notebook])), student
        wrong = [anchor for anchor, mark, _, _ in page.table() if mark == "✘"]
        assert page.first_to_fix() == wrong[:1], student
        for secret in ["HIDDEN TESTS", "report(", "start_grading", "grading_seed", "x-backprop-ninja", "data_dtype"]:
            assert secret not in page.text, (student, secret)
    titles = [r.step for r in feedback.feedback("solution", notebook).rows]
    assert (
        titles
        == {
            NB2: ["loss_fast", "dlogits", "every row of dlogits sums to zero"],
            NB3: ["hpreact_fast", "dbngain", "dbnbias", "dhprebn"],
        }[notebook]
    )
    assert "../../course/" not in feedback.feedback("solution", notebook).text  # the derivation links work anywhere

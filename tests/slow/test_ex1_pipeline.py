"""Exercise 1 through the real pipeline: generate_assignment, autograde, feedback, export, the Formgrader.

One class of submissions is graded in a single ``nbgrader autograde`` run; every test then
reads the gradebook cell by cell, the grader's messages in the autograded notebooks, the
autograde log, and the feedback pages (one ``generate_feedback`` run for the class, one page
opened in headless Chromium).
"""

import base64
import csv
import json
import re
import shutil
import time

import pytest
from conftest import ARTIFACTS, ASSIGNMENT, Chromium, formgrader

from autograder.authoring.badges import repository_url
from autograder.authoring.submissions import grade_id, solutions, solved
from autograder.engine.backward_rules import SHAPE_ONLY_SHARE, STEP_BY_NAME, STEPS
from autograder.engine.reference import SETUP_PREFIX, run_setup

NB = "ex1_atomic_backward"
ALL_STEPS = [s.name for s in STEPS]

# student -> (answer cells changed, the one step that must lose its points, words its message must contain)
MISTAKES = {
    "m_logprobs_no_n": (
        {"answer_dlogprobs": "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0"},
        "logprobs",
        "32 times too large",
    ),
    "m_probs_sign": ({"answer_dprobs": "dprobs = -(1.0 / probs) * dlogprobs"}, "probs", "wrong sign"),
    "m_counts_sum_inv_axis": (
        {"answer_dcounts_sum_inv": "dcounts_sum_inv = (counts * dprobs).sum(0, keepdim=True)"},
        "counts_sum_inv",
        "summed over dimension 0 instead of dimension 1",
    ),
    "m_counts_sum_sign": (
        {"answer_dcounts_sum": "dcounts_sum = counts_sum**-2 * dcounts_sum_inv"},
        "counts_sum",
        "wrong sign",
    ),
    "m_counts_branch": (
        {"answer_dcounts": "dcounts = counts_sum_inv * dprobs"},
        "counts",
        "path through counts_sum is missing",
    ),
    "m_counts_added_twice": (  # a += line run twice, as when it sits in a cell of its own that ran twice
        {
            "answer_dcounts": "dcounts = counts_sum_inv * dprobs"
            + "\ndcounts += torch.ones_like(counts) * dcounts_sum" * 2
        },
        "counts",
        "the path through counts_sum is added twice: did a cell run twice?",
    ),
    "m_norm_logits_passthrough": (
        {"answer_dnorm_logits": "dnorm_logits = dcounts"},
        "norm_logits",
        "passed through unchanged",
    ),
    "m_logit_maxes_keepdim": (
        {"answer_dlogit_maxes": "dlogit_maxes = -dnorm_logits.sum(1)"},
        "logit_maxes",
        "keepdim=True",
    ),
    "m_W2_transposed": ({"answer_dW2": "dW2 = dlogits.T @ h"}, "W2", "transposed"),
    "m_b2_no_sum": ({"answer_db2": "db2 = dlogits"}, "b2", "summed over it"),
    "m_hpreact_passthrough": ({"answer_dhpreact": "dhpreact = dh"}, "hpreact", "passed through unchanged"),
    "m_hpreact_wrong_derivative": (
        {"answer_dhpreact": "dhpreact = (1.0 - hpreact**2) * dh"},
        "hpreact",
        "local derivative of `h = torch.tanh(hpreact)`",
    ),
    "m_bngain_no_sum": ({"answer_dbngain": "dbngain = bnraw * dhpreact"}, "bngain", "must be summed"),
    "m_bnbias_keepdim": ({"answer_dbnbias": "dbnbias = dhpreact.sum(0)"}, "bnbias", "keepdim=True"),
    "m_bnraw_no_gain": ({"answer_dbnraw": "dbnraw = dhpreact"}, "bnraw", "passed through unchanged"),
    "m_bnvar_inv_keepdim": (
        {"answer_dbnvar_inv": "dbnvar_inv = (bndiff * dbnraw).sum(0)"},
        "bnvar_inv",
        "keepdim=True",
    ),
    "m_bnvar_power": (
        {"answer_dbnvar": "dbnvar = -0.5 * (bnvar + 1e-5) ** -0.5 * dbnvar_inv"},
        "bnvar",
        "entries wrong",
    ),
    "m_bndiff2_biased": (
        {"answer_dbndiff2": "dbndiff2 = 1.0 / n * torch.ones_like(bndiff2) * dbnvar"},
        "bndiff2",
        "Bessel",
    ),
    "m_bndiff_branch": (
        {"answer_dbndiff": "dbndiff = bnvar_inv * dbnraw"},
        "bndiff",
        "path through bndiff2 is missing",
    ),
    "m_bnmeani_sign": ({"answer_dbnmeani": "dbnmeani = dbndiff.sum(0, keepdim=True)"}, "bnmeani", "wrong sign"),
    "m_bnmeani_lecture": (  # the lecture's own line: (64,) for a (1, 64) tensor
        {"answer_dbnmeani": "dbnmeani = (-dbndiff).sum(0)"},
        "bnmeani",
        "dimension 0 of size 1 was dropped",
    ),
    "m_b2_keepdim_added": (
        {"answer_db2": "db2 = dlogits.sum(0, keepdim=True)"},
        "b2",
        "dimension 0 of size 1 is one too many",
    ),
    "m_hprebn_branch": ({"answer_dhprebn": "dhprebn = dbndiff.clone()"}, "hprebn", "path through bnmeani is missing"),
    "m_embcat_extra_n": ({"answer_dembcat": "dembcat = dhprebn @ W1.T / n"}, "embcat", "32 times too small"),
    "m_W1_transposed": ({"answer_dW1": "dW1 = dhprebn.T @ embcat"}, "W1", "transposed"),
    "m_emb_wrong_view": ({"answer_demb": "demb = dembcat.view(n, n_embd, block_size)"}, "emb", "wrong order"),
    "m_C_no_accumulation": ({"answer_dC": "dC = torch.zeros_like(C)\ndC[Xb] += demb"}, "C", "does not add up"),
    "m_bnbias_float64": (
        {
            "answer_dbnbias": "dbnbias = torch.from_numpy(dhpreact.detach().numpy().astype('float64'))"
            ".sum(0, keepdim=True)"
        },
        "bnbias",
        "float64",
    ),
    "m_bngain_numpy": (
        {"answer_dbngain": "dbngain = (bnraw * dhpreact).sum(0, keepdim=True).detach().numpy()"},
        "bngain",
        "ndarray",
    ),
    "m_probs_nan": ({"answer_dprobs": "dprobs = dlogprobs / (probs - probs)"}, "probs", "NaN"),
}

# student -> the step whose right values come in a shape off by a size-1 dimension: a share of its points
KEEPDIM = {
    "m_logit_maxes_keepdim": "logit_maxes",
    "m_bnbias_keepdim": "bnbias",
    "m_bnvar_inv_keepdim": "bnvar_inv",
    "m_bnmeani_lecture": "bnmeani",
    "m_b2_keepdim_added": "b2",
}
WRONG_VALUES_WRONG_SHAPE = {"m_counts_sum_inv_axis": "counts_sum_inv", "m_b2_no_sum": "b2"}

FUSED_BATCHNORM = (
    "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
    "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
)
ALTERNATIVES = {
    "alt_a": {
        "answer_dlogprobs": "dlogprobs = -F.one_hot(Yb, vocab_size).float() / n",
        "answer_dprobs": "dprobs = dlogprobs / probs",
        "answer_dnorm_logits": "dnorm_logits = norm_logits.exp() * dcounts",
        "answer_dhpreact": "dhpreact = (1 - torch.tanh(hpreact) ** 2) * dh",
        "answer_dbnvar": "dbnvar = -0.5 * bnvar_inv**3 * dbnvar_inv",
        "answer_dbndiff2": "dbndiff2 = torch.full_like(bndiff2, 1.0 / (n - 1)) * dbnvar",
        "answer_dC": (
            "dC = torch.zeros_like(C)\nfor k in range(Xb.shape[0]):\n    for j in range(Xb.shape[1]):\n"
            "        dC[Xb[k, j]] += demb[k, j]"
        ),
    },
    "alt_b": {
        "answer_dcounts_sum_inv": "dcounts_sum_inv = (dprobs * counts).sum(-1, keepdim=True)",
        "answer_dlogits": (
            "dlogits = dnorm_logits.clone()\ndlogits[range(n), logits.argmax(1)] += dlogit_maxes.view(-1)"
        ),
        "answer_db2": "db2 = dlogits.sum(0, keepdim=True).squeeze(0)",
        "answer_dbnbias": "dbnbias = dhpreact.sum(0).view(1, -1)",
        "answer_dhprebn": FUSED_BATCHNORM,
        "answer_dW1": "dW1 = (dhprebn.T @ embcat).T",
        "answer_demb": "demb = dembcat.reshape(n, block_size, n_embd)",
        "answer_dC": "dC = F.one_hot(Xb.view(-1), vocab_size).float().T @ demb.view(-1, n_embd)",
    },
    "alt_c": {
        "answer_dlogit_maxes": "dlogit_maxes = torch.zeros_like(logit_maxes)",  # the exact answer: the max cancels
        "answer_dlogits": "dlogits = dnorm_logits.clone()",  # ... so its branch adds nothing
        "answer_db1": "db1 = torch.zeros_like(b1)",  # BatchNorm cancels b1 exactly
        "answer_dC": (
            "dC = torch.zeros_like(C)\ndC.index_put_((Xb.view(-1),), demb.view(-1, n_embd), accumulate=True)"
        ),
    },
}

# student -> (changes, extra cells, steps that must earn nothing, words in the first of their messages)
CHEATS = {
    "c_copy_grad": ({"answer_dh": "dh = h.grad", "answer_dW1": "dW1 = W1.grad.clone()"}, [], ["h", "W1"], "autograd"),
    "c_hidden_grad": (
        {"answer_dh": "import operator\ndh = operator.attrgetter(''.join(['g', 'r', 'a', 'd']))(h)"},
        [],
        ["h"],
        "h.grad",
    ),
    "c_backward": ({"answer_dW2": "loss.backward()\ndW2 = W2.grad"}, [], ["W2"], "autograd"),
    "c_autograd_grad": (
        {"answer_dW1": "dW1 = torch.autograd.grad(loss, W1, retain_graph=True)[0]"},
        [],
        ["W1"],
        "autograd",
    ),
    "c_patch_checks": (
        {"answer_dW2": "dW2 = dlogits.T @ h"},
        [
            (
                "self_check_helpers",
                "torch.allclose = lambda *a, **k: True\n"
                "torch.equal = lambda *a, **k: True\n"
                "torch.isfinite = lambda t: torch.ones_like(t, dtype=torch.bool)",
            )
        ],
        ["W2"],
        "transposed",
    ),
}


@pytest.fixture(scope="module")
def graded(course):
    release, source = course.notebook("release", NB), course.notebook("source", NB)
    course.submit("solution", NB, solved(release, source))
    course.submit("blank", NB, release)
    for student, (changes, _, _) in MISTAKES.items():
        course.submit(student, NB, solved(release, source, changes))
    for student, changes in ALTERNATIVES.items():
        course.submit(student, NB, solved(release, source, changes))
    everything = "\n".join(
        solved(release, source).cells[i].source
        for i, c in enumerate(release.cells)
        if grade_id(c).startswith("answer_")
    )
    answers = [grade_id(c) for c in release.cells if grade_id(c).startswith("answer_")]
    course.submit(
        "alt_one_cell",
        NB,
        solved(
            release, source, {a: "pass" for a in answers[1:]} | {answers[0]: everything.replace("# YOUR CODE HERE", "")}
        ),
    )
    for student, (changes, extra, _, _) in CHEATS.items():
        course.submit(student, NB, solved(release, source, changes, extra))
    # values pasted from the student's own run: right for the visible seed only
    visible = run_setup(tuple(c.source for c in source.cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647)
    pasted = f"db2 = torch.tensor({visible['b2'].grad.tolist()})"
    course.submit("c_pasted_values", NB, solved(release, source, {"answer_db2": pasted}))
    course.submit(
        "c_blank_cells",
        NB,
        solved(
            release,
            source,
            extra_cells=[
                ("answer_dlogprobs", "get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])")
            ],
        ),
    )
    course.submit("k_dies_midway", NB, solved(release, source, {"answer_dh": "import os\nos._exit(1)"}))
    # every answer cell run twice in a row (as a second cell with the same code right after it)
    again = [(gid, code) for gid, code in solutions(source).items() if gid.startswith("answer_")]
    course.submit("alt_every_cell_twice", NB, solved(release, source, extra_cells=again))
    aliased = "dhprebn = dbndiff\ndhprebn += 1.0 / n * torch.ones_like(hprebn) * dbnmeani"  # no .clone()
    course.submit("m_alias_dhprebn", NB, solved(release, source, {"answer_dhprebn": aliased}))
    edited = solved(release, source)  # a locked cell changed (a check switched off): graded with the course's
    next(c for c in edited.cells if grade_id(c) == "test_dprobs").source = "pass"
    course.submit("c_edits_locked_cell", NB, edited)
    course.autograde_log = course.nbgrader("autograde", ASSIGNMENT).stderr  # at nbgrader's default level, INFO
    return course


@pytest.fixture(scope="module")
def feedback(graded):
    """Every student's feedback page, from one ``nbgrader generate_feedback`` run."""
    graded.nbgrader("generate_feedback", ASSIGNMENT)
    return graded


def lost_steps(course, student):
    scores, maximum = course.scores(student, NB), course.max_scores(NB)
    return sorted(g.removeprefix("test_d") for g in maximum if g.startswith("test_d") and scores[g] != maximum[g])


def test_points_table(graded):
    maximum = graded.max_scores(NB)
    assert {g: p for g, p in maximum.items() if g.startswith("test_")} == {f"test_d{s.name}": s.points for s in STEPS}
    assert sum(maximum.values()) == 33


def test_solution_gets_full_marks(graded):
    assert lost_steps(graded, "solution") == []
    assert all(m.startswith("✔") for g, m in graded.messages("solution", NB).items() if g.startswith("test_"))


def test_blank_release_gets_zero_without_crashing(graded):
    scores = graded.scores("blank", NB)
    assert sum(v for v in scores.values()) == 0
    messages = graded.messages("blank", NB)
    for step in ALL_STEPS:
        assert "not answered yet" in messages[f"test_d{step}"], messages[f"test_d{step}"]


@pytest.mark.parametrize("student", MISTAKES)
def test_a_mistake_costs_exactly_its_own_step(graded, student):
    _, step, words = MISTAKES[student]
    assert lost_steps(graded, student) == [step]
    message = graded.messages(student, NB)[f"test_d{step}"]
    assert words in message, message


@pytest.mark.parametrize("student", KEEPDIM)
def test_right_values_in_a_keepdim_shape_earn_a_share_and_the_dimension_is_named(graded, student):
    step = KEEPDIM[student]
    assert graded.scores(student, NB)[f"test_d{step}"] == SHAPE_ONLY_SHARE * STEP_BY_NAME[step].points
    message = graded.messages(student, NB)[f"test_d{step}"]
    assert "dimension" in message and "the values are right" in message, message


@pytest.mark.parametrize("student", WRONG_VALUES_WRONG_SHAPE)
def test_wrong_values_in_a_wrong_shape_earn_nothing(graded, student):
    assert graded.scores(student, NB)[f"test_d{WRONG_VALUES_WRONG_SHAPE[student]}"] == 0


def test_running_every_answer_cell_twice_grades_like_the_solution(graded):
    assert graded.scores("alt_every_cell_twice", NB) == graded.scores("solution", NB)
    messages = graded.messages("alt_every_cell_twice", NB)
    assert all(m.startswith("✔") for g, m in messages.items() if g.startswith("test_")), messages


def test_a_gradient_changed_in_place_after_its_check_is_named(graded):
    """dhprebn = dbndiff without .clone(): dbndiff was right at its check and keeps its points; the cell that
    changed it says so."""
    assert lost_steps(graded, "m_alias_dhprebn") == []
    message = graded.messages("m_alias_dhprebn", NB)["test_dhprebn"]
    assert "dbndiff changed after its check: it now holds the values of dhprebn" in message, message
    assert "dbndiff.clone()" in message


def test_error_carried_forward_names_the_upstream_gradient(graded):
    messages = graded.messages("m_probs_sign", NB)
    assert "fix dprobs first" in messages["test_dcounts_sum_inv"]
    assert "✔" in messages["test_dcounts_sum_inv"]


@pytest.mark.parametrize("student", [*ALTERNATIVES, "alt_one_cell"])
def test_other_correct_formulas_get_full_marks(graded, student):
    assert lost_steps(graded, student) == []


@pytest.mark.parametrize("student", CHEATS)
def test_answers_from_autograd_earn_nothing(graded, student):
    _, _, steps, words = CHEATS[student]
    assert lost_steps(graded, student) == sorted(steps)
    assert words in graded.messages(student, NB)[f"test_d{steps[0]}"]


def test_pasted_values_earn_nothing(graded):
    assert lost_steps(graded, "c_pasted_values") == ["b2"]


def test_neutralised_cells_earn_nothing(graded):
    assert sum(graded.scores("c_blank_cells", NB).values()) == 0
    assert "did not run to the end" in graded.messages("c_blank_cells", NB)["test_dW1"]


def test_a_dead_kernel_keeps_the_points_earned_before_it(graded):
    assert lost_steps(graded, "k_dies_midway") == sorted(ALL_STEPS[ALL_STEPS.index("h") :])
    assert "kernel died" in graded.messages("k_dies_midway", NB)["test_dW2"]


def test_hidden_tests_are_not_in_the_release(graded):
    text = (graded.root / "release" / ASSIGNMENT / f"{NB}.ipynb").read_text()
    for secret in ["HIDDEN TESTS", "report(", "start_grading", "grading_seed", "BEGIN SOLUTION", "index_add_(0, Xb"]:
        assert secret not in text


def test_feedback_shows_scores_and_messages_but_no_hidden_tests(feedback):
    html = feedback.feedback("m_bndiff2_biased", NB).text
    assert "Bessel" in html and "Score: 32.0 / 33.0" in html.replace("  ", " ")
    pages = sorted((feedback.root / "feedback").glob(f"*/{ASSIGNMENT}/{NB}.html"))
    assert len(pages) == len(list((feedback.root / "submitted").iterdir()))
    for page in pages:  # every student's: hidden code, the reported answers (their MIME type, encoded tensors)
        html = page.read_text()
        for secret in ["HIDDEN TESTS", "report(", "start_grading", "grading_seed", "x-backprop-ninja", "data_dtype"]:
            assert secret not in html, (page, secret)


@pytest.mark.parametrize("student", ["solution", "blank", "m_probs_sign", "k_dies_midway", "c_copy_grad"])
def test_feedback_opens_with_every_step_and_its_reason(feedback, student):
    page = feedback.feedback(student, NB)
    steps = [f"test_d{s}" for s in ALL_STEPS]  # backward order, no setup cell
    assert [r.step for r in page.rows] == [f"d{s}" for s in ALL_STEPS]
    assert page.table() == feedback.summary_rows(student, NB, steps)
    wrong = [r for r in page.rows if r.mark == "✘"]
    assert page.first_to_fix() == [r.anchor for r in wrong[:1]]  # the most upstream wrong step, and only it
    if wrong:
        assert page.headline.startswith(f"{26 - len(wrong)} of 26 steps right. Fix first: {wrong[0].step} (0 of ")
    else:
        assert page.headline == "All 26 steps are right."
    first = {"blank": "dlogprobs", "m_probs_sign": "dprobs", "k_dies_midway": "dh", "c_copy_grad": "dh"}
    assert [r.step for r in wrong[:1]] == ([first[student]] if student in first else [])


@pytest.mark.parametrize("student", MISTAKES)
def test_feedback_marks_the_mistake_as_the_step_to_fix_first(feedback, student):
    _, step, words = MISTAKES[student]
    page = feedback.feedback(student, NB)
    marked = [r for r in page.rows if r.first]
    assert [r.step for r in marked] == [f"d{step}"]
    assert words in " ".join(marked[0].reasons), marked[0]


def test_feedback_links_go_to_cells_on_the_page_and_to_the_course_online(feedback):
    page = feedback.feedback("m_probs_sign", NB)
    assert all(f"test_d{s}" in page.anchors for s in ALL_STEPS)
    inside = [link for link in page.links if link.startswith("#")]
    assert inside and all(link[1:] in page.anchors for link in inside), set(inside) - {f"#{a}" for a in page.anchors}
    outside = [link for link in page.links if not link.startswith("#")]
    assert all(re.match(r"https?://", link) for link in outside), outside
    course = [link for link in outside if "/course/" in link]
    assert f"{repository_url()}/blob/main/course/cheatsheet.md" in course
    assert all(link.startswith(f"{repository_url()}/blob/main/course/") for link in course), course


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium: run tools/install.sh")
def test_feedback_first_screen_in_a_browser(feedback, tmp_path):
    """The student opens the page from a download folder: the whole table is on the first screen, every row's
    link lands on its cell."""
    html = tmp_path / "downloads" / "ex1_feedback.html"  # far from the course: links must not need it
    html.parent.mkdir()
    shutil.copy(feedback.root / "feedback" / "m_probs_sign" / ASSIGNMENT / f"{NB}.html", html)
    browser = Chromium(tmp_path / "chromium")
    try:
        browser.send("Page.navigate", url=html.as_uri())
        browser.wait_for("document.readyState === 'complete' && !!document.querySelector('.steps-table')")
        time.sleep(1)  # fonts and layout settle
        ARTIFACTS.mkdir(exist_ok=True)
        screenshot = ARTIFACTS / "feedback_ex1_first_screen.png"
        screenshot.write_bytes(base64.b64decode(browser.send("Page.captureScreenshot", format="png")["data"]))
        print(f"screenshot: {screenshot}")
        screen = browser.js(
            "JSON.stringify({height: innerHeight, tableBottom: document.querySelector('.steps-table')"
            ".getBoundingClientRect().bottom, toc: getComputedStyle(document.getElementById('toc')).display, "
            "rows: [...document.querySelectorAll('.steps-row:not(.steps-head)')].map(r => r.innerText), "
            "first: document.querySelector('.step-first .step-name a').getAttribute('href')})"
        )
        landed = {}
        for anchor in [f"test_d{s}" for s in ("probs", "hpreact", "C")]:
            browser.js(f"document.querySelector('.steps-table a[href=\"#{anchor}\"]').click()")
            time.sleep(0.3)
            top = f"document.getElementsByName('{anchor}')[0].getBoundingClientRect().top"
            landed[anchor] = browser.js(f"{top} > -2 && {top} < innerHeight / 2")  # scrolled to the cell's top
    finally:
        browser.close()
    screen = json.loads(screen)
    assert screen["tableBottom"] <= screen["height"], screen  # all 26 steps on the first screen
    assert screen["toc"] == "none"  # nbgrader's list of "Test cell" links gives way to the table
    assert len(screen["rows"]) == 26 and screen["rows"][1].startswith("✘")
    assert "dprobs" in screen["rows"][1] and "fix first" in screen["rows"][1] and "wrong sign" in screen["rows"][1]
    assert screen["first"] == "#test_dprobs"
    assert landed == {anchor: True for anchor in landed}


ENCODED = re.compile(r"[A-Za-z0-9+/]{80,}")  # a run of base64: an encoded tensor


def test_autograde_log_is_short_and_names_what_matters(graded):
    log = graded.autograde_log
    students = len(list((graded.root / "submitted").iterdir()))
    print(f"autograde log at INFO: {len(log)} bytes for {students} students, {len(log) / students:.0f} a student")
    assert len(log.splitlines()) <= 16 * students  # about 14 a student (nbgrader's own: files, steps); 28 more before
    assert max(len(line) for line in log.splitlines()) < 400 and not ENCODED.search(log)
    assert "checksum" not in log  # nbgrader's warning for every hidden test it puts back: one line a notebook instead
    assert (
        log.count(f"{NB}: the hidden tests of 28 locked cells put back (the release leaves them out)") == students - 1
    )
    assert "locked cell test_dprobs was changed in the submission: graded with the course's version" in log
    assert lost_steps(graded, "c_edits_locked_cell") == []
    # (this course releases all four notebooks; the class hands in Exercise 1 only)
    others = ("locked cell", "No submitted file")
    problems = [line for line in log.splitlines() if "WARNING" in line and not any(o in line for o in others)]
    assert len(problems) == 1 and "GRADING PROBLEM k_dies_midway/ex1_atomic_backward: kernel_died:" in problems[0]


def test_formgrader_grades_like_the_command_line_with_a_short_log(feedback):
    """The instructor's GUI path: autograde and feedback from the Formgrader's buttons (its HTTP API), last in this
    module since it grades two students again (to the same scores)."""
    students = ["k_dies_midway", "m_probs_sign"]
    before = {s: feedback.scores(s, NB) for s in students}
    with formgrader(feedback.root) as api:
        graded = {s: api.post(f"submission/{ASSIGNMENT}/{s}/autograde") for s in students}
        made = api.post(f"assignment/{ASSIGNMENT}/m_probs_sign/generate_feedback")
    for student, result in graded.items():
        assert result["success"], result.get("error")
        log = result["log"]  # what the Formgrader's dialog shows; nbgrader captures it at DEBUG
        print(f"Formgrader autograde log of {student}: {len(log)} bytes")
        assert len(log) < 10_000 and not ENCODED.search(log) and "checksum" not in log
        assert ("GRADING PROBLEM k_dies_midway" in log) == (student == "k_dies_midway")
        assert feedback.scores(student, NB) == before[student]
    assert made["success"], made.get("error")
    page = feedback.feedback("m_probs_sign", NB)
    assert [r.step for r in page.rows if r.first] == ["dprobs"] and len(page.rows) == 26


def test_export_gives_every_student_a_total(graded):
    graded.nbgrader("export", "--to", str(graded.root / "grades.csv"))
    with open(graded.root / "grades.csv") as f:
        rows = {r["student_id"]: float(r["raw_score"]) for r in csv.DictReader(f) if r["assignment"] == ASSIGNMENT}
    assert rows["solution"] == 33 and rows["blank"] == 0 and rows["m_probs_sign"] == 32

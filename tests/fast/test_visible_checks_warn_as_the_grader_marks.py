"""A ✔ under a cell means the point whatever else the student's cells did: the checks read the cells run in this session
with the grader's own reading (``honesty.AutogradTaint``, copied into the helper cell), the course's locked cells left
out by their shape (``honesty.course_cells``). An answer the grader marks (code it cannot read, as eval or a name made
with globals(), or a value read from autograd, in any earlier cell) is ✘ under its cell, with words that say what was
found and how to write it instead; the grader takes its point (graded here in process).

The session is a student's: In holds the setup cells and the helper cell as the release has them, then every cell run,
the check cells too.
"""

import re
from pathlib import Path

import nbformat
import pytest
import torch
from IPython.core.inputtransformer2 import TransformerManager
from support.cases_ex1 import MISTAKES, NB
from support.cases_ex5 import NB5
from support.course import REPO
from support.in_process import autograde
from test_ex4_visible_checks import EX4, INDEX_ADD, printed, with_the_checks
from test_student_notebooks import EX1, HELPERS, hint, release, run_cells, source

from autograder.authoring.notebooks import SOURCE_DIR, course_shapes
from autograder.authoring.submissions import grade_id, solved
from autograder.common.naming import SETUP_PREFIX
from autograder.engine.backward_rules import STEPS
from autograder.engine.honesty.course_cells import cell_shape
from autograder.engine.operators import OPERATOR_STEPS
from autograder.engine.reference import run_setup, strip_hidden
from autograder.preprocessors.judge_answers import reported_names

LOOP = MISTAKES["m_cmp_by_globals_after_the_last_answer"][0]["answer_dC_index_add"]
UNREAD = "a cell you ran holds code the autograder cannot read"
HOW = "Name the tensors instead: cmp('h', dh, h), not cmp(name, globals()['d' + name], globals()[name])"
# case -> (the step, the cells run for it before its check, what the check says)
CASES = {
    "eval": ("h", ["dh = eval('dlogits @ W2.T')"], f"{UNREAD}: `dh = eval('dlogits @ W2.T')`"),
    "globals_loop": ("C_index_add", [LOOP], f"{UNREAD}: `cmp(name, globals()['d' + name], globals()[name])`"),
    "grad_read_in_an_earlier_cell": (
        "W2",
        ["g = W2.grad", "dW2 = g.clone()"],
        "your code for dW2, or a cell before it, reads autograd (.grad or backward)",
    ),
}
ORDER = [s.name for s in STEPS]


@pytest.fixture(scope="module")
def session():
    """Exercise 1 as a student runs it, up to (not including) a step (None: every step); the cells by id."""
    cells = {grade_id(c): c.source for c in solved(release(EX1), source(EX1)).cells}
    setup = [c.source for c in source(EX1).cells if grade_id(c).startswith(SETUP_PREFIX)]
    ran = dict(run_setup(tuple(setup), 2147483647))
    course = ["", *(cells[grade_id(c)] for c in source(EX1).cells if grade_id(c).startswith(SETUP_PREFIX))]
    helpers = compile(strip_hidden(HELPERS), "<helpers>", "exec")

    def run(stop=None):
        namespace = {**ran, "In": [*course, cells["self_check_helpers"]]}
        exec(helpers, namespace)
        for step in ORDER[: ORDER.index(stop) if stop else None]:
            out = run_cells(namespace, cells[f"answer_d{step}"], cells[f"test_d{step}"])
            assert out.startswith(f"✔ d{step}"), out
        return namespace

    return run, cells


@pytest.mark.parametrize("case", CASES)
def test_what_the_grader_marks_is_a_cross_under_its_cell_not_a_tick(session, case):
    run, cells = session
    step, code, says = CASES[case]
    stop = None if step == "C_index_add" else step
    out = run_cells(run(stop), cells[f"answer_d{step}"], cells[f"test_d{step}"])
    assert out.startswith(f"✔ d{step}: shape"), out  # the course's answer

    out = run_cells(run(stop), *code, cells[f"test_d{step}"])
    out = next(line for line in out.splitlines() if line.startswith(f"✘ d{step}: "))  # (after the loop's own tables)
    assert says in out, out
    if case != "grad_read_in_an_earlier_cell":
        assert HOW in out and "restart the kernel" in out, out


@pytest.fixture(scope="module")
def graded():
    """The cases graded in process, as the grader judges them (the solution beside them)."""
    source_nb, release_nb = source(NB), nbformat.read(REPO / "release" / "backprop_ninja" / f"{NB}.ipynb", 4)
    class_ = {"solution": solved(release_nb, source_nb)}
    for case, (step, code, _) in CASES.items():
        before = [(f"answer_d{step}", line) for line in code[:-1]]
        class_[case] = solved(release_nb, source_nb, {f"answer_d{step}": code[-1]}, before)
    return autograde(NB, class_)


@pytest.mark.parametrize("case", CASES)
def test_the_grader_takes_the_point_the_check_warned_of(graded, case):
    step = CASES[case][0]
    assert f"test_d{step}" in graded[case].lost(), graded[case].messages
    assert graded["solution"].lost() == []


def test_every_answer_from_that_cell_on_is_a_cross_and_those_checked_before_keep_their_tick(session):
    """As the grader judges each answer at its graded cell: eval in dh's cell costs dh and every later answer, not
    dlogits, checked before it; the checklist says the same."""
    run, cells = session
    namespace = run("h")
    run_cells(namespace, "dh = eval('dlogits @ W2.T')", cells["test_dh"])
    out = run_cells(namespace, cells["answer_dW2"], cells["test_dW2"])
    assert out.startswith(f"✘ dW2: {UNREAD}: `dh = eval('dlogits @ W2.T')`"), out
    table = run_cells(namespace, cells["check_layer2"] if "check_layer2" in cells else 'self_check("h", "W2")')
    assert hint(table, "dh").startswith(UNREAD) and hint(table, "dW2").startswith(UNREAD), table
    table = run_cells(namespace, 'self_check("logits")')
    assert table.splitlines()[-1].startswith("✔"), table


def test_a_check_loop_over_globals_is_a_cross_in_its_own_table(session):
    run, cells = session
    out = run_cells(
        run("h"),
        "names = sorted({'logprobs', 'probs'})\nfor name in names:\n"
        "    cmp(name, globals()['d' + name], globals()[name])",
    )
    assert hint(out, "dlogprobs").startswith(f"{UNREAD}: `cmp(name, globals()['d' + name], globals()[name])`"), out


def test_a_check_loop_over_literal_names_by_globals_is_read_as_those_names(session):
    """Each name is known before the loop runs (h-alts4): the grader reads cmp('logprobs', dlogprobs, logprobs), ..."""
    run, cells = session
    namespace = run("h")
    run_cells(namespace, "for name in ['logprobs', 'probs']:\n    cmp(name, globals()['d' + name], globals()[name])")
    out = run_cells(namespace, cells["answer_dh"], cells["test_dh"])
    assert out.startswith("✔ dh"), out


@pytest.mark.parametrize(
    "code, line",
    [
        ("exec('dh = dlogits @ W2.T')", "exec('dh = dlogits @ W2.T')"),
        ("k = 'logits'\ndh = globals()['d' + k] @ W2.T", "dh = globals()['d' + k] @ W2.T"),
        ("k = 'dlogits'\ndh = vars()[k] @ W2.T", "dh = vars()[k] @ W2.T"),
        ("k = 'dlogits'\ndh = locals()[k] @ W2.T", "dh = locals()[k] @ W2.T"),
        ("op = 'matmul'\ndh = getattr(torch, op)(dlogits, W2.T)", "dh = getattr(torch, op)(dlogits, W2.T)"),
        ("dh = dlogits @ W2.T\nsetattr(torch, 'x' + 'y', dh)", "setattr(torch, 'x' + 'y', dh)"),
    ],
)
def test_each_way_to_a_name_made_at_run_time_is_named_with_its_line(session, code, line):
    run, cells = session
    out = run_cells(run("h"), code, cells["test_dh"])
    assert out.startswith(f"✘ dh: {UNREAD}: `{line}`"), out


@pytest.mark.parametrize(
    "code",
    [
        "cmp('logits', dlogits, logits)",
        'if "dlogits" in globals():\n    print(dlogits.shape)',
        "print(getattr(dlogits, 'shape'))",
        "%time x = dlogits.sum()",
        "loss.item()",
    ],
)
def test_ordinary_cells_leave_the_ticks(session, code):
    """A check that names its tensors, a name asked for, an attribute written out, a magic: the grader marks none."""
    run, cells = session
    namespace = run("h")
    if code.startswith("%"):  # (no IPython here to run it: In holds what IPython runs, which is what is read)
        namespace["In"].append(TransformerManager().transform_cell(code))
    else:
        run_cells(namespace, code)
    out = run_cells(namespace, cells["answer_dh"], cells["test_dh"])
    assert out.startswith("✔ dh: shape"), out


@pytest.mark.parametrize("folder", ["release", "editions/ru", "editions/zh"], ids=lambda f: Path(f).name)
def test_every_locked_cell_of_every_edition_is_known_by_its_shape(folder):
    """The checks leave out the course's own cells (the helper cell's exec and globals(), the setup's backward()):
    each locked code cell, in any edition, has a shape the helper cell of that notebook holds."""
    for path in sorted((REPO / folder / "backprop_ninja").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        helper = next(c.source for c in nb.cells if grade_id(c) == "self_check_helpers")
        held = set(" ".join(re.findall(r'^    "([0-9a-f ]+)"$', helper, re.M)).split())
        assert held == set(course_shapes()), path
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("locked"):
                assert cell_shape(cell.source) in held, (path.name, grade_id(cell))


# Exercise 4: the grader takes every gradient of a backward_pass that reads autograd, and marks the calibration (its
# graded names) after code it cannot read; the lines under those cells say so, as they read the same cells.
READS_GRAD = "\n    autograds = C.grad  # (read, not used)"
CALIBRATION = "hprebn_all = C[Xtr].view(Xtr.shape[0], -1) @ W1 + b1\nbnmean = hprebn_all.mean(0, keepdim=True)\n"
CALIBRATION += "bnvar = hprebn_all.var(0, keepdim=True)"


@pytest.fixture(scope="module")
def exercise_4():
    """Exercise 4's setup, the cells of its solved notebook by grade_id (as test_ex4_visible_checks's ex4)."""
    cells = {grade_id(c): c.source for c in solved(release(EX4), source(EX4)).cells if grade_id(c)}
    setup = [c.source for c in source(EX4).cells if grade_id(c).startswith(SETUP_PREFIX)]
    return dict(run_setup(tuple(setup), 2147483647)), cells


def test_exercise_4_a_backward_pass_that_reads_grad_is_a_cross_under_each_gradient(exercise_4):
    right = exercise_4[1]["answer_backward_pass"]
    assert printed(exercise_4, right, 'check_backward("C")', In=["", right]).startswith("✔ dC: shape")
    reads = right.replace(INDEX_ADD, INDEX_ADD + READS_GRAD)
    for name in ("C", "W2"):
        out = printed(exercise_4, reads, f"check_backward({name!r})", In=["", reads])
        assert out.startswith(f"✘ d{name}: your code for backward_pass, or a cell before it, reads autograd"), out
    out = printed(exercise_4, right, 'check_backward("C")', In=["", right, "x = eval('1 + 1')"])
    assert out.startswith("✔ dC: shape"), out  # (code it cannot read outside backward_pass: not backward_pass's)


@pytest.mark.parametrize("before", ["", "x = eval('1 + 1')"])
def test_exercise_4_the_calibration_after_code_the_grader_cannot_read_is_a_cross(exercise_4, before):
    setup, _ = exercise_4
    namespace = with_the_checks(exercise_4)
    noise = torch.Generator().manual_seed(1)
    trained = [p.detach() + 0.05 * torch.randn(p.shape, generator=noise) for p in setup["parameters"]]
    namespace.update(parameters=trained, **dict(zip(setup["parameter_names"], trained)))
    namespace["In"] = ["", before, CALIBRATION]
    with torch.no_grad():
        out = run_cells(namespace, CALIBRATION, "check_calibration()")
    if before:
        assert out.startswith(f"✘ bnmean: {UNREAD}: `x = eval('1 + 1')`"), out
    else:
        assert out.startswith("✔ bnmean and bnvar"), out


def test_exercise_4_a_training_step_that_runs_backward_is_a_cross_under_the_training_cell(exercise_4):
    """The lecture's loop with loss.backward() kept: the grader takes the training's points, and the line says so
    before any replay."""
    _, cells = exercise_4
    step = cells["answer_training_step"].replace("    return loss", "    loss.backward()\n    return loss")
    out = printed(exercise_4, cells["answer_backward_pass"] + "\n\n" + step, "check_training()", In=["", step])
    assert out.startswith("✘ training: your code for training_step"), out
    assert "reads autograd (.grad or backward)" in out, out


@pytest.mark.parametrize(
    "notebook, answer, check",
    [
        ("ex2_cross_entropy_backward", "answer_loss_fast", ["check_loss_fast", "test_loss_fast"]),  # check_value
        (NB5, f"answer_d{OPERATOR_STEPS[0].name}", [f"test_d{OPERATOR_STEPS[0].name}"]),  # Exercise 5's own table
    ],
)
def test_the_other_notebooks_checks_warn_too(notebook, answer, check):
    cells = {grade_id(c): c.source for c in solved(release(notebook), source(notebook)).cells}
    setup = [c.source for c in source(notebook).cells if grade_id(c).startswith(SETUP_PREFIX)]
    ran, helpers = run_setup(tuple(setup), 2147483647), compile(strip_hidden(HELPERS), "<helpers>", "exec")

    def fresh():
        namespace = {**ran}
        exec(helpers, namespace)
        return namespace

    out = run_cells(fresh(), cells[answer], *(cells[c] for c in check)).splitlines()[-1]
    assert out.startswith("✔"), out
    out = run_cells(fresh(), "x = eval('1 + 1')\n" + cells[answer], *(cells[c] for c in check)).splitlines()[-1]
    assert out.startswith("✘") and f"{UNREAD}: `x = eval('1 + 1')`" in out, out


def test_each_settings_cell_names_what_its_hidden_tests_report():
    """GRADED, the answers the checks' reading judges each on its own, is the grader's: the names the notebook's hidden
    tests report (``judge_answers.reported_names``)."""
    for path in sorted(SOURCE_DIR.glob("ex[1-5]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        locked = [c.source for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("locked")]
        settings = next(c.source for c in nb.cells if grade_id(c) == "setup_settings")
        namespace = {}
        exec(strip_hidden(settings), namespace)
        assert namespace["GRADED"] == set().union(*map(reported_names, locked)), path.name


EX2 = "ex2_cross_entropy_backward"
THROUGH_DPROBS = ["dprobs = probs.grad", "dlogits = probs * (dprobs - (dprobs * probs).sum(1, keepdim=True))"]


def test_a_gradient_that_is_no_answer_here_carries_autograd_into_one_as_at_grading():
    """Exercise 2 grades dlogits alone: a dprobs read from .grad in a cell before it is no answer of its own there (it
    is one in Exercise 1), and dlogits computed from it earns nothing; the line under dlogits says so."""
    cells = {grade_id(c): c.source for c in solved(release(EX2), source(EX2)).cells}
    setup = [c.source for c in source(EX2).cells if grade_id(c).startswith(SETUP_PREFIX)]
    namespace = {**run_setup(tuple(setup), 2147483647)}
    exec(strip_hidden(HELPERS), namespace)
    out = run_cells(namespace, *THROUGH_DPROBS, cells["test_dlogits"])
    assert out.startswith("✘ dlogits: your code for dlogits, or a cell before it, reads autograd"), out
    release_nb, source_nb = release(EX2), source(EX2)
    graded = autograde(
        EX2,
        {
            "through_dprobs": solved(
                release_nb, source_nb, {"answer_dlogits": THROUGH_DPROBS[1]}, [("answer_dlogits", THROUGH_DPROBS[0])]
            )
        },
    )
    assert "test_dlogits" in graded["through_dprobs"].lost(), graded["through_dprobs"].messages

"""Exercise 6 without a kernel: whose bugs are whose, how far each bug lands from the tolerance, where the colleague's
point hides a bug, and the notebook's own tools and visible checks (run outside Jupyter, as the student's cells call
them). The graded cases: tests/fast/test_ex6_in_process.py."""

import collections
import contextlib
import io
import itertools
import linecache
import zlib

import nbformat
import pytest
import torch
from support.cases_ex6 import CENTRAL_FLAT, ONE_SIDED, REWRITTEN, id_with, pass_with, with_bug
from support.course import REPO

from autograder.authoring import SOURCE_DIR, shared_cell
from autograder.authoring.submissions import grade_id
from autograder.common.naming import SETUP_PREFIX
from autograder.engine import wire
from autograder.engine.backward_rules import STEP_BY_NAME
from autograder.engine.bug_hunt.catalogue import (
    BUGS,
    FUNCTION,
    HIDING,
    ID,
    PASS,
    PER_STUDENT,
    SHOWING,
    TENSORS,
    colleague_code,
    planted,
)
from autograder.engine.bug_hunt.checks import judge_fix, step_of
from autograder.engine.bug_hunt.rerun import PINS
from autograder.engine.probes.rerun import pin_value
from autograder.engine.reference import autograd_gradients, forward_values, run_setup, strip_hidden
from autograder.engine.tolerance import RTOL, max_difference, step_scale
from autograder.in_kernel.bug_hunt_rerun import run_again

NB = "ex6_bug_hunt"
SOURCE = nbformat.read(SOURCE_DIR / f"{NB}.ipynb", as_version=4)
SETUP = tuple(c.source for c in SOURCE.cells if grade_id(c).startswith(SETUP_PREFIX))
IDS = [f"someone-{i}" for i in range(400)]


def test_every_id_gets_three_bugs_two_that_show_and_one_that_hides():
    sets = collections.Counter(tuple(bug.key for bug in planted(text)) for text in IDS)
    assert len(sets) == len(list(itertools.combinations(SHOWING, 2))) * len(HIDING) == 12
    for keys in sets:
        assert len(keys) == PER_STUDENT and sum(k in SHOWING for k in keys) == 2 and sum(k in HIDING for k in keys) == 1
    assert min(sets.values()) > 400 / 12 / 3  # no set is rare
    assert planted("  Ada   LOVELACE ") == planted("ada lovelace") and planted("") == planted(None) == ()


def _run(backward_code: str, t: dict) -> dict:
    space = {"torch": torch, "F": torch.nn.functional, "TENSORS": tuple(k for k in t if k not in ("n", "Xb", "Yb"))}
    exec(backward_code, space)
    return space["backward_pass"](t)


@pytest.mark.parametrize("seed", [11, 12345, 987654321])
def test_each_bug_lands_far_outside_the_tolerance_and_its_fix_inside(seed):
    """On grading batches (fresh seeds), each bug left alone is at least 5 times the tolerance off, the course's pass
    at most 1/10 of it (measured margins: docs/design/bug-hunt.md); and what the bug's diagnosis expects (checks.STILL)
    is what the colleague's line gives."""
    namespace = run_setup(SETUP, seed)
    f, g = forward_values(namespace), autograd_gradients(namespace)
    t = {**{k: f[k] for k in TENSORS}, "n": namespace["n"], "Xb": f["Xb"], "Yb": f["Yb"]}
    right = _run(PASS, t)
    for key, bug in BUGS.items():
        step = STEP_BY_NAME[bug.gradient[1:]]
        scale = max(step_scale(step, f, {u: g[u] for u in step.upstream}), g[step.name].abs().max().item())
        units = lambda got: max_difference(got, g[step.name]) / (RTOL * scale)
        wrong = _run(with_bug(key), t)[bug.gradient]
        assert units(right[bug.gradient]) < 0.1 and units(wrong) > 5, (key, units(wrong))
        first, *_ = step_of(bug).mistakes.values()
        expected = first(f, {u: right["d" + u] for u in step.upstream})
        assert max_difference(expected, wrong) <= RTOL * scale, key


@pytest.mark.parametrize("seed", [101, 102])
def test_bugs_left_in_cost_their_own_fixes_and_no_right_line_is_blamed(seed):
    """The grader, on grading batches: any of a set's bugs left in, for every set, costs exactly those bugs' fixes,
    and no fix reads a right line as broken (with the aliased bug left in beside one further up, dbnmeani and dhprebn
    were: what they read is not the dbndiff the pass returns)."""
    namespace = run_setup(SETUP, seed)
    f = forward_values(namespace)
    t = {**{k: f[k] for k in TENSORS}, "n": namespace["n"], "Xb": f["Xb"], "Yb": f["Yb"]}
    for keys in {tuple(bug.key for bug in planted(text)) for text in IDS[:60]}:
        text = id_with(*keys)
        for left in itertools.chain.from_iterable(itertools.combinations(keys, r) for r in (1, 2, 3)):
            payload = {ID: wire.encode_text(text), FUNCTION: {"kind": "returned"}}
            report = wire.Report({**payload, **{k: wire.encode(v) for k, v in _run(with_bug(*left), t).items()}})
            for slot, key in enumerate(keys, 1):
                verdict = judge_fix(slot, report, namespace, seed, set())
                assert verdict.points == (0 if key in left else 2), (left, verdict.text())
                assert "broke_a_right_line" not in {getattr(line, "kind", "") for line in verdict.lines}, verdict.text()


@pytest.fixture(scope="module")
def notebook():
    """The notebook's setup, self-check helpers, bug hunt tools and the course's numerical_gradient, outside Jupyter."""
    namespace = dict(run_setup(SETUP, 2147483647))
    for cell_id in ["self_check_helpers", "bug_hunt_helpers"]:
        exec(strip_hidden(shared_cell(cell_id)), namespace)
    exec(next(c.source for c in SOURCE.cells if grade_id(c) == "answer_numerical_gradient"), namespace)
    return namespace


def said(namespace, code: str, **names) -> str:
    """What running ``code`` in the notebook prints (stdout and stderr), with ``names`` set first."""
    namespace.update(names)
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        exec(code, namespace)
    return out.getvalue() + err.getvalue()


def test_the_notebook_chooses_the_graders_bugs_and_prints_the_graders_pass(notebook):
    for text in IDS[:100]:
        assert notebook["_planted"](text) == [bug.gradient for bug in planted(text)]
    assert said(notebook, "show_colleague_pass()", BUG_HUNT_ID="ada.lovelace").strip() == colleague_code("ada.lovelace")
    assert "No BUG_HUNT_ID yet" in said(notebook, "show_colleague_pass()", BUG_HUNT_ID="")


def test_an_id_written_as_a_number_is_told_to_be_a_string(notebook):
    """A student number without quotes chooses no bugs (the grader reads a string): the checks say so, not "no id"."""
    said_here = [said(notebook, code, BUG_HUNT_ID=1234567) for code in ("show_colleague_pass()", "check_fix(1)")]
    for out in said_here + [said(notebook, "check_found()", BUG_HUNT_ID=1234567, buggy=["dC"])]:
        assert (
            'BUG_HUNT_ID = 1234567 is not a string, so it chooses no bugs: write it in quotes, BUG_HUNT_ID = "1234567"'
            in out
        )
        assert "no BUG_HUNT_ID yet" not in out.replace("No", "no"), out


def test_the_chinese_notebook_prints_the_same_pass_in_its_words(notebook):
    """The colleague's docstring and comments in the edition's words, every line of code as the grader's."""
    chinese = nbformat.read(REPO / "editions" / "zh" / "backprop_ninja" / f"{NB}.ipynb", as_version=4)
    namespace = dict(notebook)
    exec(strip_hidden(next(c.source for c in chinese.cells if grade_id(c) == "bug_hunt_helpers")), namespace)
    shown = said(namespace, "show_colleague_pass()", BUG_HUNT_ID="ada.lovelace").strip().split("\n")
    english = colleague_code("ada.lovelace").split("\n")
    words = [i for i, (a, b) in enumerate(zip(shown, english, strict=True)) if a != b]
    assert [english[i].strip()[:3] for i in words] == ['"""', "# c", "# s", "# B", "# f"]  # the docstring, 4 comments
    assert "交叉熵损失" in shown[words[1]] and "批归一化层" in shown[words[3]]


@pytest.mark.parametrize("edition", ["ru", "zh"])
def test_a_planted_lines_comment_is_in_the_editions_words_too(notebook, edition):
    """A bug's line may say what it means to do (# clip each example's loss at 3.5): in the edition's words too."""
    commented = [key for key, bug in BUGS.items() if "#" in bug.wrong]
    assert commented  # (else this test checks nothing)
    translated = nbformat.read(REPO / "editions" / edition / "backprop_ninja" / f"{NB}.ipynb", as_version=4)
    namespace = dict(notebook)
    exec(strip_hidden(next(c.source for c in translated.cells if grade_id(c) == "bug_hunt_helpers")), namespace)
    for key in commented:
        shown = said(namespace, "show_colleague_pass()", BUG_HUNT_ID=id_with(key))
        comments = [line.split("# ", 1)[1] for line in shown.splitlines() if "# " in line]
        assert len(comments) == 5 and all(not comment.isascii() for comment in comments), comments


def _wrong_rows(namespace, code: str, point: str) -> list:
    exec(code, namespace)
    table = said(namespace, f"check_gradients(backward_pass, {point})")
    return [row.split("|")[1].strip() for row in table.splitlines() if row.startswith("✘")]


@pytest.mark.parametrize("key", BUGS)
def test_the_colleagues_point_hides_exactly_the_hiding_bugs(notebook, key):
    """With the student's checker, at colleague_point a showing bug is the first wrong gradient and a hiding one shows
    nothing; at the notebook's own point (test_point()) every bug is the first wrong gradient."""
    assert _wrong_rows(notebook, PASS, "colleague_point") == _wrong_rows(notebook, PASS, "test_point()") == []
    at_colleague = _wrong_rows(notebook, with_bug(key), "colleague_point")
    assert at_colleague[:1] == ([] if key in HIDING else [BUGS[key].gradient])
    assert _wrong_rows(notebook, with_bug(key), "test_point()")[:1] == [BUGS[key].gradient]


def test_check_entries_says_where_a_gradient_differs(notebook):
    exec(with_bug("epsilon"), notebook)
    assert "1 of 64 entries differ" in said(notebook, 'check_entries(backward_pass, test_point(), "dbnvar")')
    exec(with_bug("not_accumulated"), notebook)
    found = said(notebook, 'check_entries(backward_pass, test_point(), "dC")')
    counts = torch.bincount(notebook["Xb"].view(-1), minlength=27)
    assert f"rows {sorted(i for i in range(27) if counts[i] > 1)[:16]}" in found, found


def test_the_visible_checks_say_what_the_grader_says(notebook):
    text = "ada.lovelace"
    keys = [bug.key for bug in planted(text)]
    exec(PASS, notebook)
    assert all(said(notebook, f"check_fix({k})", BUG_HUNT_ID=text).startswith("✔") for k in (1, 2, 3))
    exec(with_bug(keys[1]), notebook)
    assert said(notebook, "check_fix(2)").startswith("✘ bug 2 of 3: not fixed yet")
    exec(with_bug("clipped_loss"), notebook)  # a bug further up: the fixes below it are right for what it gives them
    assert "right for the gradients it is computed from" in said(
        notebook, "check_fix(2)", BUG_HUNT_ID=id_with("clipped_loss")
    )
    notebook["BUG_HUNT_ID"] = text
    exec(pass_with({BUGS["aliased"].right: "dhprebn = dbndiff.view_as(dbndiff)"}), notebook)
    aliased = said(notebook, "check_fix(3)")  # not one of this id's bugs: a right line broken, named as any other
    assert aliased.startswith("✘ bug 3 of 3: wrong now: dbndiff") and "memory" not in aliased, aliased
    assert said(notebook, "check_found()", buggy=[b.gradient for b in planted(text)]).startswith("✔ buggy names 3")
    assert "planted 3 bugs" in said(notebook, "check_found()", buggy=["dC"])
    assert "not gradients of backward_pass" in said(notebook, "check_found()", buggy=["dloss", "dC", "dW1"])
    assert said(notebook, "check_numerical_gradient()").startswith("✔")
    exec(
        "def numerical_gradient(f, x, h=1e-6):\n" + "\n".join("    " + line for line in ONE_SIDED.split("\n")), notebook
    )
    assert "looks one-sided" in said(notebook, "check_numerical_gradient()")
    over_h = CENTRAL_FLAT.replace("(2 * h)", "h") + ".reshape(x.shape)"  # as the grader's case checker_over_h
    exec("def numerical_gradient(f, x, h=1e-6):\n" + "\n".join("    " + line for line in over_h.split("\n")), notebook)
    assert said(notebook, "check_numerical_gradient()").startswith("✘ numerical_gradient gives twice the gradient")


def test_the_visible_checks_mark_a_right_line_broken_in_a_fixs_part(notebook):
    """As the grader: a line without a bug made wrong costs the fix whose part of the pass holds it, and names the
    gradient; a pass rewritten in other right forms keeps every fix."""
    text = id_with("bessel", "not_accumulated", "epsilon")  # bug 1 is dbnvar, whose part holds dW2
    exec(pass_with({"dW2 = h.T @ dlogits": "dW2 = h.T @ dlogits / n"}), notebook)
    assert said(notebook, "check_fix(1)", BUG_HUNT_ID=text).startswith("✘ bug 1 of 3: wrong now: dW2")
    assert said(notebook, "check_fix(2)").startswith("✔") and said(notebook, "check_fix(3)").startswith("✔")
    exec(pass_with(REWRITTEN), notebook)
    assert all(said(notebook, f"check_fix({k})").startswith("✔") for k in (1, 2, 3))


def test_bugs_left_in_never_show_as_right_lines_broken(notebook):
    """Any of a set's bugs left in, for every set: each line under a fix says ✔ or "not fixed yet", never "wrong now"
    (the aliased bug returns dbndiff changed after dbnmeani and dhprebn read it: those two are not judged)."""
    for keys in {tuple(bug.key for bug in planted(text)) for text in IDS[:60]}:
        text = id_with(*keys)
        for left in itertools.chain.from_iterable(itertools.combinations(keys, r) for r in (1, 2, 3)):
            exec(with_bug(*left), notebook)
            for slot in (1, 2, 3):
                said_here = said(notebook, f"check_fix({slot})", BUG_HUNT_ID=text)
                assert (keys[slot - 1] in left) == said_here.startswith(f"✘ bug {slot} of 3: not fixed yet"), (
                    left,
                    said_here,
                )
                assert "wrong now" not in said_here, (left, said_here)


def test_a_table_checked_with_a_checker_that_fails_part_1_says_so_first(notebook):
    """A one-sided numerical_gradient makes check_gradients' table mark right gradients (dprobs, dbnvar) ✘ at the
    notebook's point, and its summary would call the first of them a bug: it says first that the checker is off."""
    exec(PASS, notebook)
    exec(next(c.source for c in SOURCE.cells if grade_id(c) == "answer_numerical_gradient"), notebook)  # the course's
    right = said(notebook, "check_gradients(backward_pass, test_point())")
    assert right.startswith("Every gradient agrees with the numbers"), right
    exec(
        "def numerical_gradient(f, x, h=1e-6):\n" + "\n".join("    " + line for line in ONE_SIDED.split("\n")), notebook
    )
    table = said(notebook, "check_gradients(backward_pass, test_point())")
    assert table.startswith(
        "Your numerical_gradient does not pass its check in Part 1 yet, so these numbers cannot be trusted: fix it "
        "first. "
    ), table


def test_check_found_counts_and_names_as_the_grader_reads_names(notebook):
    """The grader takes "dC", "C", " dC ", "C.grad" and "dL/dC" for one gradient: the line counts them so, and lists as
    unknown only the names that are no gradient at all."""
    notebook["BUG_HUNT_ID"] = "ada.lovelace"
    out = said(notebook, "check_found()", buggy=["dC", "C", "dbnvar"])
    assert out.startswith("✘ buggy names 2 gradients, and your colleague planted 3 bugs"), out
    out = said(notebook, "check_found()", buggy=["C.grad", "dL/dC", "bnvar.grad"])
    assert out.startswith("✘ buggy names 2 gradients, and your colleague planted 3 bugs"), out
    out = said(notebook, "check_found()", buggy=["dbngain.grad", "bndiff2.grad", "grad_C"])
    assert out.startswith("✔ buggy names 3 gradients"), out
    out = said(notebook, "check_found()", buggy=["bnvar", "dloss", "dC"])
    assert out.startswith("✘ buggy: not gradients of backward_pass: ['dloss']"), out


def _defined(code: str):
    """backward_pass defined from ``code`` as a notebook cell defines it: with its source where inspect finds it."""
    name = f"<cell {zlib.crc32(code.encode())}>"
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    space = {"torch": torch, "F": torch.nn.functional, "TENSORS": TENSORS}
    exec(compile(code, name, "exec"), space)
    return space["backward_pass"]


def test_a_pass_that_raises_is_run_again_line_by_line_on_random_gradients():
    """The kernel's side (in_kernel/bug_hunt_rerun.py): the line that raised leaves a random gradient of its shape in
    its place, drawn as the grader draws it, and the lines after it compute from that; a pass it cannot read line by
    line, or whose return then fails, is left to the call's error."""
    namespace = run_setup(SETUP, 101)
    f = forward_values(namespace)
    t = {**{k: f[k] for k in TENSORS}, "n": namespace["n"], "Xb": f["Xb"], "Yb": f["Yb"]}
    gradients, entry = run_again(_defined(pass_with({"dh = dlogits @ W2.T": "dh = dlogits @ W2"})), t, 101)
    assert set(entry["raised"]) == {"dh"} and entry["pinned"] == [] and "dh" not in gradients
    assert entry["raised"]["dh"]["line"] == "dh = dlogits @ W2" and entry["raised"]["dh"]["type"] == "RuntimeError"
    pin = pin_value(101, PINS, "dh", tuple(f["h"].shape))
    assert torch.allclose(gradients["dhpreact"], (1.0 - f["h"] ** 2) * pin)
    assert torch.equal(gradients["dW2"], _run(PASS, t)["dW2"])  # a line that does not read dh, as it was
    renamed = "def backward_pass(t):\n    x = t['n'] / 0\n    return {'dlogprobs': x}"
    closure = (
        "def outer():\n    k = 1\n    def backward_pass(t):\n        return {'dC': k / 0}\n    return backward_pass\n"
    )
    assert run_again(_defined(renamed), t, 101) is None
    assert run_again(_defined(closure + "backward_pass = outer()"), t, 101) is None


def test_the_visible_checks_judge_one_tensor_not_equal_values(notebook):
    """As the grader (cases_ex6's dhprebn_float_and_dbnvar_without_brackets, broke_dhprebn_mean_path): dbndiff that is
    dhprebn's very tensor is not right for a dbndiff2 made far too large, however near its rule it comes; a dhprebn
    that is a copy of dbndiff, left without its `+=` line, is judged on the dbndiff it read."""
    text = id_with("bessel", "aliased", "epsilon")
    wrong_power = {BUGS["epsilon"].right: "dbnvar = -0.5 * (bnvar + 1e-5) ** -3 / 2 * dbnvar_inv"}
    exec(pass_with({BUGS["aliased"].right: "dhprebn = dbndiff.float()", **wrong_power}), notebook)
    slot = 1 + [bug.key for bug in planted(text)].index("aliased")
    assert said(notebook, f"check_fix({slot})", BUG_HUNT_ID=text).startswith(f"✘ bug {slot} of 3: not fixed yet")
    exec(pass_with(wrong_power), notebook)
    assert said(notebook, f"check_fix({slot})").startswith("✔")
    exec(pass_with({"dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)": "pass"}), notebook)
    assert "wrong now: dhprebn" in said(notebook, f"check_fix({slot})")


def test_the_visible_checks_see_no_fix_below_a_gradient_left_zeros(notebook):
    """As the grader (cases_ex6's c_zeroed_loss_gradient): with dlogprobs left zeros, every bug below it gives what its
    fix gives, so the fixes below do not show and the line under them says so."""
    text = id_with("zero_bias", avoid=("clipped_loss",))
    keys = [b.key for b in planted(text)]
    exec(with_bug(*keys).replace(BUGS["clipped_loss"].right, "pass"), notebook)
    assert keys[1] != "aliased"  # (dbndiff left dhprebn's very tensor is "not fixed yet" whatever it is computed from)
    assert "are all zeros" in said(notebook, "check_fix(2)", BUG_HUNT_ID=text)
    assert all(said(notebook, f"check_fix({slot})").startswith("✘") for slot in (1, 2, 3))


def _pasted(namespace, code: str) -> None:
    """backward_pass defined in the notebook as a cell defines it: its source where inspect finds it."""
    name = f"<cell {zlib.crc32(code.encode())}>"
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    exec(compile(code, name, "exec"), namespace)


def test_a_tensor_no_later_line_changed_is_judged_as_what_its_readers_read(notebook):
    """As the grader (cases_ex6's alias_kept_and_mean_path_deleted): `dhprebn = dbndiff` with its `+=` line deleted
    makes dbndiff right and dhprebn wrong; the two are one tensor, but no later line changed it, so dhprebn is judged
    on it (it was skipped, and every fix said ✔); with the `+=` line kept, the bug stays the aliased fix's alone."""
    text = id_with("bessel", "aliased", "epsilon")
    slot = 1 + [bug.key for bug in planted(text)].index("aliased")
    deleted = {
        BUGS["aliased"].right: "dhprebn = dbndiff",
        "dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)": "pass",
    }
    _pasted(notebook, pass_with(deleted))
    assert "wrong now: dhprebn" in said(notebook, f"check_fix({slot})", BUG_HUNT_ID=text)
    _pasted(notebook, with_bug("aliased"))
    assert said(notebook, f"check_fix({slot})").startswith(f"✘ bug {slot} of 3: not fixed yet")
    assert all(said(notebook, f"check_fix({k})").startswith("✔") for k in (1, 2, 3) if k != slot)


RAISING = [  # cases_ex6's students whose pass raises on any batch: one line, in one fix's part (or two, in two)
    "raises_in_the_first_fix",
    "raises_in_two_fixes",
    "raises_on_a_line_without_a_bug",
    "raises_where_dbndiff_is_first_written",
    "dlogprobs_gradient_clipped_and_dC_raises",
    "dC_made_in_the_shape_of_demb",
]


@pytest.mark.parametrize("case", RAISING)
def test_a_line_that_raises_is_named_under_the_fix_whose_part_holds_it_as_the_grader_does(notebook, case):
    """The line under each fix said "the backward pass raised" for all three, where the grader runs the pass again
    line by line and takes points from the fix whose part holds the line alone: the visible check now does the same
    (the same cells ✘ as the grader's table, and the raising one names the line)."""
    from support.cases_ex6 import MISTAKES

    changes, expected = MISTAKES[case]
    _pasted(notebook, changes["answer_backward_pass"])
    for slot in (1, 2, 3):
        line = said(notebook, f"check_fix({slot})", BUG_HUNT_ID=changes["answer_id"].split("'")[1])
        assert line.startswith("✘") == (f"test_bug_{slot}" in expected), (slot, line)
        kind = expected.get(f"test_bug_{slot}", ("",))[0]
        assert ("the backward pass raised" in line) == (kind in ("raised_error", "broke_a_right_line")), (slot, line)


def test_a_raise_of_the_pass_itself_is_not_run_past():
    """`raise NotImplementedError()` left at the top of the pasted pass: no call gets past it, so the run again line
    by line gives nothing to judge (the lines below it earned the fixes)."""
    namespace = run_setup(SETUP, 101)
    f = forward_values(namespace)
    t = {**{k: f[k] for k in TENSORS}, "n": namespace["n"], "Xb": f["Xb"], "Yb": f["Yb"]}
    head, body = PASS.split("\n", 1)
    assert run_again(_defined(f"{head}\n    raise NotImplementedError()\n{body}"), t, 101) is None


def test_a_checker_whose_cell_has_not_run_is_told_to_run_it(notebook):
    """After a restart of the kernel, the cells above run again but not Part 1's: not "numerical_gradient raised
    NameError: name 'numerical_gradient' is not defined"."""
    namespace = {k: v for k, v in notebook.items() if k != "numerical_gradient"}
    exec(strip_hidden(shared_cell("bug_hunt_helpers")), namespace)  # its functions read this namespace
    assert (
        said(namespace, "check_numerical_gradient()")
        == "✘ numerical_gradient is not defined: run its cell (Part 1) first\n"
    )
    exec("def numerical_gradient(f, x, h=1e-6):\n    return undefined_name", namespace)  # its own NameError stays one
    assert said(namespace, "check_numerical_gradient()").startswith(
        "✘ numerical_gradient raised NameError: name 'undefined"
    )

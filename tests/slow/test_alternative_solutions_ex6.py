"""The audit of tests/slow/test_alternative_solutions.py for Exercise 6, the bug hunt: other correct checkers, fixes and
lists of names, which must keep every point, and realistic mistakes (a checker that does not put an entry back, a fix
that leaves the bug half in), which must lose exactly the graded cells named. Beyond tests/support/cases_ex6.py, whose
helpers build the students. Cases the grader gets wrong are marked xfail.

Graded in process (tests/support/in_process.py), with the slow tier.
"""

import pytest
from support.audit import params, release
from support.cases_ex6 import BUGS, NB, PASS, answers, build, checker, id_with, pass_with, slot
from support.in_process import autograde, source_notebook

from autograder.engine.bug_hunt.catalogue import planted

CLONES = """grad = torch.zeros_like(x)
for i in range(x.numel()):
    xp, xm = x.clone(), x.clone()
    xp.view(-1)[i] += h
    xm.view(-1)[i] -= h
    grad.view(-1)[i] = (f(xp) - f(xm)) / (2 * h)
return grad"""
NDINDEX = """import numpy as np
grad = torch.zeros_like(x)
for idx in np.ndindex(*x.shape):
    old = x[idx].item()
    x[idx] = old + h
    fp = f(x).item()
    x[idx] = old - h
    fm = f(x).item()
    x[idx] = old
    grad[idx] = (fp - fm) / (2 * h)
return grad"""
ADD_SUBTRACT = """grad = torch.zeros_like(x)
flat = x.view(-1)
with torch.no_grad():
    for i in range(flat.numel()):
        flat[i] += h
        up = float(f(x))
        flat[i] -= 2 * h
        down = float(f(x))
        flat[i] += h  # back where it was, up to rounding
        grad.view(-1)[i] = (up - down) / (2 * h)
return grad"""
FLOAT32_RESULT = """grad = torch.zeros(x.shape)  # float32: rounds the result, within the accuracy asked
for i in range(x.numel()):
    e = torch.zeros(x.shape).view(-1)
    e[i] = h
    e = e.view(x.shape)
    grad.view(-1)[i] = (f(x + e) - f(x - e)) / (2 * h)
return grad"""
FLOAT32_X = """x = x.float()
grad = torch.zeros_like(x)
for i in range(x.numel()):
    e = torch.zeros_like(x).view(-1)
    e[i] = h
    e = e.view(x.shape)
    grad.view(-1)[i] = (f(x + e) - f(x - e)) / (2 * h)
return grad"""
NOT_PUT_BACK = ADD_SUBTRACT.replace("        flat[i] += h  # back where it was, up to rounding\n", "")
OLD_A_VIEW = """grad = torch.zeros_like(x)
flat = x.view(-1)
for i in range(flat.numel()):
    old = flat[i]  # the solution without .item(): a view of x, not a number, which moves with x
    flat[i] = old + h
    up = f(x).item()
    flat[i] = old - h
    down = f(x).item()
    flat[i] = old
    grad.view(-1)[i] = (up - down) / (2 * h)
return grad"""
ALL_AT_ONCE = "return (f(x + h) - f(x - h)) / (2 * h) * torch.ones_like(x)"
ROWS = """grad = torch.zeros_like(x)
for i in range(x.numel()):
    old = x[i].item()
    x[i] = old + h
    up = f(x).item()
    x[i] = old - h
    down = f(x).item()
    x[i] = old
    grad[i] = (up - down) / (2 * h)
return grad"""

# more correct alternatives of every line a bug can be on
LINES = [
    {
        BUGS["clipped_loss"].right: "dlogprobs[torch.arange(n), Yb] = -1 / n",
        BUGS["zero_bias"].right: "dbngain = (bndiff * bnvar_inv * dhpreact).sum(0, keepdim=True)",
        BUGS["aliased"].right: "dhprebn = dbndiff.detach().clone()",
        BUGS["epsilon"].right: "dbnvar = -0.5 * (bnvar + 1e-5) ** (-3 / 2) * dbnvar_inv",
        BUGS["bessel"].right: "dbndiff2 = dbnvar / (n - 1) * torch.ones_like(bndiff2)",
        BUGS["not_accumulated"].right: "dC.index_put_((Xb,), demb, accumulate=True)",
    },
    {
        BUGS["clipped_loss"].right: "dlogprobs[range(n), Yb] = -1.0 / logprobs.shape[0]",
        BUGS["zero_bias"].right: "dbngain = torch.sum(bnraw * dhpreact, 0, keepdim=True)",
        BUGS["aliased"].right: "dhprebn = dbndiff + 0",
        BUGS["epsilon"].right: "dbnvar = -dbnvar_inv / (2 * (bnvar + 1e-5) ** 1.5)",
        BUGS["bessel"].right: "dbndiff2 = 1 / (n - 1) * dbnvar.expand(n, -1)",
        BUGS["not_accumulated"].right: "dC = dC.scatter_add(0, Xb.view(-1, 1).expand(-1, C.shape[1]), "
        "demb.view(-1, C.shape[1]))",
    },
    {
        BUGS["aliased"].right: "dhprebn = torch.zeros_like(dbndiff)\ndhprebn += dbndiff",
        BUGS["not_accumulated"].right: "for i in range(n):\n    for j in range(Xb.shape[1]):\n"
        "        dC[Xb[i, j]] += demb[i, j]",
        BUGS["epsilon"].right: "dbnvar = -0.5 * bnvar_inv / (bnvar + 1e-5) * dbnvar_inv",
    },
]
IDS = id_with("clipped_loss", "aliased", "zero_bias"), id_with("bessel", "not_accumulated", "epsilon")


def names(text: str, form=lambda gradients: repr(gradients)) -> dict:
    return {"answer_found": "buggy = " + form([bug.gradient for bug in planted(text)])}


ALTERNATIVES = {
    **{
        f"lines_{i}_{j}": answers(text, answer_backward_pass=pass_with(lines))
        for i, lines in enumerate(LINES)
        for j, text in enumerate(IDS)
    },
    "checker_clones": answers(IDS[0], **checker(CLONES)),
    "checker_clones_h_1e4": answers(IDS[1], **checker(CLONES, default="1e-4")),
    "checker_ndindex": answers(IDS[0], **checker(NDINDEX, default="1e-5")),
    "checker_add_subtract": answers(IDS[1], **checker(ADD_SUBTRACT)),
    "checker_float32_result": answers(IDS[0], **checker(FLOAT32_RESULT)),
    "prints_in_the_pass": answers(
        IDS[1], answer_backward_pass=PASS.replace("    # cross", "    print(n)\n    # cross")
    ),
    "checks_in_the_pass_cell": answers(
        IDS[0], answer_backward_pass=PASS + "\n\n\ncheck_gradients(backward_pass, colleague_point)"
    ),
    # a judges' round (December 2026): the clip's threshold raised out of reach, ε's power written out, dC by einsum
    # over a one-hot added into the zeros; Bessel's ones by repeat, the alias by a product, dbngain from bndiff's parts
    "lines_judges_a": answers(
        IDS[1],
        answer_backward_pass=pass_with(
            {
                BUGS["epsilon"].right: "dbnvar = -0.5 * dbnvar_inv / ((bnvar + 1e-5) * torch.sqrt(bnvar + 1e-5))",
                BUGS["not_accumulated"].right: "dC += torch.einsum('nkv,nke->ve', F.one_hot(Xb, C.shape[0]).float(), "
                "demb)",
                BUGS["bessel"].right: "dbndiff2 = dbnvar.repeat(n, 1) / (n - 1)",
            }
        ),
    ),
    "lines_judges_b": answers(
        IDS[0],
        answer_backward_pass=pass_with(
            {
                BUGS["clipped_loss"].right: "dlogprobs[range(n), Yb] = -1.0 / n * (-logprobs[range(n), Yb] < "
                "float('inf'))",
                BUGS["aliased"].right: "dhprebn = 1.0 * dbndiff",
                BUGS["zero_bias"].right: "dbngain = (dhpreact * (hprebn - bnmeani) * bnvar_inv).sum(0, keepdim=True)",
            }
        ),
    ),
    "names_reversed": answers(IDS[0], **names(IDS[0], lambda g: repr(g[::-1]))),
    "names_split": answers(IDS[1], **names(IDS[1], lambda g: repr(" ".join(g)) + ".split()")),
}

_ALIASED, _SHOWN = id_with("aliased", "epsilon", "bessel"), id_with("clipped_loss", "zero_bias", "not_accumulated")


def wrong_fix(text: str, key: str, line: str) -> tuple:
    """A student of the id ``text`` whose fix of the bug ``key`` is ``line``: it costs that bug's cell only."""
    return answers(text, answer_backward_pass=pass_with({BUGS[key].right: line})), [slot(text, key)]


# student -> (answer cells changed, graded cells that must lose points)
MISTAKES = {
    "checker_not_put_back": (answers(_SHOWN, **checker(NOT_PUT_BACK)), ["test_checker"]),
    "checker_old_is_a_view": (answers(_SHOWN, **checker(OLD_A_VIEW)), ["test_checker"]),
    "checker_in_float32": (answers(_SHOWN, **checker(FLOAT32_X)), ["test_checker"]),
    "checker_all_at_once": (answers(_SHOWN, **checker(ALL_AT_ONCE)), ["test_checker"]),
    "checker_first_index_only": (answers(_SHOWN, **checker(ROWS)), ["test_checker"]),
    "aliased_detach": wrong_fix(_ALIASED, "aliased", "dhprebn = dbndiff.detach()"),
    "aliased_slice": wrong_fix(_ALIASED, "aliased", "dhprebn = dbndiff[:]"),
    "epsilon_exponent_sign": wrong_fix(_ALIASED, "epsilon", "dbnvar = (-0.5 * (bnvar + 1e-5) ** 1.5) * dbnvar_inv"),
    "bessel_not_expanded": wrong_fix(_ALIASED, "bessel", "dbndiff2 = (1.0 / (n - 1)) * dbnvar"),
    "clipped_loss_without_n": wrong_fix(_SHOWN, "clipped_loss", "dlogprobs[range(n), Yb] = -1.0"),
    "zero_bias_keepdim": wrong_fix(_SHOWN, "zero_bias", "dbngain = (bnraw * dhpreact).sum(0)"),
    "not_accumulated_per_row": wrong_fix(_SHOWN, "not_accumulated", "for k in range(n):\n    dC[Xb[k]] += demb[k]"),
    # the tensor the aliasing line binds, not the one it lets the next line change
    "names_the_aliased_line": (
        answers(_ALIASED, **names(_ALIASED, lambda g: repr(["dhprebn" if x == "dbndiff" else x for x in g]))),
        ["test_found"],
    ),
}
XFAIL = {}


@pytest.fixture(scope="module")
def graded6():
    rel = release(NB)
    src = source_notebook(NB)
    class_ = {"solution": build(rel, src, {})}
    for student, changes in ALTERNATIVES.items():
        class_[student] = build(rel, src, changes)
    for student, (changes, _) in MISTAKES.items():
        class_[student] = build(rel, src, changes)
    return autograde(NB, class_)


@pytest.mark.parametrize("student", params(["solution", *ALTERNATIVES], XFAIL))
def test_ex6_alternative_keeps_every_point(graded6, student):
    graded = graded6[student]
    assert graded.lost() == [], {c: m for c, m in graded.messages.items() if not m.startswith("✔")}


@pytest.mark.parametrize("student", params(MISTAKES, XFAIL))
def test_ex6_mistake_loses_exactly_its_cells(graded6, student):
    _, cells = MISTAKES[student]
    graded = graded6[student]
    assert graded.lost() == sorted(cells), {c: (graded.points[c], m) for c, m in graded.messages.items()}

"""Exercise 6's known students: bugs left in, wrong fixes, wrong names, wrong checkers, alternatives, cheats, copiers.

One table of cases, graded two ways: every case in process (tests/fast/test_ex6_in_process.py), and a few
representative ones through the real nbgrader pipeline and ``backprop-ninja grade`` (tests/slow/test_ex6_pipeline.py).
Each student's bugs follow from their id, so every case picks an id whose set holds the bugs it needs (``id_with``).
"""

import itertools

from autograder.authoring.submissions import solved
from autograder.engine.bug_hunt.catalogue import BUGS, GRADIENTS, PASS, planted, section

NB = "ex6_bug_hunt"
POINTS = {"test_checker": 3, "test_found": 3, "test_bug_1": 2, "test_bug_2": 2, "test_bug_3": 2}
FIXES = ["test_bug_1", "test_bug_2", "test_bug_3"]


def id_with(*keys, avoid=()) -> str:
    """The first id ``student-<i>`` whose bugs include every one of ``keys`` and none of ``avoid``."""
    for i in itertools.count():
        found = {bug.key for bug in planted(f"student-{i}")}
        if set(keys) <= found and not found & set(avoid):
            return f"student-{i}"


def slot(text: str, key: str) -> str:
    """The graded cell that judges the bug ``key`` of the id ``text``."""
    return f"test_bug_{[bug.key for bug in planted(text)].index(key) + 1}"


def owner(text: str, gradient: str) -> str:
    """The graded cell of the fix whose part of the pass holds ``gradient``, for the id ``text``."""
    bugs = [bug.gradient for bug in planted(text)]
    return next(f"test_bug_{k}" for k in range(1, len(bugs) + 1) if gradient in section(bugs, k, GRADIENTS))


def pass_with(lines: dict) -> str:
    """The course's backward_pass with each line ``right`` of ``lines`` replaced by ``lines[right]`` (same indent)."""
    out = []
    for line in PASS.split("\n"):
        new = lines.get(line.strip())
        indent = line[: len(line) - len(line.lstrip())]
        out += [line] if new is None else [indent + part for part in new.split("\n")]
    return "\n".join(out)


def with_bug(key: str, *more: str) -> str:
    """The course's backward_pass with these bugs of the catalogue left in."""
    return pass_with({BUGS[k].right: BUGS[k].wrong for k in (key, *more)})


def named(text: str) -> str:
    return f"buggy = {[bug.gradient for bug in planted(text)]!r}"


def answers(text: str, **changes) -> dict:
    """The answer cells of a student with the id ``text``: the course's answers, but ``changes`` (grade_id -> code)."""
    return {"answer_id": f"BUG_HUNT_ID = {text!r}", "answer_found": named(text), **changes}


ONE_SIDED = """grad = torch.zeros_like(x)
for i in range(x.numel()):
    step = torch.zeros_like(x).view(-1)
    step[i] = h
    grad.view(-1)[i] = (f(x + step.view(x.shape)) - f(x)) / h
return grad"""
CENTRAL_FLAT = """xs, grad = x.reshape(-1), []
for i in range(xs.numel()):
    e = torch.zeros_like(xs)
    e[i] = h
    grad.append((f((xs + e).reshape(x.shape)) - f((xs - e).reshape(x.shape))) / (2 * h))
return torch.stack(grad)"""


WHOLE = "whole:"  # a change of the whole cell, def line included: whole:<grade_id> -> its source


def checker(body: str, default: str = "1e-6") -> dict:
    """The cell of numerical_gradient with this body, and this default step in its def line."""
    source = f"def numerical_gradient(f, x, h={default}):\n" + "\n".join("    " + line for line in body.split("\n"))
    return {WHOLE + "answer_numerical_gradient": source}


def build(release, source, changes: dict, extra_cells=()):
    """The release solved with the course's answers but ``changes``: grade_id -> the code in place of its stub, or
    ``WHOLE + grade_id`` -> the cell's whole source."""
    whole = {k.removeprefix(WHOLE): v for k, v in changes.items() if k.startswith(WHOLE)}
    nb = solved(release, source, {k: v for k, v in changes.items() if not k.startswith(WHOLE)}, extra_cells)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") in whole:
            cell.source = whole[cell.metadata["nbgrader"]["grade_id"]]
    return nb


# case -> (answer cells changed, {graded cell that must lose points: (diagnosis kind, words its message contains)})
MISTAKES = {}
for key in BUGS:  # each bug left in its fix costs its own cell, with its own words
    text = id_with(key)
    MISTAKES[f"still_{key}"] = (
        answers(text, answer_backward_pass=with_bug(key)),
        {slot(text, key): (key, "still")},
    )
_TEXT = id_with("not_accumulated", "zero_bias", "bessel")
MISTAKES.update(
    {
        "dC_flat_still_overwrites": (
            answers(
                _TEXT,
                answer_backward_pass=pass_with(
                    {BUGS["not_accumulated"].right: "dC[Xb.view(-1)] += demb.view(-1, C.shape[1])"}
                ),
            ),
            {slot(_TEXT, "not_accumulated"): ("not_accumulated", "repeated indices")},
        ),
        "dbngain_divided_back": (
            answers(
                _TEXT,
                answer_backward_pass=pass_with(
                    {BUGS["zero_bias"].right: "dbngain = ((hpreact - bnbias) * dhpreact).sum(0, keepdim=True)"}
                ),
            ),
            {slot(_TEXT, "zero_bias"): ("other_tensor", "dbngain has a factor bngain too many")},  # (h-mist5)
        ),
        "dbndiff2_n_plus_1": (
            answers(
                _TEXT,
                answer_backward_pass=pass_with(
                    {BUGS["bessel"].right: "dbndiff2 = (1.0 / (n + 1)) * torch.ones_like(bndiff2) * dbnvar"}
                ),
            ),
            {slot(_TEXT, "bessel"): ("bessel", "is it divided by n+1 where the variance's n-1 belongs?")},  # (h-mist5)
        ),
    }
)
_ALIAS = id_with("aliased", "epsilon")
MISTAKES["dhprebn_a_view_of_dbndiff"] = (
    answers(_ALIAS, answer_backward_pass=pass_with({BUGS["aliased"].right: "dhprebn = dbndiff.view_as(dbndiff)"})),
    {slot(_ALIAS, "aliased"): ("aliased", "shares dbndiff's memory")},
)
for _name, _line in {"detach": "dhprebn = dbndiff.detach()", "slice": "dhprebn = dbndiff[:]"}.items():
    MISTAKES[f"dhprebn_{_name}_of_dbndiff"] = (  # the words name no line the student did not write
        answers(_ALIAS, answer_backward_pass=pass_with({BUGS["aliased"].right: _line})),
        {slot(_ALIAS, "aliased"): ("aliased", "shares dbndiff's memory (as it does after `=`, .detach(), [:]")},
    )
MISTAKES["dbnvar_square_root"] = (
    answers(
        _ALIAS,
        answer_backward_pass=pass_with(
            {BUGS["epsilon"].right: "dbnvar = (-0.5 * (bnvar + 1e-5) ** -0.5) * dbnvar_inv"}
        ),
    ),
    # ("entries wrong" before)
    {slot(_ALIAS, "epsilon"): ("power_rule", "dbnvar keeps the exponent of the forward pass")},
)
_LEFT_BESSEL = {BUGS["bessel"].right: BUGS["bessel"].wrong}
# a line that had no planted bug, broken while fixing the others: the fix whose part of the pass holds it loses its
# points (the values' share of them for a shape), in the words of its own step; the other fixes keep theirs
_NEW = id_with("bessel", "not_accumulated", "epsilon")
_HEAD = "is wrong, and its line had no planted bug"
BROKEN_LINES = {
    "broke_dW2_over_n": ({"dW2 = h.T @ dlogits": "dW2 = h.T @ dlogits / n"}, "dW2", "n = 32 times too small"),
    "broke_tanh_derivative": ({"dhpreact = (1.0 - h**2) * dh": "dhpreact = (1.0 - h) * dh"}, "dhpreact", "tanh"),
    "broke_demb_halved": (
        {"demb = dembcat.view(emb.shape)": "demb = dembcat.view(emb.shape) * 0.5"},
        "demb",
        "half the right value",
    ),
    "broke_dbnbias_keepdim": (
        {"dbnbias = dhpreact.sum(0, keepdim=True)": "dbnbias = dhpreact.sum(0)"},
        "dbnbias",
        "keepdim",
    ),
    "broke_the_return": ({"demb=demb, dC=dC)": "dC=dC)"}, "demb", "backward_pass returns no demb"),
    "aliased_where_no_bug_was": ({BUGS["aliased"].right: "dhprebn = dbndiff"}, "dbndiff", "entries wrong"),
    "broke_dcounts_path": (
        {"dcounts += torch.ones_like(counts) * dcounts_sum": "pass"},
        "dcounts",
        "the path through counts_sum is missing",
    ),
    # dhprebn left equal to dbndiff, a tensor of its own: judged on the dbndiff it read (once taken for `dhprebn =
    # dbndiff` by its equal values, and skipped)
    "broke_dhprebn_mean_path": (
        {"dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)": "pass"},
        "dhprebn",
        "only part of the gradient",
    ),
    # gradients that are about zero (BatchNorm cancels b1; the max's path adds nothing): a line broken there still
    # shows, by its shape or by values far from zero
    "broke_db1_keepdim": (
        {"db1 = dhprebn.sum(0)": "db1 = dhprebn.sum(0, keepdim=True)"},
        "db1",
        "dimension 0 of size 1 is one too many",
    ),
    "broke_db1_from_dW1": ({"db1 = dhprebn.sum(0)": "db1 = dW1.sum(0)"}, "db1", "entries wrong"),
    "broke_dlogit_maxes_axis": (
        {"dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)": "dlogit_maxes = (-dnorm_logits).sum(0, keepdim=True)"},
        "dlogit_maxes",
        "summed over dimension 0 instead of dimension 1",
    ),
}
for _case, (_lines, _gradient, _words) in BROKEN_LINES.items():
    MISTAKES[_case] = (
        answers(_NEW, answer_backward_pass=pass_with(_lines)),
        {owner(_NEW, _gradient): ("broke_a_right_line", f"{_gradient} {_HEAD}")},
    )
MISTAKES["broke_dW2_and_left_bessel"] = (  # the bug left in costs its own fix, the broken line the fix of its part
    answers(_NEW, answer_backward_pass=pass_with({"dW2 = h.T @ dlogits": "dW2 = 2 * h.T @ dlogits", **_LEFT_BESSEL})),
    {owner(_NEW, "dW2"): ("broke_a_right_line", f"dW2 {_HEAD}"), slot(_NEW, "bessel"): ("bessel", "still")},
)
_PLANTED = [bug.gradient for bug in planted(_TEXT)]
MISTAKES.update(
    {
        # the names: a gradient downstream of a bug instead of the bug's own, one missing, everything, not a list
        "found_downstream": (
            answers(_TEXT, answer_found=f"buggy = {_PLANTED[:2] + ['dbndiff']!r}"),
            {"test_found": ("bugs_missed", "dbndiff had no bug of its own")},
        ),
        "found_the_aliased_line": (  # the line of the bug, whose gradient is right: not "its line is right"
            answers(
                _ALIAS, answer_found=f"buggy = {[b.gradient.replace('dbndiff', 'dhprebn') for b in planted(_ALIAS)]!r}"
            ),
            {"test_found": ("bugs_missed", "dhprebn's values were right: the bug is on its line, `dhprebn = dbndiff`")},
        ),
        "found_two_of_three": (
            answers(_TEXT, answer_found=f"buggy = {_PLANTED[:2]!r}"),
            {"test_found": ("bugs_missed", "did not name")},
        ),
        "found_every_gradient": (
            answers(_TEXT, answer_found="buggy = [name for name in GRADIENTS]"),
            {"test_found": ("not_a_bug", "had no bugs of their own")},
        ),
        "found_a_string": (
            answers(_TEXT, answer_found="buggy = 'dC'"),
            {"test_found": ("wrong_return", "must be a list")},
        ),
        # the checker: one-sided, a forward difference with a huge step, central with a huge step, twice, flat
        "checker_one_sided": (
            answers(_TEXT, **checker(ONE_SIDED)),
            {"test_checker": ("one_sided_difference", "one-sided")},
        ),
        "checker_forward_huge_h": (
            answers(_TEXT, **checker(ONE_SIDED, default="0.1")),
            {"test_checker": ("one_sided_difference", "one-sided")},
        ),
        "checker_central_huge_h": (
            answers(_TEXT, **checker(CENTRAL_FLAT + ".reshape(x.shape)", default="1e-2")),
            {"test_checker": ("inaccurate_difference", "default h too large")},
        ),
        "checker_over_h": (
            answers(_TEXT, **checker(CENTRAL_FLAT.replace("(2 * h)", "h") + ".reshape(x.shape)")),
            {"test_checker": ("constant_factor", "twice")},
        ),
        "checker_flat": (
            answers(_TEXT, **checker(CENTRAL_FLAT)),
            {"test_checker": ("wrong_shape", "shape")},
        ),
        "checker_float32": (  # x made float32: the first case's float64 matrix product refuses it
            answers(
                _TEXT,
                **checker(CENTRAL_FLAT.replace("x.reshape(-1)", "x.float().reshape(-1)", 1) + ".reshape(x.shape)"),
            ),
            {"test_checker": ("raised_error", "keep what you hand it in float64, without .float()")},
        ),
    }
)

_ALT_1, _ALT_2 = id_with("clipped_loss", "aliased", "zero_bias"), id_with("bessel", "not_accumulated", "epsilon")
# two correct alternatives of every line a bug can be on, in two sets
ALTERNATIVE_LINES = [
    {
        BUGS["clipped_loss"].right: "dlogprobs = -F.one_hot(Yb, logprobs.shape[1]).float() / n",
        BUGS["zero_bias"].right: "dbngain = torch.einsum('ij,ij->j', bndiff * bnvar_inv, dhpreact)[None]",
        BUGS["aliased"].right: "dhprebn = torch.clone(dbndiff)",
        BUGS["epsilon"].right: "dbnvar = -0.5 * bnvar_inv**3 * dbnvar_inv",
        BUGS["bessel"].right: "dbndiff2 = dbnvar.expand_as(bndiff2) / (n - 1)",
        BUGS["not_accumulated"].right: "for k in range(Xb.shape[0]):\n    for j in range(Xb.shape[1]):\n"
        "        dC[Xb[k, j]] += demb[k, j]",
    },
    {
        BUGS[
            "clipped_loss"
        ].right: "dlogprobs[range(n), Yb] = (-1.0 / n * torch.ones(n)).clamp(-1, 1)  # clipped, harmlessly",
        BUGS["zero_bias"].right: "dbngain = ((hpreact - bnbias) / bngain * dhpreact).sum(0, keepdim=True)",
        BUGS["aliased"].right: "dhprebn = dbndiff",  # then rebound below, not changed in place
        "dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)": "dhprebn = dhprebn + 1.0 / n * dbnmeani",
        BUGS["epsilon"].right: "dbnvar = -0.5 * (bnvar + 1e-5).pow(-1.5) * dbnvar_inv",
        BUGS["bessel"].right: "dbndiff2 = torch.full_like(bndiff2, 1.0 / (n - 1)) * dbnvar",
        BUGS["not_accumulated"].right: "dC = F.one_hot(Xb.view(-1), C.shape[0]).float().T @ demb.view(-1, C.shape[1])",
    },
]
# the lines without a bug written otherwise, as a student who rewrites the pass in their own style would: operands
# swapped, a float64 temporary, broadcasting for ones_like, einsum and matmul, in-place steps, exact zeros, reshape
REWRITTEN = {
    "dprobs = (1.0 / probs) * dlogprobs": "dprobs = dlogprobs / probs",
    "dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)": "wide = counts.double() * dprobs.double()\n"
    "dcounts_sum_inv = wide.sum(1, keepdim=True).float()",
    "dcounts_sum = (-counts_sum**-2) * dcounts_sum_inv": "dcounts_sum = -dcounts_sum_inv / counts_sum**2",
    "dcounts += torch.ones_like(counts) * dcounts_sum": "dcounts = dcounts + dcounts_sum",
    "dnorm_logits = counts * dcounts": "dnorm_logits = norm_logits.exp() * dcounts",
    "dlogits = dnorm_logits.clone()": "dlogits = dnorm_logits + 0",
    "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes": "dlogits.scatter_add_("
    "1, logits.argmax(1, keepdim=True), dlogit_maxes)",
    "dh = dlogits @ W2.T": "dh = torch.einsum('nk,jk->nj', dlogits, W2)",
    "dW2 = h.T @ dlogits": "dW2 = (dlogits.T @ h).T",
    "dhpreact = (1.0 - h**2) * dh": "dhpreact = dh.clone()\ndhpreact *= 1 - h * h",
    "dbnbias = dhpreact.sum(0, keepdim=True)": "dbnbias = dhpreact.sum(0)[None, :]",
    "dbndiff = bnvar_inv * dbnraw": "dbndiff = dbnraw / (bnvar + 1e-5) ** 0.5",
    "dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)": "dbnvar_inv = torch.einsum('nj,nj->j', bndiff, dbnraw)"
    ".unsqueeze(0)",
    "dbndiff += (2 * bndiff) * dbndiff2": "dbndiff = dbndiff + 2 * bndiff * dbndiff2",
    "dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)": "dhprebn += dbnmeani / n",
    "dembcat = dhprebn @ W1.T": "dembcat = torch.matmul(dhprebn, W1.transpose(0, 1))",
    "dW1 = embcat.T @ dhprebn": "dW1 = torch.einsum('ni,nj->ij', embcat, dhprebn)",
    "db1 = dhprebn.sum(0)": "db1 = torch.zeros_like(b1)  # exactly zero after BatchNorm",
    "demb = dembcat.view(emb.shape)": "demb = dembcat.reshape(n, -1, C.shape[1])",
}
ALTERNATIVE_LINES.append(  # a third form of each, some rewriting a line beside the bug's: judged with those lines too
    {
        "dlogprobs = torch.zeros_like(logprobs)": "dlogprobs = torch.zeros_like(logprobs).scatter_(1, Yb[:, None], "
        "-1.0 / n)",
        BUGS["clipped_loss"].right: "pass",
        BUGS["zero_bias"].right: "dbngain = torch.einsum('nj,nj->j', bnraw, dhpreact).view(1, -1)",
        BUGS["aliased"].right: "dhprebn = dbndiff - dbndiff.mean(0, keepdim=True)",
        "dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)": "pass",
        BUGS["epsilon"].right: "dbnvar = -0.5 * torch.rsqrt(bnvar + 1e-5) ** 3 * dbnvar_inv",
        BUGS["bessel"].right: "dbndiff2 = torch.ones_like(bndiff2) * dbnvar / (n - 1)",
        BUGS["not_accumulated"].right: "dC.index_put_((Xb,), demb, accumulate=True)",
    }
)
ALTERNATIVES = {
    "alt_lines_c1": answers(_ALT_1, answer_backward_pass=pass_with(ALTERNATIVE_LINES[2])),
    "alt_lines_c2": answers(_ALT_2, answer_backward_pass=pass_with(ALTERNATIVE_LINES[2])),
    "alt_rewritten_pass_1": answers(_ALT_1, answer_backward_pass=pass_with(REWRITTEN)),
    "alt_rewritten_pass_2": answers(_ALT_2, answer_backward_pass=pass_with(REWRITTEN)),
    "alt_lines_a1": answers(_ALT_1, answer_backward_pass=pass_with(ALTERNATIVE_LINES[0])),
    "alt_lines_a2": answers(_ALT_2, answer_backward_pass=pass_with(ALTERNATIVE_LINES[0])),
    "alt_lines_b1": answers(
        _ALT_1,
        answer_backward_pass=pass_with(ALTERNATIVE_LINES[1]),
        answer_found=f"buggy = {tuple(b.gradient[1:] for b in planted(_ALT_1))!r}",  # without the d, as a tuple
        **checker(CENTRAL_FLAT + ".reshape(x.shape)", default="1e-5"),
    ),
    "alt_lines_b2": answers(
        _ALT_2,
        answer_backward_pass=pass_with(ALTERNATIVE_LINES[1]),
        answer_found=f"buggy = {set(' ' + b.gradient for b in planted(_ALT_2))!r}",  # a set, with spaces
        **checker(  # a vectorised central difference that ignores h's default
            "basis = torch.eye(x.numel(), dtype=x.dtype) * h\n"
            "return torch.stack([(f(x + e.view(x.shape)) - f(x - e.view(x.shape))) / (2 * h) for e in basis])"
            ".view(x.shape)",
            default="1e-7",
        ),
    ),
}
MISTAKES["still_bessel_in_a_rewritten_pass"] = (
    answers(_NEW, answer_backward_pass=pass_with({**REWRITTEN, **_LEFT_BESSEL})),
    {slot(_NEW, "bessel"): ("bessel", "still")},
)
# the course's checker as the notebook's solution writes it, for the cases that change one of its lines
CHECKER = """grad = torch.zeros_like(x)
flat, out = x.view(-1), grad.view(-1)
for i in range(flat.numel()):
    old = flat[i].item()
    flat[i] = old + h
    up = float(f(x))
    flat[i] = old - h
    down = float(f(x))
    flat[i] = old
    out[i] = (up - down) / (2 * h)
return grad"""
# more correct fixes, names and checkers: a fresh tensor by copy_ or * 1.0, torch.arange, scatter_add_, n read from a
# shape, a power of -3/2, each bug named twice, a checker with .item(), a float32 result, a step of 1e-4
ALTERNATIVES["alt_lines_d1"] = answers(
    _ALT_1,
    answer_backward_pass=pass_with(
        {
            BUGS["clipped_loss"].right: "dlogprobs[torch.arange(n), Yb] = -1.0 / n",
            BUGS["aliased"].right: "dhprebn = torch.empty_like(dbndiff).copy_(dbndiff)",
        }
    ),
    answer_found=f"buggy = {[b.gradient for b in planted(_ALT_1)] * 2!r}",
    **checker(CHECKER.replace("float(f(x))", "f(x).item()"), default="1e-4"),
)
ALTERNATIVES["alt_lines_d2"] = answers(
    _ALT_2,
    answer_backward_pass=pass_with(
        {
            BUGS["epsilon"].right: "dbnvar = -0.5 * (bnvar + 1e-5) ** (-3 / 2) * dbnvar_inv",
            BUGS["bessel"].right: "dbndiff2 = torch.ones_like(bndiff2) * dbnvar / (bndiff2.shape[0] - 1)",
            BUGS["not_accumulated"].right: "dC = torch.zeros_like(C).scatter_add_(0, Xb.view(-1, 1).expand(-1, "
            "C.shape[1]), demb.view(-1, C.shape[1]))",
        }
    ),
    **checker("grad = torch.zeros(x.shape)\n" + CHECKER.split("\n", 1)[1]),  # a float32 result: still right
)
_ALT_1_PLANTED = [b.gradient for b in planted(_ALT_1)]
MISTAKES.update(
    {
        "fix_over_n_minus_1": (  # the loss is a mean over n: the words name the factor
            answers(
                _ALT_1,
                answer_backward_pass=pass_with(
                    {BUGS["clipped_loss"].right: "dlogprobs[range(n), Yb] = -1.0 / (n - 1)"}
                ),
            ),
            {slot(_ALT_1, "clipped_loss"): ("bessel", "32/31 times too large")},
        ),
        "fix_keepdim_dropped": (  # half of its fix: the values are right
            answers(
                _ALT_1, answer_backward_pass=pass_with({BUGS["zero_bias"].right: "dbngain = (bnraw * dhpreact).sum(0)"})
            ),
            {slot(_ALT_1, "zero_bias"): ("keepdim", "the values are right, so this step earns 0.5 of its 1")},
        ),
        "found_one_too_many": (
            answers(_ALT_1, answer_found=f"buggy = {_ALT_1_PLANTED + ['dW2']!r}"),
            {"test_found": ("not_a_bug", "dW2 had no bug of its own")},
        ),
        # a step of 1e-3: central differences are off by 1.5 h**2 there, more than the 1e-6 asked (the stub's default
        # is 1e-6; docs/design/bug-hunt.md measures the margins)
        "checker_step_1e-3": (
            answers(_ALT_1, **checker(CHECKER, default="1e-3")),
            {"test_checker": ("inaccurate_difference", "is the default h too large")},
        ),
        "checker_entry_not_put_back": (  # each entry left nudged: the later ones are taken at another point
            answers(_ALT_1, **checker(CHECKER.replace("    flat[i] = old\n", ""))),
            {"test_checker": ("inaccurate_difference", "is each entry nudged on its own, both ways")},
        ),
    }
)
# one line of the pass that raises (a slip while fixing, or a shape from further up): the pass is run again line by
# line, and only the fix whose part holds that line loses; a later fix is judged on the random gradient that stood in
_RAISES = id_with("clipped_loss", "zero_bias", "not_accumulated")
_RAISES_2 = id_with("bessel", "aliased", "epsilon")
_INDEX_2D = {BUGS["not_accumulated"].right: "dC.index_add_(0, Xb, demb)"}  # Xb is 2-D: index_add_ wants a vector
_COLUMN = {BUGS["clipped_loss"].right: "dlogprobs[range(n), Yb] = -torch.ones(n, 1) / n"}  # (32, 1) for 32 entries
_RAISED = "backward_pass raised"
_ALIAS_DC = id_with("aliased", "not_accumulated")
MISTAKES.update(
    {
        # dbndiff's first line raises and `dbndiff += ...` then changes the random dbndiff: the lines below read that
        # (dhprebn and dbnmeani, the dC fix's part), not the random one, and are judged on it (dC's fix lost its 2
        # points as if dhprebn were wrong)
        "raises_where_dbndiff_is_first_written": (
            answers(
                _ALIAS_DC,
                answer_backward_pass=pass_with({"dbndiff = bnvar_inv * dbnraw": "dbndiff = bnvar_inv * dbnraw.T"}),
            ),
            {slot(_ALIAS_DC, "aliased"): ("raised_error", f"{_RAISED} RuntimeError at `dbndiff = bnvar_inv")},
        ),
        "raises_in_the_first_fix": (
            answers(_RAISES, answer_backward_pass=pass_with(_COLUMN)),
            {slot(_RAISES, "clipped_loss"): ("raised_error", f"{_RAISED} RuntimeError at `dlogprobs[range(n), Yb]")},
        ),
        "raises_in_the_middle_fix_and_checker_over_2_times_h": (  # (..) / 2 * h: the gradient times h**2
            answers(
                _RAISES,
                answer_backward_pass=pass_with(
                    {BUGS["zero_bias"].right: "dbngain = (bnraw @ dhpreact).sum(0, keepdim=True)"}
                ),
                **checker(CHECKER.replace("/ (2 * h)", "/ 2 * h")),
            ),
            {
                slot(_RAISES, "zero_bias"): ("raised_error", "random dbngain in its place"),
                "test_checker": ("precedence", "Put 2 * h in brackets"),
            },
        ),
        "raises_in_two_fixes": (
            answers(_RAISES, answer_backward_pass=pass_with({**_INDEX_2D, **_COLUMN})),
            {
                slot(_RAISES, "clipped_loss"): ("raised_error", "dlogprobs is computed there"),
                slot(_RAISES, "not_accumulated"): ("raised_error", "dC is computed there"),
            },
        ),
        "raises_on_a_line_without_a_bug": (  # W2 not transposed: dh's line raises, in one fix's part
            answers(_RAISES, answer_backward_pass=pass_with({"dh = dlogits @ W2.T": "dh = dlogits @ W2"})),
            {owner(_RAISES, "dh"): ("broke_a_right_line", "at `dh = dlogits @ W2`")},
        ),
        "a_shape_further_up_makes_the_next_fix_raise": (  # dbndiff2 of shape (32,): `dbndiff += ...` raises
            answers(
                _RAISES_2,
                answer_backward_pass=pass_with(
                    {BUGS["bessel"].right: "dbndiff2 = (1.0 / (n - 1)) * (torch.ones_like(bndiff2) * dbnvar).sum(1)"}
                ),
            ),
            {slot(_RAISES_2, "bessel"): ("wrong_shape", "dbndiff2 has shape (32,)")},
        ),
        # more slips of a student fixing the bugs, two to a student (each costs its own cell): .float() of a float32
        # tensor is the tensor itself, and a checker that nudges whole rows; ** -3 / 2 is (** -3) / 2, and 1.0 / n - 1
        # is (1/n) - 1; index_add without its _ changes nothing, and a mean for a sum; a gradient clipped instead of
        # the loss, beside a line that raises
        "dhprebn_float_and_checker_nudges_rows": (  # x[i] is a whole row of the sines' 2-D x
            answers(
                _RAISES_2,
                answer_backward_pass=pass_with({BUGS["aliased"].right: "dhprebn = dbndiff.float()"}),
                **checker(
                    "grad = torch.zeros_like(x)\nfor i in range(len(x)):\n    xp, xm = x.clone(), x.clone()\n"
                    "    xp[i] += h\n    xm[i] -= h\n    grad[i] = (f(xp) - f(xm)) / (2 * h)\nreturn grad"
                ),
            ),
            {
                slot(_RAISES_2, "aliased"): ("aliased", "shares dbndiff's memory"),
                "test_checker": ("inaccurate_difference", "one entry, not a whole row"),
            },
        ),
        "dbnvar_and_dbndiff2_without_brackets": (
            answers(
                _RAISES_2,
                answer_backward_pass=pass_with(
                    {
                        BUGS["epsilon"].right: "dbnvar = -0.5 * (bnvar + 1e-5) ** -3 / 2 * dbnvar_inv",
                        BUGS["bessel"].right: "dbndiff2 = (1.0 / n - 1) * torch.ones_like(bndiff2) * dbnvar",
                    }
                ),
            ),
            {
                slot(_RAISES_2, "epsilon"): ("precedence", "`x ** -3 / 2` is (x ** -3) / 2"),
                slot(_RAISES_2, "bessel"): ("precedence", "n - 1 needs its brackets"),
            },
        ),
        # ** -3 / 2 makes dbndiff2 so large that dbndiff with `.float()` left in was within the tolerance of its rule
        # (2 of 2 points): the kernel says dhprebn is dbndiff's very tensor, and its values are the bug's
        "dhprebn_float_and_dbnvar_without_brackets": (
            answers(
                _RAISES_2,
                answer_backward_pass=pass_with(
                    {
                        BUGS["aliased"].right: "dhprebn = dbndiff.float()",
                        BUGS["epsilon"].right: "dbnvar = -0.5 * (bnvar + 1e-5) ** -3 / 2 * dbnvar_inv",
                    }
                ),
            ),
            {
                slot(_RAISES_2, "epsilon"): ("precedence", "`x ** -3 / 2` is (x ** -3) / 2"),
                slot(_RAISES_2, "aliased"): ("aliased", "shares dbndiff's memory"),
            },
        ),
        "dC_index_add_not_in_place_and_dbngain_mean": (
            answers(
                _RAISES,
                answer_backward_pass=pass_with(
                    {
                        BUGS["not_accumulated"].right: "dC.index_add(0, Xb.view(-1), demb.view(-1, C.shape[1]))",
                        BUGS["zero_bias"].right: "dbngain = (bnraw * dhpreact).mean(0, keepdim=True)",
                    }
                ),
            ),
            {
                slot(_RAISES, "not_accumulated"): ("all_zeros", "without the final _ return a new tensor"),
                slot(_RAISES, "zero_bias"): ("batch_size", "n = 32 times too small"),
            },
        ),
        "dlogprobs_gradient_clipped_and_dC_raises": (
            answers(
                _RAISES,
                answer_backward_pass=pass_with(
                    {
                        BUGS["clipped_loss"].right: "dlogprobs[range(n), Yb] = (-1.0 / n * torch.ones(n)).clamp(-0.01)",
                        **_INDEX_2D,
                    }
                ),
            ),
            {
                slot(_RAISES, "clipped_loss"): ("constant_factor", "constant factor"),
                slot(_RAISES, "not_accumulated"): ("raised_error", f"{_RAISED} IndexError"),
            },
        ),
    }
)
ALTERNATIVES["alt_lines_e1"] = answers(  # a copy by detach().clone(), the out-of-place index_add assigned, -1.5
    _RAISES_2,
    answer_backward_pass=pass_with(
        {
            BUGS["aliased"].right: "dhprebn = dbndiff.detach().clone()",
            BUGS["epsilon"].right: "dbnvar = -0.5 * (bnvar + 1e-5) ** (-1.5) * dbnvar_inv",
            BUGS[
                "bessel"
            ].right: "with torch.no_grad():\n    dbndiff2 = 1 / (n - 1) * dbnvar * torch.ones_like(bndiff2)",
        }
    ),
)
ALTERNATIVES["alt_lines_e2"] = answers(
    _RAISES,
    answer_backward_pass=pass_with(
        {
            BUGS["clipped_loss"].right: "dlogprobs[range(n), Yb] = -1 / n",
            BUGS["zero_bias"].right: "dbngain = (bnraw * dhpreact).sum(dim=0, keepdims=True)",
            BUGS["not_accumulated"].right: "dC = torch.zeros_like(C).index_add(0, Xb.flatten(), demb.flatten(0, 1))",
        }
    ),
    **checker(  # every index of x by itertools.product, on clones
        "import itertools\ngrad = torch.zeros_like(x)\nfor idx in itertools.product(*[range(s) for s in x.shape]):\n"
        "    xp, xm = x.clone(), x.clone()\n    xp[idx] += h\n    xm[idx] -= h\n"
        "    grad[idx] = (f(xp) - f(xm)) / (2 * h)\nreturn grad",
        default="1e-5",
    ),
)
SOLVED_IDS = ["ada.lovelace", "  Grace HOPPER ", "s1234567", "b.riemann@example.edu"]  # the first is the source's

# case -> (answer cells changed, {graded cell that must earn nothing: diagnosis kind})
_CHEAT = id_with("zero_bias")
AUTOGRAD_PASS = """def backward_pass(t):
    values = {k: t[k].detach().clone().requires_grad_(True) for k in PARAMETERS}
    space = {"torch": torch, "F": F, "n": t["n"], "Xb": t["Xb"], "Yb": t["Yb"], **values}
    for line in FORWARD_LINES:
        exec(line, space)
    grads = torch.autograd.grad(space["loss"], list(values.values()), allow_unused=True)
    return {"d" + k: g for k, g in zip(values, grads)}"""
CHEATS = {
    "c_autograd_pass": (answers(_CHEAT, answer_backward_pass=AUTOGRAD_PASS), {c: "autograd" for c in FIXES}),
    "c_autograd_checker": (
        answers(
            _CHEAT, answer_numerical_gradient="def numerical_gradient(f, x, h=1e-6):\n    return torch.func.grad(f)(x)"
        ),
        {"test_checker": "autograd"},
    ),
    "c_grad_in_pass": (
        answers(_CHEAT, answer_backward_pass=pass_with({BUGS["zero_bias"].right: "dbngain = t['bngain'].grad"})),
        {c: "autograd" for c in FIXES},
    ),
}
# every bug left in, and dlogprobs left zeros: every gradient below is zeros, where each bug gives what its fix gives,
# so error carried forward kept the two fixes below the first (4 of 6 points for fixing nothing)
_ZEROED = id_with("zero_bias", avoid=("clipped_loss",))
CHEATS["c_zeroed_loss_gradient"] = (
    answers(
        _ZEROED,
        answer_backward_pass=with_bug(*(b.key for b in planted(_ZEROED))).replace(
            BUGS["clipped_loss"].right, "pass  # the loss's gradient left zeros"
        ),
    ),
    {c: "fix_unseen" for c in FIXES},
)

# the pass raises and leaves two bugs in, and a cell puts the fixed pass in linecache, where inspect reads the source
# of backward_pass from: run again statement by statement, that text earned the two fixes (4 of 6 points for fixing
# nothing); the source is now run again only when it compiles to the function's own code
_SHOWN = with_bug("clipped_loss", "zero_bias").replace(
    BUGS["not_accumulated"].right, _INDEX_2D[BUGS["not_accumulated"].right]
)
CHEATS["c_source_shown_otherwise"] = (
    answers(
        _RAISES,
        answer_backward_pass=_SHOWN
        + "\nimport linecache\n_code = backward_pass.__code__\n"
        + "_file, _first = _code.co_filename, _code.co_firstlineno\n"
        + f"_fixed = {pass_with(_INDEX_2D)!r}.split('\\n')\n"
        + "_shown = linecache.getlines(_file)[: _first - 1] + [line + '\\n' for line in _fixed]\n"
        + "linecache.cache[_file] = (sum(map(len, _shown)), None, _shown, _file)",
    ),
    {c: "raised_error" for c in FIXES},
)


def copier() -> tuple:
    """(the classmate's id, the copier's own id): two ids with no bug in common."""
    mine = id_with("clipped_loss", "aliased", "zero_bias")
    theirs = id_with("bessel", "not_accumulated", "epsilon")
    return theirs, mine


def submissions(release, source) -> dict:
    """student -> notebook: every case above, the solution for several ids, a blank one, one without an id, a copier
    and a student who changes the parameters after the setup."""
    class_ = {"solution": build(release, source, {}), "blank": release}
    for i, text in enumerate(SOLVED_IDS[1:]):
        class_[f"solution_{i + 1}"] = build(release, source, answers(text))
    for case, (changes, _) in MISTAKES.items():
        class_[case] = build(release, source, changes)
    for student, changes in ALTERNATIVES.items():
        class_[student] = build(release, source, changes)
    for student, (changes, _) in CHEATS.items():
        class_[student] = build(release, source, changes)
    theirs, mine = copier()
    class_["copier"] = build(release, source, {**answers(theirs), "answer_id": f"BUG_HUNT_ID = {mine!r}"})
    class_["no_id"] = build(release, source, {"answer_id": "# YOUR CODE HERE\nraise NotImplementedError()"})
    class_["tries_the_usual_init"] = solved(
        release,
        source,
        answers(id_with("zero_bias")),
        extra_cells=[("answer_id", "with torch.no_grad():\n    bngain.fill_(1.0)\n    bnbias.zero_()")],
    )
    return class_


# A third review (December 2026): fixes written the wrong way, three to a student where their fixes differ (each costs
# its own cell), two bugs' lines merged, a new bug brought in while fixing, and `dhprebn = dbndiff` kept with its
# `+=` line deleted (dbndiff right, dhprebn wrong: it earned 6 of 6, as dhprebn, one tensor with dbndiff, was not
# judged at all; now the kernel runs the pass again line by line and sees that no later line changed that tensor)
_MEAN_PATH = "dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)"
_KEPT_ALIAS = {BUGS["aliased"].right: "dhprebn = dbndiff", _MEAN_PATH: "pass"}
_ENTRIES = "entries wrong"
_FIXES_3 = {  # student -> (id, {line: new}, {cell: (kind, words)}), the cells by slot of the id's bugs
    "clip_inverted_dbngain_over_rows_dC_a_row_at_a_time": (
        _RAISES,
        {
            BUGS["clipped_loss"].right: "dlogprobs[range(n), Yb] = -1.0 / n * (-logprobs[range(n), Yb] > 3.5)",
            BUGS["zero_bias"].right: "dbngain = (bnraw * dhpreact).sum(1, keepdim=True)",
            BUGS["not_accumulated"].right: "for i in range(n):\n    dC[Xb[i]] += demb[i]",
        },
        {
            "clipped_loss": ("wrong_values", _ENTRIES),
            "zero_bias": ("wrong_dimension", "summed over dimension 1 instead of dimension 0"),
            "not_accumulated": ("not_accumulated", "even a row at a time"),
        },
    ),
    "clip_without_n_dbngain_from_bndiff_dC_from_Xb_T": (
        _RAISES,
        {
            BUGS["clipped_loss"].right: "dlogprobs[range(n), Yb] = -1.0",
            BUGS["zero_bias"].right: "dbngain = (bndiff * dhpreact).sum(0, keepdim=True)",
            BUGS["not_accumulated"].right: "dC.index_add_(0, Xb.T.reshape(-1), demb.view(-1, C.shape[1]))",
        },
        {
            "clipped_loss": ("batch_size", "n = 32 times too large"),
            "zero_bias": ("other_tensor", "dbngain reads bndiff where"),  # "entries wrong" before
            "not_accumulated": ("rearranged", "indices of Xb taken in another order"),  # "entries wrong" before
        },
    ),
    "clip_every_column_dbngain_without_bias_dC_assigned_a_sum": (
        _RAISES,
        {
            BUGS["clipped_loss"].right: "dlogprobs[:, Yb] = -1.0 / n",
            BUGS["zero_bias"].right: "dbngain = (hpreact / bngain * dhpreact).sum(0, keepdim=True)",
            BUGS["not_accumulated"].right: "dC[Xb] = dC[Xb] + demb",
        },
        {
            "clipped_loss": ("target_term", "`[:, Yb]` takes every row for each target"),  # "entries wrong" before
            "zero_bias": ("wrong_values", _ENTRIES),
            "not_accumulated": ("not_accumulated", "keeps only one of its contributions"),
        },
    ),
    "power_sign_dbndiff2_unbroadcast_alias_by_copy_": (
        _RAISES_2,
        {
            BUGS["epsilon"].right: "dbnvar = (-0.5 * (bnvar + 1e-5) ** 1.5) * dbnvar_inv",
            BUGS["bessel"].right: "dbndiff2 = (1.0 / (n - 1)) * dbnvar",
            BUGS["aliased"].right: "dhprebn = dbndiff.copy_(dbndiff)",
        },
        {
            # the power's sign flipped, (bnvar + 1e-5) ** 1.5: named by its exponent (diagnosis/powers; "entries
            # wrong", then "dbnvar divides by bnvar where ..." of slips.inverted before)
            "epsilon": ("power_rule", "dbnvar takes (bnvar + 1e-5) to the power 1.5, where the power rule gives -1.5"),
            "bessel": ("wrong_shape", "dbndiff2 has shape (1, 64), but bndiff2 has shape (32, 64)"),
            "aliased": ("aliased", "shares dbndiff's memory"),
        },
    ),
    # the clone taken before dbndiff's `+=` (a new bug while fixing): dhprebn, in the aliased fix's part, goes wrong
    "epsilon_1e-3_n_from_columns_clone_too_early": (
        _RAISES_2,
        {
            BUGS["epsilon"].right: "dbnvar = (-0.5 * (bnvar + 1e-3) ** -1.5) * dbnvar_inv",
            BUGS["bessel"].right: "dbndiff2 = (1.0 / (bndiff2.shape[1] - 1)) * torch.ones_like(bndiff2) * dbnvar",
            "dbndiff += (2 * bndiff) * dbndiff2": "dhprebn = dbndiff.clone()\ndbndiff += (2 * bndiff) * dbndiff2",
            BUGS["aliased"].right: "pass",
        },
        {
            "epsilon": ("wrong_values", _ENTRIES),
            "bessel": ("constant_factor", "constant factor"),
            "aliased": ("broke_a_right_line", f"dhprebn {_HEAD}"),
        },
    ),
    "power_of_bnvar_inv_alias_kept_mean_path_deleted": (
        _RAISES_2,
        {BUGS["epsilon"].right: "dbnvar = (-0.5 * bnvar_inv ** 1.5) * dbnvar_inv", **_KEPT_ALIAS},
        {"epsilon": ("wrong_values", _ENTRIES), "aliased": ("broke_a_right_line", "has only part of the gradient")},
    ),
    # here dhprebn is in the part of the dC fix, after the aliased fix's dbndiff: that fix loses, as for the `+=` line
    # deleted alone (broke_dhprebn_mean_path)
    "dbnvar_without_its_half_alias_kept_mean_path_deleted": (
        id_with("epsilon", "aliased", "not_accumulated"),
        {BUGS["epsilon"].right: "dbnvar = (bnvar + 1e-5) ** -1.5 * dbnvar_inv", **_KEPT_ALIAS},
        {
            "epsilon": ("power_rule", "-2 times the right value, 1/-0.5: the power rule's factor"),  # (h-mist5)
            "not_accumulated": ("broke_a_right_line", "dhprebn"),
        },
    ),
    # two bugs' lines merged: dbndiff2 right, from dbnvar's formula fixed inline, dbnvar's own line left as it was
    "two_bugs_fixed_in_one_line": (
        _RAISES_2,
        {
            BUGS["bessel"].right: "dbndiff2 = (1.0 / (n - 1)) * torch.ones_like(bndiff2) * (-0.5 * (bnvar + 1e-5) "
            "** -1.5) * dbnvar_inv",
            BUGS["epsilon"].right: BUGS["epsilon"].wrong,
        },
        {"epsilon": ("epsilon", "still leaves out BatchNorm's epsilon")},
    ),
    "dC_made_in_the_shape_of_demb": (  # index_add_ then raises: the dC fix alone loses
        _RAISES,
        {"dC = torch.zeros_like(C)": "dC = torch.zeros_like(demb)"},
        {"not_accumulated": ("raised_error", f"{_RAISED} RuntimeError at `dC.index_add_(0, Xb.view(-1)")},
    ),
}
for _case, (_text, _lines, _lost) in _FIXES_3.items():
    MISTAKES[_case] = (
        answers(_text, answer_backward_pass=pass_with(_lines)),
        {slot(_text, key): why for key, why in _lost.items()},
    )
# more correct fixes, a student each: a copy by + 0 or * 1 or torch.tensor, 1/sqrt by rsqrt, expand, both lines of
# epsilon and Bessel written anew, np.add.at into dC's memory, torch.where, bnraw from the cache, a loop over the
# characters of the batch
_ALT_1_ALIAS = id_with("aliased", "not_accumulated")
ALTERNATIVES.update(
    {
        "alt_lines_f2": answers(
            _RAISES_2,
            answer_backward_pass=pass_with(
                {
                    BUGS["aliased"].right: "dhprebn = dbndiff + 0",
                    BUGS["epsilon"].right: "dbnvar = -0.5 * torch.rsqrt(bnvar + 1e-5) / (bnvar + 1e-5) * dbnvar_inv",
                    BUGS["bessel"].right: "dbndiff2 = (dbnvar / (n - 1)).expand(n, -1).clone()",
                }
            ),
        ),
        "alt_lines_g2": answers(
            _RAISES_2,
            answer_backward_pass=pass_with(
                {
                    BUGS["aliased"].right: "dhprebn = torch.tensor(dbndiff)",
                    BUGS["epsilon"].right: "dbnvar = (-0.5 * (bnvar + 1e-5) ** -1.5) * dbnvar_inv",
                    BUGS["bessel"].right: "dbndiff2 = torch.ones_like(bndiff2) * (-0.5 * (bnvar + 1e-5) ** -1.5) "
                    "* dbnvar_inv / (n - 1)",
                }
            ),
        ),
        "alt_lines_f1": answers(
            _RAISES,
            answer_backward_pass=pass_with(
                {
                    BUGS["clipped_loss"].right: "dlogprobs = torch.where(F.one_hot(Yb, logprobs.shape[1]).bool(), "
                    "-1.0 / n, 0.0)",
                    BUGS["zero_bias"].right: "dbngain = (((hprebn - bnmeani) * bnvar_inv) * dhpreact).sum(0, "
                    "keepdim=True)",
                    BUGS["not_accumulated"].right: "import numpy as np\nnp.add.at(dC.numpy(), Xb.view(-1).numpy(), "
                    "demb.reshape(-1, C.shape[1]).numpy())",
                }
            ),
        ),
        "alt_lines_g1": answers(
            _ALT_1_ALIAS,
            answer_backward_pass=pass_with(
                {
                    BUGS["aliased"].right: "dhprebn = dbndiff * 1",
                    BUGS["not_accumulated"].right: "for ch in Xb.unique():\n    dC[ch] += demb[Xb == ch].sum(0)",
                }
            ),
        ),
    }
)
# A judges' round (December 2026): a fix that makes NaN, `(-0.5 * (bnvar + 1e-5)) ** -1.5` (a negative number to a
# fractional power), costs its own fix only. It cost all three: every gradient below it NaN, the later bugs' lines
# and the right ones gave the same NaN, "this fix does not show" (while the lines under the fixes said ✔ for them).
# Now the pass is run again line by line, a random gradient in the place of one a line made NaN from finite ones.
_NAN = id_with("epsilon", "aliased")
MISTAKES["dbnvar_nan_by_precedence"] = (
    answers(
        _NAN,
        answer_backward_pass=pass_with(
            {BUGS["epsilon"].right: "dbnvar = (-0.5 * (bnvar + 1e-5)) ** -1.5 * dbnvar_inv"}
        ),
    ),
    {slot(_NAN, "epsilon"): ("not_finite", "** -1.5 of a negative number")},
)
MISTAKES["dhprebn_contiguous_of_dbndiff"] = (  # .contiguous() of a contiguous tensor is that tensor: no copy
    answers(_NAN, answer_backward_pass=pass_with({BUGS["aliased"].right: "dhprebn = dbndiff.contiguous()"})),
    {slot(_NAN, "aliased"): ("aliased", "shares dbndiff's memory")},
)

# A round of students' slips (December 2026). Before: a checker that nudges a copy of x (f never sees it) gave zeros and
# read "off by 1.0e+00 ... is each entry nudged on its own?"; one that returns a list read "returned a other". A fix of
# dbndiff2 without its ones_like broadcasts in the pass below it, and costs its own fix only.
_SLIPS = id_with("not_accumulated", "zero_bias", "bessel")
MISTAKES.update(
    {
        "checker_nudges_a_copy": (
            answers(
                _SLIPS, **checker(CHECKER.replace("x.view(-1), grad.view(-1)", "x.clone().view(-1), grad.view(-1)"))
            ),
            {"test_checker": ("inaccurate_difference", "numerical_gradient gives zeros")},
        ),
        "checker_returns_a_list": (
            answers(_SLIPS, **checker(CHECKER.replace("return grad", "return grad.tolist()"))),
            {"test_checker": ("not_a_float32_tensor", "numerical_gradient returned a list")},
        ),
        "fix_of_dbndiff2_in_the_shape_of_dbnvar": (
            answers(
                _SLIPS, answer_backward_pass=pass_with({BUGS["bessel"].right: "dbndiff2 = (1.0 / (n - 1)) * dbnvar"})
            ),
            {slot(_SLIPS, "bessel"): ("wrong_shape", "dbndiff2 has shape (1, 64), but bndiff2 has shape (32, 64)")},
        ),
    }
)


# h-alts2's round (December 2026): more correct checkers and fixes, each keeping every point. CS231n's checker over
# np.nditer's multi_index, one that nudges x by +h, -2h, +h (restored by arithmetic, not by the old value), one over
# np.ndindex under no_grad with a step of 1e-5; the lecture's double loop for dC, a one-hot product, dbngain from
# bndiff * bnvar_inv, dbndiff2 by expand_as, a copy by torch.clone, bnvar_inv cubed, the target's -1/n subtracted by
# a one-hot; the bugs named in reverse order, and by appends
_NDITER = """import numpy as np
grad = torch.zeros_like(x)
it = np.nditer(x.numpy(), flags=["multi_index"], op_flags=["readwrite"])
while not it.finished:
    ix = it.multi_index
    oldval = x[ix].item()
    x[ix] = oldval + h
    fxph = f(x)
    x[ix] = oldval - h
    fxmh = f(x)
    x[ix] = oldval
    grad[ix] = (fxph - fxmh) / (2 * h)
    it.iternext()
return grad"""
_THERE_AND_BACK = """grad = torch.zeros_like(x)
for i in range(x.numel()):
    x.view(-1)[i] += h
    fp = f(x)
    x.view(-1)[i] -= 2 * h
    fm = f(x)
    x.view(-1)[i] += h
    grad.view(-1)[i] = (fp - fm) / (2 * h)
return grad"""
_NDINDEX = """import numpy as np
grad = torch.zeros_like(x)
with torch.no_grad():
    for idx in np.ndindex(*x.shape):
        orig = x[idx].item()
        x[idx] = orig + h
        fp = f(x).item()
        x[idx] = orig - h
        fm = f(x).item()
        x[idx] = orig
        grad[idx] = (fp - fm) / (2 * h)
return grad"""
_H_A = id_with("not_accumulated", "zero_bias", "bessel")
_H_B = id_with("epsilon", "aliased", "clipped_loss")
_H_C = id_with("epsilon", "bessel", "not_accumulated")
ALTERNATIVES.update(
    {
        "alt_h_alts2_a": answers(
            _H_A,
            answer_backward_pass=pass_with(
                {
                    BUGS["not_accumulated"].right: "for k in range(Xb.shape[0]):\n    for j in range(Xb.shape[1]):\n"
                    "        dC[Xb[k, j]] += demb[k, j]",
                    BUGS["zero_bias"].right: "dbngain = (dhpreact * (bndiff * bnvar_inv)).sum(0, keepdim=True)",
                    BUGS["bessel"].right: "dbndiff2 = dbnvar.expand_as(bndiff2) / (n - 1)",
                }
            ),
            answer_found=f"buggy = {[b.gradient for b in planted(_H_A)][::-1]!r}",
            **checker(_NDITER),
        ),
        "alt_h_alts2_b": answers(
            _H_B,
            answer_backward_pass=pass_with(
                {
                    BUGS["aliased"].right: "dhprebn = torch.clone(dbndiff)",
                    BUGS["epsilon"].right: "dbnvar = -0.5 * bnvar_inv**3 * dbnvar_inv",
                    BUGS["clipped_loss"].right: "dlogprobs -= F.one_hot(Yb, logprobs.shape[1]) / n",
                }
            ),
            **checker(_THERE_AND_BACK),
        ),
        "alt_h_alts2_c": answers(
            _H_C,
            answer_backward_pass=pass_with(
                {
                    BUGS["epsilon"].right: "dbnvar = -0.5 * (bnvar + 1e-5) ** -1.5 * dbnvar_inv  # eps!",
                    BUGS["bessel"].right: "dbndiff2 = 1 / (n - 1) * torch.ones_like(bndiff2) * dbnvar  # Bessel",
                    BUGS["not_accumulated"].right: "dC = F.one_hot(Xb.view(-1), C.shape[0]).to(demb.dtype).T "
                    "@ demb.view(-1, C.shape[1])",
                }
            ),
            answer_found="buggy = []\n" + "\n".join(f"buggy.append({b.gradient!r})" for b in planted(_H_C)),
            **checker(_NDINDEX, default="1e-5"),
        ),
    }
)
# ... and a student's debugging left in: a print and an assert beside each fix, comments, the index by .item(), a
# checker that says how many entries it checks and asserts its shape
_PRINTING = CHECKER.replace(
    "for i in range(flat.numel()):",
    'print(f"checking {flat.numel()} entries with h={h}")\nfor i in range(flat.numel()):',
).replace("return grad", "assert grad.shape == x.shape\nreturn grad")
_H_D = id_with("zero_bias", "aliased", "not_accumulated")
ALTERNATIVES["alt_h_alts2_d"] = answers(
    _H_D,
    answer_backward_pass=pass_with(
        {
            BUGS["zero_bias"].right: "dbngain = (bnraw * dhpreact).sum(0, keepdim=True)  # fixed: bnraw, not hpreact\n"
            "print('dbngain', dbngain.shape)",
            BUGS["aliased"].right: "dhprebn = dbndiff.clone()  # a copy, or += below changes dbndiff too\n"
            "assert dhprebn is not dbndiff",
            BUGS["not_accumulated"].right: "for k in range(Xb.shape[0]):\n    for j in range(Xb.shape[1]):\n"
            "        ix = Xb[k, j].item()\n        dC[ix] += demb[k, j]",
        }
    ),
    **checker(_PRINTING),
)

# The gradients named as the .grad of their tensors (h-mist3's round): a list written out is words, whatever they say,
# and "bngain.grad" is the gradient of bngain, dbngain. It read "buggy is computed with autograd, so it earns nothing"
# before (the static reading marks a string with "grad" in it). Other notations of a gradient count too: dL/dW1,
# grad_W1.
_NAMED = id_with("zero_bias", "bessel")
ALTERNATIVES["alt_named_as_dot_grad"] = answers(
    _NAMED, answer_found=f"buggy = {[b.gradient[1:] + '.grad' for b in planted(_NAMED)]!r}"
)
ALTERNATIVES["alt_named_as_dL_over_dx"] = answers(
    _NAMED, answer_found=f"buggy = {['dL/' + b.gradient for b in planted(_NAMED)]!r}"
)
ALTERNATIVES["alt_named_one_by_one"] = answers(
    _NAMED,
    answer_found="buggy = []\n" + "".join(f"buggy.append({'grad_' + b.gradient[1:]!r})\n" for b in planted(_NAMED)),
)
MISTAKES["found_two_as_dot_grad"] = (
    answers(_NAMED, answer_found=f"buggy = {[b.gradient[1:] + '.grad' for b in planted(_NAMED)][:2]!r}"),
    {"test_found": ("bugs_missed", "had a planted bug that you did not name")},
)
CHEATS["c_buggy_from_grad"] = (  # names chosen by reading .grad: autograd's still
    answers(_NAMED, answer_found="buggy = [n for n in PARAMETERS if globals()[n].grad is not None]"),
    {"test_found": "autograd"},
)

# h-mist5's round (December 2026): a right line of the mean's path broken to 1/(n + 1) was told "n/(n-1) or its
# inverse" (n/(n+1) is within 1e-3 of (n-1)/n); it is named now
_MIST5 = id_with("epsilon", "bessel")
MISTAKES["mean_path_over_n_plus_1"] = (
    answers(
        _MIST5,
        answer_backward_pass=pass_with({_MEAN_PATH: "dhprebn += 1.0 / (n + 1) * (torch.ones_like(hprebn) * dbnmeani)"}),
    ),
    {owner(_MIST5, "dhprebn"): ("broke_a_right_line", "is it divided by n+1? The mean divides by n")},
)

# Self-checks: your gradients against autograd's, on this notebook's own batch.
# They only inform you; the autograder grades on a batch and parameters you have not seen.
import re
import sys

from IPython.display import display

TOLERANCE = 1e-4  # relative to the largest entry of autograd's gradient (rounding noise is far below)


def _shape_hint(got, want, name):
    """Which dimension is wrong, and the usual reason."""
    if len(got) == len(want) == 2 and got == want[::-1] and got != want:
        return f"transposed: d{name} must be {want}. Let the shapes decide the order of the matrix product"
    squeezed = tuple(s for s in want if s != 1)
    if len(got) < len(want) and got == squeezed:
        dim = next(i for i, s in enumerate(want) if s == 1)
        return f"dimension {dim} (of size 1) is missing: keep it with keepdim=True, or view the result as {want}"
    if len(got) > len(want) and tuple(s for s in got if s != 1) == squeezed:
        return f"an extra dimension of size 1: d{name} must be {want}, like {name}"
    if len(got) == len(want) + 1 and got[1:] == want:
        return f"{name} was broadcast over the batch (dimension 0): sum its gradient over that dimension"
    if len(got) == len(want):
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w and w == 1:
                return (f"dimension {i} is {g} but must be 1: {name} was broadcast along dimension {i}, "
                        f"so sum over it (keepdim=True)")
            if g != w:
                return f"dimension {i} is {g} but must be {w}: summed over the wrong dimension, or a view in the wrong order?"
    return f"a gradient has the shape of its tensor: {want}, not {got}"


def _factor_hint(c, n):
    """A name for a constant factor between your values and autograd's, if it is a usual one."""
    named = [(-1.0, "the wrong sign: check the sign of each factor of the local derivative"),
             (2.0, "twice the right values: check the power rule, or a contribution added twice"),
             (0.5, "half the right values: check the power rule")]
    if n and n > 1:
        named += [(float(n), f"n = {n} times too large: is a division by n missing?"),
                  (1.0 / n, f"n = {n} times too small: is there a division by n too many?"),
                  (n / (n - 1), "n/(n-1) times too large: did you divide by n-1 where the forward pass divides by n?"),
                  ((n - 1) / n, "(n-1)/n times too small: did you divide by n where the forward pass divides "
                                "by n-1 (Bessel's correction)?")]
    for factor, hint in named:
        if abs(c - factor) <= 1e-3 * abs(factor):
            return hint
    return f"{c:.4g} times the right values: a constant factor is missing or wrong"


def _added_twice(name):
    """The `d<name> += ...` line that ran twice since d<name> was last set with `=`, if any (IPython keeps every
    cell it ran in In)."""
    assignment = re.compile(rf"^\s*d{name}\s*(=|\+=)(?!=)\s*(.*?)\s*$")
    added = []
    for source in globals().get("In") or []:
        for line in str(source).splitlines():
            found = assignment.match(line)
            if found:
                added = [] if found.group(1) == "=" else added + [found.group(2)]
    twice = next((line for line in added if added.count(line) > 1), None)
    if twice is None:
        return None
    through = [k for k in re.findall(r"\bd(\w+)", twice) if k != name and k in globals()]
    path = f"the path through {through[0]}" if through else f"`d{name} += {twice}`"
    return (f"{path} is added twice: did a cell run twice? Keep d{name} = ... and its += lines in one cell, "
            f"and run that cell again")


def _value_hint(got, want, name, n):
    g, w = got.double(), want.double()
    scale = max(w.abs().max().item(), 1e-3)
    if g.abs().max().item() == 0:
        return "all zeros: is the answer cell finished?"
    twice = _added_twice(name)
    if twice:
        return twice
    if (w * w).sum().item() > 0:
        c = (g * w).sum().item() / (w * w).sum().item()
        if abs(c - 1) > 1e-3 and (g - c * w).abs().max().item() <= TOLERANCE * scale * max(1.0, abs(c)):
            return _factor_hint(c, n)
    if g.dim() == 2 and g.shape[0] == g.shape[1] and (g.T - w).abs().max().item() <= TOLERANCE * scale:
        return "transposed: let the shapes decide the order of the matrix product"
    wrong = int(((g - w).abs() > TOLERANCE * scale).sum().item())
    return (f"{wrong} of {g.numel()} entries differ: re-derive the local derivative; if {name} is used in two "
            f"lines of the forward pass, add both contributions (+=); if an earlier gradient is off, fix it first")


def _difference(got, want):
    """The largest difference, and whether it is within the tolerance (relative to the size of want)."""
    difference = (got.double() - want.double()).abs().max().item() if got.numel() else 0.0
    return difference, difference <= TOLERANCE * max(want.abs().max().item() if want.numel() else 0.0, 1e-3)


def _compare(name, dt, want):
    """One row of a self-check: your gradient dt against autograd's gradient want, as a dict."""
    row = {"gradient": f"d{name}", "shape": "", "exact": "", "approximate": "", "max difference": "",
           "hint": "", "status": "todo"}
    if dt is None:
        row["hint"] = "not answered yet"
        return row
    row["status"] = "wrong"
    if want is None:
        row["hint"] = f"autograd has no gradient for {name}: run the setup cells again"
    elif not isinstance(dt, torch.Tensor):
        row["hint"] = f"should be a torch tensor, not a {type(dt).__name__}"
    elif tuple(dt.shape) != tuple(want.shape):
        row["shape"] = f"✘ {tuple(dt.shape)}"
        row["hint"] = _shape_hint(tuple(dt.shape), tuple(want.shape), name)
        squeezed = lambda shape: [s for s in shape if s != 1]
        if (len(dt.shape) != len(want.shape) and squeezed(dt.shape) == squeezed(want.shape)
                and _difference(dt.detach().reshape(want.shape), want)[1]):
            row["hint"] = "the values are right (that earns part of the step), but " + row["hint"]
    else:
        got = dt.detach()
        row["shape"] = f"✔ {tuple(got.shape)}"
        if not torch.isfinite(got).all():
            row["hint"] = "contains NaN or inf: a division by zero, or the log of 0?"
            return row
        difference, approximate = _difference(got, want)
        row.update({"exact": "yes" if torch.equal(got, want) else "no", "max difference": f"{difference:.1e}",
                    "approximate": "✔ yes" if approximate else "✘ no"})
        if got.dtype != want.dtype:
            row["hint"] = f"dtype is {got.dtype}, must be {want.dtype} like {name}"
        elif approximate:
            row["status"] = "ok"
        else:
            row["hint"] = _value_hint(got, want, name, globals().get("n"))
    return row


class CheckTable:
    """Rows of a self-check: an HTML table in Jupyter and Colab, plain text elsewhere."""

    COLUMNS = ["gradient", "shape", "exact", "approximate", "max difference", "hint"]
    MARKS = {"ok": "✔", "wrong": "✘", "todo": "·"}
    COLOURS = {"ok": "#e6f4ea", "wrong": "#fce8e6", "todo": "#f1f3f4"}

    def __init__(self, rows, checklist=False, columns=None, summary=None):
        self.rows, self.checklist, self.columns, self._summary = rows, checklist, columns or self.COLUMNS, summary

    def summary(self):
        if self._summary:
            return self._summary
        done = sum(r["status"] == "ok" for r in self.rows)
        todo = [r["gradient"] for r in self.rows if r["status"] != "ok"]
        if not todo:
            return f"All {len(self.rows)} gradients match autograd."
        return f"{done} of {len(self.rows)} gradients match autograd. Next: {todo[0]}."

    def _cells(self, i, row):
        first = f"{self.MARKS[row['status']]} {i}." if self.checklist else self.MARKS[row["status"]]
        return [first] + [row.get(c, "") for c in self.columns]

    def __repr__(self):
        lines = [self._cells(i, r) for i, r in enumerate(self.rows, 1)]
        head = ["step" if self.checklist else ""] + self.columns
        widths = [max(len(str(x)) for x in column) for column in zip(head, *lines)]
        fmt = lambda cells: " | ".join(str(x).ljust(w) for x, w in zip(cells, widths)).rstrip()
        return "\n".join([self.summary(), fmt(head)] + [fmt(cells) for cells in lines])

    def _repr_html_(self):
        import html

        head = "".join(f"<th style='text-align:left'>{c}</th>" for c in ["step" if self.checklist else ""] + self.columns)
        body = "".join(
            f"<tr style='background:{self.COLOURS[r['status']]}'>"
            + "".join(f"<td style='text-align:left'>{html.escape(str(x))}</td>" for x in self._cells(i, r)) + "</tr>"
            for i, r in enumerate(self.rows, 1))
        return (f"<div class='backprop-ninja-self-check'><p><b>{html.escape(self.summary())}</b></p>"
                f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def cmp(name, dt, t):
    """Show one row: your gradient dt against autograd's t.grad."""
    display(CheckTable([_compare(name, dt, getattr(t, "grad", None))]))


def self_check(*names, checklist=False):
    """One table for several gradients: d<name> against <name>.grad for each name."""
    rows = []
    for name in names:
        row = _compare(name, globals().get("d" + name), getattr(globals().get(name), "grad", None))
        changed = _changed_since_check(name)
        if changed and row["status"] == "wrong":
            row["hint"] = changed
        rows.append(row)
    display(CheckTable(rows, checklist))


_answer_checks = {}  # name -> passed, in the order the graded cells ran
_at_check = {}  # name -> (the tensor d<name> was at its check, a copy of its values then)
_told = set()  # the names whose change after their check was already reported


def _changed_since_check(name):
    """Why d<name> no longer has the values its check saw, when a later cell changed that very tensor in place."""
    tensor, then = _at_check.get(name, (None, None))
    if tensor is None or globals().get("d" + name) is not tensor or torch.equal(tensor.detach(), then):
        return None
    storage = tensor.untyped_storage().data_ptr()
    twins = [k for k, v in globals().items() if k != "d" + name and re.fullmatch(r"d\w+", k)
             and isinstance(v, torch.Tensor) and v.untyped_storage().data_ptr() == storage]
    if twins:
        return (f"d{name} changed after its check: {twins[0]} is the same tensor ({twins[0]} = d{name} without "
                f".clone()?), so {twins[0]} += ... changed d{name} too. Write {twins[0]} = d{name}.clone()")
    return f"d{name} changed after its check: was it modified in place?"


def check_answer(name, want=None):
    """The line under a graded cell: d<name> against autograd's gradient (want, or <name>.grad).

    Printed to stderr when something is wrong, so that nbgrader validate reports it."""
    if want is None:
        want = getattr(globals().get(name), "grad", None)
    dt = globals().get("d" + name)
    row = _compare(name, dt, want)
    _answer_checks.pop(name, None)
    earlier = [k for k, passed in _answer_checks.items() if not passed]
    _answer_checks[name] = row["status"] == "ok"
    _at_check[name] = (dt, dt.detach().clone()) if isinstance(dt, torch.Tensor) else (None, None)
    _told.discard(name)
    if row["status"] == "ok":
        print(f"✔ d{name}: shape {row['shape'][2:]} ok, values match autograd's (max difference {row['max difference']})")
    elif row["approximate"] == "✘ no":
        problem = f"values differ from autograd's (max difference {row['max difference']}): {row['hint']}"
        if earlier:
            problem += f". But d{earlier[0]} above is not right yet: fix it first, this one may follow from it"
        print(f"✘ d{name}: {problem}", file=sys.stderr)
    else:
        print(f"✘ d{name}: {row['hint']}", file=sys.stderr)
    for other in [k for k in _at_check if k != name and k not in _told]:  # what this cell did to earlier answers
        changed = _changed_since_check(other)
        if changed:
            print(f"✘ {changed}", file=sys.stderr)
            _told.add(other)


def check_value(name, want, scale=None):
    """The line under a graded cell that grades a value rather than a gradient: the variable `name` against want.

    Values match when they differ by at most TOLERANCE times the scale (by default, the largest entry of want)."""
    got = globals().get(name)
    if got is None:
        problem = "not answered yet"
    elif not isinstance(got, torch.Tensor):
        problem = f"should be a torch tensor, not a {type(got).__name__}"
    elif tuple(got.shape) != tuple(want.shape):
        problem = f"the shape is {tuple(got.shape)}, it must be {tuple(want.shape)}"
    elif not torch.isfinite(got).all():
        problem = "contains NaN or inf"
    else:
        difference = (got.detach().double() - want.detach().double()).abs().max().item() if got.numel() else 0.0
        if scale is None:
            scale = want.detach().abs().max().item() if want.numel() else 0.0
        if difference <= TOLERANCE * max(float(scale), 1e-3):
            print(f"✔ {name}: shape {tuple(got.shape)} ok, max difference {difference:.1e}")
            return
        problem = f"max difference {difference:.1e}: not the same values"
    print(f"✘ {name}: {problem}", file=sys.stderr)


GRADING = os.environ.get("NBGRADER_EXECUTION") == "autograde"  # the autograder skips the optional checks


def _optional(check):
    """Run an optional check; show a short message instead of a traceback when it cannot run."""
    def run(*args):
        if GRADING:
            print("(optional checks are skipped while grading)")
            return
        try:
            check(*args)
        except Exception as error:  # the student's own code: report it in one line
            print(f"✘ could not run the check: {type(error).__name__}: {error}", file=sys.stderr)
    return run


### BEGIN HIDDEN TESTS
from autograder.in_kernel import start_grading

start_grading(globals(), self_checks=("cmp", "self_check", "check_answer", "check_value"))
### END HIDDEN TESTS

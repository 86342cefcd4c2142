# Self-checks: your gradients against autograd's, on this notebook's own batch.
# They only inform you; the autograder grades on a batch and parameters you have not seen.
# The same cell in every notebook of the course: some of what it defines serves the other notebooks.
if "torch" not in globals():  # the cells above have not run in this kernel
    raise RuntimeError(
        "Run the cells above first, in order from the top of the notebook: this cell needs what they define "
        "(after the kernel restarts, nothing of them is left)."
    )
import contextlib
import io
import re
import sys
import warnings

from IPython.display import display

# @from-engine: the grader's rule probes and tolerance


class Step:
    """One step of the graph, as the grader's table has it: d<name> from the gradients of the tensors it feeds."""

    def __init__(self, name, forward, upstream, zero):
        self.name, self.forward, self.upstream, self.zero = name, forward, list(upstream), zero


GRAPH = GRAPHS[globals().get("STEP_TABLE", "atomic")]  # this notebook's table of steps
STEP_BY_NAME = {name: Step(name, *row) for name, row in GRAPH.items()}
TOLERANCE = RTOL  # relative to the size of the gradient (rounding noise is far below): the grader's


def local_gradient(step, forward, upstream):
    """The step's backward rule for these upstream gradients: autograd through its forward line alone."""
    total = None
    for statement in ast.parse(step.forward.replace("; ", "\n")).body:
        consumer = statement.targets[0].id
        if consumer not in upstream:
            continue
        x = forward[step.name].detach().clone().requires_grad_(True)
        local = {**forward, "torch": torch, "F": torch.nn.functional, step.name: x}
        with torch.enable_grad():
            exec(compile(ast.Module([statement], []), "<the backward rule>", "exec"), local)
            out = local[consumer]
            (grad,) = torch.autograd.grad(out, x, upstream[consumer].reshape(out.shape).to(out.dtype), allow_unused=True)
        grad = torch.zeros_like(x) if grad is None else grad
        total = grad if total is None else total + grad
    return total.detach()


# autograd's gradients of the forward pass's tensors, as this cell finds them (not the parameters: training changes them)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    _AT_SETUP = (globals().get("loss"), {k: v.grad for k, v in list(globals().items())
                                         if isinstance(v, torch.Tensor) and not v.is_leaf and v.grad is not None})


def _autograd_gradient(name, tensor=None):
    """autograd's gradient of `name`: its .grad, or the one it had when this cell ran (after logits = logits.detach())."""
    grad = getattr(globals().get(name) if tensor is None else tensor, "grad", None)
    if grad is None and _AT_SETUP[0] is not None and globals().get("loss") is _AT_SETUP[0]:
        grad = _AT_SETUP[1].get(name)
    return grad


_STEP_SCALES = {}  # step -> its size, while a check of a notebook whose forward pass is not global sets it


def _step_scale(name):
    """The grader's size of step `name`: the largest term its rule adds up, on the absolute
    values of the forward pass and of autograd's upstream gradients; None when the step has no upstream here."""
    if name in _STEP_SCALES:
        return _STEP_SCALES[name]
    step, space = STEP_BY_NAME.get(name), globals()
    try:
        forward = {k: (v.detach().abs() if v.is_floating_point() else v) if isinstance(v, torch.Tensor) else v
                   for k, v in space.items() if isinstance(v, (torch.Tensor, int, float))}
        up = {u: _autograd_gradient(u).abs() for u in step.upstream}
        return max(magnitude(local_gradient(step, forward, {u: up[u]})) for u in up) if up else None
    except Exception:  # not this notebook's graph: the size of autograd's gradient decides
        return None


def _upstream_of(name):
    """Every gradient that d<name> is computed from, directly or further up the graph."""
    found, todo = set(), list(getattr(STEP_BY_NAME.get(name), "upstream", []))
    while todo:
        up = todo.pop()
        if up not in found:
            found.add(up)
            todo += getattr(STEP_BY_NAME.get(up), "upstream", [])
    return found


def _autograd_problem(answer):
    """Why `answer` earns nothing whatever its values: the code that computes it reads autograd (.grad, backward),
    which the autograder turns off, as it reads it. None when it does not, or when its code cannot be found."""
    history = globals().get("In")
    try:
        code = answer_code([str(cell) for cell in history[:-1]], answer, ())  # [:-1]: the cell of this check
    except Exception:
        return None
    if not any(_uses_autograd(statement, set()) for statement in code.statements):
        return None
    return (f"your code for {answer} reads autograd (.grad or backward): while grading, .grad holds no gradients, so "
            f"this answer earns nothing. Compute it from the forward pass's tensors and the gradients before it")


_SHAPES = {}  # a cell's text -> whether it is one of the course's own cells
_CHECKED_AT = {}  # answer -> the cells run when the line under its graded cell was last shown


def _marked(answer, upto=None, answers=None):
    """The autograder's reading of the cells you ran in this session (the course's own left out), as at grading: None
    when it leaves `answer` its points; else the first cell it cannot read, or "" when it reads autograd in it."""
    answers = {*globals().get("GRADED", GRADIENTS), answer} if answers is None else answers  # (the settings cell's)
    taint, unread = AutogradTaint(answers=answers), None
    for source in map(str, (globals().get("In") or [])[1:upto]):
        if source not in _SHAPES:
            if len(_SHAPES) > 1000:
                _SHAPES.clear()
            _SHAPES[source] = cell_shape(source) in COURSE_CELLS
        if _SHAPES[source]:
            continue
        taint.add_cell(source)
        unread = source if taint.unread and unread is None else unread
    return None if answer not in taint.tainted else unread if UNREAD in taint.tainted else ""


def _unread_line(source):
    """The line of `source` that runs code the autograder cannot read (None when no one line does)."""
    code, todo = as_run(source) or source, list(statements(source))
    while todo:
        node = todo.pop(0)
        if runs_unread_code(node):
            inner = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt) and runs_unread_code(c)]
            if not inner:
                return code.splitlines()[node.lineno - 1].strip()[:120]
            todo = inner
    return None


def _marked_problem(answer, upto=None, answers=None):
    """Why the autograder takes the points of `answer` whatever its values, as its reading of your cells finds; None
    when it does not."""
    try:
        cell = _marked(answer, upto, answers)
    except Exception:  # (the reading cannot tell: the other checks decide)
        return None
    if cell is None:
        return None
    if not cell:
        return _autograd_problem(answer) or (
            f"your code for {answer}, or a cell before it, reads autograd (.grad or backward): while grading, .grad "
            f"holds no gradients, so this answer earns nothing. Compute it from the forward pass's tensors and the "
            f"gradients before it")
    line = _unread_line(cell) or cell.strip().splitlines()[0][:120]
    return (f"a cell you ran holds code the autograder cannot read: `{line}` (eval, exec, a name made while it runs as "
            f"in globals()['d' + name] or getattr(x, name)). It may change any answer, so when graded every answer "
            f"from that cell on earns nothing. Name the tensors instead: cmp('h', dh, h), not cmp(name, "
            f"globals()['d' + name], globals()[name]); then restart the kernel and run the notebook again")


def _rule_problem(name, answer=None):
    """The grader's rule probe of d<name> (or `answer`, the variable that holds it), whose values are right here: your
    code for it, run again with its upstream gradients replaced by random tensors (the grader's draw), against the
    step's rule for them. What is wrong, or None when the rule is right or the probe cannot tell (then the values
    alone count, as in grading)."""
    step, history = STEP_BY_NAME.get(name), globals().get("In")
    if step is None or not step.upstream or not history:
        return None
    answer, names, space = answer or "d" + name, tuple("d" + u for u in step.upstream), globals()
    try:
        shapes = {k: v.shape for k, v in space.items() if isinstance(v, torch.Tensor)}
        pins = pinned_inputs(space, SEED, answer, names, shapes)
        code = answer_code([str(cell) for cell in history[:-1]], answer, names)  # [:-1]: the cell of this check
        zero = {u for u in step.upstream if not pins["d" + u].any()}
        if code.further_up or not code.pins_read or zero == set(step.upstream):
            return None
        statements, origins = list(code.statements), list(code.origins)
        apart, failed = _run_again(statements, space, code.reads, pins)
        if failed is not None and _run_again(statements[: failed + 1], space, code.reads, {})[1] == failed:
            # it raises on your own values too (a typo of its own): it changed nothing when its cell ran, and your
            # answer is what the code before it computed, as the autograder judges it
            cell, block = origins[failed][0], hasattr(statements[failed], "body")
            statements = [s for k, s in enumerate(statements) if k < failed + block or origins[k][0] != cell]
            apart, failed = _run_again(statements, space, code.reads, pins, failed if block else None)
        if failed is not None:
            return None
        forward = {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in space.items()
                   if isinstance(v, (torch.Tensor, int, float))}
        pinned = {u: pins["d" + u].reshape(forward[u].shape) for u in step.upstream}
        expected, result = local_gradient(step, forward, pinned).double(), apart.get(answer)
        if not isinstance(result, torch.Tensor) or result.numel() != expected.numel():
            return None
        result = result.detach().double().reshape(expected.shape)
        consistent = consistent_pins(pinned, forward, zero)
        if close(result, expected, 0.0) or close(result, local_gradient(step, forward, consistent).double(), 0.0):
            return None
        made_up = _made_up_for(step, space, pinned)  # your upstream gradient holds a factor this code leaves out
        if made_up and close(result, local_gradient(step, forward, made_up).double(), 0.0):
            return None
        left_out = [u for u in step.upstream if len(step.upstream) > 1
                    and close(result, local_gradient(step, forward, {k: pinned[k] for k in step.upstream if k != u})
                              .double(), 0.0)]
    except Exception:  # the probe cannot tell: the values decide
        return None
    if left_out:
        return (f"the values are right on this batch, but your code for {answer} leaves out the path through "
                f"{left_out[0]}: {name} feeds {len(step.upstream)} lines of the forward pass "
                f"({', '.join(step.upstream)}), and its gradient is the sum over every path (in steps: +=). That path "
                f"is tiny here, so only the rule shows it; the autograder gives no point for this")
    return (f"the values are right on this batch, but not the backward rule: your code for {answer}, run again with "
            f"random {', '.join(names)} (of the same shapes, as the autograder does), does not give what the "
            f"rule gives for them. The autograder gives no point for this")


def _made_up_for(step, space, pinned):
    """The pins divided by c for each of your upstream gradients that is c times autograd's (a factor moved up a step,
    `dscores / √head_size` with `dq = dscores @ k`): code right for those is right together with that gradient, on every
    input, as the autograder judges it. None when no upstream gradient of yours is off by a constant factor."""
    made_up = dict(pinned)
    for u in step.upstream:
        mine, theirs = space.get("d" + u), _autograd_gradient(u)
        if not isinstance(mine, torch.Tensor) or theirs is None or mine.shape != theirs.shape:
            continue
        mine, theirs = mine.detach().double(), theirs.detach().double()
        c = ((mine * theirs).sum() / (theirs * theirs).sum()).item() if theirs.any() else 1.0
        if abs(c - 1) > FACTOR_MATCH and close(mine, c * theirs, 0.0):
            made_up[u] = pinned[u] / c
    return made_up if any(made_up[u] is not pinned[u] for u in pinned) else None


def _run_again(statements, space, reads, pins, passed_over=None):
    """Run `statements` in a copy of the namespace with `pins` in place (your code may change them, and what it reads,
    in place: copies); the copy, and the position of the statement that raised (None if none did)."""
    apart = {**space, **{k: v.clone() for k, v in pins.items()}}
    apart.update({k: v.clone() for k, v in space.items() if k in reads and isinstance(v, torch.Tensor)})
    with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for position, statement in enumerate(statements):
            try:
                exec(compile(ast.Module([statement], []), "<your code, run again>", "exec"), apart)
            except Exception:
                if position != passed_over:
                    return apart, position
    return apart, None


def _calls_problem(name, answer, function):
    """Why your code for `answer` (d<name> computed another way) does not call `function` or its in-place twin, read
    from the cells that ran as the autograder reads them; None when it does, or when this check cannot read them."""
    step, history = STEP_BY_NAME.get(name), globals().get("In")
    if step is None or not history:
        return None
    try:
        code = answer_code([str(cell) for cell in history[:-1]], answer, tuple("d" + u for u in step.upstream))
    except NoAnswerCode as why:
        return f"the check found no code that computed {answer} ({why}): write `{answer} = ...` in its answer cell"
    if calls_function(code, function):
        return None
    return (f"the values are right, but your code for {answer} does not call {function}_ (or {function}): this cell "
            f"asks for d{name} computed with it. The autograder gives no point for this")


def _shape_hint(got, want, name):
    """Which dimension is wrong, and the usual reason."""
    if len(got) == len(want) == 2 and got == want[::-1] and got != want:
        if 1 in want:  # one number per neuron, from a sum: no matrix product gives it
            return f"transposed: d{name} must be {want}, like {name} (no .T, and sum with keepdim=True)"
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
        forward = getattr(STEP_BY_NAME.get(name), "forward", "")
        for i, (g, w) in enumerate(zip(got, want)):
            if g == 1 and w != 1 and re.search(rf"\b{name}\.sum\({i}\b", forward):
                return (f"dimension {i} is 1 but must be {w}: the forward pass sums {name} over dimension {i}, and a "
                        f"sum is a broadcast in the backward pass: every summed entry gets the same gradient")
            if g != w and w == 1:
                return (f"dimension {i} is {g} but must be 1: {name} was broadcast along dimension {i}, "
                        f"so sum over it (keepdim=True)")
            if g != w:
                return f"dimension {i} is {g} but must be {w}: summed over the wrong dimension, or a view in the wrong order?"
    return f"a gradient has the shape of its tensor: {want}, not {got}"


def _factor_hint(c, n, name=None):
    """A name for a constant factor between your values and autograd's (for d<name>), if it is a usual one."""
    step = STEP_BY_NAME.get(name)
    square = step is not None and re.search(r"\*\*\s*2(?![\d.])", step.forward)  # (its forward line squares)
    half = ("half the right values: is a factor 2 missing, as the power rule gives for a square?" if square else
            "half the right values: is a factor 2 missing, or the gradient split in two? A sum passes its whole "
            "gradient to each of its inputs")
    named = [(-1.0, "the wrong sign: check the sign of each factor of the local derivative"),
             (2.0, "twice the right values: a contribution added twice, or a factor 2 where the local derivative "
                   "has none?"),
             (0.5, half)]
    if n and n > 1:
        named += [(float(n), f"n = {n} times too large: is a division by n missing?"),
                  (1.0 / n, f"n = {n} times too small: is there a division by n too many?"),
                  (n / (n - 1), "n/(n-1) times too large: did you divide by n-1 where the forward pass divides by n?"),
                  ((n - 1) / n, "(n-1)/n times too small: did you divide by n where the forward pass divides "
                                "by n-1 (Bessel's correction)?")]
    for factor, hint in named:
        if abs(c - factor) <= FACTOR_MATCH * abs(factor):
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


def _begins_with_an_update(name):
    """The hint when the last cell that computes d<name> updates it (`d<name> += ...`) before any `d<name> = ...`: it
    adds to whatever d<name> held before that cell ran, again at every run."""
    writes = re.compile(rf"^\s*d{name}\s*(\[.*\])?\s*([-+*/@]?)=(?!=)")
    for source in reversed([str(cell) for cell in (globals().get("In") or [])[:-1]]):  # [:-1]: this check's cell
        found = [m for m in map(writes.match, source.splitlines()) if m]
        if found and found[0].group(2) and not found[0].group(1):
            return (f"the last cell that computes d{name} begins with `d{name} {found[0].group(2)}= ...`: it changes "
                    f"what d{name} held before that cell ran, and again at every run. Start that cell with "
                    f"`d{name} = ...`")
        if found:
            return None
    return None


def _value_hint(got, want, name, n, indices=None):
    """Why got is not want, the gradient of `name`; `indices`: the batch that reads C (emb = C[Xb]), for dC."""
    g, w = got.double(), want.double()
    scale = max(w.abs().max().item(), 1e-3)
    if g.abs().max().item() == 0:
        return "all zeros: is the answer cell finished?"
    twice = _added_twice(name) or _begins_with_an_update(name)
    if twice:
        return twice
    chain = _chain_hint(g, name, scale) or _upstream_hint(g, w, name)
    if chain:
        return chain
    c = constant_factor(g, w, scale)  # the grader's: every entry of a size that counts off by the same factor
    # (a factor of thousands says that the right values are about zero, as for logit_maxes: no factor to name)
    if c is not None and 1e-3 < abs(c) < 1e3:
        return _factor_hint(c, n, name)
    with contextlib.suppress(Exception):  # indices that are not this table's: no word about them
        if name == "C" and indices is not None and only_repeated_rows_wrong(g, w, indices, scale):
            return ("right for characters that appear once in the batch, wrong for those that appear several times: "
                    "writing through a repeated index (`dC[Xb] += demb`, `dC[Xb] = demb`, `dC[ix] = demb[k, j]` in a "
                    "loop, or index_put_ without accumulate=True) keeps only one of its contributions. Add up every "
                    "occurrence: index_add_, index_put_ with accumulate=True, a loop over single entries with +=, or a "
                    "one-hot matrix product")
    if g.dim() == 2 and g.shape[0] == g.shape[1] and (g.T - w).abs().max().item() <= TOLERANCE * scale:
        return "transposed: let the shapes decide the order of the matrix product"
    differ = wrong_entries(g, w, scale)
    wrong, columns = int(differ.sum().item()), differ.any(0).nonzero().flatten().tolist() if g.dim() == 2 else []
    # one column of many: a per-neuron term (Exercise 3's neuron 0 has a tiny variance: only there does n/(n-1) show)
    where = f", all in column {columns[0]} of {g.shape[1]}" if len(columns) == 1 and g.shape[1] > 2 else ""
    advice = f"{wrong} of {g.numel()} entries differ{where}: re-derive the local derivative"
    if where and "1e-5" in getattr(STEP_BY_NAME.get(name), "forward", ""):  # BatchNorm's epsilon, where it counts
        advice = (f"{wrong} of {g.numel()} entries differ{where}: the forward line adds 1e-5 (ε): does your derivative "
                  f"keep it? It counts only where a neuron's batch variance is about as small as ε, as column "
                  f"{columns[0]}'s is here")
    feeds = list(getattr(STEP_BY_NAME.get(name), "upstream", []))
    if not any(isinstance(globals().get("d" + u), torch.Tensor) for u in feeds):  # one formula for the whole block
        feeds = [u for u in feeds if not getattr(STEP_BY_NAME.get(u), "zero", False)]  # (a path about 0: not in it)
    if len(feeds) > 1:  # (in one formula, as in Exercises 2 and 3, the same: every path is in it)
        # (the separator with the words: Chinese writes its own semicolon)
        advice += (f"; {name} feeds {len(feeds)} lines of the forward pass ({', '.join(feeds)}): its gradient "
                   f"is the sum over every path (in steps: +=)")
    return advice


def _chain_hint(g, name, scale):
    """What a usual chain-rule slip gives for d<name> (got g): the local derivative not multiplied by the gradient
    flowing in, or one path of a tensor used twice; None when it is neither (or this is not the notebook's graph)."""
    step = STEP_BY_NAME.get(name)
    if step is None or not step.upstream:
        return None
    near = lambda t: t.shape == g.shape and (g - t.double()).abs().max().item() <= TOLERANCE * scale
    with contextlib.suppress(Exception):
        forward = {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in globals().items()
                   if isinstance(v, (torch.Tensor, int, float))}
        if len(step.upstream) == 1:
            (u,) = step.upstream
            if near(local_gradient(step, forward, {u: torch.ones_like(forward[u])})):
                return (f"this is the local derivative alone: the chain rule multiplies it by d{u}, the gradient that "
                        f"flows in from {u}")
            return None
        up = {u: _autograd_gradient(u) for u in step.upstream}
        for u in step.upstream:
            if near(local_gradient(step, forward, {u: up[u]})):
                others = ", ".join(k for k in step.upstream if k != u)
                if len(step.upstream) == 2:
                    return (f"only the path through {u}: {name} also feeds {others}, so add that path too (in steps: "
                            f"`d{name} = ...` for one path, `d{name} += ...` for the other)")
                return (f"only the path through {u}: {name} also feeds {others}, so add those paths too (in steps: "
                        f"`d{name} = ...` for one path, `d{name} += ...` for each of the others)")
    return None


def _upstream_hint(g, w, name):
    """What d<name> (got g, autograd's w) is when its rule read another of your gradients in the place of one of its
    upstream ones (`dW1 = embcat.T @ dhpreact`), as the grader finds it: within the tolerance of the rule fed it, and
    not where that path adds nothing (dlogit_maxes). None when it is not (or this is not the notebook's graph)."""
    step, space = STEP_BY_NAME.get(name), globals()
    if step is None or not step.upstream:
        return None
    with contextlib.suppress(Exception):
        forward = {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in space.items()
                   if isinstance(v, (torch.Tensor, int, float))}
        absolute = {k: v.abs() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                    for k, v in forward.items()}
        up = {}
        for u in step.upstream:  # yours, as the grader judges a step from them; autograd's where yours cannot stand
            yours, right = space.get("d" + u), _autograd_gradient(u)
            ok = isinstance(yours, torch.Tensor) and yours.shape == right.shape
            up[u] = yours.detach().to(right.dtype) if ok else right
        for u in step.upstream:
            for other in GRAPH:  # in the order of the backward pass
                read = space.get("d" + other)
                if (other in (u, name) or u in _upstream_of(other) or not isinstance(read, torch.Tensor)
                        or read.shape != up[u].shape):  # (one computed from d<u> is never read in its place)
                    continue
                given = {**up, u: read.detach().to(up[u].dtype)}
                scale = max(magnitude(local_gradient(step, absolute, {k: v.abs()})) for k, v in given.items())
                wrong = local_gradient(step, forward, given).double()
                path = local_gradient(step, forward, {u: given[u]})
                if (magnitude(path) <= TOLERANCE * scale or close(wrong, w, max(scale, magnitude(w)))
                        or not close(g, wrong, scale)):
                    continue
                if len(step.upstream) == 1:
                    return (f"computed from the wrong upstream gradient: this is what d{name} would be if d{other} "
                            f"were its upstream gradient. {name} is used to make {u} (`{step.forward}`), so its "
                            f"gradient comes through d{u}")
                return (f"the path through {u} is computed from the wrong upstream gradient: it is what that path "
                        f"would be if d{other} were its upstream gradient. {name} is used to make {u}, so that path "
                        f"comes through d{u}")
    return None


def _fix_first(earlier, hint, name=None, dt=None):
    """The hint of a step computed from a gradient above it that is off: that one first, then this one's own hint;
    or, when d<name> (dt) is right for the gradients it is computed from as you have them, only that one."""
    if name is not None and _carried_forward(name, dt):
        return (f"right for the gradients it is computed from as you have them, but {earlier} above is not right yet: "
                f"this step keeps its points; fix {earlier} first, then run this cell again")
    return (f"{earlier} above is not right yet: fix it first, this one may follow from it. "
            f"If this one is still off after that: {hint}")


def _carried_forward(name, dt):
    """Whether dt follows d<name>'s rule from your own upstream gradients (as the autograder judges a step below a
    wrong one: error carried forward); False when it does not or cannot be told."""
    step, space = STEP_BY_NAME.get(name), globals()
    with contextlib.suppress(Exception):
        forward = {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in space.items()
                   if isinstance(v, (torch.Tensor, int, float))}
        yours = {u: space["d" + u].detach() for u in step.upstream}
        if not all(bool(g.any()) for g in yours.values()):  # (zeros: any rule that multiplies them gives zeros too)
            return False
        expected = _rule_for_yours(step, forward, yours).double()
        got = dt.detach().double()
        return bool(torch.isfinite(expected).all()) and close(got, expected, magnitude(expected))
    return False


def _rule_for_yours(step, forward, yours):
    """d<name> by the step's rule from your own upstream gradients, as the autograder applies it. Raises when the rule
    cannot take them."""
    total = None
    for u, g in yours.items():
        term = local_gradient(step, forward, {u: g}) if g.shape == forward[u].shape else _through(step, forward, u, g)
        total = term if total is None else total + term
    return total


def _through(step, forward, u, g):
    """The path through u of the step's rule, for your d<u> (g) not of u's shape (a keepdim dropped above, a .T), as
    the autograder's formula takes it: a rule that passes the gradient on (times a constant), or multiplies it entry by
    entry (then sums it where <name> was broadcast), does so to yours as your code does. Raises for any other rule."""
    out, x = forward[u], forward[step.name]
    lead = out.dim() - x.dim()  # dimensions the forward pass adds in front of <name> (b2 + a matrix)
    shape = (1,) * lead + tuple(x.shape)
    if lead < 0 or any(a not in (1, b) for a, b in zip(shape, out.shape)):  # (<name> larger: a sum over it)
        entries, dims, lead = local_gradient(step, forward, {u: torch.ones_like(out)}), (), 0
        passed_on = None  # (its rule spreads the gradient over <name>'s shape)
    else:  # <name> broadcast along dims: its rule at each of out's entries, summed over them
        dims = tuple(i for i, (a, b) in enumerate(zip(shape, out.shape)) if a != b)
        spread = {**forward, step.name: x.reshape(shape).expand(out.shape).contiguous()}
        entries = local_gradient(step, spread, {u: torch.ones_like(out)})
        passed_on = entries.flatten()[0] if bool((entries == entries.flatten()[0]).all()) else None  # (-1: a - <name>)

    def summed(t):
        t = t.sum(dims, keepdim=True) if dims else t
        return t.flatten(0, lead) if lead else t

    r = torch.rand(out.shape, generator=torch.Generator().manual_seed(0), dtype=out.dtype) + 0.5
    if not close(local_gradient(step, forward, {u: r}).double(), summed(entries * r).double(), 0.0):
        raise ValueError(f"the rule does not take d{u} entry by entry")
    return summed(entries * g if passed_on is None else passed_on * g)


def _wrong_upstream(name):
    """The first of your gradients that d<name> is computed from (in the order of the backward pass) whose shape or
    values are off; None when they all match autograd's, or are not yours."""
    with contextlib.suppress(Exception):
        above = _upstream_of(name)
        for up in GRAPH:
            got, want = globals().get("d" + up), _autograd_gradient(up)
            if up not in above or not isinstance(got, torch.Tensor) or want is None:
                continue
            if tuple(got.shape) != tuple(want.shape):
                return "d" + up
            zero = STEP_BY_NAME[up].zero and got.is_floating_point() and not got.any()
            if not zero and not _difference(got.detach(), want, up)[1]:
                return "d" + up
    return None


def _difference(got, want, name=None):
    """The largest difference, and whether it is within the tolerance: the grader's, relative to the step's size
    (``_step_scale``), else to the size of want."""
    difference = (got.double() - want.double()).abs().max().item() if got.numel() else 0.0
    size = want.abs().max().item() if want.numel() else 0.0
    scale = _step_scale(name) if name else None
    return difference, difference <= TOLERANCE * (max(scale, size) if scale is not None else max(size, 1e-3))


def _compare(name, dt, want, indices=None):
    """One row of a self-check: your gradient dt against autograd's gradient want, as a dict; `indices`: the batch
    that reads C, when it is not this notebook's Xb."""
    row = {"gradient": f"d{name}", "shape": "", "exact": "", "approximate": "", "max difference": "",
           "hint": "", "status": "todo"}
    if dt is None:
        row["hint"] = "not answered yet"
        return row
    row["status"] = "wrong"
    if want is None:
        row["hint"] = f"autograd has no gradient for {name}: run the setup cells again"
    elif not isinstance(dt, torch.Tensor):
        row["hint"] = f"should be a torch tensor, not of type {type(dt).__name__}"
    elif tuple(dt.shape) != tuple(want.shape):
        row["shape"] = f"✘ {tuple(dt.shape)}"
        row["hint"] = _shape_hint(tuple(dt.shape), tuple(want.shape), name)
        squeezed = lambda shape: [s for s in shape if s != 1]
        if (len(dt.shape) != len(want.shape) and squeezed(dt.shape) == squeezed(want.shape)
                and _difference(dt.detach().reshape(want.shape), want, name)[1]):
            row["hint"] = "the values are right (that earns part of the step), but " + row["hint"]
            row["close"] = True  # (the values: nothing above is to blame)
    else:
        got = dt.detach()
        row["shape"] = f"✔ {tuple(got.shape)}"
        if not torch.isfinite(got).all():
            row["hint"] = "contains NaN or inf: a division by zero, the log of 0, or ** 0.5 (** -1.5) of a negative number?"
            return row
        difference, approximate = _difference(got, want, name)
        zero = getattr(STEP_BY_NAME.get(name), "zero", False) and got.is_floating_point() and not got.any()
        approximate = approximate or zero  # exact zeros are right where the true gradient is zero (b1, logit_maxes)
        row.update({"exact": "✔ yes" if torch.equal(got, want) else "– no", "max difference": f"{difference:.1e}",
                    "approximate": "✔ yes" if approximate else "✘ no", "close": approximate})
        if got.dtype != want.dtype:
            row["hint"] = f"dtype is {got.dtype}, must be {want.dtype} like {name}"
        elif approximate:
            row["status"] = "ok"
        else:
            indices = globals().get("Xb") if indices is None else indices
            row["hint"] = _value_hint(got, want, name, globals().get("n"), indices)
    return row


class CheckTable:
    """Rows of a self-check: an HTML table in Jupyter and Colab, plain text elsewhere."""

    COLUMNS = ["gradient", "shape", "exact", "approximate", "max difference", "hint"]
    # the titles a student reads over the columns, in the words of the notebook (its rows keep their keys)
    TITLES = "step | gradient | shape | exact | approximate | max difference | hint".split(" | ")
    HEADINGS = dict(zip(["step", *COLUMNS], TITLES)) if len(TITLES) == len(COLUMNS) + 1 else {}
    MARKS = {"ok": "✔", "wrong": "✘", "todo": "·"}
    COLOURS = {"ok": "#e6f4ea", "wrong": "#fce8e6", "todo": "#f1f3f4"}

    def __init__(self, rows, checklist=False, columns=None, summary=None, titles=None):
        self.rows, self.checklist, self.columns, self._summary = rows, checklist, columns or self.COLUMNS, summary
        self.headings = {**self.HEADINGS, **(titles or {})}  # titles: column -> title, for another table's columns

    def summary(self):
        if self._summary:
            return self._summary
        done = sum(r["status"] == "ok" for r in self.rows)
        order = [f"d{name}" for name in GRAPH]  # the order of the backward pass: the first to fix comes first
        todo = sorted((r["gradient"] for r in self.rows if r["status"] != "ok"),
                      key=lambda g: order.index(g) if g in order else len(order))
        if len(self.rows) == 1:
            return f"{todo[0]} does not match autograd yet." if todo else f"{self.rows[0]['gradient']} matches autograd."
        if not todo:
            return f"All {len(self.rows)} gradients match autograd."
        return f"{done} of {len(self.rows)} gradients match autograd. Next: {todo[0]}."

    def _cells(self, i, row):
        first = f"{self.MARKS[row['status']]} {i}." if self.checklist else self.MARKS[row["status"]]
        return [first] + [row.get(c, "") for c in self.columns]

    def __repr__(self):
        lines = [self._cells(i, r) for i, r in enumerate(self.rows, 1)]
        head = [self.headings.get(c, c) for c in ["step" if self.checklist else ""] + self.columns]
        widths = [max(len(str(x)) for x in column) for column in zip(head, *lines)]
        fmt = lambda cells: " | ".join(str(x).ljust(w) for x, w in zip(cells, widths)).rstrip()
        return "\n".join([self.summary(), fmt(head)] + [fmt(cells) for cells in lines])

    def _repr_html_(self):
        import html

        titles = [self.headings.get(c, c) for c in ["step" if self.checklist else ""] + self.columns]
        head = "".join(f"<th style='text-align:left'>{html.escape(c)}</th>" for c in titles)
        body = "".join(
            f"<tr style='background:{self.COLOURS[r['status']]}'>"
            + "".join(f"<td style='text-align:left'>{html.escape(str(x))}</td>" for x in self._cells(i, r)) + "</tr>"
            for i, r in enumerate(self.rows, 1))
        return (f"<div class='backprop-ninja-self-check'><p><b>{html.escape(self.summary())}</b></p>"
                f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def cmp(name, dt, t):
    """Show one row: your gradient dt against autograd's t.grad."""
    row = _compare(name, dt, _autograd_gradient(name, t))
    ran = _ran_problem("d" + name, dt) if dt is not None and globals().get("d" + name) is dt else None
    if ran:
        row.update(status="wrong", hint=ran)
    elif row["status"] == "ok" and _answers_in_cells() and (marked := _marked_problem("d" + name)):
        row.update(status="wrong", hint=marked)
    display(CheckTable([row]))


def _answers_in_cells():
    """Whether the answers are the notebook's own `d<name> = ...` lines, whose code the checks read (their rule, their
    use of autograd). Exercise 4's answers are what backward_pass returns: there a d<name> of the notebook's cells is
    Step 1's copy of backward_pass's last result, in a cell that calls loss.backward() to compare with autograd."""
    return globals().get("ANSWERS_IN_CELLS", True)


def self_check(*names, checklist=False):
    """One table for several gradients: d<name> against <name>.grad for each name."""
    rows = []
    for name in names:
        row = _compare(name, globals().get("d" + name), _autograd_gradient(name))
        changed, ran = _changed_since_check(name), _ran_problem("d" + name, globals().get("d" + name))
        if ran:
            row.update(status="wrong", hint=ran)
        elif changed and row["status"] == "wrong":
            row["hint"] = changed
        elif row.get("close") is False or row["shape"].startswith("✘") and row.get("close") is not True:
            earlier = _wrong_upstream(name)
            if earlier:
                row["hint"] = _fix_first(earlier, row["hint"], name, globals().get("d" + name))
        if row["status"] == "ok" and _answers_in_cells():  # the rule too, as the line under its graded cell and the autograder judge it
            marked = _marked_problem("d" + name, _CHECKED_AT.get("d" + name))
            wrong_rule = marked or _autograd_problem("d" + name) or _rule_problem(name)
            if wrong_rule:
                row.update(status="wrong", hint=wrong_rule)
        rows.append(row)
    display(CheckTable(rows, checklist))


_RAN = []  # the cells run since this one, as IPython ran them: (their code, the error that stopped them or None)
# the forward pass's tensors as this cell found them, and their versions (an in-place change counts one up): a later
# cell that rebinds one of those names (a temporary named like one) changes what every cell after it reads
_FORWARD = {k: (v, v._version) for k, v in globals().items()
            if isinstance(v, torch.Tensor) and not (k.startswith("d") and k[1:] in globals())}
_FORWARD_AT = len(globals().get("In") or [])  # the cells after this one: In[_FORWARD_AT:]


def _remember_cell(result):
    """IPython's post_run_cell hook: each cell's code, and the error it stopped with."""
    _RAN.append((getattr(result.info, "raw_cell", "") or "", result.error_before_exec or result.error_in_exec))
    del _RAN[:-100]


if os.environ.get("NBGRADER_EXECUTION") != "autograde":
    with contextlib.suppress(Exception):  # (outside IPython: no cells to remember)
        _events = get_ipython().events
        for _hook in [f for f in _events.callbacks["post_run_cell"] if getattr(f, "__name__", "") == "_remember_cell"]:
            _events.unregister("post_run_cell", _hook)
        _events.register("post_run_cell", _remember_cell)


def _bound_in(source):
    """The names a cell's code binds (``bound_names``, the autograder's reading); none when it cannot be read."""
    with contextlib.suppress(Exception):  # (its magics as IPython runs them; outside IPython, the code as it is)
        source = get_ipython().transform_cell(source)
    try:
        return bound_names(ast.parse(source).body)
    except Exception:  # noqa: BLE001 (code Python cannot parse: nothing to name)
        return set()


def _ran_problem(answer, dt, name=None):
    """Why `answer` (dt) is not what its cell computes: the last cell run that assigns it stopped with an error (the
    value is from before that cell, or only part of it), or the cell just run, the one for it, assigns no `answer`.
    None when neither, or outside IPython."""
    writes = re.compile(rf"(?m)^\s*{answer}\s*(\[.*\])?\s*[-+*/@]?=(?!=)|\b{answer}\.\w+_\(")
    for source, error in reversed(_RAN):
        if not writes.search(source):
            continue
        if error is None:
            return None
        if isinstance(error, NotImplementedError):
            return (f"the cell that computes {answer} still raises NotImplementedError: delete its line "
                    f"`raise NotImplementedError()` and run the cell again")
        kept = _kept_by_its_rule(name or answer[1:], answer, error)
        if kept:
            return kept
        return (f"the last cell that computes {answer} stopped with {type(error).__name__}{full_width_hint(error)} "
                f"(see its output), so {answer} here may not be what that cell computes: fix the error and run that "
                f"cell again")
    if dt is None and _RAN and _RAN[-1][1] is None and re.match(rf"\s*#\s*{answer}(?!\w)", _RAN[-1][0]):
        for twin in sorted(_bound_in(_RAN[-1][0])):  # the names it binds, as the autograder reads them
            if twin != answer and latin_lookalike(twin) == answer:  # a Cyrillic letter typed for its Latin twin
                letters = ", ".join(f"{c} (U+{ord(c):04X})" for c in dict.fromkeys(twin) if not c.isascii())
                return (f"the cell for {answer} assigns {twin}, which looks like {answer} but is another name to "
                        f"Python: it holds letters that are not Latin ({letters}). Type them again in the Latin layout")
        return f"the cell for {answer} ran, but it assigns no {answer}: write its answer as `{answer} = ...`"
    return None


def _rebound_forward(answer):
    """Why the code for `answer` may not compute what it should here: it reads a tensor of the forward pass whose name a
    later cell rebound (a temporary named `x` in another answer cell). None when not, or when it cannot be told."""
    with contextlib.suppress(Exception):
        history = [str(cell) for cell in globals().get("In")[:-1]]  # [:-1]: the cell of this check
        code = answer_code(history, answer, ())
        own = {name for statement in code.statements for name in writes(statement)}  # a loop's variable, a temporary
        for name in sorted(code.reads - own):
            tensor, version = _FORWARD.get(name, (None, None))
            now = globals().get(name)
            if tensor is None or now is tensor or tensor._version != version:
                continue
            if isinstance(now, torch.Tensor) and now.shape == tensor.shape and torch.equal(now.detach(), tensor):
                continue
            found = [(cell, k) for cell in history[_FORWARD_AT:] for k in _bound_at(cell, name)]  # as the autograder reads them
            where = f"`{as_written(*found[-1])}`" if found else "a cell"
            return (f"your code for {answer} reads {name}, which is no longer the forward pass's {name}: {where} "
                    f"rebound it after the forward pass. Give that temporary another name, then run the notebook again "
                    f"from the top (the autograder runs your code for {answer} on the forward pass's {name})")
    return None


def _kept_by_its_rule(name, answer, error):
    """What the autograder says of the code for `answer` (d<name>) that stopped on your own upstream gradients, when
    they are not of autograd's shape and dtype and that code, run again on random ones of the right shape, follows the
    backward rule: the step keeps its points, the one to fix is above. None when not, or when it cannot be told."""
    step, space, history = STEP_BY_NAME.get(name), globals(), globals().get("In")
    if step is None or not step.upstream or not history:
        return None
    mine = {u: (space.get("d" + u), _autograd_gradient(u)) for u in step.upstream}
    broken = [u for u, (g, want) in mine.items() if want is not None and not (isinstance(g, torch.Tensor)
              and (g.shape, g.dtype) == (want.shape, want.dtype))]
    if not broken:
        return None
    names = tuple("d" + u for u in step.upstream)
    try:
        shapes = {k: v.shape for k, v in space.items() if isinstance(v, torch.Tensor)}
        code = answer_code([str(cell) for cell in history[:-1]], answer, names)  # [:-1]: the cell of this check
        if code.further_up or not code.pins_read:
            return None
        for own_shapes in (True, False):  # in your shapes first, then in the right ones, as the autograder runs it
            pins = pinned_inputs(space, SEED, answer, names, shapes, own_shapes)
            apart, failed = _run_again(list(code.statements), space, code.reads, pins)
            if failed is None:
                break
        forward = {k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in space.items()
                   if isinstance(v, (torch.Tensor, int, float))}
        pinned = {u: pins["d" + u].reshape(forward[u].shape) for u in step.upstream}
        zero = {u for u in step.upstream if not pinned[u].any()}
        result, expected = apart.get(answer), local_gradient(step, forward, pinned).double()
        if failed is not None or zero == set(step.upstream) or not isinstance(result, torch.Tensor):
            return None
        result = result.detach().double()
        if not (close(result, expected, 0.0)
                or close(result, local_gradient(step, forward, consistent_pins(pinned, forward, zero)).double(), 0.0)):
            return None
    except Exception:  # the rule cannot be told: the error decides
        return None
    yours, fix = ", ".join("d" + u for u in broken), _wrong_upstream(name) or "d" + broken[0]
    return (f"the last cell that computes {answer} stopped with {type(error).__name__} on your own {yours} (not "
            f"defined, or not of the shape and dtype of autograd's). Run again on random {yours} of the right shape, "
            f"as the autograder does, your code for {answer} follows the backward rule: this step keeps its points; "
            f"fix {fix} above first, then run this cell again")


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
    # the one whose += did it first: it had no check, or its own check already saw the values as they are now
    # (`datt_out = dx` checked before `demb = dx; demb += ...` saw dx's old values: demb changed both)
    now = tensor.detach()
    seen = lambda k: _at_check.get(k[1:], (None, None))[1]
    twins.sort(key=lambda k: seen(k) is not None and not torch.equal(seen(k), now))
    if twins:
        return (f"d{name} changed after its check: {twins[0]} is the same tensor ({twins[0]} = d{name} without "
                f".clone()?), so {twins[0]} += ... changed d{name} too. Write {twins[0]} = d{name}.clone()")
    return f"d{name} changed after its check: was it modified in place?"


def check_answer(name, want=None, answer=None, calls=None, indices=None):
    """The line under a graded cell: d<name> (or `answer`, the variable that holds it) against autograd's gradient
    (want, or <name>.grad); with `calls`, the code for it must also call that function, as the autograder reads it;
    `indices`: the batch that reads C, when it is not the notebook's Xb.

    Printed to stderr when something is wrong, so that nbgrader validate reports it."""
    own_batch = want is None  # (Exercise 4 checks on another batch: your gradients above are not its)
    if want is None:
        want = _autograd_gradient(name)
    answer = answer or "d" + name
    key = answer[1:]  # what this check is remembered as: name, or e.g. C_index_add
    _CHECKED_AT[answer] = len(globals().get("In") or [])
    dt = globals().get(answer)
    row = _compare(name, dt, want, indices)
    ran = _ran_problem(answer, dt, name)
    if ran:
        row.update(status="wrong", hint=ran, close=None)
    elif row["status"] == "ok" and _answers_in_cells():
        wrong_rule = (_marked_problem(answer) or _autograd_problem(answer) or _rule_problem(name, answer)
                      or (calls and _calls_problem(name, answer, calls)))
        if wrong_rule:
            row.update(status="wrong", hint=wrong_rule)
    elif row.get("close") is False:
        row["hint"] = _other_forward_pass(answer) or row["hint"]
    rebound = row["status"] != "ok" and _rebound_forward(answer)
    if rebound:  # the cause, before what it led to (an error, other values)
        row.update(status="wrong", hint=rebound, close=None)
    _answer_checks.pop(key, None)
    # values or a shape off (not only the rule: then the values are right) may follow from a gradient above
    off = not ran and not rebound and (
        row.get("close") is False or row["shape"].startswith("✘") and row.get("close") is not True)
    earlier = _wrong_upstream(name) if off and own_batch else None
    _answer_checks[key] = row["status"] == "ok"
    _at_check[key] = (dt, dt.detach().clone()) if isinstance(dt, torch.Tensor) else (None, None)
    _told.discard(key)
    if row["status"] == "ok":
        print(f"✔ {answer}: shape {row['shape'][2:]} ok, values match autograd's (max difference {row['max difference']})")
    else:
        problem = row["hint"]
        if row.get("close") is False:
            problem = f"values differ from autograd's (max difference {row['max difference']}): {problem}"
        if earlier and dt is not None:
            problem = _fix_first(earlier, problem, name, dt)
        print(f"✘ {answer}: {problem}", file=sys.stderr)
    for other in [k for k in _at_check if k != key and k not in _told]:  # what this cell did to earlier answers
        changed = _changed_since_check(other)
        if changed:
            print(f"✘ {changed}", file=sys.stderr)
            _told.add(other)


def _other_forward_pass(answer, of="_biased"):
    """What the code for `answer` (Exercise 3's Part 4: a gradient of the second forward pass, whose names end in `of`)
    reads of the first forward pass where the second has a tensor of its own; None when nothing, or unreadable."""
    if not answer.endswith(of):
        return None
    with contextlib.suppress(Exception):
        code = answer_code([str(cell) for cell in globals().get("In")[:-1]], answer, ())
        space, given = globals(), answer[: -len(of)]
        read = {*code.reads, *code.pins_read, *code.further_up}
        if given in read:
            return (f"your code for {answer} starts from {given}, the first forward pass's gradient: compute it from "
                    f"this forward pass's own tensors (ending in {of})")
        first = sorted(r for r in read if isinstance(space.get(r + of), torch.Tensor)
                       and not torch.equal(space[r].detach(), space[r + of].detach()))
        names, own = ", ".join(first), ", ".join(r + of for r in first)
        if first:
            return f"your code for {answer} reads the first forward pass's {names}: use this forward pass's own ({own})"
    return None


def check_value(name, want, scale=None, of=None):
    """The line under a graded cell that grades a value rather than a gradient: the variable `name` against want.

    Values match when they differ by at most TOLERANCE times the scale (by default, the largest entry of want).
    `of`: the answer `name` is computed from in the check's own cell (by default `name` itself, its answer cell's)."""
    got, ran = globals().get(name), _ran_problem(of or name, globals().get(of or name))
    if ran:  # the value is from before the answer's cell stopped: no old ✔
        problem = ran
    elif got is None:
        problem = "not answered yet"
    elif not isinstance(got, torch.Tensor):
        problem = f"should be a torch tensor, not of type {type(got).__name__}"
    elif tuple(got.shape) != tuple(want.shape):
        problem = f"the shape is {tuple(got.shape)}, it must be {tuple(want.shape)}"
    elif not torch.isfinite(got).all():
        problem = "contains NaN or inf"
    else:
        difference = (got.detach().double() - want.detach().double()).abs().max().item() if got.numel() else 0.0
        if scale is None:
            scale = want.detach().abs().max().item() if want.numel() else 0.0
        marked = difference <= TOLERANCE * max(float(scale), 1e-3) and _marked_problem(of or name)
        if marked is None:
            print(f"✔ {name}: shape {tuple(got.shape)} ok, max difference {difference:.1e}")
            return
        if marked:
            problem = marked
        elif not want.any():
            problem = f"entries up to {difference:.1e} in size, where every one must be zero"
        else:
            problem = (f"max difference {difference:.1e}: not the same values" + _where(got, want, scale)
                       + _spread_hint(got, want))
    print(f"✘ {name}: {problem}", file=sys.stderr)


def _where(got, want, scale):
    """Where got differs from want, when that is all in one column of many (in Exercise 3, neuron 0's tiny variance)."""
    g = got.detach().double()
    if g.dim() != 2 or g.shape[1] < 3:
        return ""
    differ = (g - want.detach().double()).abs() > TOLERANCE * max(float(scale), 1e-3)
    columns = differ.any(0).nonzero().flatten().tolist()
    return f", all in column {columns[0]} of {g.shape[1]}" if len(columns) == 1 else ""


def _spread_hint(got, want):
    """When every column of got is want's column stretched about its mean by one factor (a normalisation that divides
    by another count), that factor, and n/(n-1)'s name for it."""
    if got.dim() != 2 or got.shape[0] < 3:
        return ""
    g, w = got.detach().double(), want.detach().double()
    g, w = g - g.mean(0), w - w.mean(0)
    norms = (w * w).sum(0)
    if not bool((norms > 0).all()):
        return ""
    factors = (g * w).sum(0) / norms
    if (g - factors * w).abs().max().item() > 1e-3 * w.abs().max().item():
        return ""
    c, n = factors.mean().item(), g.shape[0]
    if abs(c - 1) <= 1e-4 or (factors - c).abs().max().item() > 1e-2 * abs(c):
        return ""
    if abs(c * c - n / (n - 1)) <= 0.1 * (n / (n - 1) - 1):
        return (f". Each column's spread is {c:.4f} ≈ √(n/(n-1)) times the right one: a variance divided by n "
                f"where the forward pass divides by n-1 (Bessel's correction)?")
    if abs(c * c - (n - 1) / n) <= 0.1 * (1 - (n - 1) / n):
        return (f". Each column's spread is {c:.4f} ≈ √((n-1)/n) times the right one: a variance divided by n-1 "
                f"where the forward pass divides by n?")
    return f". Each column's spread is {c:.4g} times the right one: is a scale or a variance computed another way?"


CHINESE_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei", "Microsoft YaHei", "PingFang SC", "SimHei")


def plot_fonts():
    """matplotlib's fonts for labels in any edition's words: DejaVu Sans, then a Chinese font where this machine has
    one (call it before the plot's labels are made)."""
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    plt.rcParams["font.family"] = ["DejaVu Sans", *[name for name in CHINESE_FONTS if name in installed][:1]]


def show_plot():
    """plt.show(), and a word when this machine has no font for some characters of the labels (boxes instead)."""
    import matplotlib.pyplot as plt

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plt.show()
    if any("missing from font" in str(w.message) for w in caught):
        print("This machine has no font for some characters of the labels, so they show as boxes. On Colab, run "
              "!apt-get -qq install -y fonts-noto-cjk && rm -rf ~/.cache/matplotlib in a cell, then restart the "
              "session (Runtime menu) and run the notebook again.")


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

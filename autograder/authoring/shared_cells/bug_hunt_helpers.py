# The bug hunt's tools: your colleague's pass for your id, points to check a backward pass at, the table of your
# checks, and the lines under the graded cells. The autograder grades on a batch and parameters you have not seen.
if "self_check" not in globals():  # the cells above have not run in this kernel
    raise RuntimeError(
        "Run the cells above first, in order from the top of the notebook: this cell needs what they define "
        "(after the kernel restarts, nothing of them is left)."
    )
import base64
import contextlib
import hashlib
import inspect
import itertools
import json
import textwrap
import types
import zlib
from typing import Callable

# @from-engine: the bug hunt

STEP = {"bnvar": 1e-8}  # neuron 0's batch variance is 1e-5: a step must be far smaller than the value it nudges
backward_pass = None  # your colleague's, once you have pasted it in Part 2
# your colleague's docstring and comments in their pass, in the words of this notebook
PASS_WORDS = [
    "Every gradient of the loss, from t, the forward pass's tensors by name; returned by name too (dprobs, ...).",
    "cross-entropy loss",
    "second layer and tanh",
    "BatchNorm layer",
    "first layer and the embedding",
    "clip each example's loss at 3.5",
]


def _planted(text):
    """The gradients your colleague's bugs make wrong, in the order of the backward pass (none without an id)."""
    keys = bug_keys(text, _HUNT["salt"], _HUNT["showing"], _HUNT["hiding"], _HUNT["gradient"], GRADIENTS)
    return [_HUNT["gradient"][key] for key in keys]


def _not_a_string():
    """Why BUG_HUNT_ID chooses no bugs when it is set but is no string (a student number written without quotes)."""
    text = globals().get("BUG_HUNT_ID")
    if text is None or isinstance(text, str):
        return None
    return (f"BUG_HUNT_ID = {text!r} is not a string, so it chooses no bugs: write it in quotes, "
            f"BUG_HUNT_ID = \"{text}\", and run its cell again")


def show_colleague_pass():
    """Print your colleague's backward_pass, the one for your BUG_HUNT_ID."""
    text = globals().get("BUG_HUNT_ID")
    if not _planted(text):
        if _not_a_string():
            print(f"✘ {_not_a_string()}", file=sys.stderr)
        else:
            print("✘ No BUG_HUNT_ID yet: write it in the cell above (BUG_HUNT_ID = \"...\", the id your instructor "
                  "asked for), run that cell, then this one.", file=sys.stderr)
        return
    keys = bug_keys(text, _HUNT["salt"], _HUNT["showing"], _HUNT["hiding"], _HUNT["gradient"], GRADIENTS)
    code = with_bugs(_HUNT["pass"], keys, _HUNT["lines"])
    for english, words in zip(_as_written(_HUNT["words"]), _as_written(PASS_WORDS)):
        code = code.replace(english, words, 1)
    print(code)


def _as_written(words):
    """A pass's words as they stand in its code: the docstring, then the comments."""
    return [f'"""{words[0]}"""'] + [f"# {comment}" for comment in words[1:]]


def test_point(**parameters):
    """The forward pass's tensors for this notebook's batch, as a dict (t["probs"], t["W1"], ..., and n, Xb, Yb): at
    the parameters of the setup cells, with any you give instead, e.g. test_point(bnbias=torch.zeros(1, n_hidden))."""
    space = {"torch": torch, "F": F, "n": batch_size, "Xb": Xb, "Yb": Yb}
    for name in PARAMETERS:
        space[name] = parameters.get(name, globals()[name]).detach().float().clone()
    with torch.no_grad():
        for target, step in _FORWARD:
            space[target] = step(space)
    return {name: space[name] for name in TENSORS + ("n", "Xb", "Yb", "loss")}


def _usual_parameters():
    """BatchNorm as it is usually initialised (gain 1, bias 0) and neuron 0 with an ordinary batch variance."""
    w1 = W1.detach().clone()
    before = test_point()["hprebn"]
    w1[:, 0] *= (before[:, 1:].var(0).mean() / before[:, 0].var()) ** 0.5
    return {"W1": w1, "bngain": torch.ones_like(bngain), "bnbias": torch.zeros_like(bnbias)}


colleague_point = test_point(**_usual_parameters())  # where your colleague checked the pass


def _in_float64(point):
    return {k: v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in point.items()}


def _loss_at(double, name, value):
    space = {"torch": torch, "F": F, **double, name: value}
    after = next((i + 1 for i, (target, _) in enumerate(_FORWARD) if target == name), 0)
    for target, step in _FORWARD[after:]:
        space[target] = step(space)
    return space["loss"]


def loss_at(point, name, value):
    """The loss of the forward pass at `point`, in float64, with the tensor `name` replaced by `value`: every tensor
    computed from it is computed again, from `value`."""
    return _loss_at(_in_float64(point), name, value)


@contextlib.contextmanager
def _one_thread():
    """Tensors this small are fastest on one thread (more threads wait for each other): the checks run so."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _gradients_of(backward, point):
    """(the gradients backward(point) returns, None), or (None, what went wrong)."""
    if not callable(backward):
        return None, "backward_pass is not defined yet: paste your colleague's code into its cell and run it"
    try:
        with torch.no_grad():
            grads = backward({k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in point.items()})
    except Exception as error:  # your code: one line instead of a traceback
        return None, f"the backward pass raised {type(error).__name__}: {error}"
    if not isinstance(grads, dict):
        return None, f"the backward pass returned a {type(grads).__name__}, not a dict of gradients"
    return grads, None


def _floor(grads, name, v):
    """The size below which a difference along v is rounding: 1% of |v| times the largest gradient it reads."""
    sizes = [grads[g].abs().max().item() for g in ["d" + u for u in STEP_BY_NAME[name[1:]].upstream] + [name]
             if isinstance(grads.get(g), torch.Tensor) and grads[g].numel()]
    return 1e-2 * v.norm().item() * max(sizes, default=0.0)


def _along(grads, double, name, generator, directions):
    """(your gradient times v, the numbers' change along v, relative error): the worst of `directions` random v."""
    x, worst = double[name[1:]], None
    for _ in range(directions):
        v = torch.randn(x.shape, generator=generator, dtype=torch.float64)
        along = lambda s: _loss_at(double, name[1:], x + s * v)
        numbers = float(numerical_gradient(along, torch.zeros(1, dtype=torch.float64), h=STEP.get(name[1:], 1e-6)))
        yours = (grads[name].detach().double() * v).sum().item()
        error = abs(yours - numbers) / max(abs(yours), abs(numbers), _floor(grads, name, v), 1e-30)
        if worst is None or error > worst[2]:
            worst = (yours, numbers, error)
    return worst


def check_gradients(backward, point, directions=2):
    """Every gradient backward(point) returns against the numbers: along random directions v, your gradient times v
    against the change of the loss along v, which numerical_gradient measures (loss_at). One row per gradient, in the
    order of the backward pass; a relative error above TOLERANCE is a ✘."""
    if GRADING:
        print("(skipped while grading)")
        return
    grads, problem = _gradients_of(backward, point)
    if problem:
        print(f"✘ {problem}", file=sys.stderr)
        return
    double, generator, rows = _in_float64(point), torch.Generator().manual_seed(0), []
    with _one_thread():
        for name in GRADIENTS:
            rows.append(_row(grads, double, point, name, generator, directions))
            if rows[-1] is None:  # numerical_gradient raised: said once
                return
    wrong = [r["gradient"] for r in rows if r["status"] != "ok"]
    summary = (f"Not as the numbers say: {', '.join(wrong)}. The first wrong one on a path has a bug of its own; the "
               f"ones computed from it may be wrong only because of it." if wrong else
               "Every gradient agrees with the numbers at this point.")
    if _checker_off():
        summary = ("Your numerical_gradient does not pass its check in Part 1 yet, so these numbers cannot be trusted: "
                   "fix it first. ") + summary
    display(CheckTable(rows, columns=CHECK_COLUMNS, summary=summary, titles=dict(zip(CHECK_COLUMNS, CHECK_TITLES))))


def _checker_off():
    """Whether your numerical_gradient misses Part 1's check (as check_numerical_gradient runs it): then a ✘ in
    check_gradients' table may be your checker's, not your colleague's."""
    try:
        return any(relative_error(run_case(numerical_gradient, case), expected_gradient(case)) > ACCURACY
                   for case in cases(SEED))
    except Exception:  # it raised, or returned no tensor of the shape of x: Part 1's line says which
        return True


CHECK_COLUMNS = ["gradient", "yours", "numbers", "relative error"]
# the titles a student reads over check_gradients' columns, in the words of the notebook (its rows keep their keys)
CHECK_TITLES = "gradient | yours | numbers | relative error".split(" | ")


def _row(grads, double, point, name, generator, directions):
    """One row of check_gradients; None when numerical_gradient raised (said on stderr)."""
    row = {"gradient": name, "status": "todo", "yours": "", "numbers": "", "relative error": "not returned"}
    got, want = grads.get(name), tuple(point[name[1:]].shape)
    if isinstance(got, torch.Tensor) and tuple(got.shape) != want:
        row.update(status="wrong", **{"relative error": f"shape {tuple(got.shape)}, not {want}"})
    elif isinstance(got, torch.Tensor):
        try:
            yours, numbers, error = _along(grads, double, name, generator, directions)
        except NotImplementedError:
            print("✘ numerical_gradient is not written yet: Part 1", file=sys.stderr)
            return None
        except Exception as error:  # your numerical_gradient: one line instead of a traceback
            print(_raised(error), file=sys.stderr)
            return None
        row.update(yours=f"{yours:.6g}", numbers=f"{numbers:.6g}", status="ok" if error <= TOLERANCE else "wrong",
                   **{"relative error": f"{error:.1e}"})
    return row


def _raised(error):
    """The line for an error of your numerical_gradient: a float32 tensor meeting f's float64 ones is named."""
    if isinstance(error, NameError) and getattr(error, "name", None) == "numerical_gradient":  # its cell has not run
        return "✘ numerical_gradient is not defined: run its cell (Part 1) first"
    line = f"✘ numerical_gradient raised {type(error).__name__}: {error}"
    if "dtype" in str(error) or "Double" in str(error):
        line += " (f computes in float64, as x comes: keep what you hand it in float64, without .float())"
    return line


def check_entries(backward, point, name):
    """One gradient, entry by entry, against numerical_gradient of the loss (slower): how many entries differ, where."""
    if GRADING:
        print("(skipped while grading)")
        return
    grads, problem = _gradients_of(backward, point)
    if problem or not isinstance(grads.get(name), torch.Tensor):
        print(f"✘ {problem or f'the backward pass returns no tensor {name}'}", file=sys.stderr)
        return
    double = _in_float64(point)
    x = double[name[1:]]
    try:
        with _one_thread():
            numbers = numerical_gradient(lambda v: _loss_at(double, name[1:], v), x.clone(), h=STEP.get(name[1:], 1e-6))
    except NotImplementedError:
        print("✘ numerical_gradient is not written yet: Part 1", file=sys.stderr)
        return
    except Exception as error:  # your numerical_gradient: one line instead of a traceback
        print(_raised(error), file=sys.stderr)
        return
    yours = grads[name].detach().double().reshape(x.shape)
    error = (yours - numbers).abs()
    scale = max(yours.abs().max().item(), numbers.abs().max().item(), 1e-30)
    wrong = error > TOLERANCE * scale
    print(f"{name}: {int(wrong.sum())} of {wrong.numel()} entries differ from the numbers (largest difference "
          f"{error.max().item():.2g}, largest entry {scale:.2g})")
    if wrong.any() and wrong.dim() == 2:
        rows, columns = sorted(set(wrong.nonzero()[:, 0].tolist())), sorted(set(wrong.nonzero()[:, 1].tolist()))
        print(f"  rows {rows[:16]}{' ...' if len(rows) > 16 else ''}, columns {columns[:16]}"
              f"{' ...' if len(columns) > 16 else ''}")


def check_numerical_gradient():
    """The line under the graded cell: your numerical_gradient on the autograder's kind of cases (other functions)."""
    if GRADING:
        print("(self-checks are skipped while grading: see the graded cells)")
        return
    for case in cases(SEED):
        try:
            result = run_case(numerical_gradient, case)
        except NotImplementedError:
            print("✘ numerical_gradient: not answered yet", file=sys.stderr)
            return
        except Exception as error:  # your code: one line instead of a traceback
            print(_raised(error), file=sys.stderr)
            return
        if not isinstance(result, torch.Tensor) or tuple(result.shape) != tuple(case.x.shape):
            print(f"✘ numerical_gradient must return a tensor of the shape of x, {tuple(case.x.shape)}", file=sys.stderr)
            return
        error = relative_error(result, expected_gradient(case))
        if error > ACCURACY:
            if case.h is not None and any(relative_error(result, d) <= ACCURACY for d in one_sided(case, case.h)):
                print(f"✘ numerical_gradient looks one-sided, (f(x + h) - f(x)) / h: off by {error:.1e}, about h. "
                      "Use both sides: (f(x + h) - f(x - h)) / (2 * h)", file=sys.stderr)
            elif relative_error(result, 2 * expected_gradient(case)) <= ACCURACY:
                print("✘ numerical_gradient gives twice the gradient: x + h and x - h are 2 * h apart, so divide by "
                      "2 * h", file=sys.stderr)
            elif case.h is not None:
                print(f"✘ with h = {case.h:g} on a quadratic, where central differences are exact, numerical_gradient "
                      f"is off by {error:.1e}: nudge each entry on its own, both ways, and divide by 2 * h",
                      file=sys.stderr)
            else:
                print(f"✘ with its own default h, numerical_gradient is off by {error:.1e}, more than {ACCURACY:.0e}: "
                      "is h too large (1e-5 to 1e-6 suits float64), or is it computed in float32?", file=sys.stderr)
            return
    print(f"✔ numerical_gradient: central differences, within {ACCURACY:.0e} of the gradient on both checks")


def _judged(gradient, grads, unread, pins):
    """Whether your `gradient` is right as the autograder judges it: against autograd at this notebook's parameters
    ("right"), or right for the gradients it is computed from when a bug further up makes them wrong ("carried")."""
    name = gradient[1:]
    row = _compare(name, grads.get(gradient), getattr(globals().get(name), "grad", None))
    if row["status"] == "ok":
        return "right"
    if gradient in unread:  # changed in place by a later line: only autograd's values count
        return "wrong"
    step, point = STEP_BY_NAME[name], {k: v.detach() for k, v in test_point().items() if isinstance(v, torch.Tensor)}
    try:
        upstream = {u: {**grads, **pins}["d" + u].detach().reshape(point[u].shape) for u in step.upstream}
        rule = local_gradient(step, {**point, "n": batch_size}, upstream)
        if upstream and close(grads[gradient].detach().double(), rule.double(), _step_scale(name) or 0.0):
            return "carried"
    except Exception:  # an upstream gradient missing or of another shape: not right for it
        pass
    return "wrong"


def _same_memory(a, b):
    """Whether two tensors are one set of entries (`dhprebn = dbndiff`, .float() of a float32 one, [:], .view_as)."""
    return (a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() and a.storage_offset() == b.storage_offset()
            and a.shape == b.shape and a.stride() == b.stride())


def _all_zeros_upstream(gradient, grads):
    """Whether every gradient that `gradient` is computed from is all zeros (the autograder gives no point there)."""
    ups = [grads.get("d" + u) for u in STEP_BY_NAME[gradient[1:]].upstream]
    return bool(ups) and all(isinstance(u, torch.Tensor) and not u.any() for u in ups)


def _changed_later(grads, backward, point):
    """The gradients returned as one tensor with a gradient computed after them (`dhprebn = dbndiff`, then
    `dhprebn += ...`): what the lines that read them read is not what was returned, so those lines are not judged.
    One tensor, not equal values: a copy of its own that a later line leaves as it is is judged as any other, and so
    is one tensor that no later line changed (the `+=` deleted), when the pass's source can be run again line by line."""
    got = [g for g in GRADIENTS if isinstance(grads.get(g), torch.Tensor)]
    shared = {a for i, a in enumerate(got) if any(_same_memory(grads[a], grads[b]) for b in got[i + 1:])}
    try:
        definition = ast.parse(textwrap.dedent(inspect.getsource(backward))).body[0]
        parameter, body = definition.args.args[0].arg, flattened(definition.body)
    except Exception:  # no source to read (a pass defined by exec, say): every one of them counts as changed
        return shared
    fresh = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in point.items()}
    with torch.no_grad():
        changed = changed_after_their_lines(parameter, body, backward.__globals__, fresh, shared) if shared else None
    return shared if changed is None else changed


def _run_again_here(backward, point):
    """As the autograder does with a backward pass that raised (or gave NaN): its statements run again one by one, a
    random tensor in the place of each gradient a line that raised left without a value (or made NaN from finite ones).
    (the gradients, gradient -> the line that raised where it is computed, the random tensors the lines below read), or
    None when it cannot be run so."""
    fresh = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in point.items()}
    try:
        with torch.no_grad():
            again = run_again(backward, fresh, SEED)
    except Exception:  # your code, run again: the error of the call stands
        return None
    if again is None:
        return None
    gradients, entry = again
    replaced = (set(entry["raised"]) | set(entry["pinned"])) - set(entry["altered"])
    pins = {g: pin_value(SEED, PINS, g, tuple(point[g[1:]].shape)) for g in replaced}
    return gradients, entry["raised"], pins


def check_fix(slot):
    """The line under a graded fix: whether your bug number `slot` (in the order of the backward pass) is fixed, at
    this notebook's parameters, and the lines of its part of the pass that had no bug are still right. It does not say
    which gradient the bug is: finding it is the hunt."""
    if GRADING:
        print("(self-checks are skipped while grading: see the graded cells)")
        return
    bugs = _planted(globals().get("BUG_HUNT_ID"))
    if not bugs:
        why = _not_a_string() or "no BUG_HUNT_ID yet"
        print(f"✘ bug {slot}: {why}", file=sys.stderr)
        return
    part, backward, point = section(bugs, slot, GRADIENTS), globals().get("backward_pass"), test_point()
    with _one_thread():
        grads, problem = _gradients_of(backward, point)
        raised, pins = {}, {}
        if (problem or any(not_finite(grads.get(g)) for g in GRADIENTS)) and callable(backward) and (
                again := _run_again_here(backward, point)):
            (grads, raised, pins), problem = again, None  # one line raised (or gave NaN): only its fix loses
        here = [g for g in part if g in raised]
        unread = set() if problem or here else _changed_later(grads, backward, point)
        fixed = None if problem or here else _judged(bugs[slot - 1], grads, unread, pins)
        broken = [g for g in part if g not in bugs and not unread & {"d" + u for u in STEP_BY_NAME[g[1:]].upstream}
                  and _judged(g, grads, unread, pins) == "wrong"] if fixed else []
    if here:
        why = raised[here[0]]
        print(f"✘ bug {slot} of {len(bugs)}: the backward pass raised {why['type']} at `{why['line']}`: "
              f"{why['message']}. {here[0]} is computed there, in this fix's part of the pass, so it has no value "
              f"(the other fixes are checked with a random {here[0]} in its place, as the autograder does)",
              file=sys.stderr)
    elif problem:
        print(f"✘ bug {slot} of {len(bugs)}: {problem}", file=sys.stderr)
    elif fixed == "wrong":
        print(f"✘ bug {slot} of {len(bugs)}: not fixed yet", file=sys.stderr)
    elif fixed == "carried" and _all_zeros_upstream(bugs[slot - 1], grads):
        print(f"✘ bug {slot} of {len(bugs)}: the gradients it is computed from are all zeros, where a bug and its fix "
              "give the same values, so the fix does not show: make them right first", file=sys.stderr)
    elif broken:
        print(f"✘ bug {slot} of {len(bugs)}: wrong now: {', '.join(broken)}, in this fix's part of the pass, on lines "
              "your colleague had right. Put them back as they were", file=sys.stderr)
    elif fixed == "right":
        print(f"✔ bug {slot} of {len(bugs)}: fixed (judged here at this notebook's parameters)")
    else:
        print(f"✔ bug {slot} of {len(bugs)}: right for the gradients it is computed from, which a bug further up "
              "still makes wrong: it keeps its points")


def check_found():
    """The line under the graded cell of buggy: its form, and how many bugs there are (not which: that is graded)."""
    if GRADING:
        print("(self-checks are skipped while grading: see the graded cells)")
        return
    bugs, named = _planted(globals().get("BUG_HUNT_ID")), globals().get("buggy")
    if not bugs:
        why = _not_a_string() or "no BUG_HUNT_ID yet"
        print(f"✘ buggy: {why}", file=sys.stderr)
    elif not isinstance(named, (list, tuple, set)) or not all(isinstance(x, str) for x in named):
        print("✘ buggy must be a list of the names of gradients, like [\"dprobs\", \"dW1\"]", file=sys.stderr)
    elif unknown := [x for x in named if not gradient_named(x, GRADIENTS)]:
        print(f"✘ buggy: not gradients of backward_pass: {unknown}", file=sys.stderr)
    elif len(distinct := {gradient_named(x, GRADIENTS) for x in named}) != len(bugs):  # "dC", "C" and "C.grad" are one
        print(f"✘ buggy names {len(distinct)} gradients, and your colleague planted {len(bugs)} bugs: each bug makes "
              "one gradient wrong first", file=sys.stderr)
    else:
        print(f"✔ buggy names {len(bugs)} gradients, as many as your colleague planted bugs (the autograder checks "
              "which)")


### BEGIN HIDDEN TESTS
from autograder.in_kernel.bug_hunt import keep_grading_point

keep_grading_point(globals())
### END HIDDEN TESTS

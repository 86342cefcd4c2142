"""Why a training_step given the right gradients leaves autograd's run: what its update gets wrong."""

import torch

from ...common.diagnoses import Reason
from ...common.words import say
from ..explain import comma_list
from ..tolerance import FACTOR_MATCH
from .network import GRADED_STEPS, PARAMETER_NAMES, forward, manual_backward, minibatches
from .reference_runs import RETURNED, check_batch_reference, reference_run


def why_it_departs(losses, trained, namespace, first: int, backward_calls, after_first=None) -> Reason:
    """Why training_step, given the right gradients (which it asked for ``backward_calls`` times), leaves autograd's
    run at step ``first``; ``after_first``: the parameters after its first step, when they could be read."""
    unchanged = trained is not None and all(
        torch.equal(t, p0) for t, p0 in zip(trained, namespace["initial_parameters"])
    )
    if unchanged and backward_calls == 0:
        return Reason(
            "not_answered",
            say(
                "training_step changed no parameter, and it never called backward_pass: it must get the gradients "
                "from backward_pass(Xb, Yb, cache) and move every parameter in place by -lr times its gradient "
                "(p += -lr * grad)"
            ),
        )
    if unchanged:
        return Reason(
            "not_updated_in_place",
            say(
                "the parameters never changed: training_step must update them in place by -lr times the gradients "
                "backward_pass returned (p += -lr * grad, or p.data += ...); p = p - lr * grad only gives the name p "
                "a new tensor, and a gradient zeroed (grad.zero_()) or replaced before the update moves nothing"
            ),
        )
    if after_first and trained and all(torch.equal(t, a) for t, a in zip(trained, after_first)):
        return Reason(  # moved by none of the steps, from values that were not the initial ones: another list trained
            "not_updated_in_place",
            say(
                "training_step moved no tensor of parameters in the whole run, which started from other values than "
                "the initial ones: it updates another list (initial_parameters is the copy of the starting values "
                "that restart_training puts back). Update each tensor of parameters in place, p += -lr * grad"
            ),
        )
    still = [
        name
        for name, t, p0 in zip(PARAMETER_NAMES, trained or [], namespace["initial_parameters"])
        if name != "b1" and torch.equal(t, p0)  # (b1's gradient is rounding noise: too small to move it)
    ]
    if still and not unchanged:
        return Reason(
            "wrong_update",
            say(
                "training_step never changed {names}: it must move every parameter, by -lr times its own gradient",
                names=comma_list(still),
            ),
        )
    if first == 0:
        return Reason(
            "wrong_update",
            say("the very first loss differs: training_step must return the loss of forward(Xb, Yb) before the update"),
        )
    one = (
        (_off_at_the_first_step(after_first, namespace) if first == 1 else None)
        or _same_move_every_step(trained, after_first, namespace)
        or _one_parameter_off(trained, namespace)
    )
    if one:
        return one
    if len(losses) >= 20 and losses[-10:].mean() > losses[:10].mean():
        return Reason(
            "wrong_sign",
            say(
                "the loss goes up: each step must move every parameter against its gradient on that step's batch, "
                "p += -lr * grad (a + where the - belongs, or gradients added up over earlier steps, make it climb)"
            ),
        )
    if first == GRADED_STEPS // 2 + 1:
        return Reason(
            "wrong_update",
            say("the run departs when the learning rate drops to 0.01: training_step must use the lr it is given"),
        )
    return Reason(
        "wrong_update",
        say(
            "check that training_step updates every parameter once per step, by -lr times its own gradient "
            "(the gradients come in the order of parameters, {returned})",
            returned=RETURNED,
        ),
    )


def _off_at_the_first_step(after_first, namespace: dict) -> Reason | None:
    """The parameter that, alone, the first update did not move by -lr times its gradient, every other one moved so
    (b1 left out). Read at the first step, before a wrong move of one parameter (W2's sign) sends the others astray
    too, which hides it from the comparison of whole runs."""
    if after_first is None:
        return None
    initial, X, Y = namespace["initial_parameters"], namespace["Xtr"], namespace["Ytr"]
    ix, lr = next(minibatches(X, namespace["SEED"], GRADED_STEPS, namespace["batch_size"]))
    with torch.no_grad():
        _, cache = forward(initial, X[ix], Y[ix])
        grads = manual_backward(initial, X[ix], Y[ix], cache)
    on_check_batch = check_batch_reference(namespace)[1]
    checked = [on_check_batch[name] for name in PARAMETER_NAMES]
    for words, update in UPDATES_WITH_ONE_THING_CHANGED:
        if all(
            _near(p1, update(p0.double(), grad.double(), lr, other.double()), p0, grad, lr)
            for name, p1, p0, grad, other in zip(PARAMETER_NAMES, after_first, initial, grads, checked)
            if name != "b1"
        ):
            return Reason("wrong_update", words)
    factors = {}
    for name, p1, p0, grad in zip(PARAMETER_NAMES, after_first, initial, grads):
        want, moved = (-lr * grad.double()).flatten(), (p1.double() - p0.double()).flatten()
        if name == "b1" or not (want @ want).item() > 0:
            continue
        factor = (moved @ want).item() / (want @ want).item()
        rest = (moved - factor * want).norm().item() / want.norm().item()
        factors[name] = factor if rest < 1e-3 else None
    off = [name for name, factor in factors.items() if factor is None or abs(factor - 1) > FACTOR_MATCH]
    scales = set(factors.values())
    same = off and None not in scales and max(scales) - min(scales) <= FACTOR_MATCH * max(map(abs, scales))
    if same and abs(factors[off[0]] + 1) > FACTOR_MATCH:  # one other step size for all (-1: the sign, said below)
        return _step_size_off(factors[off[0]] * lr, lr)
    if len(off) != 1:
        return None
    factor = factors[off[0]]
    return _said_off(off[0], opposite=factor is not None and abs(factor + 1) < FACTOR_MATCH)


# p += -lr * grad with one thing changed, as (words, the parameter after the first step from p0, grad and lr); a step
# size of its own (lr * lr, grad / lr) and the sign have their own words (_step_size_off, _said_off)
UPDATES_WITH_ONE_THING_CHANGED = [
    (
        say(
            "at the first step every parameter moved by -lr times its gradient squared (grad * grad, or grad**2): "
            "the update is -lr times the gradient itself, p += -lr * grad"
        ),
        lambda p0, grad, lr, other: p0 - lr * grad * grad,
    ),
    (
        say(
            "at the first step every parameter was set to -lr times its gradient, not moved by it: `p.data = -lr * "
            "grad` replaces its values, where p.data += -lr * grad (or p += -lr * grad) adds the step to them"
        ),
        lambda p0, grad, lr, other: -lr * grad,
    ),
    (
        say(
            "at the first step every parameter moved by -lr times its gradient on the check batch (check_batch), not "
            "on the batch training_step is given: call backward_pass(Xb, Yb, cache) with the step's own Xb, Yb and the "
            "cache of its forward(Xb, Yb)"
        ),
        lambda p0, grad, lr, other: p0 - lr * other,
    ),
]


def _near(got: torch.Tensor, want: torch.Tensor, p0: torch.Tensor, grad: torch.Tensor, lr: float) -> bool:
    """Whether a parameter after the first step, ``got``, is ``want`` (to within a thousandth of how far it moved, and
    float32's rounding of its values), where the right step, -lr * grad, would not have left it."""
    got, p0, right = got.double(), p0.double(), p0.double() - lr * grad.double()
    near = lambda a, b: (a - b).norm().item() <= 1e-3 * (got - p0).norm().item() + 2**-23 * got.norm().item()
    return (got - p0).norm().item() > 0 and near(got, want) and not near(got, right)


def _same_move_every_step(trained, after_first, namespace: dict) -> Reason | None:
    """Every parameter moved over the run in the direction of its first step (the run's total move a multiple of it,
    one multiple for all, more than one step's worth): the gradients never changed with the batch. b1 left out."""
    if trained is None or after_first is None:
        return None
    multiples = []
    for name, t, a, p0 in zip(PARAMETER_NAMES, trained, after_first, namespace["initial_parameters"]):
        first, total = (a.double() - p0.double()).flatten(), (t.double() - p0.double()).flatten()
        if name == "b1" or not (first @ first).item() > 0:
            continue
        multiple = (total @ first).item() / (first @ first).item()
        if (total - multiple * first).norm().item() > 1e-3 * total.norm().item():
            return None
        multiples.append(multiple)
    if not multiples or min(multiples) < 1.5 or max(multiples) - min(multiples) > 1e-3 * max(multiples):
        return None
    return Reason(
        "wrong_update",
        say(
            "every parameter moved the same way at every step of the run: the gradients training_step steps by do not "
            "change with the batch (computed once, outside it, or from another batch, such as check_batch). Call "
            "backward_pass(Xb, Yb, cache) inside training_step, on the batch it is given"
        ),
    )


def _step_size_off(step: float, lr: float) -> Reason:
    return Reason(
        "wrong_update",
        say(
            "at the first step every parameter moved by {step:.3g} times its gradient, where the loop's lr asks for "
            "{want:.3g} times: training_step must step by the lr it is given, not by a learning rate of its own (nor "
            "one worked out from the loop's globals, which the autograder's run does not set)",
            step=-step,
            want=-lr,
        ),
    )


def _said_off(name: str, opposite: bool) -> Reason:
    if opposite:
        return Reason(
            "wrong_sign",
            say(
                "{name} moved the opposite way to autograd's run, while every other parameter followed it: its "
                "update must be -lr times its gradient, like theirs",
                name=name,
            ),
        )
    return Reason(
        "wrong_update",
        say(
            "{name} moved elsewhere than in autograd's run, while every other parameter followed it: is it updated "
            "by -lr times its own gradient, d{name} (number {number} of {returned})?",
            name=name,
            number=PARAMETER_NAMES.index(name) + 1,
            returned=RETURNED,
        ),
    )


def _one_parameter_off(trained, namespace: dict) -> Reason | None:
    """The parameter that, alone, moved elsewhere over the run than in autograd's run from the same start, every
    other one following it (their moves at a cosine above 0.9; b1, whose gradient is rounding noise, left out)."""
    if trained is None:
        return None
    reached, initial = reference_run(namespace)["parameters"], namespace["initial_parameters"]
    cosines = {}
    for name, t, r, p0 in zip(PARAMETER_NAMES, trained, reached, initial):
        mine, autograds = (t.double() - p0.double()).flatten(), (r.double() - p0.double()).flatten()
        norms = (mine.norm() * autograds.norm()).item()
        if name != "b1":
            cosines[name] = (mine @ autograds).item() / norms if norms > 0 else 0.0
    off = [name for name, cosine in cosines.items() if not cosine > 0.9]
    if len(off) != 1:
        return None
    return _said_off(off[0], opposite=cosines[off[0]] < -0.5)

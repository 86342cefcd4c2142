"""Plain-word explanations of a wrong gradient, without giving the formula away."""

import itertools

import torch

from ...common.diagnoses import Reason
from ...common.words import say
from ..backward_rules import Step, known_mistakes, local_gradient
from ..explain import and_list, constant_factor, factor_message, nothing_added, only_repeated_rows_wrong
from ..tolerance import close, magnitude
from .chain_rule import another_upstream, local_derivative_alone
from .divisors import divided_by_another_size
from .left_out import factor_left_out, factor_too_many
from .offsets import wrong_values
from .powers import power_factor_left_out, power_slip
from .slips import example_left_out, forward_for_gradient, gives, inverted, one_position, other_tensor, path_factor


def _paths_missing(answer: torch.Tensor, step: Step, forward: dict, upstream: dict, scale: float) -> list:
    """The consumers whose terms the answer leaves out, when it is the sum of some of its step's terms with at least two
    left out (one left out has its own words): `demb = dk @ Wk.T` in the place of a `+=` drops the terms before it."""
    try:
        terms = {c: term(forward, upstream).double() for c, term in step.terms.items()}
    except (RuntimeError, KeyError):
        return []
    for kept in range(1, len(terms) - 1):
        for chosen in itertools.combinations(terms, kept):
            total = sum(terms[c] for c in chosen)
            if total.shape == answer.shape and close(answer, total, scale):
                return [c for c in terms if c not in chosen]
    return []


def _indices_transposed(answer: torch.Tensor, step: Step, forward: dict, upstream: dict, scale: float) -> bool:
    """Whether dC is its rule with the indices Xb flattened position by position (`Xb.T.reshape(-1)`) beside the
    rows of demb flattened example by example."""
    Xb = forward.get("Xb")
    if not isinstance(Xb, torch.Tensor) or Xb.dim() != 2 or min(Xb.shape) < 2:
        return False
    try:
        right = local_gradient(step, forward, upstream).double()
    except (RuntimeError, KeyError, IndexError):
        return False
    return gives(answer, step, {**forward, "Xb": Xb.T.reshape(Xb.shape)}, upstream, right, scale)


def diagnose(
    answer: torch.Tensor,
    expected: torch.Tensor,
    step: Step,
    forward: dict,
    upstream: dict,
    called: str = "",
    known: dict | None = None,
) -> Reason:
    """Why ``answer`` is not ``expected`` (both of the right shape), in a sentence a student can act on. ``called``:
    the variable that holds the answer, when it is not d<step> (``dC_index_add``); the sentences that name only the
    answer say it (their d{name} with its name after the d), the others name the step. ``known``: the other gradients
    the answer's code could have read in the place of its upstream ones (``chain_rule.known_gradients``)."""
    name, n = step.name, forward["hprebn"].shape[0]
    own = (called or "d" + name)[1:]  # d{own} is the answer's variable
    scale = magnitude(expected)
    a, e = answer.double(), expected.double()
    if magnitude(a) == 0:
        return Reason("all_zeros", nothing_added(own) if name == "C" else say("d{name} is all zeros", name=own))
    for message, wrong in known_mistakes(step, forward, upstream):  # each with its message
        if wrong.shape == a.shape and close(a, wrong.double(), scale):
            return message
    alone = local_derivative_alone(a, step, forward, upstream, own)
    if alone:
        return alone
    if known and (another := another_upstream(a, e, step, forward, upstream, known, own)):
        return another
    c = constant_factor(a, e, scale)
    factor = (
        None
        if c is None
        else power_factor_left_out(c, step, own)
        or divided_by_another_size(c, forward, own)
        or factor_message(c, n, "d" + own, a.numel())
    )
    if factor:
        return factor
    if len(step.terms) > 1:
        for dropped in step.terms:
            try:
                partial = local_gradient(step, forward, upstream, drop=dropped).double()
            except (RuntimeError, KeyError):
                continue
            if partial.shape == a.shape and close(a, partial, scale):
                if len(step.terms) == 2:
                    return Reason(
                        "missing_path",
                        say(
                            "d{name} has only part of the gradient: {name} is used in two places of the forward pass "
                            "({used}), and the path through {dropped} is missing. Add its contribution with +=",
                            name=name,
                            used=and_list(step.terms),
                            dropped=dropped,
                        ),
                    )
                return Reason(
                    "missing_path",
                    say(
                        "d{name} has only part of the gradient: {name} is used in {count} places of the forward pass "
                        "({used}), and the path through {dropped} is missing. Add its contribution with +=",
                        name=name,
                        count=len(step.terms),
                        used=and_list(step.terms),
                        dropped=dropped,
                    ),
                )
        if len(step.terms) > 2 and (missing := _paths_missing(a, step, forward, upstream, scale)):
            return Reason(
                "missing_path",
                say(
                    "d{name} has only part of the gradient: {name} is used in {count} places of the forward pass "
                    "({used}), and the paths through {dropped} are missing. Add each one's contribution with += (a "
                    "`=` where `+=` belongs starts the sum again)",
                    name=name,
                    count=len(step.terms),
                    used=and_list(step.terms),
                    dropped=and_list(missing),
                ),
            )
        for twice, term in step.terms.items():
            try:
                doubled = (local_gradient(step, forward, upstream) + term(forward, upstream)).double()
            except (RuntimeError, KeyError):
                continue
            if doubled.shape == a.shape and close(a, doubled, scale):
                return Reason(
                    "path_twice",
                    say(
                        "the path through {twice} is added twice: did a cell run twice? Keep `d{name} = ...` and its "
                        "`d{name} += ...` in one cell, and run that cell again",
                        twice=twice,
                        name=own,
                    ),
                )
    for consumer in step.upstream:
        up = upstream.get(consumer)
        if up is not None and up.shape == a.shape and close(a, up.double(), scale):
            return Reason(
                "passed_through",
                say(
                    "d{name} is just d{consumer}, passed through unchanged: multiply by the local derivative of "
                    "`{forward}`",
                    name=own,
                    consumer=consumer,
                    forward=step.forward,
                ),
            )
    slips = (path_factor, power_slip, other_tensor, forward_for_gradient, inverted, factor_left_out, example_left_out)
    for slip in (*slips, one_position, factor_too_many):
        try:
            found = slip(a, step, forward, upstream, scale, own)
        except (RuntimeError, KeyError, IndexError, TypeError, ValueError, ArithmeticError):
            found = None  # a rule that cannot take the change tells nothing: the words below still say something
        if found:
            return found
    if name == "C" and _indices_transposed(a, step, forward, upstream, scale):
        return Reason(
            "rearranged",
            say(
                "d{name} adds demb's rows at the indices of Xb taken in another order: Xb.T flattened goes position by "
                "position, and demb viewed as (-1, n_embd) goes example by example. Flatten the two in the same order "
                "(Xb.view(-1) with demb.view(-1, n_embd))",
                name=own,
            ),
        )
    if name == "C":
        if only_repeated_rows_wrong(a, e, forward["Xb"], scale):
            return Reason(
                "not_accumulated",
                say(
                    "dC is right for characters that appear once in the batch, and wrong for those that appear "
                    "several times: writing through a repeated index (`dC[Xb] += demb`, `dC[Xb] = demb`, "
                    "`dC[ix] = demb[k, j]` in a loop, or index_put_ without accumulate=True) keeps only one of its "
                    "contributions. Add up every occurrence: index_add_, index_put_ with accumulate=True, a loop over "
                    "single entries with +=, or a one-hot matrix product"
                ),
            )
    if a.dim() == 2 and a.shape[0] == a.shape[1] and close(a.T, e, scale):
        return Reason(
            "transposed", say("d{name} is transposed: let the shapes decide the order of a matrix product", name=own)
        )
    return wrong_values(a, e, scale, own, step.forward)

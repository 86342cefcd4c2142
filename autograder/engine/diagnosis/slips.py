"""Slips that a step's own rule recognises, with no table of wrong formulas: another forward tensor read in the local
derivative (`bnraw * dhpreact` for dbnraw, where bngain belongs), one path of a tensor used twice off by a constant
(`dbndiff += bndiff * dbndiff2` without the 2 of the square), an example of the batch left out (a loop over
range(n - 1)), and one position of another dimension alone or left out (dC from the first character of each context,
Xb[:, 0]). Each is the step's rule with one thing changed, compared with the answer within the step's tolerance."""

import torch

from ...common.diagnoses import Reason
from ...common.words import say
from ..backward_rules import Step, local_gradient
from ..explain import constant_factor
from ..tolerance import close


class _Reading(dict):
    """The forward values, noting which of them a step's rule reads."""

    def __init__(self, values: dict):
        super().__init__(values)
        self.read = []

    def __getitem__(self, key):
        if key not in self.read:
            self.read.append(key)
        return super().__getitem__(key)


def _floats(forward: dict) -> list:
    return [k for k, v in forward.items() if isinstance(v, torch.Tensor) and v.is_floating_point()]


def rule_and_reads(step: Step, forward: dict, upstream: dict):
    """(the step's right gradient, in float64; the floating forward tensors its rule reads), or None when the rule
    cannot run on these values: what the diagnoses that change one forward tensor start from."""
    reading = _Reading(forward)
    try:
        right = local_gradient(step, reading, upstream).double()
    except (RuntimeError, KeyError, IndexError, TypeError):
        return None
    floats = _floats(forward)
    return right, [k for k in reading.read if k in floats]


def _stands_for(other: torch.Tensor, right: torch.Tensor) -> bool:
    """Whether a student could have written ``other`` where ``right`` belongs and got a gradient of a shape that may be
    the step's: as many dimensions, each of the same size or of size 1 in one of them (counts_sum_inv for counts,
    bnraw for bngain), and not the same values."""
    if other.dim() != right.dim() or any(a != b and 1 not in (a, b) for a, b in zip(other.shape, right.shape)):
        return False
    return other.shape != right.shape or not torch.equal(other, right)


def gives(answer: torch.Tensor, step: Step, forward: dict, upstream: dict, right: torch.Tensor, scale: float) -> bool:
    """Whether the step's rule on ``forward`` (the forward pass with a slip in it) gives ``answer``, and the rule on
    the right forward pass, ``right``, does not."""
    try:
        wrong = local_gradient(step, forward, upstream).double()
    except (RuntimeError, KeyError, IndexError, TypeError, ArithmeticError):
        return False
    return wrong.shape == answer.shape and not close(wrong, right, scale) and close(answer.double(), wrong, scale)


def other_tensor(answer: torch.Tensor, step: Step, forward: dict, upstream: dict, scale: float, own: str):
    """Why d<own> is wrong when it is the step's rule with one forward tensor it reads replaced by another forward
    tensor (`norm_logits * dcounts` for `counts * dcounts`, `(1 - hpreact**2) * dh` for tanh's `1 - h**2`)."""
    found = rule_and_reads(step, forward, upstream)
    if found is None:
        return None
    right, read = found
    floats = _floats(forward)
    for name in read:
        for other in floats:
            if other == name or not _stands_for(forward[other], forward[name]):
                continue
            if gives(answer, step, {**forward, name: forward[other]}, upstream, right, scale):
                return Reason(
                    "other_tensor",
                    say(
                        "d{name} reads {other} where the local derivative of `{forward}` needs {right}: check which "
                        "tensor of the forward pass each factor of your line comes from",
                        name=own,
                        other=other,
                        forward=step.forward,
                        right=name,
                    ),
                )
    return None


def path_factor(answer: torch.Tensor, step: Step, forward: dict, upstream: dict, scale: float, own: str):
    """Why d<own> is wrong when one path of a tensor used twice is right but for a constant factor (the 2 of a square
    left out, the 1/n of a mean missing) and the other paths are right."""
    if len(step.terms) < 2:
        return None
    try:
        terms = {c: term(forward, upstream).double() for c, term in step.terms.items()}
        total = local_gradient(step, forward, upstream).double()
    except (RuntimeError, KeyError, IndexError):
        return None
    a = answer.double()
    for consumer, term in terms.items():
        try:
            rest = total - term
            residual = a - rest
            c = constant_factor(residual, term.expand_as(residual), scale)
        except RuntimeError:
            continue
        if c is None or abs(c) < 1e-6 or not close(a, rest + c * term, scale):
            continue
        if abs(c + 1) < 1e-3:
            return Reason(
                "wrong_sign",
                say(
                    "the path of d{name} through {consumer} has the wrong sign, and its other path is right: check the "
                    "sign of that term (a `-=` where `+=` belongs, or a minus of the forward pass dropped or doubled)",
                    name=own,
                    consumer=consumer,
                ),
            )
        n = forward["hprebn"].shape[0]
        if n > 1 and min(abs(c - n / (n + 1)), abs(c - (n - 1) / (n + 1))) < 1e-4:  # (n/(n-1) is 1e-3 from n/(n+1))
            return Reason(
                "bessel",
                say(
                    "the path of d{name} through {consumer} is {c:.4g} times what it should be, and its other path is "
                    "right: is it divided by n+1? The mean divides by n, and the variance by n-1",
                    name=own,
                    consumer=consumer,
                    c=c,
                ),
            )
        if n > 1 and min(abs(c - n / (n - 1)), abs(c - (n - 1) / n)) < 1e-4:
            return Reason(
                "bessel",
                say(
                    "the path of d{name} through {consumer} is {c:.4g} times what it should be, n/(n-1) or its "
                    "inverse, and its other path is right: n or n-1? The mean divides by n, and only the variance by "
                    "n-1 (Bessel's correction)",
                    name=own,
                    consumer=consumer,
                    c=c,
                ),
            )
        return Reason(
            "constant_factor",
            say(
                "the path of d{name} through {consumer} is {c:.4g} times what it should be, and its other path is "
                "right: look for a missing or extra constant in that term (the 2 of a square's power rule, the 1/n of "
                "a mean)",
                name=own,
                consumer=consumer,
                c=c,
            ),
        )
    return None


def example_left_out(answer: torch.Tensor, step: Step, forward: dict, upstream: dict, scale: float, own: str):
    """Why d<own> is wrong when it is the step's rule with the first or the last example of the batch left out of its
    upstream gradients (or, for a step read by the loss alone, with that example's row left at zero): a loop over
    range(n - 1) or range(1, n), a slice [:-1]."""
    n = forward["hprebn"].shape[0] if isinstance(forward.get("hprebn"), torch.Tensor) else None
    batch = [c for c, up in upstream.items() if isinstance(up, torch.Tensor) and up.dim() and up.shape[0] == n]
    if not n or n < 2 or not (batch or (answer.dim() and answer.shape[0] == n and not step.upstream)):
        return None
    for which, row in (("last", n - 1), ("first", 0)):
        given = dict(upstream)
        for consumer in batch:
            given[consumer] = upstream[consumer].clone()
            given[consumer][row] = 0
        try:
            wrong = local_gradient(step, forward, given).double()
            if not batch:  # a gradient of one row per example, set in a loop (dlogprobs): that row left as it was
                wrong[row] = 0
        except (RuntimeError, KeyError, IndexError):
            continue
        if wrong.shape == answer.shape and close(answer.double(), wrong, scale):
            words = (
                say(
                    "d{name} leaves out the last example of the batch: a loop over range(n - 1), or a slice [:-1], "
                    "stops one short. range(n) runs over all n = {n} examples",
                    name=own,
                    n=n,
                )
                if which == "last"
                else say(
                    "d{name} leaves out the first example of the batch: a loop over range(1, n), or a slice [1:], "
                    "starts one late. range(n) runs over all n = {n} examples, from 0",
                    name=own,
                    n=n,
                )
            )
            return Reason("off_by_one", words)
    return None


POSITIONS = 16  # a dimension of at most this many positions is tried one position at a time (block_size: 3)


def one_position(answer: torch.Tensor, step: Step, forward: dict, upstream: dict, scale: float, own: str):
    """Why d<own> is wrong when it is the step's rule with an upstream gradient kept at one position of a dimension
    other than the batch's alone (dC from `Xb[:, 0]` and `demb[:, 0]`: the first character of each context), or with its
    first or last position left out (a loop over range(block_size - 1))."""
    a = answer.double()
    for consumer, up in upstream.items():
        if not isinstance(up, torch.Tensor) or up.dim() < 2:
            continue
        for dim in (d for d in range(1, up.dim()) if 2 <= up.shape[d] <= POSITIONS):
            size = up.shape[dim]
            for k, alone in [(k, True) for k in range(size)] + [(size - 1, False), (0, False)]:
                keep = torch.zeros(size, dtype=up.dtype) if alone else torch.ones(size, dtype=up.dtype)
                keep[k] = 1.0 if alone else 0.0
                shape = [size if d == dim else 1 for d in range(up.dim())]
                try:
                    wrong = local_gradient(step, forward, {**upstream, consumer: up * keep.view(shape)}).double()
                except (RuntimeError, KeyError, IndexError):
                    continue
                if wrong.shape == a.shape and close(a, wrong, scale):
                    return _position_words(own, consumer, dim, k, size, alone)
    return None


def _position_words(own: str, consumer: str, dim: int, k: int, size: int, alone: bool) -> Reason:
    index = "[" + ", ".join([":"] * dim + [str(k)]) + "]"
    if alone:
        words = say(
            "d{name} takes only d{consumer}{index}, position {k} of its dimension {dim}: the other positions of that "
            "dimension add to d{name} too. Go over all {size} of them, or flatten that dimension together with the "
            "batch's (a view(-1) of the indices, and of the gradient to match)",
            name=own,
            consumer=consumer,
            index=index,
            k=k,
            dim=dim,
            size=size,
        )
    else:
        words = say(
            "d{name} leaves out d{consumer}{index}, position {k} of its dimension {dim}: a loop over "
            "range({size} - 1), or a slice, stops one short. All {size} positions of that dimension add to d{name}",
            name=own,
            consumer=consumer,
            index=index,
            k=k,
            dim=dim,
            size=size,
        )
    return Reason("one_position", words)


def inverted(answer: torch.Tensor, step: Step, forward: dict, upstream: dict, scale: float, own: str):
    """Why d<own> is wrong when it is the step's rule with one forward tensor it reads turned upside down (`dcounts /
    counts` for exp's `counts * dcounts`, `dhpreact / bngain`)."""
    found = rule_and_reads(step, forward, upstream)
    if found is None:
        return None
    right, read = found
    for name in read:
        if gives(answer, step, {**forward, name: 1.0 / forward[name]}, upstream, right, scale):
            return Reason(
                "inverted",
                say(
                    "d{name} divides by {tensor} where the local derivative of `{forward}` multiplies by it (or "
                    "multiplies where it divides): check whether that factor belongs above or below the line",
                    name=own,
                    tensor=name,
                    forward=step.forward,
                ),
            )
    return None


def forward_for_gradient(answer: torch.Tensor, step: Step, forward: dict, upstream: dict, scale: float, own: str):
    """Why d<own> is wrong when it is the step's rule fed a forward tensor where that tensor's gradient belongs (`logits
    @ W2.T` for `dlogits @ W2.T`, emb for demb): a d left out of a name."""
    for consumer, up in upstream.items():
        value = forward.get(consumer)
        if not isinstance(value, torch.Tensor) or not isinstance(up, torch.Tensor) or value.shape != up.shape:
            continue
        try:
            wrong = local_gradient(step, forward, {**upstream, consumer: value}).double()
        except (RuntimeError, KeyError, IndexError, TypeError):
            continue
        if wrong.shape == answer.shape and close(answer.double(), wrong, scale):
            return Reason(
                "wrong_upstream",
                say(
                    "d{name} reads {consumer}, a value of the forward pass, where the chain rule needs its gradient, "
                    "d{consumer}: is a d missing from a name?",
                    name=own,
                    consumer=consumer,
                ),
            )
    return None

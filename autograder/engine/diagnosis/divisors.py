"""A constant factor that is the batch size over another size of the network: the mean's 1/n written as 1/vocab_size
(27 characters, not 32 examples), or one over such a size (a mean over a row where its sum belongs); and the
variance's n-1 missing or extra (`torch.ones_like(bndiff2) * dbnvar`), or written n+1. Named by the size, read from
the forward values."""

from ...common.diagnoses import Reason
from ...common.words import say
from ..tolerance import FACTOR_MATCH

# the notebooks' names of the network's sizes, and where the forward values hold each (tensor, dimension)
SIZES = (("vocab_size", "logits", 1), ("n_hidden", "hprebn", 1), ("n_embd", "C", 1), ("block_size", "Xb", 1))
TAKEN = (2.0, 0.5)  # factors with words of their own (a factor 2 of the power rule): a size that gives one is not named


def divided_by_another_size(c: float, forward: dict, own: str) -> Reason | None:
    """Why d<own> is c times what it should be when c is n - 1 or its inverse, n / m (m another size of the network
    than the batch's n), or 1 / m (a mean over m entries where their sum belongs)."""
    hprebn = forward.get("hprebn")
    if hprebn is None or not hasattr(hprebn, "shape"):
        return None
    n = hprebn.shape[0]
    for factor, words in (
        (
            n - 1.0,
            say(
                "d{name} is n-1 = {n_1} times too large: is the division by n-1 of the variance missing?",
                name=own,
                n_1=n - 1,
            ),
        ),
        (
            1.0 / (n - 1),
            say("d{name} is n-1 = {n_1} times too small: is it divided by n-1 once too often?", name=own, n_1=n - 1),
        ),
        (
            (n - 1.0) / (n + 1),
            say(
                "d{name} is (n-1)/(n+1) = {n_1}/{n1} times the right value: is it divided by n+1 where the variance's "
                "n-1 belongs?",
                name=own,
                n_1=n - 1,
                n1=n + 1,
            ),
        ),
    ):
        if n > 3 and abs(c - factor) <= FACTOR_MATCH * factor:
            return Reason("bessel", words)
    if n > 3 and abs(c - n / (n + 1)) <= FACTOR_MATCH * n / (n + 1) / 10:  # (n/(n+1) and (n-1)/n are 1e-3 apart)
        return Reason(
            "batch_size",
            say(
                "d{name} is n/(n+1) = {n}/{n1} times the right value: is it divided by n+1 where the batch size n "
                "belongs?",
                name=own,
                n=n,
                n1=n + 1,
            ),
        )
    for size, tensor, dim in SIZES:
        value = forward.get(tensor)
        if value is None or not hasattr(value, "shape") or value.dim() <= dim:
            continue
        m = value.shape[dim]
        ratio = n / m
        if m == n or any(abs(ratio - t) <= FACTOR_MATCH * t for t in TAKEN):
            continue
        if abs(c - 1.0 / m) <= FACTOR_MATCH / m:
            return Reason(
                "constant_factor",
                say(
                    "d{name} is 1/{size} = 1/{m} of the right value: is it a mean over {size} = {m} entries where "
                    "their sum belongs (or divided by {size} once too often)?",
                    name=own,
                    size=size,
                    m=m,
                ),
            )
        if abs(c - ratio) <= FACTOR_MATCH * ratio:
            return Reason(
                "batch_size",
                say(
                    "d{name} is n/{size} = {n}/{m} times the right value: is it divided by {size} = {m} where the "
                    "batch size n = {n} belongs? The loss is a mean over the n examples of the batch",
                    name=own,
                    size=size,
                    n=n,
                    m=m,
                ),
            )
    return None

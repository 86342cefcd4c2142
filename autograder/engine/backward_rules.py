"""The backward pass of the atomic graph, one local rule per step, beside its forward line.

The grader's single source of truth about the network's gradients: the reference backward pass, the
error-carried-forward checks, the diagnostics and Exercise 1's generated cells all read it. A step's gradient is a
sum of *terms*, one per consumer of its tensor (a tensor used twice has two: the lecture's ``+=``).
"""

from dataclasses import dataclass, field

import torch

from ..common.words import Words, say
from .step_mistakes import (
    BNDIFF2,
    BNVAR,
    COUNTS_SUM,
    HPREACT,
    LOGITS,
    LOGPROBS,
    PROBS,
    C,
    H,
    batch_size,
    dlogits_from_max,
)

# Right values in a shape that differs only by a dimension of size 1 (a keepdim dropped or added: the lecture's
# own line gives dbnmeani (64,) for a (1, 64) tensor) earn this share of the step's points; wrong values earn
# nothing. Half: the calculus is right, the bookkeeping that the course asks for is not. Every step is worth
# 1, 2 or 4 points, so the share is 0.5, 1 or 2, which nbgrader takes as partial credit as it is.
SHAPE_ONLY_SHARE = 0.5


@dataclass(frozen=True)
class Step:
    name: str  # the forward tensor; the student's answer is d<name>
    forward: str  # its forward line, as in the notebook
    terms: dict  # consumer name -> term(f, d): this consumer's contribution to d<name>
    points: int
    # message (a Reason) -> variant(f, d), or a tuple of them: a wrong formula students typically write, and what
    # diagnose says about it
    mistakes: dict = field(default_factory=dict)
    # why the true gradient is exactly zero, when it is (words: ``say(...)``): an answer of exact zeros is then right
    zero: Words | None = None

    @property
    def upstream(self) -> list:
        """The gradients this step reads: one per consumer (the loss itself needs none)."""
        return [c for c in self.terms if c != "loss"]


def _dlogprobs_from_loss(f, d):
    n = batch_size(f)
    grad = torch.zeros_like(f["logprobs"])
    grad[range(n), f["Yb"]] = -1.0 / n
    return grad


def _dC_from_emb(f, d):
    grad = torch.zeros_like(f["C"])
    return grad.index_add_(0, f["Xb"].reshape(-1), d["emb"].reshape(-1, f["C"].shape[1]))


STEPS = [
    Step(
        "logprobs",
        "loss = -logprobs[range(n), Yb].mean()",
        {"loss": _dlogprobs_from_loss},
        1,
        mistakes=LOGPROBS,
    ),
    Step(
        "probs",
        "logprobs = probs.log()",
        {"logprobs": lambda f, d: d["logprobs"] / f["probs"]},
        1,
        mistakes=PROBS,
    ),
    Step(
        "counts_sum_inv",
        "probs = counts * counts_sum_inv",
        {"probs": lambda f, d: (f["counts"] * d["probs"]).sum(1, keepdim=True)},
        2,
    ),
    Step(
        "counts_sum",
        "counts_sum_inv = counts_sum**-1",
        {"counts_sum_inv": lambda f, d: -(f["counts_sum"] ** -2) * d["counts_sum_inv"]},
        1,
        mistakes=COUNTS_SUM,
    ),
    Step(
        "counts",
        "counts_sum = counts.sum(1, keepdim=True); probs = counts * counts_sum_inv",
        {
            "probs": lambda f, d: f["counts_sum_inv"] * d["probs"],
            "counts_sum": lambda f, d: torch.ones_like(f["counts"]) * d["counts_sum"],
        },
        2,
    ),
    Step("norm_logits", "counts = norm_logits.exp()", {"counts": lambda f, d: f["counts"] * d["counts"]}, 1),
    Step(
        "logit_maxes",
        "norm_logits = logits - logit_maxes",
        {"norm_logits": lambda f, d: -d["norm_logits"].sum(1, keepdim=True)},
        1,
        zero=say(
            "subtracting a row's max leaves its softmax, and so the loss, unchanged (the rows of dnorm_logits "
            "sum to zero)"
        ),
    ),
    Step(
        "logits",
        "norm_logits = logits - logit_maxes; logit_maxes = logits.max(1, keepdim=True).values",
        {"norm_logits": lambda f, d: d["norm_logits"].clone(), "logit_maxes": dlogits_from_max},
        2,
        mistakes=LOGITS,
    ),
    Step("h", "logits = h @ W2 + b2", {"logits": lambda f, d: d["logits"] @ f["W2"].T}, 1, mistakes=H),
    Step("W2", "logits = h @ W2 + b2", {"logits": lambda f, d: f["h"].T @ d["logits"]}, 1),
    Step("b2", "logits = h @ W2 + b2", {"logits": lambda f, d: d["logits"].sum(0)}, 1),
    Step(
        "hpreact",
        "h = torch.tanh(hpreact)",
        {"h": lambda f, d: (1.0 - f["h"] ** 2) * d["h"]},
        1,
        mistakes=HPREACT,
    ),
    Step(
        "bngain",
        "hpreact = bngain * bnraw + bnbias",
        {"hpreact": lambda f, d: (f["bnraw"] * d["hpreact"]).sum(0, keepdim=True)},
        1,
    ),
    Step("bnbias", "hpreact = bngain * bnraw + bnbias", {"hpreact": lambda f, d: d["hpreact"].sum(0, keepdim=True)}, 1),
    Step("bnraw", "hpreact = bngain * bnraw + bnbias", {"hpreact": lambda f, d: f["bngain"] * d["hpreact"]}, 1),
    Step(
        "bnvar_inv",
        "bnraw = bndiff * bnvar_inv",
        {"bnraw": lambda f, d: (f["bndiff"] * d["bnraw"]).sum(0, keepdim=True)},
        2,
    ),
    Step(
        "bnvar",
        "bnvar_inv = (bnvar + 1e-5)**-0.5",
        {"bnvar_inv": lambda f, d: -0.5 * (f["bnvar"] + 1e-5) ** -1.5 * d["bnvar_inv"]},
        1,
        mistakes=BNVAR,
    ),
    Step(
        "bndiff2",
        "bnvar = 1/(n-1) * bndiff2.sum(0, keepdim=True)",
        {"bnvar": lambda f, d: torch.ones_like(f["bndiff2"]) / (batch_size(f) - 1) * d["bnvar"]},
        1,
        mistakes=BNDIFF2,
    ),
    Step(
        "bndiff",
        "bnraw = bndiff * bnvar_inv; bndiff2 = bndiff**2",
        {"bnraw": lambda f, d: f["bnvar_inv"] * d["bnraw"], "bndiff2": lambda f, d: 2 * f["bndiff"] * d["bndiff2"]},
        2,
    ),
    Step("bnmeani", "bndiff = hprebn - bnmeani", {"bndiff": lambda f, d: -d["bndiff"].sum(0, keepdim=True)}, 1),
    Step(
        "hprebn",
        "bndiff = hprebn - bnmeani; bnmeani = 1/n * hprebn.sum(0, keepdim=True)",
        {
            "bndiff": lambda f, d: d["bndiff"].clone(),
            "bnmeani": lambda f, d: torch.ones_like(f["hprebn"]) / batch_size(f) * d["bnmeani"],
        },
        2,
    ),
    Step("embcat", "hprebn = embcat @ W1 + b1", {"hprebn": lambda f, d: d["hprebn"] @ f["W1"].T}, 1),
    Step("W1", "hprebn = embcat @ W1 + b1", {"hprebn": lambda f, d: f["embcat"].T @ d["hprebn"]}, 1),
    Step(
        "b1",
        "hprebn = embcat @ W1 + b1",
        {"hprebn": lambda f, d: d["hprebn"].sum(0)},
        1,
        zero=say(
            "BatchNorm subtracts the batch mean of hprebn, so b1, which moves every example of a neuron by "
            "the same amount, cancels out of the loss"
        ),
    ),
    Step("emb", "embcat = emb.view(emb.shape[0], -1)", {"embcat": lambda f, d: d["embcat"].view(f["emb"].shape)}, 1),
    Step(
        "C",
        "emb = C[Xb]",
        {"emb": _dC_from_emb},
        2,
        mistakes=C,
    ),
]

STEP_BY_NAME = {step.name: step for step in STEPS}


@dataclass(frozen=True)
class WrittenWith:
    """A step asked for again, computed with a given function: an answer of its own (``dC_index_add``), judged as
    the step is, whose code must also call ``function`` (its in-place twin ``function_`` and ``torch.function``
    count too). Exercise 1's graded cells for it follow the step's own (``authoring.graded_cells``)."""

    step: str  # the step's name
    function: str
    points: int

    @property
    def answer(self) -> str:
        return f"d{self.step}_{self.function}"


WRITTEN_WITH = [WrittenWith("C", "index_add", 1)]


def local_gradient(step: Step, forward: dict, upstream: dict, drop: str = None) -> torch.Tensor:
    """d<step.name> from the forward values and the given upstream gradients.

    ``drop`` leaves out the term of one consumer: what a student who forgot that branch gets.
    """
    terms = [term(forward, upstream) for consumer, term in step.terms.items() if consumer != drop]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def known_mistakes(step: Step, forward: dict, upstream: dict):
    """(message, value) of each known wrong formula of ``step`` (``Step.mistakes``) on these inputs; a variant that
    cannot be computed on them (another shape, a tensor it needs missing) is left out."""
    for message, variants in step.mistakes.items():
        for variant in variants if isinstance(variants, tuple) else (variants,):
            try:
                yield message, variant(forward, upstream)
            except (RuntimeError, KeyError, IndexError):
                continue

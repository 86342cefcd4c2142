"""Exercise 6's colleague: the backward pass the student debugs, the bugs planted in it, and whose bugs are whose.

``PASS`` is the course's atomic backward pass (the steps of ``backward_rules``) as one function. Each ``Bug`` replaces
one of its lines with a mistake the course warns about. The bugs a student gets follow from the id they enter: two
that show on any input and one that hides where the colleague checked (docs/design/bug-hunt.md). The notebook holds a
copy of the data and of the functions that choose (``authoring.bug_hunt_cells``), so both sides agree.
"""

import hashlib
import itertools
from dataclasses import dataclass

from ..backward_rules import STEPS

# A new offering of the course changes this: every id then gets another set (the notebooks are regenerated from it).
SALT = "backprop-ninja/bug-hunt/1"
PARAMETERS = ("C", "W1", "b1", "W2", "b2", "bngain", "bnbias")
# every tensor of the forward pass that backward_pass reads, in the order of the forward pass
TENSORS = PARAMETERS + (
    "emb", "embcat", "hprebn", "bnmeani", "bndiff", "bndiff2", "bnvar", "bnvar_inv", "bnraw", "hpreact", "h",
    "logits", "logit_maxes", "norm_logits", "counts", "counts_sum", "counts_sum_inv", "probs", "logprobs",
)  # fmt: skip
FUNCTION = "backward_pass"  # what the student's cell defines
ID = "BUG_HUNT_ID"  # the variable the student sets, reported by every graded cell of the notebook
NAMED = "buggy"  # the list of the gradients the student names
PASS = '''def backward_pass(t):
    """Every gradient of the loss, from t, the forward pass's tensors by name; returned by name too (dprobs, ...)."""
    n, Xb, Yb = t["n"], t["Xb"], t["Yb"]
    (C, W1, b1, W2, b2, bngain, bnbias, emb, embcat, hprebn, bnmeani, bndiff, bndiff2, bnvar, bnvar_inv, bnraw,
     hpreact, h, logits, logit_maxes, norm_logits, counts, counts_sum, counts_sum_inv, probs, logprobs) = (
        t[name] for name in TENSORS)
    # cross-entropy loss
    dlogprobs = torch.zeros_like(logprobs)
    dlogprobs[range(n), Yb] = -1.0 / n
    dprobs = (1.0 / probs) * dlogprobs
    dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)
    dcounts = counts_sum_inv * dprobs
    dcounts_sum = (-counts_sum**-2) * dcounts_sum_inv
    dcounts += torch.ones_like(counts) * dcounts_sum
    dnorm_logits = counts * dcounts
    dlogits = dnorm_logits.clone()
    dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)
    dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes
    # second layer and tanh
    dh = dlogits @ W2.T
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(0)
    dhpreact = (1.0 - h**2) * dh
    # BatchNorm layer
    dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
    dbnbias = dhpreact.sum(0, keepdim=True)
    dbnraw = bngain * dhpreact
    dbndiff = bnvar_inv * dbnraw
    dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)
    dbnvar = (-0.5 * (bnvar + 1e-5) ** -1.5) * dbnvar_inv
    dbndiff2 = (1.0 / (n - 1)) * torch.ones_like(bndiff2) * dbnvar
    dbndiff += (2 * bndiff) * dbndiff2
    dhprebn = dbndiff.clone()
    dbnmeani = (-dbndiff).sum(0, keepdim=True)
    dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)
    # first layer and the embedding
    dembcat = dhprebn @ W1.T
    dW1 = embcat.T @ dhprebn
    db1 = dhprebn.sum(0)
    demb = dembcat.view(emb.shape)
    dC = torch.zeros_like(C)
    dC.index_add_(0, Xb.view(-1), demb.view(-1, C.shape[1]))
    return dict(
        dlogprobs=dlogprobs, dprobs=dprobs, dcounts_sum_inv=dcounts_sum_inv, dcounts_sum=dcounts_sum, dcounts=dcounts,
        dnorm_logits=dnorm_logits, dlogit_maxes=dlogit_maxes, dlogits=dlogits, dh=dh, dW2=dW2, db2=db2,
        dhpreact=dhpreact, dbngain=dbngain, dbnbias=dbnbias, dbnraw=dbnraw, dbnvar_inv=dbnvar_inv, dbnvar=dbnvar,
        dbndiff2=dbndiff2, dbndiff=dbndiff, dbnmeani=dbnmeani, dhprebn=dhprebn, dembcat=dembcat, dW1=dW1, db1=db1,
        demb=demb, dC=dC)'''
# the gradients backward_pass returns, in the order of the backward pass: each after every gradient it is computed from
GRADIENTS = tuple("d" + step.name for step in STEPS)


@dataclass(frozen=True)
class Bug:
    key: str  # its name, and its diagnosis kind when a fix still has it
    gradient: str  # the gradient whose value it makes wrong first (for "aliased": not the line it is on)
    right: str  # the line of PASS it replaces, stripped
    wrong: str  # the colleague's line

    @property
    def binds(self) -> str:
        """The gradient the bug's line writes (for "aliased" dhprebn, whose values stay right)."""
        return self.wrong.split("[")[0].split("=")[0].split(".")[0].strip()


BUGS = {
    bug.key: bug
    for bug in [
        Bug(
            "clipped_loss",
            "dlogprobs",
            "dlogprobs[range(n), Yb] = -1.0 / n",
            "dlogprobs[range(n), Yb] = -1.0 / n * (-logprobs[range(n), Yb] < 3.5)  # clip each example's loss at 3.5",
        ),
        Bug(
            "zero_bias",
            "dbngain",
            "dbngain = (bnraw * dhpreact).sum(0, keepdim=True)",
            "dbngain = (hpreact * dhpreact).sum(0, keepdim=True)",
        ),
        Bug(
            "aliased",
            "dbndiff",
            "dhprebn = dbndiff.clone()",
            "dhprebn = dbndiff",
        ),
        Bug(
            "epsilon",
            "dbnvar",
            "dbnvar = (-0.5 * (bnvar + 1e-5) ** -1.5) * dbnvar_inv",
            "dbnvar = (-0.5 * bnvar**-1.5) * dbnvar_inv",
        ),
        Bug(
            "bessel",
            "dbndiff2",
            "dbndiff2 = (1.0 / (n - 1)) * torch.ones_like(bndiff2) * dbnvar",
            "dbndiff2 = (1.0 / n) * torch.ones_like(bndiff2) * dbnvar",
        ),
        Bug(
            "not_accumulated",
            "dC",
            "dC.index_add_(0, Xb.view(-1), demb.view(-1, C.shape[1]))",
            "dC[Xb] += demb",
        ),
    ]
}
# Every student gets two bugs that show on any input and one that hides where the colleague checked (at BatchNorm's
# usual initialisation, every neuron's variance ordinary): the same size and the same mix for every id.
SHOWING = ("clipped_loss", "aliased", "bessel", "not_accumulated")
HIDING = ("zero_bias", "epsilon")
PER_STUDENT = 3


def normalised_id(text):
    """The id as the bug sets read it: words joined by single spaces, lower-case; None when there is none."""
    if not isinstance(text, str):
        return None
    return " ".join(text.split()).lower() or None


def bug_keys(text, salt, showing, hiding, gradients, order):
    """The keys of the bugs planted for the id ``text``, in the order of the pass (none without an id): one of the
    sets of two ``showing`` and one ``hiding``, chosen by a hash of the salted id."""
    key = normalised_id(text)
    if key is None:
        return ()
    sets = [pair + (one,) for pair in itertools.combinations(showing, 2) for one in hiding]
    digest = int(hashlib.sha256(f"{salt}/{key}".encode()).hexdigest(), 16)
    return tuple(sorted(sets[digest % len(sets)], key=lambda bug: order.index(gradients[bug])))


def with_bugs(code, keys, replaced):
    """``code`` with the line ``replaced[key][0]`` of each key replaced by ``replaced[key][1]`` (same indent)."""
    lines = code.split("\n")
    for key in keys:
        right, wrong = replaced[key]
        at = next(i for i, line in enumerate(lines) if line.strip() == right)
        lines[at] = lines[at][: len(lines[at]) - len(lines[at].lstrip())] + wrong
    return "\n".join(lines)


def section(bugs, slot, order):
    """The gradients of ``order`` that the fix of bug ``slot`` answers for, given ``bugs``, the gradients the bugs make
    wrong in the order of the pass: those after the previous bug's up to its own, and for the last bug every one after
    it too. Every gradient of the pass is in one fix's part, so a line broken anywhere costs one fix."""
    at = [order.index(gradient) for gradient in bugs]
    start = at[slot - 2] + 1 if slot > 1 else 0
    return tuple(order[start : at[slot - 1] + 1 if slot < len(at) else len(order)])


def gradient_named(name, gradients):
    """The gradient of ``gradients`` that a name in buggy stands for, or None: its name as backward_pass returns it
    (dW1), the tensor's own (W1), or the tensor's gradient in another common notation (W1.grad, dL/dW1, grad_W1,
    W1_grad); spaces around it do not count."""
    name = name.strip()
    for prefix in ("dL/", "dloss/", "grad_"):
        name = name.removeprefix(prefix)
    for suffix in (".grad", "_grad"):
        name = name.removesuffix(suffix)
    return next((gradient for gradient in (name, "d" + name) if gradient in gradients), None)


def planted(text) -> tuple:
    """The ``Bug``s of the id ``text``, in the order of the pass (none without an id)."""
    gradients = {key: bug.gradient for key, bug in BUGS.items()}
    return tuple(BUGS[key] for key in bug_keys(text, SALT, SHOWING, HIDING, gradients, GRADIENTS))


def colleague_code(text) -> str:
    """The backward pass the student with the id ``text`` is given: PASS with their bugs."""
    keys = [bug.key for bug in planted(text)]
    return with_bugs(PASS, keys, {key: (bug.right, bug.wrong) for key, bug in BUGS.items()})

"""Exercise 4's network in the grader's hands: its forward pass, the course's backward pass, and training runs.

The grader replays the notebook's run from the same seed with autograd's gradients; ``manual_backward`` is the
course's own solution, never the reference a student's gradient is compared with (docs/design/engine.md).
"""

import contextlib

import torch
import torch.nn.functional as F

PARAMETER_NAMES = ("C", "W1", "b1", "W2", "b2", "bngain", "bnbias")
GRADED_STEPS = 300  # the length of the training run at autograde, whatever max_steps the student set
LEARNING_RATES = (0.1, 0.01)  # before and after half of the steps, as in the lecture
BATCH_SEED_OFFSET = 1  # the minibatches of training come from torch.Generator().manual_seed(SEED + 1)
# backward_pass is also called on a batch of another size than batch_size (32), with the notebook's batch_size (and n)
# set to it for the call: a size written in as a number (n = 32, / 32, torch.ones(32, 1)) is right at 32 only
OTHER_BATCH_SIZE, OTHER_BATCH_SEED_OFFSET = 50, 2
# and on the graded run's first batches, until one raises: a line right on some batches only raises on one of them
TRAINING_BATCHES = 20
BATCHNORM_EPSILON = 1e-5
# and on the check batch with neuron 0 as thin as the epsilon (thin_neuron), where these gradients show an epsilon
# misplaced: dhprebn's column of that neuron enters them by products (db1 holds its sums, zero either way)
THIN_NEURON_SHOWS = ("C", "W1")


def thin_neuron(parameters, Xb) -> None:
    """In place: neuron 0 of the hidden layer given a batch variance of BatchNorm's epsilon on Xb, and a batch mean as
    small as its spread, as Exercise 1's setup does to its batch. Then the epsilon weighs in its gradient: left out, or
    added outside the power, it changes neuron 0's column of dhprebn (dW1's) by a third; at the usual variances of about
    1 it changes nothing the tolerance sees. (The mean: a variance taken as E[x**2] - E[x]**2 keeps its precision.)"""
    C, W1, b1 = parameters[:3]
    with torch.no_grad():
        embcat = C[Xb].view(Xb.shape[0], -1)
        W1[:, 0] *= (BATCHNORM_EPSILON / (embcat @ W1[:, 0]).var()) ** 0.5
        b1[0] = BATCHNORM_EPSILON**0.5 - (embcat @ W1[:, 0]).mean()


def forward(parameters, Xb, Yb):
    """The notebook's ``forward``: the loss and the cache of intermediate tensors."""
    C, W1, b1, W2, b2, bngain, bnbias = parameters
    emb = C[Xb]
    embcat = emb.view(emb.shape[0], -1)
    hprebn = embcat @ W1 + b1
    bnmeani = hprebn.mean(0, keepdim=True)
    bnvar = hprebn.var(0, keepdim=True, unbiased=True)
    bnvar_inv = (bnvar + BATCHNORM_EPSILON) ** -0.5
    bnraw = (hprebn - bnmeani) * bnvar_inv
    hpreact = bngain * bnraw + bnbias
    h = torch.tanh(hpreact)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, Yb)
    cache = dict(
        emb=emb,
        embcat=embcat,
        hprebn=hprebn,
        bnmeani=bnmeani,
        bnvar=bnvar,
        bnvar_inv=bnvar_inv,
        bnraw=bnraw,
        hpreact=hpreact,
        h=h,
        logits=logits,
    )
    return loss, cache


def manual_backward(parameters, Xb, Yb, cache):
    """The course's solution: [dC, dW1, db1, dW2, db2, dbngain, dbnbias] without autograd."""
    C, W1, b1, W2, b2, bngain, bnbias = parameters
    n = Xb.shape[0]
    h, bnraw, logits = cache["h"], cache["bnraw"], cache["logits"]
    dlogits = F.softmax(logits, 1)
    dlogits[torch.arange(n), Yb] -= 1
    dlogits /= n
    dh = dlogits @ W2.T
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(0)
    dhpreact = (1.0 - h * h) * dh
    dbnbias = dhpreact.sum(0, keepdim=True)
    dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
    dhprebn = bngain * cache["bnvar_inv"] / n * (n * dhpreact - dbnbias - n / (n - 1) * bnraw * dbngain)
    dW1 = cache["embcat"].T @ dhprebn
    db1 = dhprebn.sum(0)
    demb = (dhprebn @ W1.T).view(cache["emb"].shape)
    dC = torch.zeros_like(C).index_add_(0, Xb.view(-1), demb.view(-1, C.shape[1]))
    return [dC, dW1, db1, dW2, db2, dbngain, dbnbias]


def learning_rate(step: int, steps: int) -> float:
    return LEARNING_RATES[0] if step < steps // 2 else LEARNING_RATES[1]


def minibatches(Xtr, seed: int, steps: int, batch_size: int):
    """The notebook's training loop, step by step: (indices of the minibatch in Xtr, learning rate)."""
    generator = torch.Generator().manual_seed(seed + BATCH_SEED_OFFSET)
    for i in range(steps):
        yield torch.randint(0, Xtr.shape[0], (batch_size,), generator=generator), learning_rate(i, steps)


def other_batch(Xtr, Ytr, seed: int):
    """(Xb, Yb): OTHER_BATCH_SIZE examples of the training set, the same in the kernel and in the grader."""
    generator = torch.Generator().manual_seed(seed + OTHER_BATCH_SEED_OFFSET)
    ix = torch.randint(0, Xtr.shape[0], (OTHER_BATCH_SIZE,), generator=generator)
    return Xtr[ix], Ytr[ix]


@contextlib.contextmanager
def one_thread():
    """Small matrices train fastest on one thread, and a busy machine does not slow them down."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def autograd_run(initial_parameters, Xtr, Ytr, seed: int, steps: int, batch_size: int) -> dict:
    """The notebook's training loop with autograd's gradients: the run a student's must follow."""
    parameters = [p.detach().clone().requires_grad_() for p in initial_parameters]
    losses, last_batch = [], None
    with one_thread():
        for ix, lr in minibatches(Xtr, seed, steps, batch_size):
            last_batch = ix
            loss, _ = forward(parameters, Xtr[ix], Ytr[ix])
            for p in parameters:
                p.grad = None
            loss.backward()
            with torch.no_grad():
                for p in parameters:
                    p += -lr * p.grad
            losses.append(loss.item())
    return {"losses": torch.tensor(losses), "parameters": [p.detach() for p in parameters], "last_batch": last_batch}


@torch.no_grad()
def hidden_preactivations(parameters, X):
    """hprebn of every example of X: what BatchNorm is calibrated on."""
    C, W1, b1 = parameters[:3]
    return C[X].view(X.shape[0], -1) @ W1 + b1


_OF_SPLITS = {}  # (what, id of X, its shape) -> (X, what the grader keeps of X): kept while X lives


def _kept_of(X, what: str, compute):
    """``compute(X)``, once for each split of the setup (the same tensors for a whole class)."""
    key = (what, id(X), tuple(X.shape))
    if key not in _OF_SPLITS:
        if len(_OF_SPLITS) > 8:
            _OF_SPLITS.clear()
        _OF_SPLITS[key] = (X, compute(X))
    return _OF_SPLITS[key][1]


def _pair_frequencies(X, vocab_size: int):
    """F[a][b][u, v]: the fraction of the rows of X with character u at position a and v at position b."""

    def compute(X):
        positions = range(X.shape[1])
        return [
            [
                torch.bincount(X[:, a] * vocab_size + X[:, b], minlength=vocab_size**2).double().view(vocab_size, -1)
                / X.shape[0]
                for b in positions
            ]
            for a in positions
        ]

    return _kept_of(X, f"pairs {vocab_size}", compute)


@torch.no_grad()
def calibrate(parameters, X):
    """bnmean and bnvar over the whole of X, (1, n_hidden) each, with the training pass's n-1.

    Computed exactly in float64 without forming hprebn: hprebn is linear in the concatenated
    embeddings, whose mean and covariance follow from how often each pair of characters occurs
    at each pair of context positions. The cost does not grow with len(X) (the counts are
    kept), so the grader can check a calibration over 182,625 examples in a millisecond.
    """
    C, W1, b1 = (p.detach().double() for p in parameters[:3])
    frequencies = _pair_frequencies(X, C.shape[0])
    block, d = len(frequencies), C.shape[1]
    mean = torch.cat([frequencies[a][a].diagonal() @ C for a in range(block)])  # of the concatenated embeddings
    second = torch.zeros(block * d, block * d, dtype=torch.float64)
    for a in range(block):
        for b in range(block):
            second[a * d : (a + 1) * d, b * d : (b + 1) * d] = C.T @ frequencies[a][b] @ C
    covariance = second - torch.outer(mean, mean)
    n = X.shape[0]
    bnmean = (mean @ W1 + b1).view(1, -1)
    bnvar = ((covariance @ W1) * W1).sum(0).view(1, -1) * n / max(n - 1, 1)
    return bnmean, bnvar


@torch.no_grad()
def split_loss(parameters, bnmean, bnvar, X, Y) -> float:
    """The loss on a whole split, BatchNorm using the calibrated statistics (the notebook's split_loss). The network
    runs once for each distinct context of X (Xdev's 22,655 rows hold 2,965), and each row's loss is its context's
    log-probability of its target: the notebook's figure to about 1e-7, in an eighth of the time."""
    C, W1, b1, W2, b2, bngain, bnbias = parameters
    contexts, row_context = _kept_of(X, "contexts", lambda X: torch.unique(X, dim=0, return_inverse=True))
    hprebn = hidden_preactivations(parameters, contexts)
    bnmean, bnvar = bnmean.to(hprebn.dtype), bnvar.to(hprebn.dtype)
    hpreact = bngain * (hprebn - bnmean) * (bnvar + 1e-5) ** -0.5 + bnbias
    logprobs = F.log_softmax(torch.tanh(hpreact) @ W2 + b2, dim=1)
    return -logprobs[row_context, Y].mean().item()

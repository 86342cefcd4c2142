"""Exercise 4's known students: mistakes, alternative correct code, cheats, a leftover training loop.

One table of cases, graded two ways: every case in process (tests/fast/test_ex4_in_process.py), and a few
representative ones through the real nbgrader pipeline (tests/slow/test_ex4_pipeline.py).
"""

from autograder.authoring.submissions import solved
from autograder.engine.training import network as training
from autograder.engine.training.reference_runs import FOLLOW_POINTS, POINTS

NB = "ex4_manual_training"
GRADIENTS = [f"test_d{name}" for name in training.PARAMETER_NAMES]

BACKWARD = {  # lines of the course's backward_pass, so that a mistake replaces exactly one of them
    "dlogits": "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1\ndlogits /= n",
    "layer2": "dh = dlogits @ W2.T\ndW2 = h.T @ dlogits\ndb2 = dlogits.sum(0)",
    "tanh": "dhpreact = (1.0 - h**2) * dh",
    "batchnorm": (
        "dbngain = (bnraw * dhpreact).sum(0, keepdim=True)\ndbnbias = dhpreact.sum(0, keepdim=True)\n"
        "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
        "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
    ),
    "layer1": "dembcat = dhprebn @ W1.T\ndW1 = embcat.T @ dhprebn\ndb1 = dhprebn.sum(0)",
    "embedding": "demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\n"
    "dC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))",
}


def backward(**changes):
    return "\n".join(changes.get(part, code) for part, code in BACKWARD.items())


def training_step(update):
    return f"grads = backward_pass(Xb, Yb, cache)\nfor p, grad in zip(parameters, grads):\n    {update}"


CALIBRATION = (
    "hprebn_all = C[{X}].view({X}.shape[0], -1) @ W1 + b1\nbnmean = hprebn_all.mean(0, keepdim=True)\n"
    "bnvar = hprebn_all.var(0, keepdim=True)"
)

# student -> (answer cells changed, extra cells, {graded cell: points it must keep},
#             {graded cell: words of its message})
# Graded cells not named keep all their points.
MISTAKES = {
    "m_dC_overwrites": (
        {
            "answer_backward_pass": backward(
                embedding="demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\ndC[Xb] += demb"
            )
        },
        [],
        {"test_dC": 0},
        {"test_dC": "keeps only one of its contributions", "test_training": "your dC is wrong (see its cell)"},
    ),
    # A dC made once, in a cell of its own, and added into at every call: right on the first call only. backward_pass
    # is called twice on the check batch, and the second dC differs: dC's cell loses its points, and the own run's line
    # names dC
    "m_dC_kept_between_calls": (
        {
            "answer_backward_pass": backward(
                embedding="demb = dembcat.view(emb.shape)\ndC = dC_total\n"
                "dC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))"
            )
        },
        [("answer_backward_pass", "dC_total = torch.zeros_like(C)")],
        {"test_dC": 0},
        {"test_dC": "gave another dC when it was called a second time", "test_training": "your dC is wrong"},
    ),
    "m_db2_divided_by_n": (
        {"answer_backward_pass": backward(layer2="dh = dlogits @ W2.T\ndW2 = h.T @ dlogits\ndb2 = dlogits.sum(0) / n")},
        [],
        {"test_db2": 0},
        {"test_db2": "32 times too small", "test_training": "db2 is wrong"},
    ),
    # One mistake costs one cell: the training run grades training_step, with the right gradients.
    "m_dW1_doubled": (
        {
            "answer_backward_pass": backward(
                layer1="dembcat = dhprebn @ W1.T\ndW1 = 2 * embcat.T @ dhprebn\ndb1 = dhprebn.sum(0)"
            )
        },
        [],
        {"test_dW1": 0},
        {
            "test_dW1": "(your dlogits, dh, dhpreact, dhprebn on the way back from the loss are right: the mistake is "
            "in dW1's own line)",
            "test_training": "your own training run, with your backward_pass, leaves autograd's at step 2 of 300: "
            "your dW1 is wrong (see its cell); that costs points in the wrong gradients' own cells, not here",
        },
    ),
    # a gradient from another upstream gradient (diagnosis/chain_rule.py): its own cell names the one it read; a wrong
    # intermediate is named as the first wrong one on the parameters' way back, with the same words
    "m_dW1_from_dhpreact": (
        {
            "answer_backward_pass": backward(
                layer1="dembcat = dhprebn @ W1.T\ndW1 = embcat.T @ dhpreact\ndb1 = dhprebn.sum(0)"
            )
        },
        [],
        {"test_dW1": 0},
        {"test_dW1": "it is what dW1 would be if dhpreact were its upstream gradient"},
    ),
    "m_dembcat_from_dhpreact": (
        {
            "answer_backward_pass": backward(
                layer1="dembcat = dhpreact @ W1.T\ndW1 = embcat.T @ dhprebn\ndb1 = dhprebn.sum(0)"
            )
        },
        [],
        {"test_dC": 0},
        {
            "test_dC": "the first wrong gradient on the way back from the loss is your dembcat: dembcat is computed "
            "from the wrong upstream gradient: it is what dembcat would be if dhpreact were its upstream gradient"
        },
    ),
    "m_db2_keepdim": (  # right values, shape (1, 27): half of db2; the own run stops at its first update
        {
            "answer_backward_pass": backward(
                layer2="dh = dlogits @ W2.T\ndW2 = h.T @ dlogits\ndb2 = dlogits.sum(0, keepdim=True)"
            )
        },
        [],
        {"test_db2": 0.5},
        {
            "test_db2": "dimension 0 of size 1 is one too many",
            "test_training": "your own training run stopped after 0 of 300 steps: your db2 is wrong (see its cell)",
        },
    ),
    "m_batchnorm_bessel": (
        {"answer_backward_pass": backward(batchnorm=BACKWARD["batchnorm"].replace("n / (n - 1) * bnraw", "bnraw"))},
        [],
        {"test_dW1": 0, "test_dC": 0},
        {
            "test_dW1": "your dhprebn: dhprebn is missing the factor n/(n-1)",
            "test_dC": "your dhprebn",
            "test_training": "your dC, dW1 are wrong (see their cells)",
        },
    ),
    "m_grad_in_update": (
        {"answer_training_step": training_step("p.data += -lr * p.grad")},
        [],
        {"test_training": 0},
        {"test_training": "training_step uses autograd"},
    ),
    "m_backward_left_in": (
        {
            "answer_training_step": "for p in parameters:\n    p.grad = None\nloss.backward()\n"
            + training_step("p += -lr * grad")
        },
        [],
        {"test_training": 0},
        {"test_training": "training_step uses autograd"},
    ),
    "m_update_rebinds": (
        {"answer_training_step": training_step("p = p - lr * grad")},
        [],
        {"test_training": 0},
        {"test_training": "the parameters never changed"},
    ),
    # New tensors put into the list: the replay (which reads the list) follows autograd's run, but the notebook's C,
    # W1, ... keep their initial values, and backward_pass and every later cell read them. The follow points go.
    "m_update_list_reassigned": (
        {
            "answer_training_step": "grads = backward_pass(Xb, Yb, cache)\n"
            "for i, (p, grad) in enumerate(zip(parameters, grads)):\n    parameters[i] = p - lr * grad"
        },
        [],
        {"test_training": POINTS["training"] - FOLLOW_POINTS},
        {"test_training": "puts new tensors into the list parameters (parameters[i] = ..., first at step 1 of 300)"},
    ),
    "m_update_missing": (  # the stub's line replaced by pass: nothing updated, and not for the rebinding's reason
        {"answer_training_step": "pass"},
        [],
        {"test_training": 0},
        {"test_training": "training_step changed no parameter, and it never called backward_pass"},
    ),
    "m_update_sign": (
        {"answer_training_step": training_step("p += lr * grad")},
        [],
        {"test_training": 0},
        {"test_training": "the loss goes up"},
    ),
    "m_swapped_batchnorm_grads": (
        {"answer_backward_pass": backward() + "\nreturn [dC, dW1, db1, dW2, db2, dbnbias, dbngain]"},
        [],
        {"test_dbngain": 0, "test_dbnbias": 0},
        {"test_dbngain": "it is dbnbias: backward_pass must return the gradients in the order of parameters"},
    ),
    # A real error, not the stub's NotImplementedError, in dlogits' line: every gradient is computed from it, so every
    # gradient's cell gives that error as its reason, and the feedback's headline sends the student to it rather than
    # to dW2, the first row of its table
    "m_backward_raises": (
        {"answer_backward_pass": backward(dlogits=BACKWARD["dlogits"].replace("/= n", "/= n_rows"))},
        [],
        {g: 0 for g in GRADIENTS},
        {
            "test_dW2": "backward_pass raised NameError on the check batch, at `dlogits /= n_rows`: name 'n_rows' is "
            "not defined. Every gradient computed from that line has no value and loses its points",
            "test_training": "your own training run stopped after 0 of 300 steps: backward_pass raised NameError: name "
            "'n_rows' is not defined. Run Step 1",  # the training run's batches are not the check batch
        },
    ),
    # A line that raises on the check batch costs the gradients computed from it, no other: backward_pass is run
    # again line by line, the raising line and those that read what it left without a value skipped. (Every gradient
    # lost its points: 8 for dC's own slip here, 5 for dh's, whose dW2 and db2 do not depend on it.)
    "m_dC_line_raises": (
        {
            "answer_backward_pass": backward(
                embedding="demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\n"
                "dC.index_add_(0, Xb.view(-1), demb_rows)"
            )
        },
        [],
        {"test_dC": 0},
        {"test_dC": "backward_pass raised NameError on the check batch, at `dC.index_add_(0, Xb.view(-1), demb_rows)`"},
    ),
    "m_dh_not_transposed": (
        {"answer_backward_pass": backward(layer2=BACKWARD["layer2"].replace("W2.T", "W2"))},
        [],
        {g: 0 for g in ("test_dC", "test_dW1", "test_db1", "test_dbngain", "test_dbnbias")},
        {"test_dbngain": "at `dh = dlogits @ W2`: mat1 and mat2 shapes cannot be multiplied"},
    ),
    "m_dembcat_not_transposed": (  # dW1 and db1, after it in the code, do not read dembcat: they keep their points
        {"answer_backward_pass": backward(layer1=BACKWARD["layer1"].replace("dhprebn @ W1.T", "dhprebn @ W1"))},
        [],
        {"test_dC": 0},
        {"test_dC": "at `dembcat = dhprebn @ W1`"},
    ),
    "m_hpreact_not_in_the_cache_it_reads": (  # a global name of the lecture's notebook, not this one's
        {"answer_backward_pass": backward(tanh="dhpreact = (1.0 - torch.tanh(hpreact) ** 2) * dh")},
        [],
        {g: 0 for g in ("test_dC", "test_dW1", "test_db1", "test_dbngain", "test_dbnbias")},
        {"test_dW1": "NameError on the check batch, at `dhpreact = (1.0 - torch.tanh(hpreact) ** 2) * dh`"},
    ),
    # Two slips in one submission, each costing its own cell. dC from F.one_hot(Xb) without num_classes (published with
    # it): right on a batch whose contexts hold the last character, in shape (26, 10) on one without it. backward_pass
    # raises nothing there, so the training run's batches checked only raises, and dC kept its 2 points
    "m_no_calibration_dC_one_hot_no_classes": (
        {
            "answer_calibration": "pass",
            "answer_backward_pass": backward(
                embedding="demb = dembcat.view(emb.shape)\n"
                "dC = F.one_hot(Xb.view(-1)).float().T @ demb.view(-1, n_embd)"
            ),
        },
        [],
        {"test_calibration": 0, "test_dC": 0},
        {"test_calibration": "not calibrated yet", "test_dC": "returned it in shape (26, 10), not (27, 10)"},
    ),
    "m_calibration_one_batch": (
        {"answer_calibration": CALIBRATION.format(X="Xb")},
        [],
        {"test_calibration": 0},
        {"test_calibration": "over one minibatch"},
    ),
}

ALTERNATIVES = {  # other correct code: full marks
    "alt_lecture": {  # the lecture's own forms: one-hot-free indexing, the Python double loop for dC, p.data
        "answer_backward_pass": backward(
            embedding=(
                "demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\nfor k in range(Xb.shape[0]):\n"
                "    for j in range(Xb.shape[1]):\n        ix = Xb[k, j]\n        dC[ix] += demb[k, j]"
            )
        ),
        "answer_training_step": training_step("p.data += -lr * grad"),
        "answer_calibration": CALIBRATION.format(X="Xtr").replace(
            "var(0, keepdim=True)", "var(0, keepdim=True, unbiased=False)"
        ),
    },
    "alt_atomic": {  # BatchNorm backpropagated step by step, dlogits and dC by one-hot products
        "answer_backward_pass": backward(
            dlogits="dlogits = (F.softmax(logits, 1) - F.one_hot(Yb, logits.shape[1]).float()) / n",
            batchnorm=(
                "dbngain = (bnraw * dhpreact).sum(0, keepdim=True)\ndbnbias = dhpreact.sum(0, keepdim=True)\n"
                "hprebn = cache['hprebn']\nbndiff = hprebn - hprebn.mean(0, keepdim=True)\n"
                "dbnraw = bngain * dhpreact\ndbndiff = bnvar_inv * dbnraw\n"
                "dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)\n"
                "dbnvar = -0.5 * bnvar_inv**3 * dbnvar_inv\n"
                "dbndiff += 2 * bndiff * dbnvar / (n - 1)\n"
                "dhprebn = dbndiff - dbndiff.sum(0, keepdim=True) / n"
            ),
            embedding=(
                "demb = dembcat.view(emb.shape)\n"
                "dC = F.one_hot(Xb.view(-1), C.shape[0]).float().T @ demb.view(-1, n_embd)"
            ),
        ),
        "answer_training_step": "grads = backward_pass(Xb, Yb, cache)\nfor p, grad in zip(parameters, grads):\n"
        "    p.sub_(lr * grad)",
    },
}

# In place by other means: the same tensor objects stay in parameters (p.data = ... gives p new storage, not a new p;
# p.copy_(...) is in the slow tier's audit, tests/slow/test_alternative_solutions.py)
ALTERNATIVES["alt_data_assigned"] = {"answer_training_step": training_step("p.data = p.data - lr * grad")}

ALTERNATIVES["alt_db1_zero"] = {  # BatchNorm cancels b1: its gradient is exactly zero
    "answer_backward_pass": backward(
        layer1="dembcat = dhprebn @ W1.T\ndW1 = embcat.T @ dhprebn\ndb1 = torch.zeros_like(b1)"
    ),
    "answer_training_step": training_step("p.data.add_(grad, alpha=-lr)"),  # (published)
}
# published forms (a third round, December 2026): Exercise 3's fused BatchNorm with 1/(n-1), softmax written out, dC by
# einsum over a one-hot of Xb
ALTERNATIVES["alt_data_assigned"]["answer_backward_pass"] = backward(
    dlogits="counts = (logits - logits.max(1, keepdim=True).values).exp()\n"
    "dlogits = (counts / counts.sum(1, keepdim=True) - F.one_hot(Yb, vocab_size)) / n",
    batchnorm="dbngain = (bnraw * dhpreact).sum(0, keepdim=True)\ndbnbias = (dhpreact).sum(0, keepdim=True)\n"
    "dhprebn = bngain * bnvar_inv * (dhpreact - (1 / n) * dhpreact.sum(0, keepdim=True) "
    "- 1 / (n - 1) * bnraw * (dhpreact * bnraw).sum(0, keepdim=True))",
    embedding="demb = dembcat.view(emb.shape)\n"
    "dC = torch.einsum('bti,btj->ij', F.one_hot(Xb, vocab_size).float(), demb)",
)

# student -> (changes, extra cells, {graded cell: points it must keep}, {graded cell: words})
CHEATS = {
    "c_grad_in_backward": (
        {"answer_backward_pass": "dC, dW1, db1, dW2, db2, dbngain, dbnbias = [p.grad for p in parameters]"},
        [],
        {**{g: 0 for g in GRADIENTS}, "test_training": 0},
        {"test_dW1": "backward_pass uses autograd", "test_training": "backward_pass uses autograd"},
    ),
    # autograd in a helper of a later cell, which the static reading of backward_pass does not follow: the kernel's
    # switch stops it (AutogradIsOff), and that is autograd too, as when the helper's cell comes first
    "c_autograd_in_a_later_helper": (
        {"answer_backward_pass": backward(dlogits="dlogits = ce_grad(logits, Yb)")},
        [
            (
                "answer_backward_pass",
                "def ce_grad(logits, Yb):\n    lg = logits.detach().requires_grad_()\n    with torch.enable_grad():\n"
                "        F.cross_entropy(lg, Yb).backward()\n    return lg.grad",
            )
        ],
        {**{g: 0 for g in GRADIENTS}, "test_training": 0},
        {"test_dC": "backward_pass uses autograd", "test_training": "backward_pass uses autograd"},
    ),
    # .grad read by a computed name: the static reading marks operator.attrgetter (and while grading .grad is None)
    "c_hidden_grad": (
        {"answer_training_step": training_step("p += -lr * operator.attrgetter('gr' + 'ad'[0:2])(p)")},
        [("answer_backward_pass", "import operator")],
        {"test_training": 0},
        {"test_training": "training_step uses autograd"},
    ),
}
# the course's own gradients reached by a module's name in a string (distributed.utils.import_term, which the static
# reading did not see): manual_backward itself, and the replay's hand-out to a training_step of the student's making,
# called before the check batch's judgment. 14 of 14 points each until 2026-12-07; now marked, and the kernel refuses
# the grader's formulas and judges no backward_pass once the right gradients were handed out (tests/fast/
# test_grader_formulas.py)
_BY_NAME = "from distributed.utils import import_term\n"
_STEAL = (
    "replay = import_term('auto' + 'gra' + 'der.in_kernel.training._replay_training_step')\nbox = []\n\n\n"
    "def backward_pass(Xb, Yb, cache):\n    if not box:\n        fake = {}\n\n"
    "        def grab(X, Y, lr):\n            box.append(fake['backward_pass'])\n            return 0.0\n\n"
    "        fake.update(training_step=grab, parameters=parameters, Xtr=Xtr, Ytr=Ytr, SEED=SEED, "
    "batch_size=batch_size, initial_parameters=[p.detach().clone() for p in parameters])\n"
    "        replay(fake)\n    return box[0](Xb, Yb, cache)\n"
)
_NETWORK = (
    "manual = import_term('auto' + 'gra' + 'der.engine.training.network.manual_back' + 'ward')\n\n\n"
    "def backward_pass(Xb, Yb, cache):\n    return manual(parameters, Xb, Yb, cache)\n"
)
for _student, _code in (("c_manual_backward_by_a_name", _NETWORK), ("c_right_gradients_of_the_replay", _STEAL)):
    CHEATS[_student] = (
        {"answer_backward_pass": "raise NotImplementedError"},
        [("answer_backward_pass", _BY_NAME + _code)],
        {**{g: 0 for g in GRADIENTS}, "test_training": 0, "test_calibration": 0},  # (every answer from its cell on)
        {"test_dC": "backward_pass uses autograd", "test_training": "backward_pass uses autograd"},
    )


# The calibration of every case not about it: the solution's statistics from the embeddings' mean and covariance, in
# float64 as the grader computes them, these from how often each pair of characters stands at two places of a context
# (the same float32 bnmean and bnvar, to the bit on the setup's parameters, in 0.008 CPU s against 0.075 from C[Xtr]
# concatenated, 0.26 forming hprebn over Xtr, 0.42 with .var(0): the solution keeps its own)
QUICK_CALIBRATION = {
    "answer_calibration": "N, Cd = Xtr.shape[0], C.double()\n"
    "pairs = [[torch.bincount(Xtr[:, at] * vocab_size + Xtr[:, to], minlength=vocab_size**2)"
    ".view(vocab_size, vocab_size).double() for to in range(block_size)] for at in range(block_size)]\n"
    "embmean = torch.cat([pairs[at][at].sum(1) @ Cd for at in range(block_size)]).view(1, -1) / N\n"
    "second = torch.cat([torch.cat([Cd.T @ pairs[at][to] @ Cd for to in range(block_size)], 1) "
    "for at in range(block_size)]) / N\n"
    "covariance = (second - embmean.T @ embmean) * N / (N - 1)\n"
    "bnmean = (embmean @ W1.double() + b1).float()\n"
    "bnvar = ((covariance @ W1.double()) * W1).sum(0, keepdim=True).float()"
}


def submissions(release, source) -> dict:
    """student -> notebook, for every case above and the special students of Exercise 4."""
    # The solution trains 200,000 steps by default: autograde must still run only the graded steps.
    full_run = solved(release, source)
    for cell in full_run.cells:
        if cell.source.startswith("max_steps ="):
            cell.source = "max_steps = 200_000"
    class_ = {"solution": full_run, "blank": release}
    for student, (changes, extra, _, _) in {**MISTAKES, **CHEATS}.items():
        class_[student] = solved(release, source, {**QUICK_CALIBRATION, **changes}, extra)
    for student, changes in ALTERNATIVES.items():
        class_[student] = solved(release, source, {**QUICK_CALIBRATION, **changes})
    # A leftover training loop of the student's own, before the graded run: stopped early, costs nothing.
    loop = "with torch.no_grad():\n    for i in range(200_000):\n        training_step(*check_batch[:2], 0.1)"
    class_["alt_extra_loop"] = solved(release, source, QUICK_CALIBRATION, [("answer_training_step", loop)])
    return class_


# A third review (December 2026): more slips of a student who writes the loop by hand, packed several to a student
# where their cells differ (a wrong gradient, training_step and the calibration are graded apart: training_step with
# the right gradients in place of the student's backward_pass), and more correct forms, packed likewise.
def _swap(part: str, old: str, new: str) -> str:
    """BACKWARD[part] with ``old`` replaced by ``new``."""
    assert old in BACKWARD[part], (part, old)
    return BACKWARD[part].replace(old, new)


_STEP = "grads = backward_pass(Xb, Yb, cache)\n"
_CAL = CALIBRATION.format(X="Xtr")
_DBNGAIN = "(bnraw * dhpreact).sum(0, keepdim=True)"
_PACKED = {  # student -> (answer cells changed, extra cells, {cell: points kept}, {cell: words})
    "m_packed_own_lines_a": (
        {
            "answer_backward_pass": backward(
                batchnorm=_swap("batchnorm", _DBNGAIN, "(cache['hpreact'] * dhpreact).sum(0, keepdim=True)").replace(
                    "dbnbias = dhpreact.sum(0, keepdim=True)", "dbnbias = dhpreact.mean(0, keepdim=True)"
                ),
                layer1=_swap("layer1", "dW1 = embcat.T @ dhprebn", "dW1 = embcat.T @ dhpreact"),
                embedding=_swap("embedding", "Xb.view(-1)", "Xb.T.reshape(-1)"),
            ),
            "answer_training_step": training_step("p += -lr * (grad + 1e-4 * p)"),  # weight decay
            "answer_calibration": _CAL.replace(" + b1", ""),
        },
        [],
        {"test_dbngain": 0, "test_dbnbias": 0, "test_dW1": 0, "test_dC": 0, "test_training": 1, "test_calibration": 1},
        {
            "test_dbnbias": "32 times too small",
            "test_dW1": "the mistake is in dW1's own line",
            "test_dC": "dC adds demb's rows at the indices of Xb taken in another order",  # (h-mist5)
            "test_training": "with the right gradients, your training_step leaves autograd's run",
            "test_calibration": "bnmean is the mean of C[Xtr] viewed as rows, times W1, without b1",  # (h-mist5)
        },
    ),
    "m_packed_own_lines_b": (
        {
            "answer_backward_pass": backward(
                batchnorm=_swap("batchnorm", _DBNGAIN, "(bnraw * dhpreact).sum(1, keepdim=True)"),
                layer1=_swap("layer1", "db1 = dhprebn.sum(0)", "db1 = dhprebn.sum(0, keepdim=True)"),
            ),
            "answer_training_step": training_step("p += -lr * grad.clamp(-0.01, 0.01)"),
            "answer_calibration": _CAL.split("\nbnvar")[0],  # bnvar left out
        },
        [],
        {"test_dbngain": 0, "test_db1": 0.5, "test_training": 1, "test_calibration": 1},
        {"test_dbngain": "summed over dimension 1 instead of dimension 0", "test_db1": "earns 0.5 of its 1"},
    ),
    "m_packed_own_lines_c": (
        {
            "answer_backward_pass": backward(layer2=_swap("layer2", "db2 = dlogits.sum(0)", "db2 = dlogits.sum(1)")),
            "answer_training_step": _STEP + "for p, grad in zip(parameters, grads):\n    p += -lr * grad\n"
            "    p += -lr * grad",  # each parameter updated twice
            "answer_calibration": _CAL.replace(
                "C[Xtr].view(Xtr.shape[0], -1)", "C[Xtr].transpose(1, 2).reshape(Xtr.shape[0], -1)"
            ),
        },
        [],
        {"test_db2": 0, "test_training": 1, "test_calibration": 0},
        {"test_db2": "db2 has shape (32,), but b2 has shape (27,)"},
    ),
    "m_dlogits_not_over_n_grads_reversed_calibration_subset": (
        {
            "answer_backward_pass": backward(dlogits=_swap("dlogits", "\ndlogits /= n", "")),
            "answer_training_step": _STEP + "for p, grad in zip(parameters, reversed(grads)):\n    p += -lr * grad",
            "answer_calibration": CALIBRATION.format(X="Xtr[:1000]"),
        },
        [],
        {**{g: 0 for g in GRADIENTS if g != "test_db1"}, "test_training": 0, "test_calibration": 0},
        {"test_dW2": "your dlogits: dlogits is n = 32 times too large"},
    ),
    "m_softmax_over_the_batch_lr_over_n_calibration_of_hpreact": (
        {
            "answer_backward_pass": backward(dlogits=_swap("dlogits", "F.softmax(logits, 1)", "F.softmax(logits, 0)")),
            "answer_training_step": training_step("p += -lr * grad / Xb.shape[0]"),
            "answer_calibration": "hpreact_all = bngain * (C[Xtr].view(Xtr.shape[0], -1) @ W1 + b1 - "
            "cache['bnmeani']) * cache['bnvar_inv'] + bnbias\nbnmean = hpreact_all.mean(0, keepdim=True)\n"
            "bnvar = hpreact_all.var(0, keepdim=True)",
        },
        [],
        {**{g: 0 for g in GRADIENTS if g != "test_db1"}, "test_training": 0, "test_calibration": 0},
        {"test_dW2": "dlogits takes the softmax over the wrong dimension"},
    ),
    "m_tanh_of_h_grads_of_the_check_batch": (
        {
            "answer_backward_pass": backward(tanh=_swap("tanh", "(1.0 - h**2)", "(1.0 - torch.tanh(h)**2)")),
            "answer_training_step": "grads = backward_pass(*check_batch)\nfor p, grad in zip(parameters, grads):\n"
            "    p += -lr * grad",
        },
        [],
        {g: 0 for g in ("test_dC", "test_dW1", "test_dbngain", "test_dbnbias", "test_training")},
        {"test_dbngain": "the first wrong gradient on the way back from the loss is your dhpreact"},
    ),
    "m_tanh_precedence_last_parameter_only": (
        {
            "answer_backward_pass": backward(tanh=_swap("tanh", "(1.0 - h**2) * dh", "1.0 - h**2 * dh")),
            "answer_training_step": _STEP + "for p, grad in zip(parameters, grads):\n    pass\np += -lr * grad",
        },
        [],
        {g: 0 for g in ("test_dC", "test_dW1", "test_dbngain", "test_dbnbias", "test_training")},
        {"test_dbnbias": "your dhpreact"},
    ),
    # the lecture's running statistics, updated in training_step, taken as the calibration: the training run keeps
    # its points (the update is right), the calibration (300 steps of a running mean) loses its
    "m_dhprebn_without_bngain_running_statistics": (
        {
            "answer_backward_pass": backward(
                batchnorm=_swap("batchnorm", "dhprebn = bngain * bnvar_inv", "dhprebn = bnvar_inv")
            ),
            "answer_training_step": training_step("p += -lr * grad") + "\nglobal bnmean_running, bnvar_running\n"
            "bnmean_running = 0.999 * bnmean_running + 0.001 * cache['bnmeani']\n"
            "bnvar_running = 0.999 * bnvar_running + 0.001 * cache['bnvar']",
            "answer_calibration": "bnmean, bnvar = bnmean_running, bnvar_running",
        },
        [
            (
                "answer_training_step",
                "bnmean_running = torch.zeros(1, n_hidden)\nbnvar_running = torch.ones(1, n_hidden)",
            )
        ],
        {"test_dC": 0, "test_dW1": 0, "test_calibration": 0},
        {"test_dW1": "dhprebn is missing bngain"},
    ),
    "m_dhprebn_bessel_upside_down": (
        {"answer_backward_pass": backward(batchnorm=_swap("batchnorm", "n / (n - 1) * bnraw", "(n - 1) / n * bnraw"))},
        [],
        {"test_dC": 0, "test_dW1": 0},
        {"test_dW1": "your dhprebn"},
    ),
    # six gradients returned, db1 left out: each is read in the place of the one before it, and the message says so
    "m_db1_left_out_of_the_list": (
        {"answer_backward_pass": backward() + "\nreturn [dC, dW1, dW2, db2, dbngain, dbnbias]"},
        [],
        {g: 0 for g in ("test_db1", "test_dW2", "test_db2", "test_dbngain", "test_dbnbias")},
        {
            "test_dW2": "it is db2: backward_pass must return the gradients in the order of parameters",
            "test_dbnbias": "backward_pass returned 6 gradients; dbnbias is number 7",
        },
    ),
}
MISTAKES.update(_PACKED)
ALTERNATIVES.update(
    {
        "alt_packed_a": {  # softmax by a method and clone, dC by flatten, sub_, statistics in float64 chunks
            "answer_backward_pass": backward(
                dlogits=_swap(
                    "dlogits",
                    "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1",
                    "probs = logits.softmax(-1)\ndlogits = probs.clone()\ndlogits[torch.arange(n), Yb] -= 1",
                ),
                embedding="demb = dembcat.view(emb.shape)\n"
                "dC = torch.zeros_like(C).index_add_(0, Xb.flatten(), demb.flatten(0, 1))",
            ),
            "answer_training_step": training_step("p.data.sub_(lr * grad)"),
            "answer_calibration": "s = torch.zeros(1, n_hidden, dtype=torch.float64)\ns2 = torch.zeros_like(s)\n"
            "for i in range(0, Xtr.shape[0], 20000):\n    hb = (C[Xtr[i:i + 20000]].view(-1, 30) @ W1 + b1).double()\n"
            "    s += hb.sum(0, keepdim=True)\n    s2 += (hb**2).sum(0, keepdim=True)\nN = Xtr.shape[0]\n"
            "bnmean = (s / N).float()\nbnvar = ((s2 - N * (s / N) ** 2) / (N - 1)).float()",
        },
        "alt_packed_b": {  # bnvar_inv from bnvar, tanh's derivative factored, _foreach_add_, torch.var_mean
            "answer_backward_pass": backward(
                tanh="dhpreact = dh * (1 - h) * (1 + h)",
                batchnorm=_swap(
                    "batchnorm", "dhprebn = bngain * bnvar_inv", "dhprebn = bngain * (cache['bnvar'] + 1e-5) ** -0.5"
                ),
            ),
            "answer_training_step": _STEP + "torch._foreach_add_(parameters, list(grads), alpha=-lr)",
            "answer_calibration": "hprebn_all = C[Xtr].view(Xtr.shape[0], -1) @ W1 + b1\n"
            "bnvar, bnmean = torch.var_mean(hprebn_all, 0, keepdim=True)",
        },
        "alt_packed_c": {  # n from len(Yb), dW1 by einsum, loss.item() returned, the variance written out
            "answer_backward_pass": backward(
                layer1=_swap("layer1", "dW1 = embcat.T @ dhprebn", "dW1 = torch.einsum('ni,nj->ij', embcat, dhprebn)")
            ).replace("dlogits = F.softmax", "n = len(Yb)\ndlogits = F.softmax"),
            "answer_training_step": training_step("p -= lr * grad") + "\nreturn loss.item()",
            "answer_calibration": "emb_all = C[Xtr]\nembcat_all = emb_all.view(emb_all.shape[0], -1)\n"
            "hprebn_all = embcat_all @ W1 + b1\nbnmean = hprebn_all.mean(0, keepdim=True)\n"
            "bnvar = ((hprebn_all - bnmean) ** 2).sum(0, keepdim=True) / (hprebn_all.shape[0] - 1)",
        },
        "alt_packed_d": {  # the parameters by index, add_ with alpha, under a no_grad of its own
            "answer_training_step": "with torch.no_grad():\n    " + _STEP.strip() + "\n    for i, p in "
            "enumerate(parameters):\n        p.add_(grads[i], alpha=-lr)",
        },
    }
)
# dbnraw = dhpreact, then dbnraw *= bngain: dhpreact changed in place after its own line, and dbngain, read after it,
# wrong (its words sent the student to re-derive tanh's step, which is right: they now name the shared tensor)
MISTAKES["m_dhpreact_changed_through_dbnraw_lr_decayed_in_step"] = (
    {
        "answer_backward_pass": backward(
            batchnorm="dbnbias = dhpreact.sum(0, keepdim=True)\ndbnraw = dhpreact\ndbnraw *= bngain\n"
            "dbngain = (bnraw * dhpreact).sum(0, keepdim=True)\n"
            "dhprebn = bnvar_inv / n * (n * dbnraw - dbnraw.sum(0) - n / (n - 1) * bnraw * (dbnraw * bnraw).sum(0))"
        ),
        "answer_training_step": training_step("p += -lr * 0.999 * grad"),
    },
    [],
    {"test_dbngain": 0, "test_training": 1},
    {"test_dbngain": "your dhpreact: it is the very tensor of dbnraw (`dbnraw = dhpreact` makes no copy)"},
)
MISTAKES["m_fused_formula_given_dh"] = (  # the tanh step skipped inside the fused BatchNorm formula
    {
        "answer_backward_pass": backward(
            batchnorm=BACKWARD["batchnorm"].split("\ndhprebn")[0] + "\ndhprebn = bngain * bnvar_inv / n * (n * dh - "
            "dh.sum(0) - n / (n - 1) * bnraw * (dh * bnraw).sum(0))"
        )
    },
    [],
    {"test_dC": 0, "test_dW1": 0},
    {"test_dW1": "the first wrong gradient on the way back from the loss is your dhprebn"},
)
ALTERNATIVES["alt_packed_e"] = {  # a detached cache, a detached softmax, dh changed in place once read, float64 steps
    "answer_backward_pass": backward(
        dlogits=BACKWARD["dlogits"].replace("F.softmax(logits, 1)", "F.softmax(logits.detach(), dim=1)"),
        tanh="dhpreact = dh\ndhpreact *= 1.0 - h**2",
    ),
    "answer_training_step": "cache = {k: v.detach() for k, v in cache.items()}\n"
    + training_step("p += -lr * grad.double()"),
}
# a line that raises on the check batch, and n written in: the batch of 50 still checks the gradients the raising
# line does not feed (once the raise stopped every check, then these kept their points unchecked at 50)
MISTAKES["m_dembcat_not_transposed_and_n_written_in"] = (
    {
        "answer_backward_pass": "n = 32\n"
        + backward(layer1=BACKWARD["layer1"].replace("dhprebn @ W1.T", "dhprebn @ W1"))
    },
    [],
    {g: 0 for g in GRADIENTS},
    {"test_dW1": "dW1 is right on the check batch of 32 examples, but not on a batch of 50"},
)
# the stub's raise left above the student's lines: no call ever gets past it, so the lines run again one by one must
# not judge the lines below it either (they would have earned every gradient's points)
MISTAKES["m_stub_raise_left_above_the_answer"] = (
    {"answer_backward_pass": "raise NotImplementedError()\n" + backward()},
    [],
    {g: 0 for g in GRADIENTS},
    {"test_dC": "not answered yet: backward_pass still raises NotImplementedError"},
)
# A fourth round of published forms (December 2026): transposes written out, dC by enumerate over the rows of Xb,
# the training step under set_grad_enabled(False), its lr renamed; index_add_ over Xb.flatten() with n_embd as a number
ALTERNATIVES["alt_published_4"] = {
    "answer_backward_pass": backward(
        layer2="dh = (W2 @ dlogits.t()).t()\ndW2 = (dlogits.t() @ h).t()\ndb2 = dlogits.sum(0)",
        layer1="dembcat = dhprebn @ W1.T\ndW1 = (dhprebn.t() @ embcat).t()\ndb1 = dhprebn.sum(0)",
        embedding="demb = dembcat.view(-1, block_size, n_embd)\ndC = torch.zeros_like(C)\n"
        "for j, word in enumerate(Xb):\n    for k, ix in enumerate(word):\n        dC[ix] += demb[j][k]",
    ),
    "answer_training_step": "with torch.set_grad_enabled(False):\n    grads = backward_pass(Xb, Yb, cache)\n"
    "    initial_lr = lr\n    for param, grad in zip(parameters, grads):\n        param.data += -initial_lr * grad",
}
ALTERNATIVES["alt_db1_zero"]["answer_backward_pass"] = backward(
    layer1="dembcat = dhprebn @ W1.T\ndW1 = embcat.T @ dhprebn\ndb1 = torch.zeros_like(b1)",
    embedding="demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\n"
    "dC.index_add_(0, Xb.flatten(), demb.view(-1, 10))",
)
# A fifth round (December 2026), in the same student: dlogits's targets lowered in a loop over the rows, dh left inline
# in dhpreact, the fused BatchNorm as three named terms under one coefficient
_PUBLISHED_4 = ALTERNATIVES["alt_published_4"]
_PUBLISHED_4["answer_backward_pass"] = (
    _PUBLISHED_4["answer_backward_pass"]
    .replace(
        BACKWARD["dlogits"],
        "dlogits = 1.0 / n * F.softmax(logits, 1)\nfor j in range(n):\n    dlogits[j][Yb[j]] -= 1.0 / n",
    )
    .replace(BACKWARD["tanh"], "dhpreact = (1.0 - h**2) * (dlogits @ W2.T)")
    .replace(
        BACKWARD["batchnorm"],
        "dbngain = (dhpreact * bnraw).sum(0, keepdim=True)\ndbnbias = (dhpreact * 1.0).sum(dim=0, keepdim=True)\n"
        "coefficient = bngain / n * bnvar_inv\nfirst = -dhpreact.sum(0, keepdim=True)\n"
        "second = -n / (n - 1) * bnraw * (bnraw * dhpreact).sum(0, keepdim=True)\nthird = n * dhpreact\n"
        "dhprebn = coefficient * (first + second + third)",
    )
)
# the rows of C added into ones (published in Exercise 1): dC alone loses, and its message names the offset
MISTAKES["m_dC_started_from_ones"] = (
    {
        "answer_backward_pass": backward(
            embedding="demb = dembcat.view(emb.shape)\ndC = torch.ones_like(C)\n"
            "dC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))"
        )
    },
    [],
    {"test_dC": 0},
    {"test_dC": "dC is off by the same amount, 1, in every entry: did it start from ones"},
)
MISTAKES["m_dC_loop_assigns"] = (
    {
        "answer_backward_pass": backward(
            embedding="demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\nfor k in range(Xb.shape[0]):\n"
            "    for j in range(Xb.shape[1]):\n        dC[Xb[k, j]] = demb[k, j]"
        )
    },
    [],
    {"test_dC": 0},
    {"test_dC": "`dC[ix] = demb[k, j]` in a loop"},
)
# A judges' round (December 2026). Momentum in the update (a velocity kept between steps: the gradients of earlier
# steps added in) leaves autograd's run but reaches the goal; bnvar stored as what forward calls bnvar_inv (its words
# were the generic "not the variance", now they name it). And correct forms packed: the parameters unpacked from the
# list inside backward_pass, the update under inference_mode, the calibration read off forward's own cache over Xtr.
MISTAKES["m_momentum_calibration_inverse_std"] = (
    {
        "answer_training_step": _STEP + "for i, (p, grad) in enumerate(zip(parameters, grads)):\n"
        "    velocity[i] = 0.9 * velocity[i] + grad\n    p -= lr * velocity[i]",
        "answer_calibration": _CAL.replace(
            "hprebn_all.var(0, keepdim=True)", "(hprebn_all.var(0, keepdim=True) + 1e-5) ** -0.5"
        ),
    },
    [("answer_training_step", "velocity = [torch.zeros_like(p) for p in parameters]")],
    {"test_training": 1, "test_calibration": 1},
    {
        "test_training": "with the right gradients, your training_step leaves autograd's run at step 2 of 300",
        "test_calibration": "bnvar is (variance + 1e-5) ** -0.5, what forward calls bnvar_inv",
    },
)
ALTERNATIVES["alt_packed_f"] = {
    "answer_backward_pass": "C, W1, b1, W2, b2, bngain, bnbias = parameters\n" + backward(),
    "answer_training_step": "with torch.inference_mode():\n    grads = backward_pass(Xb, Yb, cache)\n"
    "    for p, grad in zip(parameters, grads):\n        p -= lr * grad",
    "answer_calibration": "_, cache_all = forward(Xtr, Ytr)\nbnmean = cache_all['bnmeani']\nbnvar = cache_all['bnvar']",
}
# The calibration right but left in float64: it keeps its points, and its words say that the notebook's evaluation and
# sampling stop on it (they mix it with the float32 parameters), and how to mend it. Packed with a training_step that
# works out its learning rate from the training loop's globals (i, max_steps), right in the notebook's own loop but not
# in the grader's: its words said only "check that training_step updates every parameter ... by -lr times"
MISTAKES["m_lr_from_the_loops_globals_calibration_float64"] = (
    {
        "answer_training_step": "step_lr = 0.1 if i < max_steps // 2 else 0.01\n"
        + training_step("p += -step_lr * grad"),
        "answer_calibration": "hprebn_all = C[Xtr].view(Xtr.shape[0], -1).double() @ W1.double() + b1.double()\n"
        "bnmean = hprebn_all.mean(0, keepdim=True)\nbnvar = hprebn_all.var(0, keepdim=True)",
    },
    [],
    {"test_training": 0},
    {
        "test_training": "at the first step every parameter moved by -0.01 times its gradient, where the loop's lr "
        "asks for -0.1 times: training_step must step by the lr it is given",
        "test_calibration": "but bnmean is float64: the notebook's evaluation and sampling mix it",
    },
)
# A sixth round (December 2026, h-mist2): slips in backward_pass whose words were "N of M entries wrong. Re-derive the
# local derivative" (or a bare "has shape ..., but"); each costs the cells of the gradients computed from it, as before,
# and now names the slip. student -> (changes, extra cells, {cell: points kept}, {cell: words})
_BN_CELLS = {"test_dC": 0, "test_dW1": 0}
_TANH_CELLS = {g: 0 for g in ("test_dC", "test_dW1", "test_dbngain", "test_dbnbias")}
MISTAKES.update(
    {
        "m_tanh_square_of_the_difference": (
            {"answer_backward_pass": backward(tanh="dhpreact = (1.0 - h)**2 * dh")},
            [],
            _TANH_CELLS,
            {"test_dbngain": "your dhpreact: dhpreact squares (1 - h)"},
        ),
        "m_tanh_of_the_cached_preactivation": (
            {"answer_backward_pass": backward(tanh="dhpreact = (1.0 - cache['hpreact'] ** 2) * dh")},
            [],
            _TANH_CELLS,
            {"test_dW1": "dhpreact reads hpreact where the local derivative of `h = torch.tanh(hpreact)` needs h"},
        ),
        "m_batchnorm_bessel_without_brackets": (  # the bracket's - 1 makes db1 non-zero: its cell goes too
            {"answer_backward_pass": backward(batchnorm=_swap("batchnorm", "n / (n - 1)", "n / n - 1"))},
            [],
            {**_BN_CELLS, "test_db1": 0},
            {"test_dW1": "`n / n - 1 * x` is (n / n) - (1 * x)"},
        ),
        "m_batchnorm_direct_path_without_n": (
            {"answer_backward_pass": backward(batchnorm=_swap("batchnorm", "(n * dhpreact -", "(dhpreact -"))},
            [],
            {**_BN_CELLS, "test_db1": 0},
            {"test_dC": "dhprebn is missing the n of the direct path"},
        ),
        "m_batchnorm_variance_for_its_inverse": (
            {
                "answer_backward_pass": backward(
                    batchnorm=_swap("batchnorm", "bngain * bnvar_inv / n", "bngain * cache['bnvar'] / n")
                )
            },
            [],
            _BN_CELLS,
            {"test_dW1": "dhprebn reads bnvar where"},
        ),
        "m_db1_summed_over_rows": (
            {"answer_backward_pass": backward(layer1=_swap("layer1", "db1 = dhprebn.sum(0)", "db1 = dhprebn.sum(1)"))},
            [],
            {"test_db1": 0},
            {"test_db1": "it looks summed over dimension 1 (each example's row) instead of dimension 0, the batch"},
        ),
        "m_dC_loop_one_short": (
            {
                "answer_backward_pass": backward(
                    embedding="demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\nfor k in range(n - 1):\n"
                    "    for j in range(block_size):\n        dC[Xb[k, j]] += demb[k, j]"
                )
            },
            [],
            {"test_dC": 0},
            {"test_dC": "dC leaves out the last example of the batch: a loop over range(n - 1)"},
        ),
    }
)
# training_step that updates the notebook's other list, initial_parameters (the copy restart_training puts back): the
# grader's run then starts from values the notebook's own run moved, and its words were "the very first loss differs:
# training_step must return the loss of forward(Xb, Yb) before the update", about a loss that was right
MISTAKES["m_update_initial_parameters"] = (
    {"answer_training_step": _STEP + "for p, grad in zip(initial_parameters, grads):\n    p += -lr * grad"},
    [],
    {"test_training": 0},
    {"test_training": "it updates another list (initial_parameters is the copy of the starting values"},
)
# BatchNorm's epsilon left out of a bnvar_inv of one's own, or added outside its power: at the check batch's variances,
# of about 1, that changes nothing the tolerance sees, and both kept every point. backward_pass is also called with
# neuron 0's batch variance made the epsilon (network.thin_neuron), where dhprebn's column changes by a third: the
# gradients computed from dhprebn that show it lose their points, named so
_EPSILON_WORDS = "not when a neuron's batch variance is as small as BatchNorm's epsilon (1e-5)"
for _student, _line in (
    ("m_epsilon_left_out", "bnvar_inv = cache['bnvar'] ** -0.5\n"),
    ("m_epsilon_outside_the_power", "bnvar_inv = cache['bnvar'] ** -0.5 + 1e-5\n"),
):
    MISTAKES[_student] = (
        {"answer_backward_pass": backward(batchnorm=_line + BACKWARD["batchnorm"])},
        [],
        {"test_dC": 0, "test_dW1": 0},
        {"test_dC": _EPSILON_WORDS, "test_dW1": _EPSILON_WORDS},
    )
ALTERNATIVES["alt_epsilon_recomputed"] = {  # bnvar_inv of one's own, right: the epsilon inside the root
    "answer_backward_pass": backward(
        batchnorm="bnvar_inv = 1 / torch.sqrt(cache['bnvar'] + 1e-5)\n" + BACKWARD["batchnorm"]
    )
}
# The lecture's "old" update kept after handing each parameter its own gradient (h-alts2's round): p.grad = grad, then
# p.data += -lr * p.grad reads what was just stored, as torch.optim's step does; it lost the 4 points of the training
# run as autograd's before
ALTERNATIVES["alt_grad_stored_then_read"] = {
    "answer_training_step": training_step("p.grad = grad\n    p.data += -lr * p.grad"),
}
# h-alts2's round (December 2026): more forms, each keeping every point. dlogits times (1 / n) or over batch_size, the
# lecture's double loop for dC, a one-hot viewed after it is made, Exercise 3's fused dhprebn with (n - 1) taken out of
# its bracket or with torch.rsqrt of the variance recomputed, db2 by keepdim and squeeze; the update under no_grad with
# the generator's name g for a gradient, on one line after the colon, by index, by add_ of a detached gradient, a
# progress print that reads the training loop's i; the calibration by torch.var(correction=1) or std ** 2, under the
# lecture's names emb and embcat
_ONE_LINE = "grads = backward_pass(Xb, Yb, cache)\nfor p, g in zip(parameters, grads): p.data += -lr * g"
ALTERNATIVES.update(
    {
        "alt_h_alts2_a": {
            "answer_backward_pass": backward(
                dlogits=BACKWARD["dlogits"].replace("dlogits /= n", "dlogits = dlogits * (1 / n)"),
                embedding="demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\nfor k in range(Xb.shape[0]):\n"
                "    for j in range(Xb.shape[1]):\n        dC[Xb[k, j]] += demb[k, j]",
            ),
            "answer_training_step": "grads = backward_pass(Xb, Yb, cache)\nwith torch.no_grad():\n"
            "    for p, g in zip(parameters, grads):\n        p -= lr * g",
        },
        "alt_h_alts2_b": {
            "answer_backward_pass": backward(
                batchnorm="dbngain = (bnraw * dhpreact).sum(0, keepdims=True)\n"
                "dbnbias = dhpreact.sum(0, keepdims=True)\n"
                "dhprebn = (bngain * bnvar_inv / (n - 1)) * ((n - 1) * dhpreact "
                "- (n - 1) / n * dhpreact.sum(0, keepdim=True) - bnraw * (dhpreact * bnraw).sum(0, keepdim=True))",
                layer2="dh = dlogits @ W2.T\ndW2 = h.T @ dlogits\ndb2 = dlogits.sum(0, keepdim=True).squeeze(0)",
            ),
            "answer_training_step": _ONE_LINE,
        },
        "alt_h_alts2_c": {
            "answer_backward_pass": backward(
                dlogits="dlogits = (F.softmax(logits, dim=1) - F.one_hot(Yb, num_classes=vocab_size)) / batch_size",
                embedding="demb = dembcat.view(emb.shape)\n"
                "dC = F.one_hot(Xb, vocab_size).float().view(-1, vocab_size).T @ demb.view(-1, n_embd)",
            ),
            "answer_training_step": "grads = backward_pass(Xb, Yb, cache)\n"
            "for i in range(len(parameters)):\n    parameters[i].data -= lr * grads[i]",
        },
        "alt_h_alts2_d": {
            "answer_backward_pass": "# 前向缓存\nhprebn = cache['hprebn']\n"
            + backward(
                batchnorm="dbngain = (bnraw * dhpreact).sum(0, keepdim=True)\n"
                "dbnbias = dhpreact.sum(0, keepdim=True)\n"
                "dhprebn = bngain * torch.rsqrt(hprebn.var(0, keepdim=True, unbiased=True) + 1e-5) / n "
                "* (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))",
            )
            + "\nassert dC.shape == C.shape",
            "answer_training_step": "grads = backward_pass(Xb, Yb, cache)\nwith torch.no_grad():\n"
            "    for param, grad in zip(parameters, grads):\n        param.add_(-lr * grad.detach())",
        },
        "alt_h_alts2_e": {
            "answer_training_step": training_step("p += -lr * grad")
            + "\nif i % 10000 == 0:\n    print(f'{i:7d}/{max_steps:7d}: {loss.item():.4f}')",
            "answer_calibration": "emb = C[Xtr]\nembcat = emb.view(emb.shape[0], -1)\nhpreact_all = embcat @ W1 + b1\n"
            "bnmean = hpreact_all.mean(0, keepdims=True)\n"
            "bnvar = torch.var(hpreact_all, dim=0, keepdim=True, correction=1)",
        },
        "alt_h_alts2_f": {
            "answer_backward_pass": backward(
                embedding="demb = dembcat.view(emb.shape)\ndC = torch.zeros((vocab_size, n_embd))\n"
                "dC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))"
            ),
            "answer_training_step": "grads = backward_pass(Xb, Yb, {k: v.detach() for k, v in cache.items()})\n"
            "grads = [g.clone() for g in grads]\nfor p, grad in zip(parameters, grads):\n    p.data.add_(-lr * grad)",
            "answer_calibration": "hprebn_all = C[Xtr].view(-1, n_embd * block_size) @ W1 + b1\n"
            "bnmean = hprebn_all.mean(0, keepdim=True)\nbnvar = hprebn_all.std(0, keepdim=True) ** 2",
        },
    }
)
# ... and Exercise 1's atomic cross-entropy inside backward_pass, its forward tensors recomputed from logits; the
# lecture's calibration pasted whole, its own `with torch.no_grad():` inside the cell's, hpreact rebound
_ATOMIC_CE = (
    "logit_maxes = logits.max(1, keepdim=True).values\nnorm_logits = logits - logit_maxes\ncounts = norm_logits.exp()\n"
    "counts_sum = counts.sum(1, keepdims=True)\ncounts_sum_inv = counts_sum**-1\nprobs = counts * counts_sum_inv\n"
    "logprobs = probs.log()\n"
    "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0 / n\ndprobs = (1.0 / probs) * dlogprobs\n"
    "dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)\ndcounts = counts_sum_inv * dprobs\n"
    "dcounts_sum = (-counts_sum**-2) * dcounts_sum_inv\ndcounts += torch.ones_like(counts) * dcounts_sum\n"
    "dnorm_logits = counts * dcounts\ndlogits = dnorm_logits.clone()\n"
    "dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)\n"
    "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes"
)
ALTERNATIVES["alt_h_alts2_j"] = {
    "answer_backward_pass": backward(dlogits=_ATOMIC_CE),
    "answer_calibration": "with torch.no_grad():\n    # pass the training set through\n    emb = C[Xtr]\n"
    "    embcat = emb.view(emb.shape[0], -1)\n    hpreact = embcat @ W1 + b1\n"
    "    # measure the mean/std over the entire training set\n    bnmean = hpreact.mean(0, keepdim=True)\n"
    "    bnvar = hpreact.var(0, keepdim=True, unbiased=True)",
}
# ... and the lecture's update loop of its own after the loop that handed each parameter its gradient (makemore's
# `for p in parameters: p.data += -lr * p.grad`), which lost the 4 points as autograd's too
ALTERNATIVES["alt_grads_stored_then_the_lectures_update_loop"] = {
    "answer_training_step": "grads = backward_pass(Xb, Yb, cache)\nfor p, grad in zip(parameters, grads):\n"
    "    p.grad = grad\nfor p in parameters:\n    p.data += -lr * p.grad",
}

# A seventh round (December 2026, h-mist3): slips whose words were generic, each costing the cells it feeds alone
MISTAKES["m_dC_first_context_position_only"] = (  # read "N of M entries wrong" (diagnosis/slips.one_position)
    {
        "answer_backward_pass": backward(
            embedding="demb = dembcat.view(emb.shape)\ndC = torch.zeros_like(C)\ndC.index_add_(0, Xb[:, 0], demb[:, 0])"
        )
    },
    [],
    {"test_dC": 0},
    {"test_dC": "dC takes only demb[:, 0], position 0 of its dimension 1"},
)
# training_step's update with one thing changed (training/departures.py): the gradient squared, the parameter set to the
# step, the gradients of the check batch, or of one batch at every step. Each read "check that training_step updates
# every parameter once per step, by -lr times its own gradient" or "the loss goes up: ... (a + where the - belongs ...)"
MISTAKES.update(
    {
        "m_update_by_the_gradient_squared": (
            {"answer_training_step": training_step("p -= lr * grad * grad")},
            [],
            {"test_training": 0},
            {"test_training": "at the first step every parameter moved by -lr times its gradient squared"},
        ),
        "m_update_sets_the_parameter_to_the_step": (
            {"answer_training_step": training_step("p.data = -lr * grad")},
            [],
            {"test_training": 0},
            {"test_training": "at the first step every parameter was set to -lr times its gradient, not moved by it"},
        ),
        "m_update_by_the_check_batchs_gradients": (
            {"answer_training_step": training_step("p += -lr * grad").replace("(Xb, Yb, cache)", "(*check_batch)")},
            [],
            {"test_training": 0},
            {"test_training": "moved by -lr times its gradient on the check batch (check_batch), not on the batch"},
        ),
        "m_update_forgets_the_last_parameter": (  # the goal is reached: its point kept
            {"answer_training_step": _STEP + "for p, grad in zip(parameters[:-1], grads[:-1]):\n    p += -lr * grad"},
            [],
            {"test_training": 1},
            {"test_training": "training_step never changed bnbias: it must move every parameter"},
        ),
        "m_update_by_gradients_computed_once": (  # another batch's, computed in a cell of their own
            {"answer_training_step": "for p, grad in zip(parameters, grads):\n    p += -lr * grad"},
            [
                (
                    "answer_backward_pass",
                    "_, c = forward(Xtr[:50], Ytr[:50])\ngrads = backward_pass(Xtr[:50], Ytr[:50], c)",
                )
            ],
            {"test_training": 0},
            {"test_training": "every parameter moved the same way at every step of the run"},
        ),
    }
)

# A membership test of a name written out in globals() asks whether it is there and reads nothing: it read as autograd
# ('grads' has the word grad in it; globals a namespace), and training_step lost its 4 points (h-mist4). A name made
# at run time in globals() still marks it (tests/fast/test_taint_around_names.py)
ALTERNATIVES["alt_asks_whether_grads_in_globals"] = {
    "answer_training_step": "if 'grads' not in globals():\n    print('first step')\n" + training_step("p += -lr * grad")
}
ALTERNATIVES["alt_counts_its_steps_in_globals"] = {
    "answer_training_step": "global steps\nif 'steps' not in globals():\n    steps = 0\nsteps += 1\n"
    + training_step("p += -lr * grad")
}
MISTAKES["m_grads_kept_from_the_first_step"] = (  # stale: computed at the first step only, then stepped by every time
    {
        "answer_training_step": "global grads\nif 'grads' not in globals():\n    grads = backward_pass(Xb, Yb, cache)\n"
        "for p, grad in zip(parameters, grads):\n    p += -lr * grad"
    },
    [],
    {"test_training": 0},
    {"test_training": "the gradients training_step steps by do not change with the batch (computed once"},
)
MISTAKES["m_update_by_gradients_added_up_over_steps"] = (  # never zeroed: each step moves by the sum so far
    {
        "answer_training_step": "global acc\nif 'acc' not in globals():\n    acc = [torch.zeros_like(p) for p in "
        "parameters]\ngrads = backward_pass(Xb, Yb, cache)\nfor a, p, grad in zip(acc, parameters, grads):\n"
        "    a += grad\n    p += -lr * a"
    },
    [],
    {"test_training": 0},
    {"test_training": "gradients added up over earlier steps, make it climb"},
)
MISTAKES["m_dhprebn_bnraw_left_out_in_front"] = (  # db1 is no longer zero: it loses its point too, as dC and dW1
    {"answer_backward_pass": backward(batchnorm=BACKWARD["batchnorm"].replace("(n - 1) * bnraw * (", "(n - 1) * ("))},
    [],
    {"test_dC": 0, "test_dW1": 0, "test_db1": 0},
    {"test_dW1": "dhprebn is missing bnraw in one of the two places the path through the variance has it"},
)
MISTAKES["m_dhpreact_dh_times_one_unbracketed"] = (
    {"answer_backward_pass": backward(tanh="dhpreact = dh * 1 - h**2")},
    [],
    {g: 0 for g in ("test_dC", "test_dW1", "test_dbngain", "test_dbnbias")},
    {"test_dbngain": "`dh * 1 - h**2` is (dh * 1) - h**2"},
)
MISTAKES["m_dlogits_divided_by_vocab_size"] = (
    {"answer_backward_pass": backward(dlogits=BACKWARD["dlogits"].replace("/= n", "/= vocab_size"))},
    [],
    {g: 0 for g in ("test_dC", "test_dW1", "test_dW2", "test_db2", "test_dbnbias", "test_dbngain")},
    {"test_dW2": "is it divided by vocab_size = 27 where the batch size n = 32 belongs?"},
)


# h-mist5's round (December 2026). log_softmax for softmax in dlogits: the gradients lose their points, and the run
# diverges to parameters that are NaN; the calibration, right, lost its 2 points too (its statistics, NaN as the
# grader's, failed a comparison whose scale was NaN): it keeps them now, and says why. bnvar_inv squared in the fused
# dhprebn read "N of M entries wrong": a forward tensor's factor too many is named (diagnosis/left_out)
MISTAKES["m_dlogits_log_softmax_run_diverges"] = (
    {"answer_backward_pass": backward(dlogits=BACKWARD["dlogits"].replace("F.softmax", "F.log_softmax"))},
    [],
    {g: 0 for g in GRADIENTS if g != "test_db1"},
    {
        "test_dW2": "dlogits uses log-probabilities where the derivative gives probabilities",
        "test_calibration": "so the calibration cannot be checked on them and keeps its point",
    },
)
MISTAKES["m_dhprebn_bnvar_inv_squared"] = (
    {
        "answer_backward_pass": backward(
            batchnorm=_swap("batchnorm", "bngain * bnvar_inv / n", "bngain * bnvar_inv**2 / n")
        )
    },
    [],
    _BN_CELLS,
    {"test_dW1": "dhprebn has bnvar_inv**2 where the local derivative"},
)

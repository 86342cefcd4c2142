"""Exercise 1's known students: mistakes, alternative correct formulas, cheats, layouts, a dead kernel.

One table of cases, graded two ways: every case in process (tests/fast/test_ex1_in_process.py), and a few
representative ones through the real nbgrader pipeline (tests/slow/test_ex1_pipeline.py).
"""

import pickle

from autograder.authoring.submissions import grade_id, solutions, solved
from autograder.common.naming import SETUP_PREFIX
from autograder.engine.backward_rules import STEPS
from autograder.engine.reference import run_setup
from support.read_grad import grad_through_sgd

NB = "ex1_atomic_backward"

# student -> (answer cells changed, the one step that must lose its points, words its message must contain)
# `+` for `*`: every entry wrong, most of them by far less than the tolerance of the step (neuron 0's entry dwarfs them)
PLUS_FOR_TIMES = "dbnvar = (-0.5 + (bnvar + 1e-5) ** -1.5) * dbnvar_inv"

MISTAKES = {
    # a gradient left zeros: every step below, written right, keeps its points by its rule on random upstream gradients
    # (a gradient of zeros is pinned at random, but for dlogit_maxes and db1, which are zero), as before by its value
    "m_dprobs_left_zeros": ({"answer_dprobs": "dprobs = torch.zeros_like(probs)"}, "probs", "all zeros"),
    "m_logprobs_no_n": (
        {"answer_dlogprobs": "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0"},
        "logprobs",
        "32 times too large",
    ),
    "m_probs_sign": ({"answer_dprobs": "dprobs = -(1.0 / probs) * dlogprobs"}, "probs", "wrong sign"),
    "m_counts_sum_inv_axis": (
        {"answer_dcounts_sum_inv": "dcounts_sum_inv = (counts * dprobs).sum(0, keepdim=True)"},
        "counts_sum_inv",
        "summed over dimension 0 instead of dimension 1",
    ),
    "m_counts_sum_sign": (
        {"answer_dcounts_sum": "dcounts_sum = counts_sum**-2 * dcounts_sum_inv"},
        "counts_sum",
        "wrong sign",
    ),
    # a slip whose tensor breaks a later cell (it raises on the wrong shape or dtype): that cell keeps its points, by
    # its rule on upstream gradients of the right shape (the grading batch has no "z" among its labels: 26 columns)
    "m_counts_sum_inv_keepdim": (
        {"answer_dcounts_sum_inv": "dcounts_sum_inv = (counts * dprobs).sum(1)"},
        "counts_sum_inv",
        "dimension 1 of size 1 was dropped",
    ),
    "m_counts_sum_squeezed": (
        {"answer_dcounts_sum": "dcounts_sum = (-counts_sum**-2 * dcounts_sum_inv).squeeze()"},
        "counts_sum",
        "dimension 1 of size 1 was dropped",
    ),
    "m_one_hot_no_classes": ({"answer_dlogprobs": "dlogprobs = -F.one_hot(Yb).float() / n"}, "logprobs", "shape"),
    # F.one_hot(Xb) without num_classes (published beside a one-hot dC): (26, 10) on every grading batch, whose examples
    # hold no last character (setup_batch); right on 5 of 12 grading seeds before, those whose contexts held one
    "m_dC_one_hot_no_classes": (
        {"answer_dC": "dC = F.one_hot(Xb.view(-1)).float().T @ demb.view(-1, n_embd)"},
        "C",
        "dC has shape (26, 10), but C has shape (27, 10)",
    ),
    "m_logprobs_float64": (
        {"answer_dlogprobs": "dlogprobs = -F.one_hot(Yb, vocab_size).double() / n"},
        "logprobs",
        "dtype float64",
    ),
    "m_counts_branch": (
        {"answer_dcounts": "dcounts = counts_sum_inv * dprobs"},
        "counts",
        "path through counts_sum is missing",
    ),
    "m_counts_added_twice": (  # a += line run twice, as when it sits in a cell of its own that ran twice
        {
            "answer_dcounts": "dcounts = counts_sum_inv * dprobs"
            + "\ndcounts += torch.ones_like(counts) * dcounts_sum" * 2
        },
        "counts",
        "the path through counts_sum is added twice: did a cell run twice?",
    ),
    # published: the max's path added as the argmax's index (not its one-hot) times dlogit_maxes, broadcast over every
    # column; about zero on the batch (dlogit_maxes is), so its rule probe finds it
    # published: bndiff for the 1/(n-1) of the variance's sum
    "m_bndiff2_times_bndiff": ({"answer_dbndiff2": "dbndiff2 = bndiff * dbnvar"}, "bndiff2", "entries wrong"),
    "m_logits_max_path_index": (
        {"answer_dlogits": "dlogits = dnorm_logits.clone()\ndlogits += logits.argmax(1, keepdim=True) * dlogit_maxes"},
        "logits",
        "not its backward rule",
    ),
    "m_norm_logits_passthrough": (
        {"answer_dnorm_logits": "dnorm_logits = dcounts"},
        "norm_logits",
        "passed through unchanged",
    ),
    "m_logit_maxes_keepdim": (
        {"answer_dlogit_maxes": "dlogit_maxes = -dnorm_logits.sum(1)"},
        "logit_maxes",
        "keepdim=True",
    ),
    "m_W2_transposed": ({"answer_dW2": "dW2 = dlogits.T @ h"}, "W2", "transposed"),
    "m_b2_no_sum": ({"answer_db2": "db2 = dlogits"}, "b2", "summed over it"),
    "m_hpreact_passthrough": ({"answer_dhpreact": "dhpreact = dh"}, "hpreact", "passed through unchanged"),
    "m_hpreact_wrong_derivative": (
        {"answer_dhpreact": "dhpreact = (1.0 - hpreact**2) * dh"},
        "hpreact",
        "local derivative of `h = torch.tanh(hpreact)`",
    ),
    "m_bngain_no_sum": ({"answer_dbngain": "dbngain = bnraw * dhpreact"}, "bngain", "must be summed"),
    "m_bnbias_keepdim": ({"answer_dbnbias": "dbnbias = dhpreact.sum(0)"}, "bnbias", "keepdim=True"),
    "m_bnraw_no_gain": ({"answer_dbnraw": "dbnraw = dhpreact"}, "bnraw", "passed through unchanged"),
    "m_bnvar_inv_keepdim": (
        {"answer_dbnvar_inv": "dbnvar_inv = (bndiff * dbnraw).sum(0)"},
        "bnvar_inv",
        "keepdim=True",
    ),
    "m_bnvar_power": (
        {"answer_dbnvar": "dbnvar = -0.5 * (bnvar + 1e-5) ** -0.5 * dbnvar_inv"},
        "bnvar",
        "dbnvar keeps the exponent of the forward pass: the power rule takes x**k to k * x**(k-1)",
    ),
    # a cell stopped before its answer: what stopped it, not "not answered yet"
    "m_dprobs_cell_raises": (
        {"answer_dprobs": "dprobs = (1.0 / probs) * dlogprobs.sum(2)"},
        "probs",
        "stopped with IndexError",
    ),
    # torch's own NotImplementedError (an operator a sparse tensor lacks) is no stub of the blank notebook's
    "m_dprobs_sparse_view": (
        {"answer_dprobs": "dprobs = ((1.0 / probs) * dlogprobs).to_sparse().view(-1, probs.shape[1])"},
        "probs",
        "stopped with NotImplementedError: Could not run 'aten::view'",
    ),
    # the grader interrupts a cell at its time limit (a KeyboardInterrupt in it): no line to fix is named
    "m_dprobs_cell_interrupted": (
        {"answer_dprobs": "raise KeyboardInterrupt\ndprobs = (1.0 / probs) * dlogprobs"},
        "probs",
        "dprobs's cell was interrupted before it assigned dprobs: it ran over the time limit of a cell",
    ),
    # an error without a message is named by its type alone ("ValueError before", not "ValueError:  before")
    "m_dprobs_bare_raise": (
        {"answer_dprobs": "raise ValueError\ndprobs = (1.0 / probs) * dlogprobs"},
        "probs",
        "stopped with ValueError before it assigned dprobs",
    ),
    "m_dprobs_stub_left": (
        {"answer_dprobs": "raise NotImplementedError()\ndprobs = (1.0 / probs) * dlogprobs"},
        "probs",
        "stopped at `raise NotImplementedError()`",
    ),
    "m_bnvar_plus": ({"answer_dbnvar": PLUS_FOR_TIMES}, "bnvar", "entries wrong"),
    # neuron 0's entry dwarfs the other 63 (its variance is the epsilon): the sign is named from their ratios too, not
    # "1 of 64 entries wrong"
    "m_bnvar_sign": ({"answer_dbnvar": "dbnvar = 0.5 * (bnvar + 1e-5) ** -1.5 * dbnvar_inv"}, "bnvar", "wrong sign"),
    "m_bndiff2_biased": (
        {"answer_dbndiff2": "dbndiff2 = 1.0 / n * torch.ones_like(bndiff2) * dbnvar"},
        "bndiff2",
        "Bessel",
    ),
    "m_bndiff_branch": (
        {"answer_dbndiff": "dbndiff = bnvar_inv * dbnraw"},
        "bndiff",
        "path through bndiff2 is missing",
    ),
    "m_bnmeani_sign": ({"answer_dbnmeani": "dbnmeani = dbndiff.sum(0, keepdim=True)"}, "bnmeani", "wrong sign"),
    "m_bnmeani_lecture": (  # the lecture's own line: (64,) for a (1, 64) tensor
        {"answer_dbnmeani": "dbnmeani = (-dbndiff).sum(0)"},
        "bnmeani",
        "dimension 0 of size 1 was dropped",
    ),
    "m_b2_keepdim_added": (
        {"answer_db2": "db2 = dlogits.sum(0, keepdim=True)"},
        "b2",
        "dimension 0 of size 1 is one too many",
    ),
    "m_hprebn_branch": ({"answer_dhprebn": "dhprebn = dbndiff.clone()"}, "hprebn", "path through bnmeani is missing"),
    "m_embcat_extra_n": ({"answer_dembcat": "dembcat = dhprebn @ W1.T / n"}, "embcat", "32 times too small"),
    "m_W1_transposed": ({"answer_dW1": "dW1 = dhprebn.T @ embcat"}, "W1", "transposed"),
    "m_emb_wrong_view": ({"answer_demb": "demb = dembcat.view(n, n_embd, block_size)"}, "emb", "wrong order"),
    "m_C_no_accumulation": ({"answer_dC": "dC = torch.zeros_like(C)\ndC[Xb] += demb"}, "C", "keeps only one of its"),
    "m_C_per_row": (  # each row at once: a character repeated within a row keeps one contribution
        {"answer_dC": "dC = torch.zeros_like(C)\nfor k in range(n):\n    dC[Xb[k]] += demb[k]"},
        "C",
        "appear several times in one row of Xb",
    ),
    "m_bnbias_float64": (
        {
            "answer_dbnbias": "dbnbias = torch.from_numpy(dhpreact.detach().numpy().astype('float64'))"
            ".sum(0, keepdim=True)"
        },
        "bnbias",
        "float64",
    ),
    "m_bngain_numpy": (
        {"answer_dbngain": "dbngain = (bnraw * dhpreact).sum(0, keepdim=True).detach().numpy()"},
        "bngain",
        "ndarray",
    ),
    # a cell nested too deep for Python's parser: it stops in the kernel; the grader's own reading of it raised
    # MemoryError before, and the class's grading stopped there (every student of the run)
    "m_dW2_cell_too_deep": ({"answer_dW2": "dW2 = h.T @ dlogits\nx = " + "-" * 100_000 + "1"}, "W2", "MemoryError"),
    "m_probs_nan": ({"answer_dprobs": "dprobs = dlogprobs / (probs - probs)"}, "probs", "NaN"),
    # einops, which Colab has and the grading kernel has not: its cell stops there, and the verdict says so (it said
    # "computed with autograd" before: a module the grader cannot read)
    "m_demb_einops": (
        {"answer_demb": "from einops import rearrange\ndemb = rearrange(dembcat, 'b (t e) -> b t e', t=block_size)"},
        "emb",
        "stopped with ModuleNotFoundError: No module named 'einops'",
    ),
}

# a gradient computed from another tensor's gradient than its own upstream one (diagnosis/chain_rule.py): it loses
# its own step alone (the steps after it are right for the student's own values), and the message names the gradient
# it read and the one it comes through, without the formula. student -> (answer cells changed, step, words), as MISTAKES
WRONG_UPSTREAM = {
    "m_W1_from_dhpreact": (
        {"answer_dW1": "dW1 = embcat.T @ dhpreact"},
        "W1",
        "what dW1 would be if dhpreact were its upstream gradient. W1 is used to make hprebn",
    ),
    "m_embcat_from_dhpreact": (
        {"answer_dembcat": "dembcat = dhpreact @ W1.T"},
        "embcat",
        "if dhpreact were its upstream gradient. embcat is used to make hprebn (`hprebn = embcat @ W1 + b1`), so its "
        "gradient comes through dhprebn",
    ),
    "m_b1_from_dhpreact": ({"answer_db1": "db1 = dhpreact.sum(0)"}, "b1", "what db1 would be if dhpreact were"),
    "m_h_from_dprobs": ({"answer_dh": "dh = dprobs @ W2.T"}, "h", "what dh would be if dprobs were"),
    "m_W2_from_dcounts": ({"answer_dW2": "dW2 = h.T @ dcounts"}, "W2", "what dW2 would be if dcounts were"),
    "m_bnraw_from_dh": ({"answer_dbnraw": "dbnraw = bngain * dh"}, "bnraw", "what dbnraw would be if dh were"),
    "m_bngain_from_dh": (
        {"answer_dbngain": "dbngain = (bnraw * dh).sum(0, keepdim=True)"},
        "bngain",
        "what dbngain would be if dh were",
    ),
    "m_norm_logits_from_dprobs": (
        {"answer_dnorm_logits": "dnorm_logits = counts * dprobs"},
        "norm_logits",
        "so its gradient comes through dcounts",
    ),
    # one path of two: the path named, and the other upstream gradient the student's own (reported) one
    "m_logits_path_from_dcounts": (
        {
            "answer_dlogits": "dlogits = dcounts.clone()\n"
            "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes"
        },
        "logits",
        "the path of dlogits through norm_logits is computed from the wrong upstream gradient: it is what that path "
        "would be if dcounts were",
    ),
    "m_bndiff_paths_swapped": (
        {"answer_dbndiff": "dbndiff = bnvar_inv * dbnraw\ndbndiff += 2 * bndiff * dbnraw"},
        "bndiff",
        "the path of dbndiff through bndiff2 is computed from the wrong upstream gradient",
    ),
}
MISTAKES.update(WRONG_UPSTREAM)

# dC asked for again with index_add_ (dC_index_add): each mistake loses that cell alone (dC keeps its points), with
# its kind. student -> (changes, "C_index_add", words), as MISTAKES; and the kinds.
ONE_HOT_DC = "F.one_hot(Xb.view(-1), vocab_size).float().T @ demb.view(-1, n_embd)"
INDEX_ADD_MISTAKES = {
    "m_index_add_loop": (
        {
            "answer_dC_index_add": "dC_index_add = torch.zeros_like(C)\nfor k in range(Xb.shape[0]):\n"
            "    for j in range(Xb.shape[1]):\n        dC_index_add[Xb[k, j]] += demb[k, j]"
        },
        "C_index_add",
        "dC_index_add does not call index_add_ (or index_add)",
    ),
    "m_index_add_one_hot": (
        {"answer_dC_index_add": f"dC_index_add = {ONE_HOT_DC}"},
        "C_index_add",
        "dC_index_add does not call index_add_ (or index_add)",
    ),
    "m_index_add_copy": (  # index_copy_ keeps one occurrence of a repeated index
        {
            "answer_dC_index_add": "dC_index_add = torch.zeros_like(C).index_copy_(0, Xb.view(-1), "
            "demb.view(-1, n_embd))"
        },
        "C_index_add",
        "keeps only one of its contributions",
    ),
    "m_index_add_into_dC": (  # adds into dC itself: twice dC, and dC changed after its check
        {"answer_dC_index_add": "dC_index_add = dC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))"},
        "C_index_add",
        "twice the right value",
    ),
}
MISTAKES.update(INDEX_ADD_MISTAKES)
KINDS = {
    "m_index_add_loop": "not_asked_function",
    "m_index_add_one_hot": "not_asked_function",
    "m_index_add_copy": "not_accumulated",
    "m_index_add_into_dC": "constant_factor",
}

# student -> the step whose right values come in a shape off by a size-1 dimension: a share of its points
KEEPDIM = {
    "m_logit_maxes_keepdim": "logit_maxes",
    "m_bnbias_keepdim": "bnbias",
    "m_bnvar_inv_keepdim": "bnvar_inv",
    "m_bnmeani_lecture": "bnmeani",
    "m_b2_keepdim_added": "b2",
}
# the same slips below a float64 dlogprobs (every later gradient then float64: its upstream cannot stand for
# autograd's, and the rule probe judges it): still a share, not every point (student -> (answer cells changed, step))
F64_DLOGPROBS = {"answer_dlogprobs": "dlogprobs = -F.one_hot(Yb, vocab_size).double() / n"}
KEEPDIM_BELOW_A_SLIP = {
    "m_logprobs_float64_counts_sum_inv_keepdim": (
        {**F64_DLOGPROBS, "answer_dcounts_sum_inv": "dcounts_sum_inv = (counts * dprobs).sum(1)"},
        "counts_sum_inv",
    ),
    "m_logprobs_float64_b2_keepdim_added": (
        {**F64_DLOGPROBS, "answer_db2": "db2 = dlogits.sum(0, keepdim=True)"},
        "b2",
    ),
}
KEEPDIM.update({student: step for student, (_, step) in KEEPDIM_BELOW_A_SLIP.items()})
# every mistake below that slip costs its own step as it does alone: a cell stopped by a typo of its own, before the
# answer, is not re-run from where it stopped (its answer's code never ran, whatever dlogits was)
# every answer in one cell (``one_cell``): a slip that stops the cell costs its own step, and the answers after it
# keep theirs by their rule (the cell stopped in a gradient's code). student -> (answer cells changed, steps lost)
ONE_CELL_SLIPS = {
    "m_one_cell_one_hot_no_classes": ({"answer_dlogprobs": "dlogprobs = -F.one_hot(Yb).float() / n"}, ["logprobs"]),
    "m_one_cell_dprobs_typo": ({"answer_dprobs": "dprobs = (1.0 / prob) * dlogprobs"}, ["probs"]),
}
# student -> (answer cells changed, extra cells, the steps that must lose points)
BELOW_A_SLIP = {student: (changes, [], ["logprobs", step]) for student, (changes, step) in KEEPDIM_BELOW_A_SLIP.items()}
BELOW_A_SLIP |= {
    "m_logprobs_float64_dh_typo": (
        {**F64_DLOGPROBS, "answer_dh": "W = W3  # W3: a typo\ndh = dlogits @ W2.T"},
        [],
        ["h", "logprobs"],
    ),
    # the typo after the answer's first statement, in a statement that writes no name (so it took no snapshot): the cell
    # stopped there, not in the gradient's code before it, and the `+=` it never reached is not re-run
    "m_logprobs_float64_dcounts_typo_between": (
        {
            **F64_DLOGPROBS,
            "answer_dcounts": "dcounts = counts_sum_inv * dprobs\nprint(count_sum)  # a typo\n"
            "dcounts += torch.ones_like(counts) * dcounts_sum",
        },
        [],
        ["counts", "logprobs"],
    ),
    # dC_index_add kept by its rule (its cell raised on a float64 demb) must still call index_add_: demb made float64
    # after its own check and dC's costs nothing else
    "m_index_add_one_hot_demb_broken_after_dC": (
        {"answer_dC_index_add": f"dC_index_add = {ONE_HOT_DC}"},
        [("answer_dC", "demb = demb.double()")],
        ["C_index_add"],
    ),
    "m_logprobs_float64_index_add_one_hot": (
        {**F64_DLOGPROBS, "answer_dC_index_add": f"dC_index_add = {ONE_HOT_DC}"},
        [],
        ["C_index_add", "logprobs"],
    ),
}
WRONG_VALUES_WRONG_SHAPE = {"m_counts_sum_inv_axis": "counts_sum_inv", "m_b2_no_sum": "b2"}

FUSED_BATCHNORM = (
    "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
    "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
)
ALTERNATIVES = {
    "alt_a": {
        "answer_dlogprobs": "dlogprobs = -F.one_hot(Yb, vocab_size).float() / n",
        "answer_dprobs": "dprobs = dlogprobs / probs",
        "answer_dnorm_logits": "dnorm_logits = norm_logits.exp() * dcounts",
        "answer_dhpreact": "dhpreact = (1 - torch.tanh(hpreact) ** 2) * dh",
        "answer_dbnvar": "dbnvar = -0.5 * bnvar_inv**3 * dbnvar_inv",
        "answer_dbndiff2": "dbndiff2 = torch.full_like(bndiff2, 1.0 / (n - 1)) * dbnvar",
        "answer_dC": (
            "dC = torch.zeros_like(C)\nfor k in range(Xb.shape[0]):\n    for j in range(Xb.shape[1]):\n"
            "        dC[Xb[k, j]] += demb[k, j]"
        ),
        # the loop for dC, then index_add_ on a tensor of zeros
        "answer_dC_index_add": "dC_index_add = torch.zeros_like(C)\n"
        "dC_index_add.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))",
    },
    "alt_b": {
        "answer_dcounts_sum_inv": "dcounts_sum_inv = (dprobs * counts).sum(-1, keepdim=True)",
        "answer_dlogits": (
            "dlogits = dnorm_logits.clone()\ndlogits[range(n), logits.argmax(1)] += dlogit_maxes.view(-1)"
        ),
        "answer_db2": "db2 = dlogits.sum(0, keepdim=True).squeeze(0)",
        "answer_dbnbias": "dbnbias = dhpreact.sum(0).view(1, -1)",
        "answer_dhprebn": FUSED_BATCHNORM,
        "answer_dW1": "dW1 = (dhprebn.T @ embcat).T",
        "answer_demb": "demb = dembcat.reshape(n, block_size, n_embd)",
        "answer_dC": f"dC = {ONE_HOT_DC}",
        "answer_dC_index_add": "dC_index_add = torch.index_add(torch.zeros_like(C), 0, Xb.flatten(), "
        "demb.flatten(0, 1))",
    },
    "alt_c": {
        "answer_dlogit_maxes": "dlogit_maxes = torch.zeros_like(logit_maxes)",  # the exact answer: the max cancels
        "answer_dlogits": "dlogits = dnorm_logits.clone()",  # ... so its branch adds nothing
        "answer_db1": "db1 = torch.zeros_like(b1)",  # BatchNorm cancels b1 exactly
        # the lecture's own check left in the cell after the answer: refused while grading, dW2 already made by hand
        "answer_dW2": "dW2 = h.T @ dlogits\nloss.backward()",
        "answer_dC": (
            "dC = torch.zeros_like(C)\ndC.index_put_((Xb.view(-1),), demb.view(-1, n_embd), accumulate=True)"
        ),
    },
    # sympy to check a derivation (its name no longer marks every answer, until 2026-12-08 it did): only code made from
    # a string refuses, in the kernel
    "alt_imports_sympy": {
        "answer_dhpreact": "import sympy\n\nt = sympy.symbols('t')\nprint(sympy.diff(sympy.tanh(t), t))\n"
        "dhpreact = (1.0 - h**2) * dh",
    },
}

W2_LOSS = "w = W2.detach().clone().requires_grad_(True)\nl = F.cross_entropy(h.detach() @ w + b2.detach(), Yb)\n"
ENGINE_ARGS = "(l,), (torch.ones_like(l),), False, False, (w,), False, False"  # run_backward's: dl/dw

RULES_MODULE = "''.join(reversed('selur_drawkcab.enigne.redargotua'))"  # the grader's rules table, by a computed name
RULES_DW2 = "rules.local_gradient(rules.STEP_BY_NAME['W2'], {'h': h.detach()}, {'logits': dlogits})"
RULES_DW2_LINE = f"dW2 = {RULES_DW2}"
DENSE_DC = "(demb, Xb, C.shape[0], -1, False)"  # embedding_dense_backward's arguments: dC
RULES_DC = "rules.local_gradient(rules.STEP_BY_NAME['C'], {'C': C.detach(), 'Xb': Xb}, {'emb': demb})"
# code the grader cannot read marks every answer from its cell on (it may have put in a hook): the steps from dW2's
FROM_DW2 = ["W2", "b2", "hpreact", "bngain", "bnbias", "bnraw", "bnvar_inv", "bnvar", "bndiff2", "bndiff", "bnmeani"]
FROM_DW2 += ["hprebn", "embcat", "W1", "b1", "emb", "C", "C_index_add"]

# student -> (changes, extra cells, steps that must earn nothing, words in the first of their messages)
# autograd put back in the kernel, out of the static reading's sight (an attacker's review): the kernel's refusals of
# ATen's backward kernels undone through the module of a name the hidden tests left (grading_seed), a new engine from
# object's subclasses, reached with the builtins module's getattr through an attribute; then a forward pass of one's
# own, run backward. And the course's own backward pass (Exercise 6's catalogue), imported and run the same way.
AUTOGRAD_PUT_BACK = """import inspect
_B = inspect.builtins
_ga = _B.getattr
for _l in inspect.getmodule(grading_seed)._kept:
    _l._destroy()
_eng = [c for c in _ga(object, "__sub" + "classes__")() if c.__name__ == "_EngineBase"][0]()
_run = _ga(_eng, "run_back" + "ward")
_leaf = {k: v.detach().clone() for k, v in dict(C=C, W1=W1, b1=b1, W2=W2, b2=b2, bngain=bngain, bnbias=bnbias).items()}
for _v in _leaf.values():
    _v.requires_grad_(True)
with torch.enable_grad():
    _f = {}
    _f["emb"] = _leaf["C"][Xb]
    _f["embcat"] = _f["emb"].view(_f["emb"].shape[0], -1)
    _f["hprebn"] = _f["embcat"] @ _leaf["W1"] + _leaf["b1"]
    _f["bnmeani"] = 1 / n * _f["hprebn"].sum(0, keepdim=True)
    _f["bndiff"] = _f["hprebn"] - _f["bnmeani"]
    _f["bndiff2"] = _f["bndiff"] ** 2
    _f["bnvar"] = 1 / (n - 1) * _f["bndiff2"].sum(0, keepdim=True)
    _f["bnvar_inv"] = (_f["bnvar"] + 1e-5) ** -0.5
    _f["bnraw"] = _f["bndiff"] * _f["bnvar_inv"]
    _f["hpreact"] = _leaf["bngain"] * _f["bnraw"] + _leaf["bnbias"]
    _f["h"] = torch.tanh(_f["hpreact"])
    _f["logits"] = _f["h"] @ _leaf["W2"] + _leaf["b2"]
    _f["logit_maxes"] = _f["logits"].max(1, keepdim=True).values
    _f["norm_logits"] = _f["logits"] - _f["logit_maxes"]
    _f["counts"] = _f["norm_logits"].exp()
    _f["counts_sum"] = _f["counts"].sum(1, keepdim=True)
    _f["counts_sum_inv"] = _f["counts_sum"] ** -1
    _f["probs"] = _f["counts"] * _f["counts_sum_inv"]
    _f["logprobs"] = _f["probs"].log()
    _loss = -_f["logprobs"][range(n), Yb].mean()
    _all = {**_leaf, **_f}
    _ks = list(_all)
    _gs = _run((_loss,), (torch.ones_like(_loss),), False, False, tuple(_all[k] for k in _ks), False, False)
_ref = {"d" + k: g.detach() for k, g in zip(_ks, _gs)}
"""
GRADERS_PASS = """import inspect
_B = inspect.builtins
_cat = inspect.importlib.import_module("autogr" + "ader.engine.bug_hunt.catalogue")
_ns = {"torch": torch, "F": F, "TENSORS": _cat.TENSORS}
_B.eval(_B.compile(_cat.PASS, "p", "exec"), _ns)
_t = {k: _B.eval(k).detach() for k in _cat.TENSORS}
_t.update(n=n, Xb=Xb, Yb=Yb)
_ref = [v for k, v in _ns.items() if k.startswith("back")][0](_t)
"""
IN_AN_EXCEPT_BLOCK = "try:\n    raise ValueError\nexcept ValueError:\n" + "".join(
    "    " + line + "\n" for line in AUTOGRAD_PUT_BACK.splitlines()
)

FORGED_ZERO_PINS = """import torch as _t
import pickle
import autograder.in_kernel.reports as _R
from autograder.engine import wire as _w
from autograder.in_kernel.snapshot_hook import forward_shapes as _fs
_run_probe = _R.run_probe
def _forge(ns, answer, names):
    if globals().get("_only", answer) != answer:
        return _run_probe(ns, answer, names)
    shape = lambda n: _fs[n[1:]]
    pins = {n: {"zero": False, "shape": list(shape(n)), "kept": _w.encode(_t.zeros(shape(n), dtype=_t.bool))}
            for n in names}
    zero = _w.encode(_t.zeros(shape(answer)), True)
    return {"answer": answer, "pins": pins, "status": "ran", "result": zero, "pins_read": list(names),
            "further_up": [], "reads": [], "as_set_up": {"rebound": {"h": {"line": "h = h.T", "answers": ["dW2"]}},
            "status": "ran", "result": zero, "pins_read": list(names), "further_up": []}}
_R.run_probe = _forge
"""

CHEATS = {
    "c_autograd_put_back": ({"answer_dC": AUTOGRAD_PUT_BACK + "dC = _ref['dC']"}, [], ["C", "C_index_add"], "autograd"),
    "c_autograd_put_back_in_an_except_block": (
        {"answer_dC": IN_AN_EXCEPT_BLOCK + "dC = _ref['dC']"},
        [],
        ["C", "C_index_add"],
        "autograd",
    ),
    "c_graders_pass_through_attributes": (
        {"answer_dC": GRADERS_PASS + "dC = _ref['dC']"},
        [],
        ["C", "C_index_add"],
        "grader's own code",
    ),
    "c_copy_grad": ({"answer_dh": "dh = h.grad", "answer_dW1": "dW1 = W1.grad.clone()"}, [], ["h", "W1"], "autograd"),
    "c_hidden_grad": ({"answer_dh": grad_through_sgd("h", "dh")}, [], ["h"], "h.grad"),  # the decoy recognised
    # the helper cell keeps autograd's gradients for its checks (_AT_SETUP, made before grading starts): it held the
    # gradients themselves, so reading it earned the points; the decoys are written into them in place now
    "c_helper_cells_gradients": ({"answer_dh": "dh = _AT_SETUP[1]['h'].clone()"}, [], ["h"], "h.grad"),
    # the decoy undone: its noise is seeded by SEED, which the kernel knows; it was the right gradient plus that noise,
    # and dW2's probe is inconclusive when the code reads no dlogits. The decoy is the noise alone now.
    "c_decoy_undone_after_sgd": (
        {
            "answer_dW2": grad_through_sgd("W2", "d") + "\nimport zlib\n"
            "g = torch.Generator().manual_seed((SEED * 1_000_003 + zlib.crc32(b'W2')) % 2**63)\n"
            "noise = torch.randn(d.shape, generator=g, dtype=torch.float64).to(d.dtype)\n"
            "a = 0.5 * d.abs().max().item()\nfor _ in range(200):\n"
            "    a = 0.5 * max((d - a * noise).abs().max().item(), 1e-3)\ndW2 = d - a * noise"
        },
        [],
        ["W2"],
        "entries wrong",
    ),
    "c_backward": ({"answer_dW2": "loss.backward()\ndW2 = W2.grad"}, [], ["W2"], "autograd"),
    # the grader's own rules table, which the grading kernel has imported: by name, or through sys.modules
    "c_graders_rules": (
        {
            "answer_dW2": "from autograder.engine.backward_rules import STEP_BY_NAME, local_gradient\n"
            "dW2 = local_gradient(STEP_BY_NAME['W2'], {'h': h.detach()}, {'logits': dlogits})"
        },
        [],
        ["W2"],
        "grader's own code",
    ),
    "c_sys_modules": (
        {
            "answer_dW2": "import sys\nrules = sys.modules['autograder.engine.backward_rules']\n"
            "dW2 = rules.local_gradient(rules.STEP_BY_NAME['W2'], {'h': h.detach()}, {'logits': dlogits})"
        },
        [],
        ["W2"],
        "grader's own code",
    ),
    "c_autograd_grad": (
        {"answer_dW1": "dW1 = torch.autograd.grad(loss, W1, retain_graph=True)[0]"},
        [],
        ["W1"],
        "autograd",
    ),
    # autograd's engine (what torch.autograd.grad calls) and forward-mode differentiation, reached without
    # torch.autograd: by name the static reading marks them; by computed names the kernel's switch refuses them, and
    # what the refused cell did not define counts as autograd's
    "c_autograd_engine": (
        {"answer_dW2": W2_LOSS + f"dW2 = torch._C._ImperativeEngine().run_backward({ENGINE_ARGS})[0]"},
        [],
        ["W2"],
        "autograd",
    ),
    "c_engine_by_computed_names": (
        {
            "answer_dW2": "import operator\n"
            + W2_LOSS
            + "engine = operator.attrgetter('_Imperative' + 'Engine')(torch._C)()\n"
            f"dW2 = operator.methodcaller('run_back' + 'ward', {ENGINE_ARGS})(engine)[0]"
        },
        [],
        ["W2"],
        "computed with autograd",
    ),
    "c_forward_mode_by_computed_names": (
        {
            "answer_db2": "import operator\nenter, leave = (operator.attrgetter(f'_{w}_du' + 'al_level')(torch._C) "
            "for w in ('enter', 'exit'))\nmake, unpack = (operator.attrgetter(f'_{w}_du' + 'al')(torch) "
            "for w in ('make', 'unpack'))\nlevel = enter()\ndb2 = torch.zeros_like(b2)\nfor i in range(b2.numel()):\n"
            "    x = make(b2.detach(), torch.eye(b2.numel())[i], level=level)\n"
            "    db2[i] = unpack(F.cross_entropy(h.detach() @ W2.detach() + x, Yb), level=level)[1]\nleave(level=level)"
        },
        [],
        ["b2"],
        "computed with autograd",
    ),
    "c_aten_backward": (  # on a step nothing else uses: the kernel refuses ATen's backward kernels too
        {"answer_dC": f"dC = torch.ops.aten.embedding_dense_backward{DENSE_DC}"},
        [],
        ["C"],
        "autograd",
    ),
    "c_patch_checks": (
        {"answer_dW2": "dW2 = dlogits.T @ h"},
        [
            (
                "self_check_helpers",
                "torch.allclose = lambda *a, **k: True\n"
                "torch.equal = lambda *a, **k: True\n"
                "torch.isfinite = lambda t: torch.ones_like(t, dtype=torch.bool)",
            )
        ],
        ["W2"],
        "transposed",
    ),
    # Found in an attacker's review: each earned its points before the static reading marked computed names
    # (operator.attrgetter, getattr as a value, X.__dict__[..]), sys.modules under another name, exec that assigns
    # out of sight, and modules the grader does not have; the kernel now also hides each tensor's node of the graph
    # and refuses ATen's backward kernels and torch._decomp's formulas (tests/fast/test_switches.py)
    "c_node_called_by_hand": (  # MmBackward0 called without the engine: torch's own formula for dW2
        {
            "answer_dW2": "import functools\nw = W2.detach().clone().requires_grad_(True)\n"
            "dW2 = functools.reduce(getattr, [''.join(reversed('nf_darg'))], h.detach() @ w)(dlogits)[1]"
        },
        [],
        FROM_DW2,  # getattr as a value reaches any name: code the grader cannot read, every answer from then on
        "autograd",
    ),
    "c_aten_kernel_by_computed_name": (
        {
            "answer_dC": "import operator\n"
            f"dC = operator.attrgetter('embedding_dense_back' + 'ward')(torch.ops.aten){DENSE_DC}"
        },
        [],
        ["C"],
        "autograd",
    ),
    "c_decomposition_by_dict": (
        {
            "answer_dC": "import torch._decomp.decompositions as D\n"
            f"dC = D.__dict__['embedding_dense_back' + 'ward']{DENSE_DC}"
        },
        [],
        ["C", "C_index_add"],  # a namespace by keys reaches any name: every answer from then on
        "autograd",
    ),
    "c_sys_modules_imported": (
        {"answer_dW2": f"from sys import modules\nrules = modules[{RULES_MODULE}]\ndW2 = {RULES_DW2}"},
        [],
        ["W2"],
        "autograd",
    ),
    # the decoy undone: its noise is seeded by SEED, which the kernel knows; dW2's probe is inconclusive, as it
    # reads no dlogits
    "c_decoy_undone": (
        {
            "answer_dW2": "import operator, zlib\nd = operator.attrgetter(''.join(reversed('darg')))(W2).detach()\n"
            "g = torch.Generator().manual_seed((SEED * 1_000_003 + zlib.crc32(b'W2')) % 2**63)\n"
            "noise = torch.randn(d.shape, generator=g, dtype=torch.float64).to(d.dtype)\n"
            "a = 0.5 * d.abs().max().item()\nfor _ in range(200):\n"
            "    a = 0.5 * max((d - a * noise).abs().max().item(), 1e-3)\ndW2 = d - a * noise"
        },
        [],
        ["W2"],
        "autograd",
    ),
    "c_exec_assigns_out_of_sight": (
        {"answer_dW2": f'exec("import sys\\nrules = sys.modules[{RULES_MODULE}]\\ndW2 = {RULES_DW2}")'},
        [],
        FROM_DW2,
        "autograd",
    ),
    "c_ipython_ev": (
        {"answer_dC": f"dC = get_ipython().ev('torch.ops.aten.embedding_dense_back' + 'ward'){DENSE_DC}"},
        [],
        ["C", "C_index_add"],
        "autograd",
    ),
    # TorchScript's own symbolic differentiation (torch/csrc/jit/runtime/symbolic_script.cpp), run as a script
    # function: neither the engine nor an ATen backward kernel
    "c_torchscript_autodiff": (
        {
            "answer_dW2": "def lin(h, w):\n    return h @ w\n\n\n"
            "spec = torch._C._jit_differentiate(torch.jit.script(lin).graph.copy())\n"
            "dW2 = torch._C._create_function_from_graph('df', spec.df)(dlogits, h.detach(), W2.detach())[1]"
        },
        [],
        FROM_DW2,  # a function made from a graph is code the grader cannot read: every answer from then on
        "autograd",
    ),
    # a new Python, which has autograd whole, fed the cell's tensors and read back through files: the grading kernel
    # cannot start a program (process_guards.refuse_exec), so the cell fails and dW2 is not there
    "c_python_in_a_subprocess": (
        {
            "answer_dW2": "import subprocess, sys\ntorch.save((h.detach(), W2.detach(), b2.detach(), Yb), 'saved.pt')\n"
            "subprocess.run([sys.executable, '-c', 'import torch, torch.nn.functional as F\\n"
            'h, W2, b2, Yb = torch.load("saved.pt")\\nW2.requires_grad_()\\n'
            'F.cross_entropy(h @ W2 + b2, Yb).backward()\\ntorch.save(W2.grad, "dW2.pt")\'], check=True)\n'
            "dW2 = torch.load('dW2.pt')"
        },
        [],
        ["W2"],
        "dW2's cell stopped with PermissionError",  # a grading kernel starts no program
    ),
    "c_python_from_the_shell": (  # the same through !python, which does not run while grading
        {
            "answer_dW2": "torch.save((h.detach(), W2.detach(), b2.detach(), Yb), 'saved.pt')\n"
            '!python -c \'import torch, torch.nn.functional as F; h, W2, b2, Yb = torch.load("saved.pt"); '
            'W2.requires_grad_(); F.cross_entropy(h @ W2 + b2, Yb).backward(); torch.save(W2.grad, "dW2.pt")\'\n'
            "dW2 = torch.load('dW2.pt')"
        },
        [],
        ["W2"],
        "dW2's cell stopped with FileNotFoundError",  # no dW2.pt: the shell command did not run
    ),
    "c_timeit_runs_a_string": (  # timeit runs its statement as exec does, in the namespace it is given
        {
            "answer_dC": "import timeit\nbox = {'C': C, 'Xb': Xb, 'demb': demb}\nbox['box'] = box\n"
            f"timeit.timeit(\"import sys\\nrules = sys.modules[{RULES_MODULE}]\\nbox['dC'] = {RULES_DC}\", "
            "globals=box, number=1)\ndC = box['dC']"
        },
        [],
        ["C", "C_index_add"],
        "autograd",
    ),
    "c_shell_push": (  # the kernel's namespace written through the shell
        {"answer_dC": f"import sys\nrules = sys.modules[{RULES_MODULE}]\nget_ipython().push({{'dC': {RULES_DC}}})"},
        [],
        ["C", "C_index_add"],
        "autograd",
    ),
    "c_shell_hook": (  # dC, as the cell shows it, is zeros: a hook run after the cell puts the grader's value in
        {
            "answer_dC": "import sys\ndC = torch.zeros_like(C)\n\n\ndef fill(result):\n"
            f"    rules = sys.modules[{RULES_MODULE}]\n    ns = get_ipython().user_ns\n"
            "    ns['dC'] = rules.local_gradient(rules.STEP_BY_NAME['C'], {'C': C.detach(), 'Xb': Xb}, "
            "{'emb': ns['demb']})"
            "\n\n\nget_ipython().events.register('post_run_cell', fill)"
        },
        [],
        ["C", "C_index_add"],
        "autograd",
    ),
    "c_module_of_ones_own": (  # the kernel imports no module written while grading (in_kernel.switches)
        {
            "answer_dW2": "import sys\nsys.path.insert(0, '.')\nopen('c_module_of_ones_own.py', 'w').write("
            f'"import sys\\nrules = sys.modules[{RULES_MODULE}]\\n")\n'
            f"from c_module_of_ones_own import rules\ndW2 = {RULES_DW2}"
        },
        [],
        ["W2"],
        "a module written while grading is not imported: 'c_module_of_ones_own'",
    ),
}

# Found in a second attacker's review: the grader's rules table (or torch's own derivative formula, a node of the
# graph reached through torch._C.TensorBase's grad_fn, which torch.Tensor's property hides but cannot remove) reached
# by names the reading did not see: a class pattern's keywords, getattr's constant, and what resolves a name in a string
# (the name as an f-string's text, which is prose). Each earned dW2's point; code that resolves names marks every answer
# from its cell on, as exec does
RULES_BY_F_STRING = "f'autograder.engine.backward_rules'"
CHEATS.update(
    {
        "c_class_pattern": (
            {
                "answer_dW2": "match torch:\n    case object(sys=object(modules=m)):\n        pass\n"
                f"rules = m[{RULES_MODULE}]\n{RULES_DW2_LINE}"
            },
            [],
            ["W2"],
            "autograd",
        ),
        "c_node_through_tensorbase": (
            {
                "answer_dW2": "match torch._C:\n    case object(TensorBase=object(grad_fn=node_of)):\n        pass\n"
                "w = W2.detach().clone().requires_grad_(True)\ndW2 = node_of.__get__(h.detach() @ w)(dlogits)[1]"
            },
            [],
            ["W2"],
            "autograd",
        ),
        "c_getattr_of_modules": (
            {"answer_dW2": f"rules = getattr(getattr(torch, 'sys'), 'modules')[{RULES_MODULE}]\n{RULES_DW2_LINE}"},
            [],
            ["W2"],
            "autograd",
        ),
        "c_formatter_fields": (
            {
                "answer_dW2": "import string\nbox = []\n\n\nclass Grab(string.Formatter):\n"
                "    def format_field(self, value, spec):\n        box.append(value)\n        return ''\n\n\n"
                "Grab().format(f'{{0.sys.modules[autograder.engine.backward_rules]}}', torch)\n"
                f"rules = box[0]\n{RULES_DW2_LINE}"
            },
            [],
            FROM_DW2,
            "autograd",
        ),
        "c_logging_config_resolver": (
            {
                "answer_dW2": "import logging.config\n"
                f"rules = logging.config.BaseConfigurator({{}}).resolve({RULES_BY_F_STRING})\n{RULES_DW2_LINE}"
            },
            [],
            FROM_DW2,
            "autograd",
        ),
        "c_pydoc_safeimport": (
            {"answer_dW2": f"import pydoc\nrules = pydoc.safeimport({RULES_BY_F_STRING})\n{RULES_DW2_LINE}"},
            [],
            FROM_DW2,
            "autograd",
        ),
        "c_mock_patch_target": (
            {
                "answer_dW2": "from unittest import mock\n"
                f"rules = mock.patch({RULES_BY_F_STRING} + '.x').getter()\n{RULES_DW2_LINE}"
            },
            [],
            FROM_DW2,
            "autograd",
        ),
        "c_frames_builtins": (  # __import__ from the builtins of a traceback's frame
            {
                "answer_dW2": "try:\n    raise ValueError('x')\nexcept ValueError as e:\n"
                "    b = e.__traceback__.tb_frame.f_builtins\n"
                f"rules = b['__imp' + 'ort__']({RULES_MODULE}, fromlist=['x'])\n{RULES_DW2_LINE}"
            },
            [],
            FROM_DW2,
            "autograd",
        ),
        "c_magic_of_code_made_as_it_runs": (
            {
                "answer_dW2": f"code = 'import sys\\nrules = sys.modules[' + \"{RULES_MODULE}\" + ']\\n'\n"
                f"code += \"{RULES_DW2_LINE}\"\nget_ipython().run_cell_magic('time', '', code)"
            },
            [],
            FROM_DW2,
            "autograd",
        ),
        "c_annotation_that_assigns": (  # functools.singledispatch evaluates the annotation as the def runs
            {
                "answer_dW2": "import functools\n\n\n@functools.singledispatch\ndef f(x):\n    pass\n\n\n"
                "@f.register\ndef _(x: \"(rules := __import__('sys').modules['autogr' 'ader.engine.backward_rules']) "
                f'and int"):\n    pass\n\n\n{RULES_DW2_LINE}'
            },
            [],
            FROM_DW2,
            "autograd",
        ),
        "c_shell_around_get_ipython": (  # the shell as exit._ip, its %%time called as a function
            {
                "answer_dW2": f"code = 'import sys\\nrules = sys.modules[' + \"{RULES_MODULE}\" + ']\\n'\n"
                f"code += \"{RULES_DW2_LINE}\"\nexit._ip.magics_manager.magics['cell']['time']('', code)"
            },
            [],
            FROM_DW2,
            "autograd",
        ),
        "c_torch_fx_runs_a_string": (
            {
                "answer_dW2": "import torch.fx.graph_module as gm\n"
                f"code = 'import sys\\nrules = sys.modules[' + \"{RULES_MODULE}\" + ']\\n'\n"
                f"code += \"{RULES_DW2_LINE}\"\nbox = {{'h': h, 'dlogits': dlogits}}\n"
                "gm._exec_with_source(code, box)\ndW2 = box['dW2']"
            },
            [],
            FROM_DW2,
            "autograd",
        ),
        # the namespace's names set by a def or a class, the grader's module named in the clear: before, only the
        # def's own name was marked
        "c_default_that_assigns": (
            {
                "answer_dW2": f"import sys\n\n\ndef f(x=(rules := sys.modules[{RULES_MODULE}])):\n    pass\n\n\n"
                f"{RULES_DW2_LINE}"
            },
            [],
            ["W2"],
            "autograd",
        ),
        "c_class_body_global": (
            {
                "answer_dW2": f"import sys\n\n\nclass A:\n    global rules\n"
                f"    rules = sys.modules[{RULES_MODULE}]\n\n\n"
                f"{RULES_DW2_LINE}"
            },
            [],
            ["W2"],
            "autograd",
        ),
        "c_function_global": (
            {
                "answer_dW2": f"import sys\n\n\ndef f():\n    global rules\n"
                f"    rules = sys.modules[{RULES_MODULE}]\n\n\n"
                f"f()\n{RULES_DW2_LINE}"
            },
            [],
            ["W2"],
            "autograd",
        ),
        "c_annotations_set": (  # functools.singledispatch's register evaluates them
            {
                "answer_dW2": "import functools\n\n\n@functools.singledispatch\ndef f(x):\n    pass\n\n\n"
                "def g(x):\n    pass\n\n\ng.__annotations__ = {'x': \"(rules := __import__('sys').modules"
                f"['autogr' 'ader.engine.backward_rules']) and int\"}}\nf.register(g)\n{RULES_DW2_LINE}"
            },
            [],
            FROM_DW2,
            "autograd",
        ),
        # what a statement that assigns nothing changes: before, box was not marked, and dW2 earned its point
        "c_appended_to": (
            {
                "answer_dW2": f"import sys\nbox = []\nbox.append(sys.modules[{RULES_MODULE}])\n"
                f"rules = box[0]\n{RULES_DW2_LINE}"
            },
            [],
            ["W2"],
            "autograd",
        ),
        "c_raised_and_caught": (  # an exception's arguments carry the module out of the try
            {
                "answer_dW2": f"import sys\ntry:\n    raise ValueError(sys.modules[{RULES_MODULE}])\n"
                f"except ValueError as e:\n    rules = e.args[0]\n{RULES_DW2_LINE}"
            },
            [],
            ["W2"],
            "autograd",
        ),
        "c_annotation_evaluated": (
            {
                "answer_dW2": "import typing\n\n\ndef f(x: f\"lambda: __import__('sys').modules"
                "['autograder.engine.backward_rules']\"):\n    pass\n\n\n"
                f"rules = typing.get_type_hints(f)['x']()\n{RULES_DW2_LINE}"
            },
            [],
            FROM_DW2,
            "autograd",
        ),
    }
)

# Issue 12: mistakes that give the right values on every batch, or nearly (their term is about zero on a real
# network). The rule probe (random upstream gradients) or the chosen inputs (neuron 0's variance at the epsilon)
# show each one; student -> (changes, the one step that must lose its points, words its message must contain).
RULE_MISTAKES = {
    "m_dlogits_no_max_path": (
        {"answer_dlogits": "dlogits = dnorm_logits.clone()"},
        "logits",
        "the path through logit_maxes is missing",
    ),
    "m_dlogits_argmin": (
        {
            "answer_dlogits": "dlogits = dnorm_logits.clone()\n"
            "dlogits += F.one_hot(logits.min(1).indices, num_classes=logits.shape[1]) * dlogit_maxes"
        },
        "logits",
        "to the smallest logit of each row",
    ),
    "m_logit_maxes_sign": (
        {"answer_dlogit_maxes": "dlogit_maxes = dnorm_logits.sum(1, keepdim=True)"},
        "logit_maxes",
        "wrong sign",
    ),
    "m_db1_mean": ({"answer_db1": "db1 = dhprebn.mean(0)"}, "b1", "n = 32 times too small"),
    "m_bnvar_no_epsilon": (
        {"answer_dbnvar": "dbnvar = -0.5 * bnvar**-1.5 * dbnvar_inv"},
        "bnvar",
        "dbnvar is missing BatchNorm's epsilon",
    ),
}


def in_no_grad(code: str) -> str:
    """``code`` inside `with torch.no_grad():`, as students wrap manual backprop (the lecture's Exercise 4 does)."""
    return "with torch.no_grad():\n" + "\n".join("    " + line for line in code.split("\n"))


# The same rule mistakes inside `with torch.no_grad():`: its statements are the cell's, and the probe re-runs them
RULE_MISTAKES.update(
    {
        f"{student}_no_grad": ({cell: in_no_grad(code) for cell, code in changes.items()}, step, words)
        for student, (changes, step, words) in RULE_MISTAKES.items()
        if student in ("m_dlogits_no_max_path", "m_logit_maxes_sign", "m_db1_mean")
    }
)
MISTAKES.update(RULE_MISTAKES)
# ... and inside an `if` or a `try`: the probe re-runs the whole statement, with the branch the cell took
IF_FUSED = "fused = False\nif fused:\n    dlogits = F.softmax(logits, 1)\n    dlogits[range(n), Yb] -= 1\n"
IF_FUSED += "    dlogits /= n\nelse:\n"
MISTAKES.update(
    {
        "m_dlogits_no_max_path_in_if": (
            {"answer_dlogits": IF_FUSED + "    dlogits = dnorm_logits.clone()"},
            "logits",
            "the path through logit_maxes is missing",
        ),
        # a typo that stops the answer's own `+=` (published): the probe judges the clone before it, and says so
        "m_dlogits_max_path_typo": (
            {
                "answer_dlogits": "dlogits = dnorm_logits.clone()\n"
                "dlogits += F.one_hot(logits.max(1).indeces, num_classes=logits.shape[1]) * dlogit_maxes"
            },
            "logits",
            "raised AttributeError: 'torch.return_types.max' object has no attribute 'indeces', when its cell ran",
        ),
        "m_dlogits_no_max_path_if_not_taken": (  # a branch never taken hid the code before it from the probe
            {"answer_dlogits": "dlogits = dnorm_logits.clone()\nif False:\n    dlogits = 0"},
            "logits",
            "the path through logit_maxes is missing",
        ),
        "m_dlogits_typo_in_a_block": (  # the block raised before its change, there as here: the code before it
            {
                "answer_dlogits": "dlogits = dnorm_logits.clone()\nif True:\n"
                "    dlogits += F.one_hot(logits.max(1).indeces, num_classes=logits.shape[1]) * dlogit_maxes"
            },
            "logits",
            "the path through logit_maxes is missing",
        ),
        "m_logit_maxes_sign_in_try": (
            {
                "answer_dlogit_maxes": "try:\n    dlogit_maxes = dnorm_logits.sum(1, keepdim=True)\n"
                "except RuntimeError as e:\n    print(e)"
            },
            "logit_maxes",
            "wrong sign",
        ),
    }
)

# More correct formulas seen in students' work: each must keep every point.
ALTERNATIVES.update(
    {
        "alt_loop_raised_at_its_end": {  # a loop that raised at its last turn (range(n + 1)) made its change first
            "answer_dlogits": "dlogits = dnorm_logits.clone()\nfor i in range(n + 1):\n"
            "    dlogits[i, logits[i].argmax()] += dlogit_maxes[i, 0]",
        },
        "alt_block_raised_after_its_change": {  # a typo after the answer's line, in the same block
            "answer_dlogits": "dlogits = dnorm_logits.clone()\nif True:\n"
            "    dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes\n"
            "    print(dlogits.shapee)",
        },
        "alt_guard_after": {  # an `if` that may rebind the answer, not taken: the code before it is the answer's
            "answer_dlogits": "dlogits = dnorm_logits.clone()\n"
            "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes\n"
            "if not isinstance(dlogit_maxes, torch.Tensor):\n    dlogits = None",
        },
        "alt_in_blocks": {  # right answers in an `if`'s branch and a `try`: the probe re-runs them whole
            "answer_dlogits": IF_FUSED
            + "    dlogits = dnorm_logits.clone()\n"
            + "    dlogits += F.one_hot(logits.argmax(1), vocab_size) * dlogit_maxes",
            "answer_dlogit_maxes": "try:\n    dlogit_maxes = -dnorm_logits.sum(1, keepdim=True)\n"
            "except RuntimeError as e:\n    print(e)",
        },
        "alt_d": {
            "answer_dcounts": (  # dcounts_sum written out from dcounts_sum_inv
                "dcounts = counts_sum_inv * dprobs + torch.ones_like(counts) * (-(counts_sum**-2) * dcounts_sum_inv)"
            ),
            "answer_dlogits": (
                "dlogits = dnorm_logits.clone()\ndlogits += F.one_hot(logits.argmax(1), vocab_size) * dlogit_maxes"
            ),
            "answer_dbnvar": "dbnvar = -0.5 * dbnvar_inv / (bnvar + 1e-5) ** 1.5",
            "answer_dbndiff": "dbndiff = bnvar_inv * dbnraw + 2 * bndiff * dbndiff2",
            "answer_dhprebn": "dhprebn = dbndiff - dbndiff.sum(0, keepdim=True) / n",  # dbnmeani written out
            "answer_dC": "dC = torch.zeros_like(C).index_add(0, Xb.flatten(), demb.flatten(0, 1))",
            # dC above was computed with index_add: its copy is too (the code that computed it calls index_add)
            "answer_dC_index_add": "dC_index_add = dC.clone()",
        },
        "alt_e": {
            "answer_dlogits": "dlogits = dnorm_logits + (logits == logit_maxes).float() * dlogit_maxes",
            "answer_dhpreact": "dhpreact = (1.0 - h * h) * dh",
            "answer_dhprebn": (  # fused, with means instead of sums
                "dhprebn = bngain * bnvar_inv * (dhpreact - dhpreact.mean(0, keepdim=True) "
                "- bnraw * (dhpreact * bnraw).sum(0, keepdim=True) / (n - 1))"
            ),
            "answer_demb": "demb = dembcat.view(-1, block_size, n_embd)",
            "answer_dC": (
                "dC = torch.zeros_like(C)\nfor i, ix in enumerate(Xb.view(-1).tolist()):\n"
                "    dC[ix] += demb.view(-1, n_embd)[i]"
            ),
        },
    }
)

# Right, but the probe cannot re-run it (it only works for gradients as small as real ones): judged by its value.
ALTERNATIVES["alt_probe_cannot_run"] = {
    "answer_dh": "dh = dlogits @ W2.T if dlogits.abs().max() < 1 else dlogits.no_such_method()"
}

# The `=` part of each two-path gradient in a cell of its own before the upstream step it needs, as the
# notebook had it before answer cells were one per gradient: grade_id of the answer cell it follows -> code.
SPLIT_FIRST_PARTS = {
    "answer_dcounts_sum_inv": "dcounts = counts_sum_inv * dprobs",
    "answer_dnorm_logits": "dlogits = dnorm_logits.clone()",
    "answer_dbnraw": "dbndiff = bnvar_inv * dbnraw",
    "answer_dbndiff": "dhprebn = dbndiff.clone()",
}
SPLIT_SECOND_PARTS = {
    "answer_dcounts": "dcounts += torch.ones_like(counts) * dcounts_sum",
    "answer_dlogits": "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes",
    "answer_dbndiff": "dbndiff += 2 * bndiff * dbndiff2",
    "answer_dhprebn": "dhprebn += 1.0 / n * torch.ones_like(hprebn) * dbnmeani",
}


# Issue 24: right answers in the lecture's one-cell layout (every answer in the first answer cell, as students paste
# them from the lecture), with lines after them that rebind, delete or change in place what earlier answers read.
# Every probe judges its statements on what they read when they ran: each keeps every point, every probe conclusive.
# student -> (answer cells changed, lines added at the end of the one cell)
LECTURE_DC_LOOP = (
    "dC = torch.zeros_like(C)\nfor {k} in range(Xb.shape[0]):\n    for {j} in range(Xb.shape[1]):\n"
    "        ix = Xb[{k}, {j}]\n        dC[ix] += demb[{k}, {j}]"
)
HELPERS = "def tanh_backward(h, dh):\n    return (1.0 - h**2) * dh\n\n\ndef bessel():\n    return 1.0 / (n - 1)\n\n\n"
LATER_LINES = {
    "later_loop_n": ({"answer_dC": LECTURE_DC_LOOP.format(k="k", j="n")}, ""),  # n is 2 when the test cells run
    "later_loops_h_i": ({"answer_dC": LECTURE_DC_LOOP.format(k="h", j="i")}, ""),  # h, read by dW2 and dhpreact: 31
    # deleted after the last answer (bnvar also gives the shape of dbnvar's pin)
    "later_loop_x_del": ({"answer_dC": LECTURE_DC_LOOP.format(k="k", j="x")}, "del n, h, bnraw, bnvar"),
    # changed in place right after their steps, then by other amounts after the last answer
    "later_in_place": (
        {
            "answer_dbngain": "dbngain = (bnraw * dhpreact).sum(0, keepdim=True)\nbnraw.mul_(1)",
            "answer_dhpreact": "dhpreact = (1.0 - h**2) * dh\nhpreact.add_(0)",
        },
        "bnraw.mul_(2)\nh.add_(1)\nbndiff.mul_(3)",
    ),
    # helpers redefined after the last answer (bessel reads n, which the dC loop rebinds); dbndiff2 assigned twice,
    # the second time correctly
    "later_helpers_assigned_twice": (
        {
            "answer_dlogprobs": HELPERS + "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0 / n",
            "answer_dhpreact": "dhpreact = tanh_backward(h, dh)",
            "answer_dbndiff2": "dbndiff2 = 1.0 / n * torch.ones_like(bndiff2) * dbnvar\n"
            "dbndiff2 = bessel() * torch.ones_like(bndiff2) * dbnvar",
            "answer_dC": LECTURE_DC_LOOP.format(k="k", j="n"),
        },
        "def tanh_backward(h, dh):\n    return dh\n\n\ndef bessel():\n    return 1.0",
    ),
}

# Right answers inside `with torch.no_grad():` blocks (nested too, a dC loop inside one): each probe re-runs them
ALTERNATIVES["alt_no_grad"] = {
    "answer_dlogprobs": in_no_grad("dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0 / n"),
    "answer_dlogit_maxes": in_no_grad("dlogit_maxes = -dnorm_logits.sum(1, keepdim=True)"),
    "answer_dlogits": in_no_grad(
        "dlogits = dnorm_logits.clone()\n"
        + in_no_grad("dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes")
    ),
    "answer_db1": in_no_grad("db1 = dhprebn.sum(0)"),
    "answer_dC": in_no_grad(LECTURE_DC_LOOP.format(k="k", j="j")),
}

# Right, but its statement read an object the kernel's snapshot cannot copy: judged by its value, and the feedback says
# so (the object is made before dbnvar, so the probe's code does not make it again).
UNCOPIED = {
    "answer_dbnvar": "class Sizes:\n    pass\n\n\nsizes = Sizes()\nsizes.n = n\n"
    "dbnvar = -0.5 * (bnvar + 1e-5) ** -1.5 * dbnvar_inv",
    "answer_dbndiff2": "dbndiff2 = 1.0 / (sizes.n - 1) * torch.ones_like(bndiff2) * dbnvar",
}


# More correct forms, one per cell per student (``dealt``): einsum, loops, torch.where, one-hots built by hand,
# scatter_/index_put_, unsqueeze/None/expand/repeat for keepdim, .mT/.t()/permute, out=, float64 detours cast back,
# answers computed from tensors further up the graph, helpers that read the notebook's names, messages in helpers that
# say "gradient" or "backward" (an assert's, a raised ValueError's: they lost their points as autograd's before).
LINEAR_BACK = "def linear_back(dout, x, W):\n    return dout @ W.T, x.T @ dout, dout.sum(0)\n\n\n"
MORE_FORMS = {
    "answer_dlogprobs": [
        "dlogprobs = torch.where(torch.arange(vocab_size) == Yb[:, None], -1.0 / n, 0.0)",
        "dlogprobs = -F.one_hot(Yb, num_classes=logprobs.shape[1]).to(logprobs.dtype) * (1 / Xb.shape[0])",
        "dlogprobs = (-torch.eye(vocab_size, dtype=torch.float64)[Yb] / n).float()",
    ],
    "answer_dprobs": [
        "dprobs = torch.div(dlogprobs, probs)",
        "dprobs = dlogprobs * counts_sum / counts",  # 1/probs from the tensors that made it
        "dprobs = torch.empty_like(probs)\nwith torch.no_grad():\n    torch.mul(dlogprobs, 1 / probs, out=dprobs)",
    ],
    "answer_dcounts_sum_inv": [
        "dcounts_sum_inv = torch.einsum('ij,ij->i', counts, dprobs).unsqueeze(1)",
        "dcounts_sum_inv = (counts * dprobs).sum(dim=1)[:, None]",
    ],
    "answer_dcounts_sum": [
        "dcounts_sum = -dcounts_sum_inv / counts_sum.pow(2)",
        "dcounts_sum = -counts_sum_inv * counts_sum_inv * dcounts_sum_inv",
        "dcounts_sum = -(counts * dprobs).sum(1, keepdim=True) / counts_sum**2",
    ],
    "answer_dcounts": [
        "dcounts = counts_sum_inv * dprobs\ndcounts = dcounts + dcounts_sum.expand(-1, vocab_size)",
        "dcounts = torch.zeros_like(counts)\ndcounts += counts_sum_inv * dprobs\ndcounts += dcounts_sum",
        "dcounts = counts_sum_inv * dprobs + dcounts_sum.repeat(1, counts.shape[1])",
        "dcounts = (dprobs - (dprobs * probs).sum(1, keepdim=True)) * counts_sum_inv",
        # dcounts_sum rebound after its check
        "dcounts_sum = dcounts_sum.expand_as(counts)\ndcounts = counts_sum_inv * dprobs + dcounts_sum",
    ],
    "answer_dnorm_logits": [
        "dnorm_logits = torch.mul(counts, dcounts)",
        "dnorm_logits = dcounts.mul(norm_logits.exp())",
        "dnorm_logits = (probs - F.one_hot(Yb, vocab_size)) / n",
    ],
    "answer_dlogit_maxes": [
        "dlogit_maxes = -torch.einsum('ij->i', dnorm_logits).view(-1, 1)",
        "dlogit_maxes = -dnorm_logits.sum(1)[:, None]",
        "dlogit_maxes = -(dnorm_logits @ torch.ones(vocab_size, 1))",
        "dlogit_maxes = dnorm_logits.sum(1, keepdim=True).neg()",
    ],
    "answer_dlogits": [
        "dlogits = dnorm_logits + torch.zeros_like(logits).scatter_(1, logits.argmax(1, keepdim=True), 1.0) "
        "* dlogit_maxes",
        "dlogits = dnorm_logits.clone()\nfor i in range(n):\n"
        "    dlogits[i, torch.argmax(logits[i])] += dlogit_maxes[i].item()",
        "dlogits = dnorm_logits + torch.where(logits == logit_maxes, 1.0, 0.0) * dlogit_maxes",
        "dlogits = dnorm_logits.clone()\n"
        "dlogits.index_put_((torch.arange(n), logits.argmax(1)), dlogit_maxes.squeeze(1), accumulate=True)",
    ],
    "answer_dh": [
        "dh = (W2 @ dlogits.T).T",
        "dh = torch.mm(dlogits, W2.permute(1, 0))",
        "def matmul_back(dout, W):\n    assert dout.shape[1] == W.shape[1], 'gradient has the wrong width'\n"
        "    return dout @ W.T\n\n\ndh = matmul_back(dlogits, W2)",
        "def dlin():\n    return dlogits @ W2.T\n\n\ndh = dlin()",  # a helper that reads the notebook's names
        "@torch.no_grad()\ndef lin_back(dout, W):\n    return dout @ W.T\n\n\ndh = lin_back(dlogits, W2)",
    ],
    "answer_dW2": [
        "dW2 = h.mT @ dlogits",
        "dW2 = (h.unsqueeze(2) * dlogits.unsqueeze(1)).sum(0)",
        "dW2 = torch.zeros_like(W2)\nfor i in range(n):\n    dW2 += torch.outer(h[i], dlogits[i])",
        "dW2 = torch.empty_like(W2)\nwith torch.no_grad():\n    torch.matmul(h.T, dlogits, out=dW2)",
        "dW2 = torch.func.vmap(torch.outer)(h, dlogits).sum(0)",
        "def outer_back(x, dout):\n    if x.shape[0] != dout.shape[0]:\n"
        "        raise RuntimeError('batch sizes differ in the backward pass: ' + str(x.shape))\n"
        "    return x.T @ dout\n\n\ndW2 = outer_back(h, dlogits)",
    ],
    "answer_db2": [
        "db2 = torch.einsum('ij->j', dlogits)",
        "db2 = dlogits.mean(0) * n",
        "db2 = torch.ones(1, n) @ dlogits\ndb2 = db2.squeeze(0)",
        "db2: torch.Tensor = dlogits.sum(0)",
        "@torch.autograd.no_grad()\ndef bias_back(dout):\n    return dout.sum(0)\n\n\ndb2 = bias_back(dlogits)",
    ],
    "answer_dhpreact": [
        "dhpreact = dh * (1 - h.square())",
        "dhpreact = dh - h * h * dh",
        "dhpreact = dh / torch.cosh(hpreact) ** 2",
        "def tanh_back(dout, out):\n    assert dout.shape == out.shape, 'grad and output shapes differ'\n"
        "    return (1 - out**2) * dout\n\n\ndhpreact = tanh_back(dh, h)",
        "tanh_back = lambda y, dy: (1 - y**2) * dy\ndhpreact = tanh_back(h, dh)",
        "dhpreact = dh.clone()\ndhpreact.mul_(1 - h**2)",
    ],
    "answer_dbngain": [
        "dbngain = torch.sum(dhpreact * bnraw, dim=0)[None, :]",
        "dbngain = torch.ones(1, n) @ (bnraw * dhpreact)",
        "dbngain = (bnraw * dhpreact).mean(0, keepdim=True) * n",
        "dbngain = torch.einsum('nh,nh->h', bnraw, dhpreact).reshape(1, -1)",
    ],
    "answer_dbnbias": [
        "dbnbias = dhpreact.sum(0)[None]",
        "dbnbias = torch.ones(1, n) @ dhpreact",
        "dbnbias = dhpreact.sum(0, keepdim=True).clone()",
        "def bias_back(dout):\n    return {'grad_b': dout.sum(0, keepdim=True)}\n\n\n"
        "dbnbias = bias_back(dhpreact)['grad_b']",
    ],
    "answer_dbnraw": [
        "dbnraw = bngain.expand_as(dhpreact) * dhpreact",
        "dbnraw = dhpreact * bngain.repeat(n, 1)",
        "def mul_back(a, dout):\n    if a.shape[-1] != dout.shape[-1]:\n"
        "        raise ValueError('gradient shape mismatch')\n"
        "    return a * dout\n\n\ndbnraw = mul_back(bngain, dhpreact)",
        "dbnraw = bngain * (1 - h**2) * dh",
    ],
    "answer_dbnvar_inv": [
        "dbnvar_inv = torch.einsum('ij,ij->j', bndiff, dbnraw).view(1, -1)",
        "dbnvar_inv = (bnraw / bnvar_inv * dbnraw).sum(0, keepdim=True)",
        "dbnvar_inv = ((hprebn - hprebn.mean(0, keepdim=True)) * dbnraw).sum(0, keepdim=True)",
        "bndiff = hprebn - hprebn.mean(0, keepdim=True)\ndbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)",
    ],
    "answer_dbnvar": [
        "dbnvar = -0.5 * bnvar_inv.pow(3) * dbnvar_inv",
        "dbnvar = -0.5 * torch.rsqrt(bnvar + 1e-5) ** 3 * dbnvar_inv",
        "dbnvar = (-0.5 * (bnvar.double() + 1e-5) ** -1.5 * dbnvar_inv.double()).float()",
        "dbnvar = -dbnvar_inv / (2 * (bnvar + 1e-5) * torch.sqrt(bnvar + 1e-5))",
        "dbnvar = -0.5 * bnvar_inv**3 * (bndiff * dbnraw).sum(0, keepdim=True)",
    ],
    "answer_dbndiff2": [
        "dbndiff2 = dbnvar.expand(n, -1) / (n - 1)",
        "dbndiff2 = (1 / (bndiff2.shape[0] - 1)) * dbnvar.repeat(bndiff2.shape[0], 1)",
        "dbndiff2 = dbnvar.broadcast_to(bndiff2.shape) / (batch_size - 1)",
        "dbndiff2 = torch.full_like(bndiff2, 1.0) * dbnvar / (Xb.shape[0] - 1)",
        "bessel = lambda: 1.0 / (n - 1)\ndbndiff2 = bessel() * torch.ones_like(bndiff2) * dbnvar",
        "dbnvar = dbnvar.squeeze()\ndbndiff2 = torch.ones_like(bndiff2) * dbnvar / (n - 1)",  # after its check
    ],
    "answer_dbndiff": [
        "dbndiff = torch.addcmul(bnvar_inv * dbnraw, bndiff, dbndiff2, value=2)",
        "dbndiff = bnvar_inv * dbnraw\ndbndiff.add_(2 * bndiff * dbndiff2)",
        "dbndiff = bndiff * 2 * dbndiff2 + dbnraw * bnvar_inv",
        "dbndiff = bnvar_inv * dbnraw + 2 * bndiff * dbnvar / (n - 1)",
    ],
    "answer_dbnmeani": [
        "dbnmeani = -dbndiff.sum(0)[None, :]",
        "dbnmeani = torch.sum(-dbndiff, dim=0, keepdim=True)",
        "dbnmeani = -torch.ones(1, n) @ dbndiff",
        "dbnmeani = -(bnvar_inv * dbnraw + 2 * bndiff * dbndiff2).sum(0, keepdim=True)",
    ],
    "answer_dhprebn": [
        "dhprebn = dbndiff + dbnmeani.expand(n, -1) / n",
        "dhprebn = dbndiff.clone()\ndhprebn += dbnmeani * (1.0 / n)",
        "dhprebn = dbndiff + 1 / n * dbnmeani.repeat(n, 1)",
        "dhprebn = torch.add(dbndiff, dbnmeani, alpha=1 / n)",
        "dhprebn = bnvar_inv / n * (n * dbnraw - dbnraw.sum(0) - n / (n - 1) * bnraw * (dbnraw * bnraw).sum(0))",
    ],
    "answer_dembcat": [
        "dembcat = dhprebn @ W1.t()",
        "dembcat = dhprebn.mm(W1.T)",
        "dembcat = torch.matmul(dhprebn, W1.transpose(1, 0))",
        "dembcat = (dbndiff + dbnmeani / n) @ W1.T",
    ],
    "answer_dW1": [
        "dW1 = embcat.mT @ dhprebn",
        "dW1 = (embcat[:, :, None] * dhprebn[:, None, :]).sum(0)",
        "dW1 = torch.mm(embcat.t(), dhprebn)",
    ],
    "answer_db1": [
        "db1 = dhprebn.sum(axis=0)",
        "db1 = torch.einsum('nh->h', dhprebn)",
        "db1 = dhprebn.sum(0).view(b1.shape)",
    ],
    "answer_demb": [
        "demb = dembcat.view(Xb.shape[0], block_size, n_embd)",
        "demb = torch.reshape(dembcat, emb.shape)",
        "demb = dembcat.unflatten(-1, (3, 10))",
        "demb = torch.stack(torch.split(dembcat, n_embd, dim=1), dim=1)",
        "demb = torch.stack([dembcat[:, i * n_embd : (i + 1) * n_embd] for i in range(block_size)], 1)",
        "demb = (dhprebn @ W1.T).view(emb.shape)",
    ],
    "answer_dC": [
        "dC = torch.zeros_like(C)\ndC.scatter_add_(0, Xb.view(-1, 1).expand(-1, n_embd), demb.view(-1, n_embd))",
        "dC = torch.zeros_like(C)\nfor k in range(n):\n    for j in range(block_size):\n"
        "        dC[Xb[k][j]] = dC[Xb[k][j]] + demb[k][j]",
        # g: the name of the notebook's generator
        "dC = torch.zeros_like(C)\nfor ix, g in zip(Xb.flatten(), demb.view(-1, n_embd)):\n    dC[ix] += g",
        "dC = torch.stack([demb[Xb == i].sum(0) for i in range(vocab_size)])",
        "m = Xb.numel()\nS = torch.sparse_coo_tensor(torch.stack([Xb.view(-1), torch.arange(m)]), torch.ones(m), "
        "(vocab_size, m))\ndC = S @ demb.view(m, n_embd)",
        "dC = torch.zeros_like(C)\nfor c in Xb.unique():\n    dC[c] = demb[Xb == c].sum(0)",
    ],
    "answer_dC_index_add": [
        "dC_index_add = C.new_zeros(C.shape)\ndC_index_add.index_add_(0, Xb.ravel(), demb.reshape(-1, C.shape[1]))",
        "dC_index_add = torch.zeros(C.shape).index_add_(0, Xb.flatten(), demb.flatten(end_dim=1))",
        "dC_index_add = torch.zeros_like(C).index_add_(dim=0, index=Xb.view(-1), source=demb.view(-1, n_embd))",
        "dC_index_add = torch.Tensor.index_add_(torch.zeros_like(C), 0, Xb.view(-1), demb.view(-1, n_embd))",
        "def emb_back(demb, Xb, C):\n    out = torch.zeros_like(C)\n"
        "    out.index_add_(0, Xb.view(-1), demb.view(-1, C.shape[1]))\n    return out\n\n\n"
        "dC_index_add = emb_back(demb, Xb, C)",
    ],
}
# forms that span cells: two answers in one cell (the next one's left with `pass`), one helper for three answers
MORE_LAYOUTS = [
    {
        "answer_dcounts_sum_inv": "dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)\n"
        "dcounts_sum = -counts_sum**-2 * dcounts_sum_inv",
        "answer_dcounts_sum": "pass",
    },
    {
        "answer_dh": LINEAR_BACK + "dh, _, _ = linear_back(dlogits, h, W2)",
        "answer_dW2": "_, dW2, _ = linear_back(dlogits, h, W2)",
        "answer_db2": "db2 = linear_back(dlogits, h, W2)[2]",
    },
    {
        "answer_dembcat": LINEAR_BACK + "dembcat, dW1, db1 = linear_back(dhprebn, embcat, W1)",
        "answer_dW1": "pass",
        "answer_db1": "# computed above",
    },
]


def dealt(forms: dict, layouts: list, hosts: dict, prefix: str) -> dict:
    """student -> answer cells changed: the layouts, then each cell's forms, one per student. A form goes to a student
    of ``hosts`` whose cell it is free, from the first cell that student changes on (its shell starts there: the form
    costs no run of its own), else to a new student."""
    order = list(forms)
    students = {student: dict(changes) for student, changes in hosts.items()}
    start = {student: min(map(order.index, changes)) for student, changes in students.items()}
    units = [*layouts, *({cell: code} for cell, codes in forms.items() for code in codes)]
    for unit in units:
        fits = [s for s in students if not set(unit) & set(students[s]) and min(map(order.index, unit)) >= start[s]]
        if not fits:
            fits = [f"{prefix}{len(students) - len(hosts) + 1}"]
            start[fits[0]] = 0
        students.setdefault(fits[0], {}).update(unit)
    return students


# Forms read in a third round of the notebooks students of the lecture published (December 2026), in our own names and
# code, beside the ways of writing them the lecture did not show (in place, einsum, numpy, a loop over the batch, a
# device round trip, torch.where or masked_fill): each keeps every point
PUBLISHED_FORMS = {
    "answer_dlogprobs": [
        "dlogprobs = torch.zeros((32, 27))\ndlogprobs[range(n), Yb] = -1 * (1 / batch_size)",
        "dlogprobs = torch.where(F.one_hot(Yb, vocab_size).bool(), -1.0 / n, 0.0)",
    ],
    "answer_dprobs": [
        "dprobs = dlogprobs.clone()\ndprobs.div_(probs)",
        "dprobs = 1 / (counts * counts_sum_inv) * dlogprobs",  # probs recomputed
    ],
    "answer_dcounts_sum_inv": ["dcounts_sum_inv = (counts * dprobs) @ torch.ones(vocab_size, 1)"],
    "answer_dcounts": [
        "dcounts = counts_sum_inv * dprobs + (dcounts_sum * 1)",
        "dcounts = counts_sum_inv * dprobs + torch.ones((batch_size, vocab_size)) * dcounts_sum",
        "dcounts = torch.ones_like(counts)\ndcounts *= dcounts_sum\ndcounts += counts_sum_inv * dprobs",
        "dcounts = (dcounts_sum * 1).expand_as(counts) + (dprobs * counts_sum_inv).expand_as(counts)",
    ],
    "answer_demb": ["demb = dembcat.clone().view(emb.shape)"],
    "answer_dnorm_logits": ["dnorm_logits = counts.clone().mul_(dcounts)"],
    "answer_dlogits": [
        "dlogits = dnorm_logits + torch.zeros_like(logits).masked_fill(logits == logit_maxes, 1.0) * dlogit_maxes",
        "at = logits.argmax(1)\ndlogits = dnorm_logits.clone()\n"
        "dlogits[torch.arange(n), at] = dlogits[torch.arange(n), at] + dlogit_maxes[:, 0]",
    ],
    "answer_dh": ["dh = torch.einsum('nk,hk->nh', dlogits, W2)"],
    "answer_dW2": [
        "import numpy as np\ndW2 = torch.from_numpy(h.detach().numpy().T @ dlogits.detach().numpy())",
        "dW2 = (h.T.to('cpu') @ dlogits.to('cpu')).to(W2.device)",
    ],
    "answer_dhpreact": ["dhpreact = dh * (2 / (hpreact.exp() + (-1 * hpreact).exp())) ** 2"],  # sech² from exp
    "answer_dbngain": ["dbngain = torch.zeros_like(bngain)\nfor i in range(n):\n    dbngain += bnraw[i] * dhpreact[i]"],
    "answer_dbnbias": ["dbnbias = torch.zeros(1, n_hidden)\nfor row in dhpreact:\n    dbnbias += row"],
    "answer_dbndiff2": ["dbndiff2 = (1 / (n - 1) * dbnvar).expand(n, -1) * torch.ones(1)"],
    "answer_dhprebn": [
        "dhprebn = dbndiff - dbndiff.mean(0, keepdim=True)",  # dbnmeani / n is minus the mean of dbndiff
        "dhprebn = 1 * dbndiff + dbnmeani * 1 / n",
    ],
    "answer_dembcat": ["dembcat = torch.einsum('nj,ij->ni', dhprebn, W1)"],
    "answer_dW1": ["dW1 = torch.einsum('ni,nj->ij', embcat, dhprebn)"],
    "answer_dC": [
        "dC = torch.einsum('bti,btj->ij', F.one_hot(Xb, vocab_size).float(), demb)",
        "dC = torch.tensordot(F.one_hot(Xb, num_classes=vocab_size).float(), demb, dims=([0, 1], [0, 1]))",
        "dC = torch.zeros_like(C).scatter_add(0, Xb.reshape(-1, 1).repeat(1, n_embd), demb.reshape(-1, n_embd))",
    ],
    "answer_dC_index_add": [
        "dC_index_add = torch.zeros_like(C).index_add(0, Xb.flatten(), demb.flatten(0, 1)).type_as(C)"
    ],
}
# A fourth round (December 2026), from some 60 more published notebooks (kamal-tanwar/makemore, Yushi-Y,
# archit-manek/makemore, noah004/building-makemore, stefanhgm/makemore, contentocel, gcalbertini, ...); most copy the
# lecture's solution, these are the forms it did not have
PUBLISHED_FORMS_4 = {
    "answer_dlogprobs": [
        "dlogprobs = -F.one_hot(Yb, num_classes=27).float() * torch.tensor(1.0 / len(logprobs))",
        "Ymat = F.one_hot(Yb, num_classes=logits.shape[1])\ndlogprobs = -1 / n * Ymat",  # an integer one-hot scaled
        "dloss = 1\n_indexed_logprobs = torch.zeros((n, 27))\n_indexed_logprobs[range(n), Yb] = 1\n"
        "dlogprobs = -(1.0 / n) * _indexed_logprobs * dloss",
    ],
    "answer_dprobs": ["dprobs = torch.zeros_like(probs)\ndprobs[range(n), Yb] = -1 / (n * probs[range(n), Yb])"],
    "answer_dh": ["dh = dlogits @ W2.transpose(0, 1)"],
    "answer_dW2": ["dW2 = h.transpose(0, 1) @ dlogits"],
    "answer_dhpreact": ["dhpreact = (torch.ones_like(hpreact) - h**2) * dh"],
    "answer_dembcat": ["dembcat = dhprebn @ W1.transpose(0, 1)"],
    "answer_dcounts_sum_inv": [
        "dcounts_sum_inv = torch.sum(counts * dprobs, 1, keepdim=True)",
        # dprobs masked by a one-hot of the targets, where it is not exactly zero (published): right for every dprobs
        # with those zeros; the probe's random dprobs keeps them (probes.pins), 0 of 2 points before
        "Ymat = F.one_hot(Yb, num_classes=logits.shape[1])\n"
        "dcounts_sum_inv = (dprobs * Ymat * counts).sum(1, keepdim=True)",
    ],
    "answer_dcounts": [
        "dcounts1 = counts_sum_inv * dprobs\ndcounts2 = dcounts_sum * 1\ndcounts = dcounts2 + dcounts1",  # broadcast
        "dcounts = torch.broadcast_to(counts_sum_inv, (32, 27)) * dprobs + torch.ones_like(counts) * dcounts_sum",
        "dcounts = (torch.ones_like(counts) * counts_sum_inv * dprobs) + (dcounts_sum)",
        "dcounts = dcounts_sum.expand(*counts.shape) + (counts_sum_inv.expand(*probs.shape) * dprobs)",
        # dcounts_sum written out again from dprobs (a step further up)
        "dcounts = dprobs * counts_sum_inv "
        "+ (dprobs * counts).sum(1, keepdim=True) * (-counts_sum**-2) * torch.ones_like(counts)",
    ],
    "answer_dlogits": [
        "dlogits = dnorm_logits.clone()\ndlogits += (logits == logit_maxes) * dlogit_maxes",  # a bool mask times floats
        "dlogits = F.one_hot(logits.max(1).indices, num_classes=27).float() * dlogit_maxes\ndlogits += dnorm_logits",
        "dlogits = 1.0 * dnorm_logits\ndlogits[range(n), logits.max(1).indices] += dlogit_maxes.squeeze()",
        "dlogits = dnorm_logits.clone()\n"
        "dlogits[list((logits == logit_maxes).nonzero(as_tuple=True))] += dlogit_maxes.squeeze()",
        "dlogits = F.one_hot(logits.argmax(1), num_classes=vocab_size).float() * dlogit_maxes "
        "+ torch.ones((n, vocab_size)) * dnorm_logits",
        "mask = torch.zeros_like(logits)\nmask[range(len(logits)), logits.argmax(1)] = 1\n"
        "dlogits = dnorm_logits.clone()\ndlogits += dlogit_maxes * mask",
    ],
    "answer_dlogit_maxes": [
        "dlogit_maxes = -dnorm_logits.sum(dim=1).unsqueeze(1)",
        "dlogit_maxes = (-torch.ones((n, 1)) * dnorm_logits).sum(1, keepdim=True)",
    ],
    "answer_dbnvar": ["dbnvar = ((-0.5 * (bnvar + 1e-5) ** -1.5) * dbnvar_inv).sum(dim=0, keepdim=True)"],
    "answer_dbndiff2": ["dbndiff2 = 1 / (n - 1) * dbnvar.expand(batch_size, -1)"],
    "answer_db1": ["db1 = dhprebn.clone().sum(0)"],
    "answer_dbnmeani": [
        "dbnmeani = torch.sum(-1.0 * dbndiff, 0, keepdim=True)",
        "dbnmeani = (-1.0 * torch.ones_like(bnmeani) * dbndiff).sum(0, keepdim=True)",
    ],
    "answer_dhprebn": [
        "dhprebn = dbndiff.clone()\ndhprebn += (1.0 / n) * torch.ones_like(bnmeani) * dbnmeani",
        "dhprebn = dbndiff + 1 / n * dbnmeani.expand(batch_size, -1)",
        "dhprebn = dbndiff.clone() + 1 / n * torch.ones_like(bnmeani) * dbnmeani",
    ],
    "answer_dW1": ["dW1 = (dhprebn.t() @ embcat).t()"],
    "answer_demb": [
        "demb = dembcat.view(-1, block_size, n_embd)",
        "demb = torch.ones_like(emb) * dembcat.view(emb.shape)",
    ],
    "answer_dC": [
        "dC = torch.zeros_like(C)\nfor j, word in enumerate(Xb):\n    for k, ix in enumerate(word):\n"
        "        dC[ix] += demb[j][k]",
        "dC = torch.zeros_like(C)\ndC.index_add_(0, Xb.view(32 * 3), demb.view(32 * 3, 10))",  # sizes as numbers
        "aggC = F.one_hot(Xb, num_classes=vocab_size).view(32, 3, 27, 1) * demb.view(32, 3, 1, 10)\n"
        "dC = aggC.sum((0, 1))",
        "dC = torch.zeros_like(C)\nfor i in range(Xb.shape[0]):\n    for j in range(Xb.shape[1]):\n"
        "        c = Xb[i, j]\n        dC[c.item()] += demb[i, j]",
    ],
}
# A judge's round (December 2026): the ways of writing a step none of the above has. A one-hot put in place by a loop,
# the reciprocal as a method, a forward name rebound detached, the lecture's own cmp defined and called in an answer
# (skipped while grading), a float64 detour, torch.sub for the 1 minus, n-1 as a number, an answer that is an
# expanded view (stride 0), the max's path scattered from dlogit_maxes itself, dC by a one-hot moved to the front
LECTURE_CMP = (
    "def cmp(s, dt, t):\n    ex = torch.all(dt == t.grad).item()\n    app = torch.allclose(dt, t.grad)\n"
    "    maxdiff = (dt - t.grad).abs().max().item()\n"
    "    print(f'{s:15s} | exact: {str(ex):5s} | approximate: {str(app):5s} | maxdiff: {maxdiff}')\n\n\n"
)
JUDGES_FORMS = {
    "answer_dlogprobs": [
        "dlogprobs = torch.zeros_like(logprobs)\nfor i in range(n):\n    dlogprobs[i, Yb[i]] = -1 / n",
        LECTURE_CMP + "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0 / n\n"
        "cmp('logprobs', dlogprobs, logprobs)",
    ],
    "answer_dprobs": ["probs = probs.detach()\ndprobs = dlogprobs * probs.reciprocal()"],
    "answer_dlogits": [
        "dlogits = dnorm_logits + torch.zeros_like(logits).scatter_(1, logits.max(1, keepdim=True).indices, "
        "dlogit_maxes)"
    ],
    "answer_dh": ["dh = (dlogits.double() @ W2.double().T).float()"],
    "answer_dhpreact": ["dhpreact = dh * torch.sub(1, h**2)"],
    "answer_dbndiff2": [
        "dbndiff2 = (dbnvar / (n - 1)).expand(n, -1)",
        "dbndiff2 = torch.ones_like(bndiff2) * dbnvar * (1 / 31)",  # n - 1 as a number (n is 32 on every batch)
    ],
    "answer_dC": [
        "dC = F.one_hot(Xb, vocab_size).float().permute(2, 0, 1).reshape(vocab_size, -1) @ demb.reshape(-1, n_embd)"
    ],
}
# A fifth round (December 2026), from some 80 more published notebooks (heisguyy/ml-gallery, catastropiyush,
# snxly/colab, ryan-he-8/nn_notebooks, akhilrazdan/nn-zero-to-hero, ...): the max's path put into zeros by index
# assignment, a sum without keepdim that a (1, 64) factor broadcasts back, the answer's own name bound first to a
# temporary of another shape, Bessel's factor as a power of -1, dbnmeani summed over its size-1 dimension again, the two
# paths of dhprebn as named halves
PUBLISHED_FORMS_5 = {
    "answer_dprobs": ["dprobs = probs**-1 * dlogprobs"],
    "answer_dlogit_maxes": ["dlogit_maxes = (-torch.ones_like(logit_maxes) * dnorm_logits).sum(dim=1, keepdim=True)"],
    "answer_dlogits": [
        "dlogits = dnorm_logits.clone()\nat_max = torch.zeros_like(logits)\n"
        "at_max[range(n), logits.max(1).indices] = dlogit_maxes.squeeze()\ndlogits += at_max"
    ],
    "answer_dbnraw": ["dbnraw = bngain * torch.ones_like(bnraw) * dhpreact"],
    "answer_dbndiff2": [
        "dbndiff2 = dbnvar * (n - 1) ** -1.0 * torch.ones_like(bndiff2)",
        "dbndiff2 = torch.ones_like(bndiff2)\ndbndiff2 = (1 / (n - 1) * dbnvar) * dbndiff2",
    ],
    "answer_dbnmeani": [
        "dbnmeani = -torch.ones_like(bnmeani) * dbndiff.sum(0)",
        "dbnmeani = -1 * dbndiff\ndbnmeani = dbnmeani.sum(0, keepdim=True)",  # (32, 64) under the answer's name first
    ],
    "answer_dhprebn": [
        "dhprebn = torch.ones_like(hprebn) * dbndiff\ndhprebn += 1 / n * dbnmeani",
        "dhprebn = dbndiff.clone()\ndhprebn += 1.0 / n * dbnmeani.sum(0, keepdim=True)",
        "dhprebn_1 = dbndiff\ndhprebn_2 = torch.ones_like(hprebn)\ndhprebn_2 = (1 / n) * dbnmeani * dhprebn_2\n"
        "dhprebn = dhprebn_1 + dhprebn_2",
    ],
}
for _cell, _codes in [
    *PUBLISHED_FORMS.items(),
    *PUBLISHED_FORMS_4.items(),
    *JUDGES_FORMS.items(),
    *PUBLISHED_FORMS_5.items(),
]:
    MORE_FORMS[_cell] = [*MORE_FORMS.get(_cell, []), *_codes]
# the lecture's order, dbndiff's first path in the cell of dbnvar_inv, and dbndiff2 shaped by ones_like(dbndiff)
MORE_LAYOUTS.append(
    {
        "answer_dbnvar_inv": "dbndiff = bnvar_inv * dbnraw\ndbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)",
        "answer_dbndiff2": "dbndiff2 = (1.0 / (n - 1)) * torch.ones_like(dbndiff) * dbnvar",
        "answer_dbndiff": "dbndiff += 2 * bndiff * dbndiff2",
    }
)
# the fifth round's: dlogits cloned in the cell of dlogit_maxes, which is summed from that clone (published twice)
MORE_LAYOUTS.append(
    {
        "answer_dlogit_maxes": "dlogits = dnorm_logits.clone()\ndlogit_maxes = -dlogits.sum(1, keepdim=True)",
        "answer_dlogits": "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes",
    }
)
ALTERNATIVES.update(dealt(MORE_FORMS, MORE_LAYOUTS, ALTERNATIVES, "alt_more_forms_"))


# Slips beside those forms: in one submission, each costs its own step alone (the others are judged by their rule on
# its wrong values). student -> (answer cells changed, the steps that must lose points)
SLIPS_TOGETHER = {
    "m_slips_together_1": (
        {
            "answer_dlogprobs": "dlogprobs = torch.where(torch.arange(vocab_size) == Yb[:, None], -1.0, 0.0)",
            "answer_dcounts_sum_inv": "dcounts_sum_inv = torch.einsum('ij,ij->j', counts, dprobs).unsqueeze(0)",
            "answer_dcounts": "dcounts = counts_sum_inv * dprobs\n"
            "dcounts = dcounts + dcounts_sum.expand(-1, vocab_size) / vocab_size",
            "answer_dlogit_maxes": "dlogit_maxes = torch.einsum('ij->i', dnorm_logits).view(-1, 1)",
            "answer_dlogits": "dlogits = dnorm_logits + torch.zeros_like(logits).scatter_(1, "
            "logits.argmin(1, keepdim=True), 1.0) * dlogit_maxes",
            "answer_dh": "dh = W2 @ dlogits.T",
            "answer_dW2": "dW2 = (h.unsqueeze(1) * dlogits.unsqueeze(2)).sum(0)",
            "answer_db2": "db2 = dlogits.mean(0)",
            "answer_dhpreact": "dhpreact = dh / torch.cosh(hpreact)",
            "answer_dbngain": "dbngain = torch.ones(1, n) @ dhpreact",
            "answer_dbnraw": "dbnraw = dhpreact * bnbias.repeat(n, 1)",
            "answer_dbnvar_inv": "dbnvar_inv = (bnraw * dbnraw).sum(0, keepdim=True)",
            "answer_dbnvar": "dbnvar = -0.5 * torch.rsqrt(bnvar + 1e-5) * dbnvar_inv",
            "answer_dbndiff2": "dbndiff2 = dbnvar.expand(n, -1) / n",
            "answer_dbndiff": "dbndiff = torch.addcmul(bnvar_inv * dbnraw, bndiff, dbndiff2, value=1)",
            "answer_dbnmeani": "dbnmeani = torch.ones(1, n) @ dbndiff",
            "answer_dhprebn": "dhprebn = torch.add(dbndiff, dbnmeani, alpha=1)",
            "answer_dW1": "dW1 = (embcat[:, :, None] * dhprebn[:, None, :]).mean(0)",
            "answer_demb": "demb = dembcat.unflatten(-1, (10, 3))",
            "answer_dC": "dC = torch.zeros_like(C)\n"
            "dC.scatter_(0, Xb.view(-1, 1).expand(-1, n_embd), demb.view(-1, n_embd))",
        },
        ["logprobs", "counts_sum_inv", "counts", "logit_maxes", "logits", "h", "W2", "b2", "hpreact", "bngain"]
        + ["bnraw", "bnvar_inv", "bnvar", "bndiff2", "bndiff", "bnmeani", "hprebn", "W1", "emb", "C"],
    ),
    # a gradient from another upstream gradient below a slip: each loses its own step; dembcat and db1, right for the
    # student's wrong dhprebn, keep theirs
    "m_wrong_upstream_below_a_slip": (
        {
            "answer_dhprebn": "dhprebn = dbndiff.clone()",
            "answer_dW1": "dW1 = embcat.T @ dhpreact",
            "answer_db1": "db1 = dbndiff.sum(0)",
        },
        ["hprebn", "W1"],
    ),
    "m_slips_together_2": (
        {
            "answer_dlogprobs": "dlogprobs = torch.zeros_like(logprobs)\n"
            "dlogprobs.scatter_(1, Yb[:, None], torch.full((n, 1), -1.0))",
            "answer_dcounts_sum_inv": "dcounts_sum_inv = torch.zeros_like(counts_sum_inv)\nfor i in range(n):\n"
            "    dcounts_sum_inv[i] = (counts[i] * dprobs[i]).mean()",
            # right values, not the rule: no path through the max
            "answer_dlogits": "def f():\n    return dnorm_logits.clone()\n\n\ndlogits = f()",
            # the assert stops it: a slip, not autograd
            "answer_dh": "def matmul_back(dout, W):\n"
            "    assert dout.shape[1] == W.shape[1], 'gradient has the wrong width'\n"
            "    return dout @ W\n\n\ndh = matmul_back(dlogits, W2)",
            "answer_dbnvar": "dbnvar = -0.5 * (bnvar.double() + 1e-5) ** -1.5 * dbnvar_inv.double()",
            "answer_demb": "demb = torch.stack(torch.split(dembcat, block_size, dim=1), dim=1)",
            "answer_dC": "dC = torch.stack([demb[Xb == i].sum(0) / max(1, (Xb == i).sum()) "
            "for i in range(vocab_size)])",
        },
        ["logprobs", "counts_sum_inv", "logits", "h", "bnvar", "emb", "C"],
    ),
}

# the fourth round's published slips, each costing its own step with words that say what to fix
MISTAKES.update(
    {
        # the rows added into ones: every entry 1 too large
        "m_dC_started_from_ones": (
            {
                "answer_dC": "dC = torch.ones_like(C)\nfor k in range(Xb.shape[0]):\n    for j in range(Xb.shape[1]):\n"
                "        dC[Xb[k, j]] += demb[k, j]"
            },
            "C",
            "dC is off by the same amount, 1, in every entry: did it start from ones",
        ),
        # a misspelt answer is not answered, and the later steps that read the misspelt name keep their points
        "m_dhprebn_misspelt": (
            {
                "answer_dhprebn": "dbhprebn = dbndiff.clone()\n"
                "dbhprebn += torch.ones_like(hprebn) * (1.0 / n * dbnmeani)",
                "answer_dembcat": "dembcat = dbhprebn @ W1.T",
                "answer_dW1": "dW1 = embcat.T @ dbhprebn",
                "answer_db1": "db1 = dbhprebn.sum(0)",
            },
            "hprebn",
            "your code assigns dbhprebn, a name close to dhprebn",
        ),
        "m_dbnmeani_misspelt": (
            {
                "answer_dbnmeani": "dbnmean1 = -dbndiff.sum(0, keepdim=True)",
                "answer_dhprebn": "dhprebn = dbndiff.clone()\n"
                "dhprebn += (1 / n) * (torch.ones_like(hprebn) * dbnmean1)",
            },
            "bnmeani",
            "your code assigns dbnmean1, a name close to dbnmeani",
        ),
        # the lecture's loop with = for += (published): a repeated character keeps its last row only
        "m_dC_loop_assigns": (
            {
                "answer_dC": "dC = torch.zeros_like(C)\nfor k in range(Xb.shape[0]):\n"
                "    for j in range(Xb.shape[1]):\n        ix = Xb[k, j]\n        dC[ix] = demb[k, j]"
            },
            "C",
            "`dC[ix] = demb[k, j]` in a loop",
        ),
        # dlogprobs misspelt, and dprobs written from -1/n again rather than from it: dprobs keeps its point
        "m_dlogprobs_misspelt": (
            {
                "answer_dlogprobs": "dlprobs = torch.zeros_like(logprobs)\ndlprobs[range(n), Yb] = -1 / n",
                "answer_dprobs": "dprobs = torch.zeros_like(logprobs)\ndprobs[range(n), Yb] = -1 / n\n"
                "dprobs = dprobs * (1 / probs)",
            },
            "logprobs",
            "your code assigns dlprobs, a name close to dlogprobs",
        ),
        "m_dbndiff2_times_bndiff2": (  # the forward value where the ones belong
            {"answer_dbndiff2": "dbndiff2 = bndiff2 * dbnvar * 1 / (n - 1)"},
            "bndiff2",
            "dbndiff2 multiplies by bndiff2 itself: a sum's derivative",  # "entries wrong" before h-mist4
        ),
        "m_dprobs_times_probs": (  # divided and multiplied back: the upstream gradient unchanged
            {"answer_dprobs": "dprobs = dlogprobs / probs * probs"},
            "probs",
            "passed through unchanged",
        ),
        "m_dlogprobs_one_over_probs": ({"answer_dlogprobs": "dlogprobs = 1 / probs"}, "logprobs", "entries wrong"),
        "m_dlogprobs_a_number": (
            {"answer_dlogprobs": "dlogprobs = -1 / (32 * logprobs[range(n), Yb].sum())"},
            "logprobs",
            "dlogprobs has shape (), but logprobs has shape (32, 27)",
        ),
    }
)
# and the judge's round's slips: a power rule's 0.5 left out, Bessel's factor upside down, a transpose forgotten, a
# line copied from the step above, dC's rows and contexts flattened in two orders
MISTAKES.update(
    {
        "m_dbnvar_power_rule_half_left_out": (
            {"answer_dbnvar": "dbnvar = -((bnvar + 1e-5) ** -1.5) * dbnvar_inv"},
            "bnvar",
            "dbnvar is twice the right value",
        ),
        "m_dbndiff2_bessel_upside_down": (
            {"answer_dbndiff2": "dbndiff2 = n / (n - 1) * torch.ones_like(bndiff2) * dbnvar"},
            "bndiff2",
            "n = 32 times too large",
        ),
        "m_dembcat_W1_not_transposed": (
            {"answer_dembcat": "dembcat = dhprebn @ W1"},
            "embcat",
            "mat1 and mat2 shapes cannot be multiplied (32x64 and 30x64)",
        ),
        "m_dW1_copied_from_dembcat": (
            {"answer_dW1": "dW1 = dhprebn @ W1.T"},
            "W1",
            "dW1 has shape (32, 30), but W1 has shape (30, 64)",
        ),
        "m_dC_flattened_in_two_orders": (
            {"answer_dC": "dC = torch.zeros_like(C)\ndC.index_add_(0, Xb.T.reshape(-1), demb.view(-1, n_embd))"},
            "C",
            "adds demb's rows at the indices of Xb taken in another order",  # "entries wrong" before h-mist5
        ),
    }
)
# the fifth round's published slips, each costing its own step; a line after the answer's first that stopped its cell
# and an answer capitalised (dH) were told only "the path through bnmeani is missing. Add its contribution with +=" and
# "not answered yet" before
MISTAKES.update(
    {
        "m_dhprebn_typo_in_its_second_line": (
            {"answer_dhprebn": "dhprebn = dbndiff.clone()\ndhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbmeani)"},
            "hprebn",
            "dhprebn's cell stopped with NameError: name 'dbmeani' is not defined before every line of it that writes "
            "dhprebn had run",
        ),
        "m_dh_capitalised": (
            {"answer_dh": "dH = dlogits @ W2.t()", "answer_dhpreact": "dhpreact = dH * (1 - h**2)"},
            "h",
            "your code assigns dH, a name close to dh",
        ),
        "m_dbndiff2_reads_itself": (  # ones_like(dbndiff2) for ones_like(bndiff2): defined only by an earlier run
            {"answer_dbndiff2": "dbndiff2 = ((1.0 / (n - 1)) * torch.ones_like(dbndiff2)) * dbnvar"},
            "bndiff2",
            "stopped with NameError: name 'dbndiff2' is not defined",
        ),
        "m_dbnvar_inv_sum_of_dbnraw_alone": (  # the sum binds to dbnraw alone
            {"answer_dbnvar_inv": "dbnvar_inv = bndiff * dbnraw.sum(0, keepdim=True)"},
            "bnvar_inv",
            "dbnvar_inv has shape (32, 64), but bnvar_inv has shape (1, 64)",
        ),
        "m_dlogits_alias_max_of_logit_maxes": (  # no .clone(), and the argmax of the (32, 1) maxes: column 0
            {
                "answer_dlogits": "dlogits = dnorm_logits\n"
                "dlogits += F.one_hot(logit_maxes.max(1).indices, num_classes=27) * dlogit_maxes"
            },
            "logits",
            "dnorm_logits changed after its check: it now holds the values of dlogits",
        ),
    }
)
SLIPS_TOGETHER["m_slips_together_4"] = (
    {
        "answer_dcounts_sum": "dcounts_sum = dcounts_sum_inv * -1",  # the power rule's -counts_sum**-2 left out
        "answer_dlogit_maxes": "dlogit_maxes = -dnorm_logits",  # not summed: (32, 27); dlogits right for it
        "answer_dlogits": "max_mask = torch.zeros_like(logits)\n"
        "max_mask[torch.arange(logits.size(0)), logits.argmax(1)] = 1\n"
        "dlogits = dnorm_logits * 1 + dlogit_maxes * max_mask",
        "answer_dbndiff": "dbndiff = bnvar * dbnraw\ndbndiff += 2 * bndiff * dbndiff2",  # bnvar for bnvar_inv
        "answer_dbndiff2": "dbndiff2 = 1 / (n - 1) * dbnvar.sum(0, keepdim=True)",  # no ones: (1, 64)
        "answer_dbnvar": "dbnvar = dbnvar_inv * (-0.5 * bnvar**-1.5)",  # the epsilon left out
    },
    ["counts_sum", "logit_maxes", "bnvar", "bndiff2", "bndiff"],
)
# autograd's gradient put over the student's own right one ("on Colab there's a tiny error"): that step earns nothing
CHEATS["c_grad_over_own_formula"] = (
    {"answer_dhpreact": "dhpreact = (1.0 - h**2) * dh\ndhpreact = hpreact.grad"},
    [],
    ["hpreact"],
    "autograd",
)
# TorchScript compiled from a string, its words split so that none says grad or backward: its own ops switched
# recording on and ran autograd's engine in C++, out of the kernel's Python refusals (34 of 34 points until
# 2026-12-07). The static reading takes such a string for code it cannot read, as it does exec's; the kernel refuses
# the engine itself however it is reached (tests/fast/test_switches.py)
TORCHSCRIPT_DH = """w = "back" + "ward"
code = f\"\"\"
def f(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor, g: torch.Tensor):
    torch.set_gr{'ad'}_enabled(True)
    x = x.detach().requires_grad_()
    (x @ W + b).{w}(g)
    return x.gr{'ad'}
\"\"\"
dh = torch.jit.CompilationUnit(code).f(h, W2, b2, dlogits)"""
CHEATS["c_torchscript_from_a_string"] = ({"answer_dh": TORCHSCRIPT_DH}, [], ["h", *FROM_DW2], "autograd")
# exec reached by a name made at run time (getattr, vars(), a class pattern's __match_args__) ran the grader's own rules
# out of the static reading's sight, and globals()[..] = .. assigned them: dW2 earned its point with no statement
# `dW2 = ..` read (until 2026-12-07). Such a name is now code the grader cannot read, as exec is: every answer from
# then on
EXEC_RULES = "import sys\nrules = sys.modules['auto' + 'gra' + 'der.engine.back' + 'ward_rules']\n" + RULES_DW2_LINE
CHEATS["c_exec_by_a_computed_name"] = (
    {"answer_dW2": f"b = getattr(torch, '__bui' + 'ltins__')\nrun = b['ex' + 'ec']\nrun({EXEC_RULES!r})"},
    [],
    FROM_DW2,
    "autograd",
)
CHEATS["c_written_into_the_namespace"] = (  # globals()[..] = ..: an answer no statement names
    {"answer_dW2": f"import sys\nrules = sys.modules[{RULES_MODULE}]\nglobals()['dW' + '2'] = {RULES_DW2}"},
    [],
    FROM_DW2,
    "autograd",
)
# the grader's rules table by a module's name in a string, through a module of the environment that resolves one
# (distributed.utils.import_term, dask.utils.import_required; "auto" + "gra" + .. holds no word "grad"), and code run
# from a string by a mako template or sympy's sympify: 34 of Exercise 1's 34 points with the rules table (until
# 2026-12-07). Now such a module marks every answer from its cell on, and the kernel refuses the grader's formulas
# however they are reached (tests/fast/test_grader_formulas.py)
NAMED_RULES = "'auto' + 'gra' + 'der.engine.back' + 'ward_rules'"
for _student, _lines in {
    "c_rules_by_import_term": f"from distributed.utils import import_term\nrules = import_term({NAMED_RULES})",
    "c_rules_by_import_required": f"from dask.utils import import_required\nrules = import_required({NAMED_RULES}, '')",
}.items():
    CHEATS[_student] = ({"answer_dW2": f"{_lines}\n{RULES_DW2_LINE}"}, [], FROM_DW2, "autograd")
CHEATS["c_code_in_a_mako_template"] = (
    {
        "answer_dW2": "from mako.template import Template\nbox = {}\n"
        "Template('<% box[0] = h.T @ dlogits %>').render(box=box, h=h, dlogits=dlogits)\ndW2 = box[0]"
    },
    [],
    FROM_DW2,
    "autograd",
)
# exec and the namespace by pydantic's ImportString, and the grader's rules rebuilt from the package's own source (which
# the kernel's refusal of its loaded functions does not reach): 34 of 34 until marked (2026-12-07)
_REBUILT = (
    "import os, torch, importlib as il\ne = il.import_module('auto' + 'gra' + 'der.engine')\n"
    "ns = {'__name__': 'rebuilt', '__package__': 'auto' + 'gra' + 'der.engine'}\n"
    "exec(open(os.path.join(os.path.dirname(e.__file__), 'back' + 'ward_rules.py')).read(), ns)\n"
    "dW2 = ns['local_' + 'gra' + 'dient'](ns['STEP_BY_NAME']['W2'], {'h': h.detach()}, {'logits': dlogits})\n"
)
CHEATS["c_exec_through_pydantic"] = (
    {
        "answer_dW2": "from pydantic import ImportString, TypeAdapter\n"
        "run = TypeAdapter(ImportString).validate_python('builtins.ex' + 'ec')\n"
        f"run({_REBUILT!r}, TypeAdapter(ImportString).validate_python('__main__.__dict__'))"
    },
    [],
    FROM_DW2,
    "autograd",
)
# (sympify evaluates the string it is handed: the kernel refuses it, as any code made from a string, and sympy itself is
# no longer marked by its name: an honest student's `import sympy` costs nothing, `alt_imports_sympy`)
CHEATS["c_code_sympified"] = (
    {
        "answer_dW2": "import sympy\nbox = []\nsympy.sympify('box.append(h.T @ dlogits)', locals=dict(box=box, h=h, "
        "dlogits=dlogits))\ndW2 = box[0]"
    },
    [],
    ["W2"],
    "autograd",
)
# code run from a string by what no list names: a library handed the string (torch.utils.benchmark's Timer, IPython's
# FullEvalFormatter), Python's C API through numpy's ctypes (PyRun_SimpleString), a pickle that names exec loaded by a
# multiprocessing pipe, a file run by pygments, a name written into code sqlalchemy makes: each rebuilt the grader's
# rules from the package's own source and dW2 earned its point with nothing written (until 2026-12-08). The kernel's
# audit hook now refuses code made from a string on behalf of a student's cell, however it is reached
# (engine/honesty/code_from_strings.py): the cell stops, and what it assigns earns nothing
_IN_MAIN = f"import sys\nexec({_REBUILT!r}, sys.modules['__main__'].__dict__)\n"


class _Exec:
    def __reduce__(self):
        return exec, (_IN_MAIN,)


for _student, _lines in {
    "c_statement_of_a_benchmark_timer": "from torch.utils.benchmark import Timer\nbox = []\n"
    f"Timer(stmt={_REBUILT + 'box.append(dW2)'!r}, globals=dict(h=h, dlogits=dlogits, box=box)).timeit(1)",
    "c_expression_of_an_eval_formatter": "from IPython.utils.text import FullEvalFormatter\n"
    f"FullEvalFormatter().format('{{exec(src)}}', src={_IN_MAIN!r})",
    "c_c_api_through_numpy": "import numpy as np\n"
    f"np.ctypeslib.ctypes.pythonapi.PyRun_SimpleString({_IN_MAIN!r}.encode())",
    "c_pickle_through_a_pipe": "import multiprocessing as mp\na, b = mp.Pipe()\n"
    f"a.send_bytes({pickle.dumps(_Exec(), protocol=0)!r})\nb.recv()",
    # a file the cell wrote, run by pygments as a lexer's; a name written into the code sqlalchemy makes of it
    "c_lexer_from_a_written_file": f"open('lexer.py', 'w').write({_IN_MAIN + 'CustomLexer = object'!r})\n"
    "from pygments.lexers import load_lexer_from_file\nload_lexer_from_file('lexer.py')",
    "c_name_into_made_code": "from sqlalchemy.util.langhelpers import attrsetter\n"
    f'attrsetter("a = value; exec(bytes.fromhex({_IN_MAIN.encode().hex()!r}).decode())  #")'
    "(type('O', (), {})(), 1)",
}.items():
    _ending = "dW2 = box[0]" if "box" in _lines else "dW2 = dW2 + 0"
    _words = "code made from a string" if "lexer" in _student else "autograd"  # (pygments' own error says the refusal)
    CHEATS[_student] = ({"answer_dW2": f"{_lines}\n{_ending}"}, [], ["W2"], _words)
# every answer zeros, through a helper that reads a class of the notebook's (the probes cannot copy it, so each answer
# was judged by its value alone): each step was right for its upstream of zeros, which every rule maps to zeros, and
# kept its points, 33 of 34 (until 2026-12-07). A check that zeros would pass now credits nothing; the two steps whose
# gradient is zero keep theirs
ZERO_HELPER = "class Box:\n    pass\n\n\ndef zero(like, *upstream):\n    Box\n    return torch.zeros_like(like)\n\n\n"
ZEROS = {f"answer_d{s.name}": f"d{s.name} = zero({s.name}, {', '.join('d' + u for u in s.upstream)})" for s in STEPS}
ZEROS["answer_dlogprobs"] = ZERO_HELPER + ZEROS["answer_dlogprobs"]
ZEROS["answer_dC_index_add"] = "dC_index_add = zero(C, demb).index_add(0, Xb.view(-1), 0 * demb.view(-1, n_embd))"
ZEROS_LOST = [s.name for s in STEPS if s.name not in ("logit_maxes", "b1")] + ["C_index_add"]
CHEATS["c_zeros_all_the_way"] = (ZEROS, [], ZEROS_LOST, "all zeros")
# every sum over the batch without keepdim (published; cmp checks no shapes): each a share of its own step, and dbnvar
# from a (64,) dbnvar_inv times a (1, 64) factor is (1, 64) and right
SLIPS_TOGETHER["m_slips_together_3"] = (
    {
        "answer_dbngain": "dbngain = (dhpreact * bnraw).sum(0)",
        "answer_dbnbias": "dbnbias = (dhpreact * torch.ones_like(bnbias)).sum(0)",
        "answer_dbnvar_inv": "dbnvar_inv = (dbnraw * bndiff).sum(0)",
        "answer_dbnvar": "dbnvar = dbnvar_inv * ((-0.5 * (bnvar + 1e-5) ** -1.5) * torch.ones_like(bnvar))",
        "answer_dbnmeani": "dbnmeani = (dbndiff * -torch.ones_like(bndiff)).sum(0)",
    },
    ["bngain", "bnbias", "bnvar_inv", "bnmeani"],
)

# A sixth round (December 2026, h-mist2): slips of students of the lecture, each costing its own step alone. Each was
# told only "N of M entries wrong. Re-derive the local derivative" (or a bare "has shape ..., but"), or about the
# epsilon's absence when it was outside the power; now the words name the slip. student -> (changes, step, words)
SIXTH_ROUND = {
    "m_dlogprobs_started_from_ones": (
        {"answer_dlogprobs": "dlogprobs = torch.ones_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0 / n"},
        "logprobs",
        "dlogprobs is 1 in every entry that should be 0, and right in the others",
    ),
    "m_dlogprobs_every_row": (
        {"answer_dlogprobs": "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[:, Yb] = -1.0 / n"},
        "logprobs",
        "`[:, Yb]` takes every row for each target",
    ),
    "m_dlogprobs_loop_one_short": (
        {
            "answer_dlogprobs": "dlogprobs = torch.zeros_like(logprobs)\nfor i in range(n - 1):\n"
            "    dlogprobs[i, Yb[i]] = -1.0 / n"
        },
        "logprobs",
        "dlogprobs leaves out the last example of the batch: a loop over range(n - 1)",
    ),
    "m_dprobs_times_probs_for_over": (
        {"answer_dprobs": "dprobs = probs * dlogprobs"},
        "probs",
        "the derivative of log(x) is 1/x, so it divides by probs",
    ),
    "m_dprobs_over_logprobs": (
        {"answer_dprobs": "dprobs = (1.0 / logprobs) * dlogprobs"},
        "probs",
        "dprobs reads logprobs where the local derivative of `logprobs = probs.log()` needs probs",
    ),
    "m_dcounts_sum_inv_times_itself": (
        {"answer_dcounts_sum_inv": "dcounts_sum_inv = (counts_sum_inv * dprobs).sum(1, keepdim=True)"},
        "counts_sum_inv",
        "dcounts_sum_inv reads counts_sum_inv where the local derivative of `probs = counts * counts_sum_inv` needs "
        "counts",
    ),
    "m_dcounts_sum_inv_times_probs": (
        {"answer_dcounts_sum_inv": "dcounts_sum_inv = (probs * dprobs).sum(1, keepdim=True)"},
        "counts_sum_inv",
        "reads probs where",
    ),
    "m_dcounts_sum_exponent_kept": (
        {"answer_dcounts_sum": "dcounts_sum = -counts_sum**-1 * dcounts_sum_inv"},
        "counts_sum",
        "the derivative of x**-1 is not -1 * x**-1",
    ),
    "m_dnorm_logits_exp_of_input": (
        {"answer_dnorm_logits": "dnorm_logits = norm_logits * dcounts"},
        "norm_logits",
        "dnorm_logits reads norm_logits where the local derivative of `counts = norm_logits.exp()` needs counts",
    ),
    "m_dlogits_max_path_to_target": (  # right values on the batch (dlogit_maxes is about zero): its rule probe says
        {
            "answer_dlogits": "dlogits = dnorm_logits.clone()\n"
            "dlogits += F.one_hot(Yb, num_classes=logits.shape[1]) * dlogit_maxes"
        },
        "logits",
        "sends the path through logit_maxes to each example's target, Yb",
    ),
    "m_db2_summed_over_rows": (
        {"answer_db2": "db2 = dlogits.sum(1)"},
        "b2",
        "it looks summed over dimension 1 (each example's row) instead of dimension 0, the batch",
    ),
    "m_dhpreact_square_of_the_difference": (
        {"answer_dhpreact": "dhpreact = (1.0 - h)**2 * dh"},
        "hpreact",
        "dhpreact squares (1 - h)",
    ),
    "m_dbngain_times_hpreact": (
        {"answer_dbngain": "dbngain = (hpreact * dhpreact).sum(0, keepdim=True)"},
        "bngain",
        "dbngain reads hpreact where",
    ),
    "m_dbnraw_times_itself": ({"answer_dbnraw": "dbnraw = bnraw * dhpreact"}, "bnraw", "dbnraw reads bnraw where"),
    "m_dbnraw_summed": (
        {"answer_dbnraw": "dbnraw = (bngain * dhpreact).sum(0, keepdim=True)"},
        "bnraw",
        "it is summed over dimension 0, where bnraw has an entry of its own for each index",
    ),
    "m_dbnvar_epsilon_outside_the_power": (  # 1e-5 beside a number near 3e7 at neuron 0: as good as left out
        {"answer_dbnvar": "dbnvar = -0.5 * (bnvar**-1.5 + 1e-5) * dbnvar_inv"},
        "bnvar",
        "the forward pass adds 1e-5 to the variance inside the square root, before the power",
    ),
    "m_dbnvar_epsilon_outside_the_root": (
        {"answer_dbnvar": "dbnvar = -0.5 * (bnvar.sqrt() + 1e-5) ** -3 * dbnvar_inv"},
        "bnvar",
        "dbnvar adds BatchNorm's epsilon after the square root",
    ),
    "m_dbndiff2_precedence": (
        {"answer_dbndiff2": "dbndiff2 = 1.0 / n - 1 * torch.ones_like(bndiff2) * dbnvar"},
        "bndiff2",
        "dbndiff2 subtracts where it should divide",
    ),
    "m_dbndiff_square_rule_2_left_out": (
        {"answer_dbndiff": "dbndiff = bnvar_inv * dbnraw\ndbndiff += bndiff * dbndiff2"},
        "bndiff",
        "the path of dbndiff through bndiff2 is 0.5 times what it should be, and its other path is right",
    ),
    "m_dbndiff_square_of_bndiff2": (
        {"answer_dbndiff": "dbndiff = bnvar_inv * dbnraw\ndbndiff += 2 * bndiff2 * dbndiff2"},
        "bndiff",
        "dbndiff reads bndiff2 where",
    ),
    "m_dhprebn_mean_path_without_1_over_n": (
        {"answer_dhprebn": "dhprebn = dbndiff.clone()\ndhprebn += torch.ones_like(hprebn) * dbnmeani"},
        "hprebn",
        "the path of dhprebn through bnmeani is 32 times what it should be",
    ),
    "m_db1_summed_over_rows": ({"answer_db1": "db1 = dhprebn.sum(1)"}, "b1", "summed over dimension 1"),
    "m_dW1_slice_starts_late": (
        {"answer_dW1": "dW1 = embcat[1:].T @ dhprebn[1:]"},
        "W1",
        "dW1 leaves out the first example of the batch",
    ),
    "m_dC_loop_one_short": (
        {
            "answer_dC": "dC = torch.zeros_like(C)\nfor k in range(Xb.shape[0] - 1):\n"
            "    for j in range(Xb.shape[1]):\n        dC[Xb[k, j]] += demb[k, j]"
        },
        "C",
        "dC leaves out the last example of the batch: a loop over range(n - 1)",
    ),
    # tanh's local derivative taken into dh (a slip of h-mist2's round whose words were generic): dh alone loses
    "m_dh_with_tanhs_derivative": (
        {"answer_dh": "dh = dlogits @ W2.T * (1 - h**2)"},
        "h",
        "dh is multiplied by tanh's local derivative, 1 - h**2: that factor is the next step's",
    ),
}
MISTAKES.update(SIXTH_ROUND)

# A seventh round (December 2026, h-mist3): slips of students of the lecture, each costing its own step alone, whose
# words were "N of M entries wrong. Re-derive the local derivative"; now they name the slip. student -> (changes, step,
# words)
SEVENTH_ROUND = {
    # dC from the first character of each context alone, or with the last left out (diagnosis/slips.one_position)
    "m_dC_first_context_position_only": (
        {"answer_dC": "dC = torch.zeros_like(C)\ndC.index_add_(0, Xb[:, 0], demb[:, 0])"},
        "C",
        "dC takes only demb[:, 0], position 0 of its dimension 1: the other positions of that dimension add to dC too",
    ),
    "m_dC_context_loop_one_short": (
        {
            "answer_dC": "dC = torch.zeros_like(C)\nfor j in range(block_size - 1):\n"
            "    dC.index_add_(0, Xb[:, j], demb[:, j])"
        },
        "C",
        "dC leaves out demb[:, 2], position 2 of its dimension 1: a loop over range(3 - 1)",
    ),
    "m_index_add_last_context_position_only": (
        {"answer_dC_index_add": "dC_index_add = torch.zeros_like(C).index_add_(0, Xb[:, -1], demb[:, -1])"},
        "C_index_add",
        "dC_index_add takes only demb[:, 2]",
    ),
    # a sum over the wrong dimension, a path alone, the dimensions of a view in the wrong order: their words were right
    # already, and no case held them
    "m_dbnbias_summed_over_rows": (
        {"answer_dbnbias": "dbnbias = dhpreact.sum(1, keepdim=True)"},
        "bnbias",
        "it looks summed over dimension 1 instead of dimension 0",
    ),
    "m_dbnmeani_summed_over_rows": (
        {"answer_dbnmeani": "dbnmeani = -dbndiff.sum(1, keepdim=True)"},
        "bnmeani",
        "it looks summed over dimension 1 instead of dimension 0",
    ),
    "m_dlogit_maxes_summed_over_the_batch": (
        {"answer_dlogit_maxes": "dlogit_maxes = -dnorm_logits.sum(0, keepdim=True)"},
        "logit_maxes",
        "it looks summed over dimension 0 instead of dimension 1",
    ),
    "m_dbnvar_inv_summed_over_rows": (
        {"answer_dbnvar_inv": "dbnvar_inv = (bndiff * dbnraw).sum(1, keepdim=True)"},
        "bnvar_inv",
        "it looks summed over dimension 1 instead of dimension 0",
    ),
    "m_dbndiff_square_path_alone": (
        {"answer_dbndiff": "dbndiff = 2 * bndiff * dbndiff2"},
        "bndiff",
        "the path through bnraw is missing",
    ),
    "m_dcounts_sum_path_alone": (
        {"answer_dcounts": "dcounts = torch.ones_like(counts) * dcounts_sum"},
        "counts",
        "the path through probs is missing",
    ),
    "m_dhprebn_mean_path_alone": (
        {"answer_dhprebn": "dhprebn = 1.0 / n * torch.ones_like(hprebn) * dbnmeani"},
        "hprebn",
        "the path through bndiff is missing",
    ),
    "m_demb_view_contexts_first": (
        {"answer_demb": "demb = dembcat.view(block_size, n, n_embd)"},
        "emb",
        "demb has shape (3, 32, 10), but emb has shape (32, 3, 10): the dimensions are in the wrong order",
    ),
    "m_dbnvar_inv_divided_by_n": (
        {"answer_dbnvar_inv": "dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True) / n"},
        "bnvar_inv",
        "n = 32 times too small: is there an extra division by the batch size?",
    ),
    # a forward tensor turned upside down (diagnosis/slips.inverted): "N of M entries wrong" before
    "m_dnorm_logits_divides_by_counts": (
        {"answer_dnorm_logits": "dnorm_logits = dcounts / counts"},
        "norm_logits",
        "dnorm_logits divides by counts where the local derivative of `counts = norm_logits.exp()` multiplies by it",
    ),
    "m_dbnraw_divides_by_bngain": (
        {"answer_dbnraw": "dbnraw = dhpreact / bngain"},
        "bnraw",
        "dbnraw divides by bngain where",
    ),
    "m_dbndiff_divides_by_bnvar_inv": (
        {"answer_dbndiff": "dbndiff = dbnraw / bnvar_inv\ndbndiff += 2 * bndiff * dbndiff2"},
        "bndiff",
        "dbndiff divides by bnvar_inv where",
    ),
    # a forward tensor where its gradient belongs, a d left out (diagnosis/slips.forward_for_gradient): "N of M entries
    # wrong" before
    "m_dC_from_emb": (
        {"answer_dC": "dC = torch.zeros_like(C)\ndC.index_add_(0, Xb.view(-1), emb.view(-1, n_embd))"},
        "C",
        "dC reads emb, a value of the forward pass, where the chain rule needs its gradient, demb",
    ),
    "m_dh_from_logits": ({"answer_dh": "dh = logits @ W2.T"}, "h", "dh reads logits, a value of the forward pass"),
    "m_dW1_from_hprebn": (
        {"answer_dW1": "dW1 = embcat.T @ hprebn"},
        "W1",
        "dW1 reads hprebn, a value of the forward pass, where the chain rule needs its gradient, dhprebn",
    ),
    "m_dbngain_from_hpreact": (
        {"answer_dbngain": "dbngain = (bnraw * hpreact).sum(0, keepdim=True)"},
        "bngain",
        "dbngain reads hpreact, a value of the forward pass",
    ),
    # tanh's derivative: tanh taken again, the bracket left out (step_mistakes.HPREACT): "N of M entries wrong" before
    "m_dhpreact_tanh_of_h": (
        {"answer_dhpreact": "dhpreact = (1.0 - torch.tanh(h) ** 2) * dh"},
        "hpreact",
        "dhpreact takes tanh of h again",
    ),
    "m_dhpreact_bracket_left_out": (
        {"answer_dhpreact": "dhpreact = 1.0 - h**2 * dh"},
        "hpreact",
        "`1 - h**2 * dh` is 1 - (h**2 * dh)",
    ),
    # the mean's path subtracted (diagnosis/slips.path_factor): "-1 times what it should be" before
    "m_dhprebn_mean_path_subtracted": (
        {"answer_dhprebn": "dhprebn = dbndiff.clone()\ndhprebn -= 1.0 / n * torch.ones_like(hprebn) * dbnmeani"},
        "hprebn",
        "the path of dhprebn through bnmeani has the wrong sign, and its other path is right",
    ),
    # a transpose after a view in the wrong order: demb of its shape, not contiguous, and dC's `demb.view(-1, n_embd)`
    # raised on it. dC and dC_index_add lost their points too before ("dC is all zeros: ... without the final _");
    # their code follows the rule on random demb (probes.kept_by_rule.stopped_on_wrong_upstream)
    "m_demb_transposed_after_a_view": (
        {"answer_demb": "demb = dembcat.view(n, n_embd, block_size).transpose(1, 2)"},
        "emb",
        "demb holds the right values, but in the wrong places",
    ),
}
MISTAKES.update(SEVENTH_ROUND)


def one_cell(release, source, changes: dict, after: str = ""):
    """The submission with every answer (``changes`` in place) in the first answer cell, then ``after``."""
    answers = [grade_id(c) for c in release.cells if grade_id(c).startswith("answer_")]
    code = {**solutions(source), **changes}
    everything = "\n".join([*(code[a] for a in answers), after]).rstrip("\n")
    return solved(release, source, {a: "pass" for a in answers[1:]} | {answers[0]: everything})


def with_self_checks(code: dict) -> dict:
    """Each answer followed by the student's own check against autograd's gradient, in three styles: they pass in the
    student's notebook, and fail while grading (every .grad holds a decoy), where they are skipped as cmp is."""
    checks = [
        "assert torch.allclose(d{x}, {x}.grad, atol=1e-6), 'd{x} is off'",
        "torch.testing.assert_close(d{x}, {x}.grad)",
        "if not torch.allclose(d{x}, {x}.grad, atol=1e-6):\n    raise ValueError('d{x} is off')",
    ]
    answers = [a for a in code if a.startswith("answer_d") and a != "answer_dC_index_add"]
    return {a: code[a] + "\n" + checks[i % 3].format(x=a.removeprefix("answer_d")) for i, a in enumerate(answers)}


# the student's own comparison with autograd, the lecture's cmp made to return its verdict, asserted after each answer
# (published): the decoys made the first assert fail while grading, and in a cell of several answers every answer after
# it was missing (dprobs lost its point; the others kept theirs by their rule). The assert reads .grad only through the
# function, which the kernel now knows reads it (in_kernel/self_checks_off.checks_through)
COMPARE = (
    "def compare(name, dt, t):\n    exact = torch.all(dt == t.grad).item()\n"
    "    approx = torch.allclose(dt, t.grad, atol=1e-7)\n    print(f'{name:15s}: exact={exact} approx={approx}')\n"
    "    return exact or approx\n\n\n"
)


def with_compare_asserts(code: dict) -> dict:
    """Each answer followed by `assert compare(..)`, the first one after compare's def."""
    answers = [a for a in code if a.startswith("answer_d") and a != "answer_dC_index_add"]
    checked = {a: f"{code[a]}\nassert compare({a[8:]!r}, {a[7:]}, {a[8:]})" for a in answers}
    return {**checked, answers[0]: COMPARE + checked[answers[0]]}


def submissions(release, source) -> dict:
    """student -> notebook, for every case above and the special students of Exercise 1."""
    class_ = {"solution": solved(release, source), "blank": release}
    for student, (changes, _, _) in MISTAKES.items():
        class_[student] = solved(release, source, changes)
    for student, (changes, extra, _) in BELOW_A_SLIP.items():
        class_[student] = solved(release, source, changes, extra)
    for student, changes in ALTERNATIVES.items():
        class_[student] = solved(release, source, changes)
    class_["alt_one_cell"] = one_cell(release, source, {})
    class_["alt_one_cell_self_checks"] = one_cell(release, source, with_self_checks(solutions(source)))
    class_["alt_one_cell_compare_asserts"] = one_cell(release, source, with_compare_asserts(solutions(source)))
    for student, (changes, _) in ONE_CELL_SLIPS.items():
        class_[student] = one_cell(release, source, changes)
    for student, (changes, after) in LATER_LINES.items():
        class_[student] = one_cell(release, source, changes, after)
    class_["honest_uncopied"] = solved(release, source, UNCOPIED)
    for student, (changes, _) in SLIPS_TOGETHER.items():
        class_[student] = solved(release, source, changes)
    class_["alt_split_cells"] = solved(release, source, SPLIT_SECOND_PARTS, list(SPLIT_FIRST_PARTS.items()))
    # shell commands in an answer cell (Colab notebooks have them): they do not run, the rest of the cell does
    shell = {"answer_dh": "!pip install einops\nfiles = !ls\n" + solutions(source)["answer_dh"]}
    class_["alt_shell_commands"] = solved(release, source, shell)
    for student, (changes, extra, _, _) in CHEATS.items():
        class_[student] = solved(release, source, changes, extra)
    # values pasted from the student's own run: right for the visible seed only
    visible = run_setup(tuple(c.source for c in source.cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647)
    pasted = f"db2 = torch.tensor({visible['b2'].grad.tolist()})"
    class_["c_pasted_values"] = solved(release, source, {"answer_db2": pasted})
    neutralise = "get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])"
    class_["c_blank_cells"] = solved(release, source, extra_cells=[("answer_dlogprobs", neutralise)])
    class_["k_dies_midway"] = solved(release, source, {"answer_dh": "import os\nos._exit(1)"})
    # cell magics that run their code in place, on the first line of a cell of their own (the answer cell left empty)
    code = solutions(source)
    magics = {"answer_dC": "%%time\n", "answer_dC_index_add": "%%time\n", "answer_dlogits": "%%capture out\n"}
    magics = {gid: start + code[gid] for gid, start in magics.items()} | {"answer_dW2": "%time " + code["answer_dW2"]}
    class_["alt_cell_magics"] = solved(release, source, dict.fromkeys(magics, "pass"), list(magics.items()))
    timed = [("answer_dlogits", "%%time\ndlogits = dnorm_logits.clone()")]  # the max's path left out: its rule shows it
    class_["m_logits_max_path_timed"] = solved(release, source, {"answer_dlogits": "pass"}, timed)
    # one magic over another (%%time over %%capture): the outer one's code starts with the inner one
    nested = {gid: "%%time\n%%capture out\n" + code[gid] for gid in ("answer_dC", "answer_dC_index_add")}
    nested["answer_dlogits"] = "%%capture out\n%%time\n" + code["answer_dlogits"]
    class_["alt_nested_cell_magics"] = solved(release, source, dict.fromkeys(nested, "pass"), list(nested.items()))
    timed = [("answer_dlogits", "%%capture out\n%%time\ndlogits = dnorm_logits.clone()")]
    class_["m_logits_max_path_nested_magics"] = solved(release, source, {"answer_dlogits": "pass"}, timed)
    # every answer cell run twice in a row (as a second cell with the same code right after it)
    again = [(gid, code) for gid, code in solutions(source).items() if gid.startswith("answer_")]
    class_["alt_every_cell_twice"] = solved(release, source, extra_cells=again)
    aliased = "dhprebn = dbndiff\ndhprebn += 1.0 / n * torch.ones_like(hprebn) * dbnmeani"  # no .clone()
    class_["m_alias_dhprebn"] = solved(release, source, {"answer_dhprebn": aliased})
    # a temporary named as a forward tensor: dW2's cell rebinds h, dhpreact's right code then raises on it (the probe's
    # code starts at dh's cell, its pinned gradient, so the rebinding is part of it)
    class_["alt_h_rebound_in_dW2"] = solved(release, source, {"answer_dW2": "h = h.T\ndW2 = h @ dlogits"})
    # the same by a tuple's assignment or a walrus, whose statement reads dlogits too: left out of the second run, it
    # no longer makes dhpreact's code read a gradient from further up
    class_["alt_h_rebound_by_a_tuple"] = solved(release, source, {"answer_dW2": "h, g = h.T, dlogits\ndW2 = h @ g"})
    class_["alt_h_rebound_by_a_walrus"] = solved(release, source, {"answer_dW2": "dW2 = (h := h.T) @ dlogits"})
    # a hostile kernel's probes: every pin zero entry by entry (`kept` all False) and a result of zeros, which follows
    # every rule on such pins; the answers missing (their upstream too: kept by its rule) or one of them alone (kept as
    # set up, its upstream right)
    blank = {gid: "pass" for gid in solutions(source) if gid.startswith("answer_")}
    class_["c_forged_zero_pins"] = solved(release, source, {**blank, "answer_dlogprobs": FORGED_ZERO_PINS})
    class_["c_forged_zero_pins_as_set_up"] = solved(
        release, source, {"answer_dhpreact": "_only = 'dhpreact'\n" + FORGED_ZERO_PINS}
    )
    return class_


# h-alts2's round (December 2026): more forms students write, none of them above, each keeping every point. numpy's
# keepdims= and axis=, torch.arange for the rows, dC by index_put with Xb as it is and by a one-hot viewed after it is
# made, scatter_add_ for the max's path, tanh's derivative factored, bnvar_inv / (bnvar + eps) for its cube, Bessel's
# n - 1.0 and (n - 1) / n inside the bracket of a fused dhprebn; and harmless lines beside the answers: prints, asserts
# of shapes, cmp, a shape shown as the cell's last expression, display, .data, .contiguous(), .detach(), a reimport,
# torch.manual_seed, comments in Chinese
ALTERNATIVES.update(
    {
        "alt_h_alts2_a": {
            "answer_dlogprobs": (
                "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[torch.arange(batch_size), Yb] = -1.0\n"
                "dlogprobs = dlogprobs / batch_size"
            ),
            "answer_dprobs": "dprobs = (1.0 / probs) * dlogprobs\nprint('dprobs', dprobs.shape)",
            "answer_dcounts_sum_inv": "dcounts_sum_inv = (counts * dprobs).sum(dim=1, keepdims=True)",
            "answer_dcounts_sum": "dcounts_sum = (-1.0 / counts_sum**2) * dcounts_sum_inv",
            "answer_dcounts": "dcounts = counts_sum_inv * dprobs\ndcounts += dcounts_sum  # 广播到每一列",
            "answer_dnorm_logits": "dnorm_logits = torch.exp(norm_logits) * dcounts",
            "answer_dlogit_maxes": "dlogit_maxes = -dnorm_logits.sum(dim=1, keepdims=True)",
            "answer_dlogits": (
                "dlogits = dnorm_logits.clone()\nidx = logits.max(dim=1, keepdim=True).indices\n"
                "dlogits.scatter_add_(1, idx, dlogit_maxes)"
            ),
            "answer_dh": "dh = dlogits @ W2.T\nassert dh.shape == h.shape, (dh.shape, h.shape)",
            "answer_dW2": "dW2 = torch.matmul(h.T, dlogits).contiguous()",
            "answer_db2": "db2 = dlogits.sum(dim=0, keepdims=False)",
            "answer_dhpreact": "dhpreact = dh * (1 - h) * (1 + h)",
            "answer_dbngain": "dbngain = (bnraw * dhpreact).sum(dim=0, keepdims=True)",
            "answer_dbnbias": "dbnbias = torch.sum(dhpreact, dim=0, keepdims=True)",
            "answer_dbnraw": "dbnraw = (bngain * dhpreact).clone()",
            "answer_dbnvar_inv": "dbnvar_inv = torch.sum(bndiff * dbnraw, dim=0, keepdims=True)",
            "answer_dbnvar": "dbnvar = (-0.5 * bnvar_inv / (bnvar + 1e-5)) * dbnvar_inv",
            "answer_dbndiff2": "dbndiff2 = torch.ones_like(bndiff2) * dbnvar / (n - 1.0)",
            "answer_dbndiff": "dbndiff = dbnraw * bnvar_inv + 2.0 * bndiff * dbndiff2",
            "answer_dbnmeani": "dbnmeani = -1.0 * dbndiff.sum(0, keepdims=True)",
            "answer_dhprebn": "dhprebn = dbndiff + torch.ones_like(hprebn) * dbnmeani / n",
            "answer_dembcat": "dembcat = dhprebn @ W1.T  # 反向传播：线性层",
            "answer_dW1": "dW1 = embcat.T @ dhprebn\nassert dW1.shape == W1.shape, dW1.shape",
            "answer_db1": "db1 = dhprebn.sum(0, keepdims=False).detach()",
            "answer_demb": "demb = dembcat.view(n, block_size, -1).contiguous()",
            "answer_dC": "dC = torch.zeros_like(C).index_put((Xb,), demb, accumulate=True)",
            "answer_dC_index_add": (
                "dC_index_add = torch.zeros((vocab_size, n_embd)).index_add_(0, Xb.view(-1), demb.view(-1, n_embd))"
            ),
        },
        "alt_h_alts2_b": {
            "answer_dlogprobs": "dlogprobs = torch.zeros(n, vocab_size)\ndlogprobs[range(n), Yb] -= 1.0 / n",
            "answer_dprobs": "dprobs = (dlogprobs / probs).float()",
            "answer_dcounts_sum_inv": "dcounts_sum_inv = torch.sum(dprobs * counts, axis=1, keepdims=True)",
            "answer_dcounts_sum": "dcounts_sum = -(counts_sum ** -2.0) * dcounts_sum_inv",
            "answer_dcounts": "dcounts = counts_sum_inv * dprobs + dcounts_sum @ torch.ones(1, vocab_size)",
            "answer_dnorm_logits": "dnorm_logits = dcounts * counts",
            "answer_dlogit_maxes": (
                "dlogit_maxes = -(dnorm_logits.sum(1, keepdim=True))\nprint(dlogit_maxes.abs().max())"
            ),
            "answer_dlogits": (
                "dlogits = dnorm_logits.clone()\nmax_idx = torch.argmax(logits, dim=1)\nfor i in range(n):\n"
                "    dlogits[i, max_idx[i]] += dlogit_maxes[i, 0]"
            ),
            "answer_dh": "dh = dlogits.mm(W2.t())",
            "answer_dW2": "dW2 = h.t().mm(dlogits)",
            "answer_db2": "db2 = dlogits.sum(0).float()",
            "answer_dhpreact": "dhpreact = (1.0 - h.pow(2)) * dh",
            "answer_dbngain": "dbngain = (dhpreact * bnraw).sum(0, keepdim=True)\ncmp('bngain', dbngain, bngain)",
            "answer_dbnbias": "dbnbias = dhpreact.sum(0, keepdims=True)",
            "answer_dbnraw": "dbnraw = dhpreact * bngain",
            "answer_dbnvar_inv": "dbnvar_inv = (dbnraw * bndiff).sum(0, keepdim=True)",
            "answer_dbnvar": "dbnvar = -0.5 * (bnvar + 1e-5) ** (-3 / 2) * dbnvar_inv",
            "answer_dbndiff2": "dbndiff2 = torch.ones_like(bndiff2) * (1 / (n - 1)) * dbnvar",
            "answer_dbndiff": "dbndiff = bnvar_inv * dbnraw\ndbndiff = dbndiff + 2 * bndiff * dbndiff2",
            "answer_dbnmeani": "dbnmeani = -dbndiff.sum(dim=0, keepdims=True)",
            "answer_dhprebn": "dhprebn = dbndiff.clone()\ndhprebn += dbnmeani.expand_as(hprebn) / n",
            "answer_dembcat": "dembcat = torch.mm(dhprebn, W1.T)",
            "answer_dW1": "dW1 = embcat.transpose(-1, -2) @ dhprebn",
            "answer_db1": "db1 = torch.sum(dhprebn, dim=0)",
            "answer_demb": "demb = dembcat.view(emb.shape[0], emb.shape[1], emb.shape[2])",
            "answer_dC": "dC = F.one_hot(Xb, vocab_size).float().view(-1, vocab_size).T @ demb.view(-1, n_embd)",
            "answer_dC_index_add": (
                "dC_index_add = torch.zeros_like(C)\n"
                "dC_index_add.index_add_(0, Xb.reshape(-1), demb.reshape(-1, n_embd).contiguous())"
            ),
        },
        "alt_h_alts2_c": {
            "answer_dhprebn": (
                "dhprebn = bngain * torch.rsqrt(bnvar + 1e-5) / (n - 1) * ((n - 1) * dhpreact - (n - 1) / n *"
                " dhpreact.sum(0, keepdim=True) - bnraw * (dhpreact * bnraw).sum(0, keepdim=True))"
            ),
            "answer_dC": (
                "dC = torch.zeros_like(C)\nfor k in range(Xb.shape[0]):\n    for j in range(Xb.shape[1]):\n"
                "        dC[Xb[k, j]] += demb[k, j].detach().clone()"
            ),
            "answer_dbnvar": "dbnvar = -0.5 * (bnvar + 1e-5).pow(-1.5) * dbnvar_inv\nprint(f'{dbnvar.shape=}')",
            "answer_dbndiff2": "dbndiff2 = 1 / (n - 1) * torch.ones_like(bndiff2) * dbnvar  # Bessel: n-1",
        },
        "alt_h_alts2_d": {
            "answer_dlogprobs": (
                "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0 / n\ndlogprobs.shape"
            ),
            "answer_dprobs": "dprobs = (1.0 / probs.data) * dlogprobs\ndprobs[:2]",
            "answer_dcounts_sum_inv": (
                "import torch.nn.functional as F\ndcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)"
            ),
            "answer_dh": "dh = dlogits @ W2.data.T\ndisplay(dh.shape)",
            "answer_dW2": "dW2 = h.data.T @ dlogits",
            "answer_dC": (
                "dC = torch.zeros_like(C.data)\nfor k in range(Xb.shape[0]):\n    for j in range(Xb.shape[1]):\n"
                "        dC[Xb[k][j]] += demb[k][j]\ndC.shape, C.shape"
            ),
            "answer_dhpreact": "dhpreact = (1.0 - torch.tanh(hpreact).data ** 2) * dh",
            "answer_dbnvar": "torch.manual_seed(42)\ndbnvar = -0.5 * (bnvar + 1e-5) ** -1.5 * dbnvar_inv",
        },
    }
)

# the lecture's cmp over every name by eval, after the last answer in its cell (h-alts2's round): eval is code the
# grader cannot read, which may change any later answer, so dC_index_add loses its point as before; its words now say
# what marked it and how to write the check instead (they named autograd alone)
# ... and by names made while it runs, globals()['d' + name]: a computed name can reach any object of the kernel (the
# grader's own report too) and change an answer in place, as exec can (h-attack2's round); h-alts2's round had it
# among the forms that keep every point. Over a list of literal names written in the loop itself each name is known
# before it runs, and read as written out (h-alts4: alt_h_alts4_checks_by_names_in_a_loop); over names held in a
# variable or computed as the cell runs it is not
MISTAKES["m_cmp_by_globals_after_the_last_answer"] = (
    {
        "answer_dC_index_add": "dC_index_add = torch.zeros_like(C)\n"
        "dC_index_add.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))\n"
        "names = sorted({'logprobs', 'probs', 'counts_sum_inv', 'h', 'W2', 'C'})\n"
        "for name in names:\n"
        "    cmp(name, globals()['d' + name], globals()[name])"
    },
    "C_index_add",
    "a name made while it runs as in globals()['d' + name]",
)
MISTAKES["m_cmp_by_eval_after_the_last_answer"] = (
    {
        "answer_dC_index_add": "dC_index_add = torch.zeros_like(C)\n"
        "dC_index_add.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))\n"
        "for name, d in [('logprobs', dlogprobs), ('probs', dprobs), ('C', dC)]:\n"
        "    cmp(name, d, eval(name))"
    },
    "C_index_add",
    "code the grader cannot read ran in your cells up to here (eval, exec,",
)

# h-alts3's round (December 2026): a two-path gradient's first part assigned in one statement beside the other
# gradient of the same forward line (`dlogits, dlogit_maxes = dnorm_logits.clone(), -dnorm_logits.sum(1, ...)`, the
# lecture's two lines made one). The probe of dlogits pins dlogit_maxes, and left the whole statement out as the pin's
# own computation: dlogits's clone then kept the real dnorm_logits, and dlogits and dhprebn lost their 4 points as "not
# its backward rule". Now the probe re-runs the statement with the pin's target renamed `_`
# (probes.statements._without_pins).
ALTERNATIVES["alt_h_alts3_tuple_of_two_paths"] = {
    "answer_dcounts_sum": "dcounts_sum, dcounts = -counts_sum**-2 * dcounts_sum_inv, counts_sum_inv * dprobs",
    "answer_dcounts": "dcounts += dcounts_sum",
    "answer_dlogit_maxes": "dlogits, dlogit_maxes = dnorm_logits.clone(), -dnorm_logits.sum(1, keepdim=True)",
    "answer_dlogits": "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes",
    "answer_dbnmeani": "dhprebn, dbnmeani, _ = dbndiff.clone(), -dbndiff.sum(0, keepdim=True), None",
    "answer_dhprebn": "dhprebn += 1.0 / n * torch.ones_like(hprebn) * dbnmeani",
}
# ... the same from a helper of one's own for a subtraction that broadcasts (a call: its pin's part renamed `_`)
SUB_BACK = "def sub_back(dout, dim):\n    return dout.clone(), -dout.sum(dim, keepdim=True)\n\n\n"
ALTERNATIVES["alt_h_alts3_helper_of_two_paths"] = {
    "answer_dlogit_maxes": SUB_BACK + "dlogits, dlogit_maxes = sub_back(dnorm_logits, 1)",
    "answer_dlogits": "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes",
    "answer_dbnmeani": "[dhprebn, dbnmeani] = sub_back(dbndiff, 0)",
    "answer_dhprebn": "dhprebn += 1.0 / n * torch.ones_like(hprebn) * dbnmeani",
}
# ... and the slips in that form still cost their own step, with the words of the two lines
MISTAKES["m_tuple_of_two_paths_max_path_missing"] = (
    {
        "answer_dlogit_maxes": "dlogits, dlogit_maxes = dnorm_logits.clone(), -dnorm_logits.sum(1, keepdim=True)",
        "answer_dlogits": "pass",
    },
    "logits",
    "the path through logit_maxes is missing",
)
MISTAKES["m_tuple_of_two_paths_mean_path_without_1_over_n"] = (
    {
        "answer_dbnmeani": "dhprebn, dbnmeani = dbndiff.clone(), -dbndiff.sum(0, keepdim=True)",
        "answer_dhprebn": "dhprebn += torch.ones_like(hprebn) * dbnmeani",
    },
    "hprebn",
    "the path of dhprebn through bnmeani is 32 times what it should be",
)
# micrograd's way (its `+=` into gradients set to zero first): every gradient set to zeros in one statement of the first
# answer cell, then each answer accumulated; a two-path gradient's first part in the cell of the other path's gradient
_ZEROED = [s.name for s in STEPS]
_ACCUMULATED = {
    "answer_dlogprobs": ", ".join("d" + x for x in _ZEROED)
    + " = [torch.zeros_like(t) for t in ("
    + ", ".join(_ZEROED)
    + ")]\ndlogprobs[range(n), Yb] += -1.0 / n",
    "answer_dprobs": "dprobs += (1.0 / probs) * dlogprobs",
    "answer_dcounts_sum_inv": "dcounts_sum_inv += (counts * dprobs).sum(1, keepdim=True)\n"
    "dcounts += counts_sum_inv * dprobs",
    "answer_dcounts_sum": "dcounts_sum += -counts_sum**-2 * dcounts_sum_inv",
    "answer_dcounts": "dcounts += torch.ones_like(counts) * dcounts_sum",
    "answer_dnorm_logits": "dnorm_logits += counts * dcounts",
    "answer_dlogit_maxes": "dlogit_maxes += -dnorm_logits.sum(1, keepdim=True)\ndlogits += dnorm_logits",
    "answer_dlogits": "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes",
    "answer_dh": "dh += dlogits @ W2.T",
    "answer_dW2": "dW2 += h.T @ dlogits",
    "answer_db2": "db2 += dlogits.sum(0)",
    "answer_dhpreact": "dhpreact += (1.0 - h**2) * dh",
    "answer_dbngain": "dbngain += (bnraw * dhpreact).sum(0, keepdim=True)",
    "answer_dbnbias": "dbnbias += dhpreact.sum(0, keepdim=True)",
    "answer_dbnraw": "dbnraw += bngain * dhpreact",
    "answer_dbnvar_inv": "dbnvar_inv += (bndiff * dbnraw).sum(0, keepdim=True)\ndbndiff += bnvar_inv * dbnraw",
    "answer_dbnvar": "dbnvar += -0.5 * (bnvar + 1e-5) ** -1.5 * dbnvar_inv",
    "answer_dbndiff2": "dbndiff2 += 1.0 / (n - 1) * torch.ones_like(bndiff2) * dbnvar",
    "answer_dbndiff": "dbndiff += 2 * bndiff * dbndiff2",
    "answer_dbnmeani": "dbnmeani += -dbndiff.sum(0, keepdim=True)\ndhprebn += dbndiff",
    "answer_dhprebn": "dhprebn += 1.0 / n * torch.ones_like(hprebn) * dbnmeani",
    "answer_dembcat": "dembcat += dhprebn @ W1.T",
    "answer_dW1": "dW1 += embcat.T @ dhprebn",
    "answer_db1": "db1 += dhprebn.sum(0)",
    "answer_demb": "demb += dembcat.view(emb.shape)",
    "answer_dC": "dC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))",
}
ALTERNATIVES["alt_h_alts3_accumulated_into_zeros"] = _ACCUMULATED
# the lecture's lines that fill every .grad for its comparisons (gradients cleared, retain_grad, loss.backward()) above
# the answer in its cell: autograd refused at loss.backward() while grading and stopped the cell, and dlogprobs (every
# answer of the cell) counted as autograd's. Now the statement is skipped while grading, as a check against .grad is
# (in_kernel/self_checks_off); a method backward of one's own still runs (tanh's step as a class, micrograd's way)
LECTURE_BACKWARD = (
    "for p in parameters:\n    p.grad = None\nfor t in [logprobs, probs, counts, counts_sum, counts_sum_inv,\n"
    "          norm_logits, logit_maxes, logits, h, hpreact, bnraw, bnvar_inv, bnvar, bndiff2, bndiff, hprebn,\n"
    "          bnmeani, embcat, emb]:\n    t.retain_grad()\nloss.backward()\n"
)
ALTERNATIVES["alt_h_alts3_lectures_backward_above_the_answers"] = {
    "answer_dlogprobs": LECTURE_BACKWARD + "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0 / n",
    "answer_dprobs": "loss.backward(retain_graph=True)\ndprobs = (1.0 / probs) * dlogprobs",
    "answer_dhpreact": "class Tanh:\n    def __init__(self, out):\n        self.out = out\n\n"
    "    def backward(self, dout):\n        self.dx = (1 - self.out**2) * dout\n\n\n"
    "layer = Tanh(h)\nlayer.backward(dh)\ndhpreact = layer.dx",
}
# ... and the lecture's two lines of dlogit_maxes's cell with that assert between them: dlogits's first part missing
ALTERNATIVES["alt_h_alts3_compare_assert_between_two_answers"] = {
    "answer_dlogprobs": COMPARE + "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0 / n",
    "answer_dlogit_maxes": "dlogit_maxes = -dnorm_logits.sum(1, keepdim=True)\n"
    "assert compare('logit_maxes', dlogit_maxes, logit_maxes)\ndlogits = dnorm_logits.clone()",
    "answer_dlogits": "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes\n"
    "if not compare('logits', dlogits, logits):\n    raise ValueError('dlogits is off')",
}

# h-alts4: the student's own checks against .grad, called in later cells whose text names no .grad: a function that
# raises inside whatever its name (`check(..)`, between dlogit_maxes and dlogits in their cell: dlogits missing), a
# lambda asserted (`assert close(..)`: the static reading marked dprobs as autograd's), one printed, one in a for loop.
# 31 of 34 before; each is skipped while grading (in_kernel/self_checks_off), marks nothing (honesty.cell_code.as_def)
OWN_CHECKS = (
    "def check(name, dt, t):\n    if not torch.allclose(dt, t.grad, atol=1e-6):\n"
    "        raise ValueError(f'd{name} is off')\n\n\nclose = lambda dt, t: torch.allclose(dt, t.grad, atol=1e-6)\n"
)
ALTERNATIVES["alt_h_alts4_own_checks_in_later_cells"] = {
    "answer_dlogprobs": OWN_CHECKS + "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0 / n\n"
    "check('logprobs', dlogprobs, logprobs)",
    "answer_dprobs": "dprobs = (1.0 / probs) * dlogprobs\nassert close(dprobs, probs)",
    "answer_dlogit_maxes": "dlogit_maxes = -dnorm_logits.sum(1, keepdim=True)\n"
    "check('logit_maxes', dlogit_maxes, logit_maxes)\ndlogits = dnorm_logits.clone()",
    "answer_dlogits": "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes\n"
    "print(close(dlogits, logits))",
    "answer_dW2": "dW2 = h.T @ dlogits\nfor name, d, t in [('W2', dW2, W2), ('h', dh, h)]:\n    check(name, d, t)\n"
    "db2 = dlogits.sum(0)",
    "answer_db2": "check('b2', db2, b2)",
}


# An eighth round (h-mist4): slips whose words were generic ("N of M entries wrong", "off by a constant factor: 1.185
# times", "divides by bnvar where ..."), each costing its own step, now named
EIGHTH_ROUND = {
    # tanh's derivative: dh * 1 - h**2 unbracketed, and h not squared (step_mistakes.HPREACT)
    "m_dhpreact_dh_times_one_unbracketed": (
        {"answer_dhpreact": "dhpreact = dh * 1 - h**2"},
        "hpreact",
        "`dh * 1 - h**2` is (dh * 1) - h**2, because Python multiplies before it subtracts",
    ),
    "m_dhpreact_one_minus_h": (
        {"answer_dhpreact": "dhpreact = (1.0 - h) * dh"},
        "hpreact",
        "dhpreact multiplies dh by 1 - h",
    ),
    # the power rule's exponent, named by a fit of its values (diagnosis/powers.power_slip)
    "m_dbnvar_exponent_sign_flipped": (
        {"answer_dbnvar": "dbnvar = -0.5 * (bnvar + 1e-5) ** 1.5 * dbnvar_inv"},
        "bnvar",
        "dbnvar takes (bnvar + 1e-5) to the power 1.5, where the power rule gives -1.5: the exponent's sign is flipped",
    ),
    "m_dbnvar_exponent_and_factor_signs_flipped": (
        {"answer_dbnvar": "dbnvar = 0.5 * (bnvar + 1e-5) ** 1.5 * dbnvar_inv"},
        "bnvar",
        "the exponent's sign is flipped",
    ),
    "m_dbnvar_forward_exponent_and_a_plus": (
        {"answer_dbnvar": "dbnvar = 0.5 * (bnvar + 1e-5) ** -0.5 * dbnvar_inv"},
        "bnvar",
        "dbnvar takes (bnvar + 1e-5) to the power -0.5, where the power rule gives -1.5",
    ),
    "m_dbnvar_exponent_minus_two": (
        {"answer_dbnvar": "dbnvar = -0.5 * (bnvar + 1e-5) ** -2 * dbnvar_inv"},
        "bnvar",
        "dbnvar takes (bnvar + 1e-5) to the power -2, where the power rule gives -1.5",
    ),
    "m_dcounts_sum_exponent_sign_flipped": (  # "reads counts_sum_inv where .. needs counts_sum" before
        {"answer_dcounts_sum": "dcounts_sum = -(counts_sum**2) * dcounts_sum_inv"},
        "counts_sum",
        "dcounts_sum takes counts_sum to the power 2, where the power rule gives -2: the exponent's sign is flipped",
    ),
    # the mean's 1/n written as 1/vocab_size (diagnosis/divisors)
    "m_dlogprobs_divided_by_vocab_size": (
        {"answer_dlogprobs": "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0 / vocab_size"},
        "logprobs",
        "dlogprobs is n/vocab_size = 32/27 times the right value: is it divided by vocab_size = 27",
    ),
    "m_dlogprobs_rows_of_the_targets": (
        {"answer_dlogprobs": "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[Yb] = -1.0 / n"},
        "logprobs",
        "dlogprobs has -1/n in whole rows, those that the targets' values number: `[Yb]` alone picks rows",
    ),
    # a mean where a sum belongs (diagnosis/divisors): dlogit_maxes, about zero on the batch, is judged by its probe
    "m_dlogit_maxes_mean_of_the_row": (
        {"answer_dlogit_maxes": "dlogit_maxes = -dnorm_logits.mean(1, keepdim=True)"},
        "logit_maxes",
        "dlogit_maxes is 1/vocab_size = 1/27 of the right value: is it a mean over vocab_size = 27 entries",
    ),
    # Bessel's n-1 on the mean's path (diagnosis/slips.path_factor): "1.032 times what it should be" before
    "m_dhprebn_mean_path_by_n_minus_1": (
        {"answer_dhprebn": "dhprebn = dbndiff.clone()\ndhprebn += 1.0 / (n - 1) * torch.ones_like(hprebn) * dbnmeani"},
        "hprebn",
        "n or n-1? The mean divides by n, and only the variance by n-1",
    ),
    # the variance's n-1 left out (diagnosis/divisors): "off by a constant factor: 31 times" before
    "m_dbndiff2_without_the_variances_n_minus_1": (
        {"answer_dbndiff2": "dbndiff2 = torch.ones_like(bndiff2) * dbnvar"},
        "bndiff2",
        "dbndiff2 is n-1 = 31 times too large: is the division by n-1 of the variance missing?",
    ),
    # a forward factor of the local derivative left out (diagnosis/left_out): "N of M entries wrong" before
    "m_dbndiff_square_path_without_bndiff": (
        {"answer_dbndiff": "dbndiff = bnvar_inv * dbnraw\ndbndiff += 2 * dbndiff2"},
        "bndiff",
        "dbndiff leaves bndiff out of the local derivative of `bnraw = bndiff * bnvar_inv; bndiff2 = bndiff**2`",
    ),
    "m_dbnvar_inv_without_bndiff": (
        {"answer_dbnvar_inv": "dbnvar_inv = dbnraw.sum(0, keepdim=True)"},
        "bnvar_inv",
        "dbnvar_inv leaves bndiff out of the local derivative of `bnraw = bndiff * bnvar_inv`",
    ),
    "m_dcounts_sum_inv_without_counts": (
        {"answer_dcounts_sum_inv": "dcounts_sum_inv = dprobs.sum(1, keepdim=True)"},
        "counts_sum_inv",
        "dcounts_sum_inv leaves counts out of the local derivative of `probs = counts * counts_sum_inv`",
    ),
    "m_dprobs_times_log_probs": (  # log's derivative taken as log again (step_mistakes.PROBS)
        {"answer_dprobs": "dprobs = torch.log(probs) * dlogprobs"},
        "probs",
        "dprobs multiplies dlogprobs by log(probs): the derivative of log(x) is 1/x",
    ),
}
MISTAKES.update(EIGHTH_ROUND)

# h-alts4: checks of every answer so far in a loop over their names, each read from the namespace by a key made of the
# loop's literal names (`globals()['d' + name]`, the lecture's cmp or one's own check; an f-string key; 'logits
# h'.split() too): read as code the grader cannot read, they marked every later answer as autograd's (13 and 1 of 34
# before). The static reading reads each turn with the names themselves now (honesty.cell_code.readable). A list of
# names bound in a variable first stays code it cannot read: a function of the student's could extend that list as the
# loop runs (names.append('g') in a check, g kept from .grad above the start), unseen by a reading of the literals ...
ALTERNATIVES["alt_h_alts4_checks_by_names_in_a_loop"] = {
    "answer_dprobs": OWN_CHECKS + "dprobs = (1.0 / probs) * dlogprobs\nfor name in ['logprobs', 'probs']:\n"
    "    check(name, globals()['d' + name], globals()[name])",
    "answer_dh": "dh = dlogits @ W2.T\nfor name in 'logits h'.split():\n"
    "    check(name, globals()['d' + name], globals()[name])",
    "answer_db2": "db2 = dlogits.sum(0)\nfor name in ('logits', 'h', 'W2', 'b2'):\n"
    "    cmp(name, globals()[f'd{name}'], globals()[name])",
}
# ... and an answer changed in place through such a key, from .grad, is autograd's as before (the rest keep theirs)
CHEATS["c_grad_copied_through_globals"] = (
    {
        "answer_dW2": "dW2 = torch.zeros_like(W2)\nfor name in ['W2']:\n"
        "    globals()['d' + name].copy_(globals()[name].grad)"
    },
    [],
    ["W2"],
    "autograd",
)
# ... nor over a list of literal names held in a variable: a function of the student's extends it as the cell runs, and
# the last turn copies what was kept from W2.grad above the start, where .grad was autograd's own (with the list read
# as its literals, the reading missed it; only the value check, dW2 equal to W2.grad, caught it). Code the grader
# cannot read: every answer from that cell on is marked
CHEATS["c_names_extended_as_the_loop_runs"] = (
    {"answer_dW2": "names = ['W2']\nmore()\nfor name in names:\n    dW2 = globals()[name].clone()\n"},
    [("setup_forward", "kept = W2.grad.clone()\n\n\ndef more():\n    names.append('kept')")],
    [s.name for s in STEPS[[s.name for s in STEPS].index("W2") :]] + ["C_index_add"],
    "autograd",
)
# h-alts4: checks in a comprehension whose names shadow the batch size (`for n, d, t in ..`), thrown away in `_`: the
# static reading took n as written from autograd (dbndiff2 and dhprebn read it), and the check raised while grading
# (dprobs after it missing): 30 of 34 before
ALTERNATIVES["alt_h_alts4_checks_in_a_comprehension"] = {
    "answer_dprobs": OWN_CHECKS + "_ = [check(n, d, t) for n, d, t in [('logprobs', dlogprobs, logprobs)]]\n"
    "dprobs = (1.0 / probs) * dlogprobs",
}

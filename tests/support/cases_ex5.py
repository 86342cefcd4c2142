"""Exercise 5's known students: for every step a mistake that loses exactly that step (with the kind that names it),
two correct alternatives that keep every point, answers taken from autograd, pasted values, a blank notebook.

One table, graded two ways: every case in process (tests/fast/test_ex5_in_process.py), and a few representative ones
through the real nbgrader pipeline (tests/slow/test_ex5_pipeline.py).
"""

from autograder.authoring.submissions import grade_id, solved
from autograder.common.naming import SETUP_PREFIX
from autograder.engine.operators import NOTEBOOK, OPERATOR_STEPS
from autograder.engine.reference import run_setup
from support.read_grad import above_the_start, grad_through_sgd, read_above_the_start, start_deleted, start_moved_down

NB5 = NOTEBOOK
POINTS = {f"test_d{step.name}": step.points for step in OPERATOR_STEPS}

# mistake -> (answer cells changed, {graded cell that must lose its points: (the diagnosis kind, words of its message)})
MISTAKES = {
    # Part 1: dropout
    "dropout_not_rescaled": (
        {"answer_dhgelu": "dhgelu = dhdrop * drop_mask"},
        {"test_dhgelu": ("dropout_mask", "masked but not rescaled")},
    ),
    "dropout_not_masked": (
        {"answer_dhgelu": "dhgelu = dhdrop / (1 - drop_p)"},
        {"test_dhgelu": ("dropout_mask", "is not masked")},
    ),
    # right on the batch (its dhdrop is small), not for every dhdrop: the rule probe's random one shows it
    "dropout_for_small_gradients_only": (
        {"answer_dhgelu": "dhgelu = torch.where(dhdrop.abs() < 1, dhdrop * drop_mask / (1 - drop_p), 0.0)"},
        {"test_dhgelu": ("wrong_values", "has the right values on this batch, but not its backward rule")},
    ),
    # Part 2: GELU
    "gelu_without_x_phi": (
        {"answer_dhln": "dhln = dhgelu * 0.5 * (1 + torch.erf(hln / 2**0.5))"},
        {"test_dhln": ("product_rule", "missing the x·φ(x) term")},
    ),
    "gelu_density_without_x": (
        {
            "answer_dhln": "dhln = dhgelu * (0.5 * (1 + torch.erf(hln / 2**0.5)) "
            "+ torch.exp(-hln**2 / 2) / (2 * torch.pi)**0.5)"
        },
        {"test_dhln": ("product_rule", "φ(x) without its factor x")},
    ),
    "gelu_density_unnormalised": (
        {"answer_dhln": "dhln = dhgelu * (0.5 * (1 + torch.erf(hln / 2**0.5)) + hln * torch.exp(-hln**2 / 2))"},
        {"test_dhln": ("missing_factor", "1/√(2π)")},
    ),
    "gelu_tanh_approximation": (
        {
            "answer_dhln": "u = (2 / torch.pi) ** 0.5 * (hln + 0.044715 * hln**3)\nt = torch.tanh(u)\n"
            "dhln = dhgelu * (0.5 * (1 + t) + 0.5 * hln * (1 - t**2) * (2 / torch.pi) ** 0.5 "
            "* (1 + 3 * 0.044715 * hln**2))"
        },
        {"test_dhln": ("approximation", "tanh approximation")},
    ),
    # Part 3: LayerNorm
    "lngain_wrong_axis": (
        {"answer_dlngain": "dlngain = (lnraw * dhln).sum(1, keepdim=True)"},
        {"test_dlngain": ("wrong_dimension", "summed over dimension 1 instead of dimension 0")},
    ),
    "lnbias_keepdim": ({"answer_dlnbias": "dlnbias = dhln.sum(0)"}, {"test_dlnbias": ("keepdim", "keepdim=True")}),
    "layernorm_over_the_batch": (
        {
            "answer_dhpreln": "dhpreln = lngain * lnvar_inv / n * (n * dhln - dhln.sum(0) "
            "- n / (n - 1) * lnraw * (dhln * lnraw).sum(0))"
        },
        {"test_dhpreln": ("wrong_dimension", "BatchNorm's backward pass")},
    ),
    "layernorm_bessel": (
        {
            "answer_dhpreln": "D = n_hidden\ndy = lngain * dhln\n"
            "dhpreln = lnvar_inv / D * (D * dy - dy.sum(1, keepdim=True) "
            "- D / (D - 1) * lnraw * (dy * lnraw).sum(1, keepdim=True))"
        },
        {"test_dhpreln": ("bessel", "n/(n-1)")},
    ),
    "layernorm_no_mean_path": (
        {
            "answer_dhpreln": "dy = lngain * dhln\n"
            "dhpreln = lnvar_inv * (dy - lnraw * (dy * lnraw).mean(1, keepdim=True))"
        },
        {"test_dhpreln": ("missing_path", "path through the mean")},
    ),
    "layernorm_no_gain": (
        {
            "answer_dhpreln": "dhpreln = lnvar_inv * (dhln - dhln.mean(1, keepdim=True) "
            "- lnraw * (dhln * lnraw).mean(1, keepdim=True))"
        },
        {"test_dhpreln": ("missing_factor", "missing lngain")},
    ),
    "layernorm_no_lnvar_inv": (
        {
            "answer_dhpreln": "dy = lngain * dhln\n"
            "dhpreln = dy - dy.mean(1, keepdim=True) - lnraw * (dy * lnraw).mean(1, keepdim=True)"
        },
        {"test_dhpreln": ("missing_factor", "missing lnvar_inv")},
    ),
    "dx_averaged": (
        {"answer_dx": "dx = (dhpreln @ W1.T).view(x.shape) / n"},
        {"test_dx": ("batch_size", "32 times too small")},
    ),
    # Part 4: the attention head
    "datt_out_split": (
        {"answer_datt_out": "datt_out = 0.5 * dx"},
        {"test_datt_out": ("skip_connection", "half of dx")},
    ),
    "datt_transposed": (
        {"answer_datt": "datt = v @ datt_out.transpose(1, 2)"},
        {"test_datt": ("transposed", "transposed in its last two dimensions")},
    ),
    "dv_not_transposed": (
        {"answer_dv": "dv = att @ datt_out"},
        {"test_dv": ("transposed", "dv multiplies by att without transposing it")},
    ),
    "softmax_other_axis": (
        {"answer_dscores": "dscores = att * (datt - (datt * att).sum(1, keepdim=True))"},
        {"test_dscores": ("wrong_dimension", "sum over the other axis")},
    ),
    "softmax_no_normalisation": (
        {"answer_dscores": "dscores = att * datt"},
        {"test_dscores": ("missing_path", "softmax's normalisation")},
    ),
    "softmax_diagonal_only": (
        {"answer_dscores": "dscores = att * (1 - att) * datt"},
        {"test_dscores": ("missing_path", "only the diagonal of the softmax's Jacobian")},
    ),
    "dscores_scaled": (  # the scores' scale put into the softmax's step
        {"answer_dscores": "dscores = att * (datt - (datt * att).sum(2, keepdim=True)) / head_size**0.5"},
        {"test_dscores": ("attention_scale", "dscores is divided by √head_size: the softmax's backward pass has no")},
    ),
    # the scale moved up into dscores, and left out of dq and dk: one slip, which costs dscores alone; dq and dk,
    # right together with it on every input, keep theirs (and say why)
    "scale_moved_into_dscores": (
        {
            "answer_dscores": "dscores = att * (datt - (datt * att).sum(2, keepdim=True)) / head_size**0.5",
            "answer_dq": "dq = dscores @ k",
            "answer_dk": "dk = dscores.transpose(1, 2) @ q",
        },
        {"test_dscores": ("attention_scale", "The 1/√head_size belongs to the next step back")},
    ),
    # the dropout's rescaling moved down into GELU's step: it costs dhgelu alone, as the scale above costs dscores
    "dropout_rescaled_one_step_late": (
        {
            "answer_dhgelu": "dhgelu = dhdrop * drop_mask",
            "answer_dhln": "dhln = dhgelu / (1 - drop_p) * (0.5 * (1 + torch.erf(hln / 2**0.5)) "
            "+ hln * torch.exp(-hln**2 / 2) / (2 * torch.pi) ** 0.5)",
        },
        {"test_dhgelu": ("dropout_mask", "masked but not rescaled")},
    ),
    # Exercise 3's fused BatchNorm formula copied over: lngain in front of the sums, n (the batch) for n_hidden
    "layernorm_gain_outside_the_sums": (
        {
            "answer_dhpreln": "dhpreln = lngain * lnvar_inv / n_hidden * (n_hidden * dhln - dhln.sum(1, keepdim=True) "
            "- lnraw * (dhln * lnraw).sum(1, keepdim=True))"
        },
        {"test_dhpreln": ("factor_outside_sum", "lngain has one value per feature")},
    ),
    "layernorm_over_n_and_softmax_from_scores": (  # two slips, each its own step's: dscores judged from its own datt
        {
            "answer_dhpreln": "dy = lngain * dhln\ndhpreln = lnvar_inv / n * (n * dy - dy.sum(1, keepdim=True) "
            "- lnraw * (dy * lnraw).sum(1, keepdim=True))",
            "answer_dscores": "dscores = scores * (datt - (datt * scores).sum(2, keepdim=True))",
        },
        {
            "test_dhpreln": ("batch_size", "the count in its backward pass is n_hidden"),
            "test_dscores": ("input_for_output", "dscores reads scores where att belongs"),
        },
    ),
    "dq_no_scale": ({"answer_dq": "dq = dscores @ k"}, {"test_dq": ("attention_scale", "missing the scores' 1/√")}),
    "dk_by_head_size": (
        {"answer_dk": "dk = dscores.transpose(1, 2) @ q / head_size"},
        {"test_dk": ("attention_scale", "divides by head_size where")},
    ),
    "dk_not_transposed": (
        {"answer_dk": "dk = dscores @ q / head_size**0.5"},
        {"test_dk": ("transposed", "without transposing")},
    ),
    # Part 5: the skip connection
    "skip_gradient_lost": (
        {"answer_demb": "demb = dq @ Wq.T\ndemb += dk @ Wk.T\ndemb += dv @ Wv.T"},
        {"test_demb": ("skip_connection", "missing the skip connection's gradient")},
    ),
    "demb_without_values": (
        {"answer_demb": "demb = dx.clone()\ndemb += dq @ Wq.T\ndemb += dk @ Wk.T"},
        {"test_demb": ("missing_path", "the path through v is missing")},
    ),
    # Part 6: ReLU and LeakyReLU
    "relu_passed_below_zero": (
        {"answer_drelu_in": "drelu_in = drelu_out.clone()"},
        {"test_drelu_in": ("activation_mask", "where relu_in < 0 too")},
    ),
    "relu_kink": (
        {"answer_drelu_in": "drelu_in = (relu_in >= 0) * drelu_out"},
        {"test_drelu_in": ("activation_mask", "exactly 0")},
    ),
    "leaky_as_relu": (
        {"answer_dleaky_in": "dleaky_in = (leaky_in > 0) * dleaky_out"},
        {"test_dleaky_in": ("activation_mask", "ReLU's gradient")},
    ),
    "leaky_kink": (
        {"answer_dleaky_in": "dleaky_in = torch.where(leaky_in >= 0, dleaky_out, 0.1 * dleaky_out)"},
        {"test_dleaky_in": ("activation_mask", "exactly 0")},
    ),
    # mistakes students of the lecture make in their own style, each with the words that name it
    "lngain_from_hln": (
        {"answer_dlngain": "dlngain = (hln * dhln).sum(0, keepdim=True)"},
        {"test_dlngain": ("zero_bias", "reads hln where lnraw belongs")},
    ),
    "lngain_float64": (
        {"answer_dlngain": "dlngain = (lnraw.double() * dhln.double()).sum(0, keepdim=True)"},
        {"test_dlngain": ("not_a_float32_tensor", "dtype float64")},
    ),
    "lnbias_averaged": (
        {"answer_dlnbias": "dlnbias = dhln.mean(0, keepdim=True)"},
        {"test_dlnbias": ("batch_size", "32 times too small")},
    ),
    "layernorm_torch_default_variance": (  # re-derived from hpreln with .var's default, unbiased=True
        {
            "answer_dhpreln": "xc = hpreln - hpreln.mean(1, keepdim=True)\n"
            "s = (hpreln.var(1, keepdim=True) + 1e-5) ** -0.5\nxhat = xc * s\ng = lngain * dhln\n"
            "dhpreln = s * (g - g.mean(1, keepdim=True) - xhat * (g * xhat).mean(1, keepdim=True))"
        },
        {"test_dhpreln": ("bessel", "torch's default variance")},
    ),
    "dropout_divided_by_p": (
        {"answer_dhgelu": "dhgelu = dhdrop * drop_mask / drop_p"},
        {"test_dhgelu": ("constant_factor", "9 times the right value")},
    ),
    "gelu_sigmoid_approximation": (
        {"answer_dhln": "s = torch.sigmoid(1.702 * hln)\ndhln = dhgelu * (s + 1.702 * hln * s * (1 - s))"},
        {"test_dhln": ("approximation", "sigmoid approximation")},
    ),
    "demb_Wv_not_transposed": (  # Wv is square: no error to warn
        {"answer_demb": "demb = dx + dq @ Wq.T + dk @ Wk.T + dv @ Wv"},
        {"test_demb": ("transposed", "multiplies by Wv without transposing it")},
    ),
    "dq_times_the_scale": (
        {"answer_dq": "dq = dscores @ k * head_size**0.5"},
        {"test_dq": ("attention_scale", "multiplies by √head_size where the forward pass divides by it")},
    ),
    "demb_skip_twice": (
        {"answer_demb": "demb = dx + dx + dq @ Wq.T + dk @ Wk.T + dv @ Wv.T"},
        {"test_demb": ("path_twice", "the path through x is added twice")},
    ),
    "leaky_slopes_swapped": (
        {"answer_dleaky_in": "dleaky_in = torch.where(leaky_in > 0, 0.1 * dleaky_out, dleaky_out)"},
        {"test_dleaky_in": ("activation_mask", "the two slopes swapped")},
    ),
    "lnbias_over_features": (
        {"answer_dlnbias": "dlnbias = dhln.sum(1, keepdim=True)"},
        {"test_dlnbias": ("wrong_dimension", "summed over dimension 1 instead of dimension 0")},
    ),
    "dropout_times_keep": (
        {"answer_dhgelu": "dhgelu = dhdrop * drop_mask * (1 - drop_p)"},
        {"test_dhgelu": ("dropout_mask", "multiplies by 1 - drop_p where the forward pass divides by it")},
    ),
    "relu_without_upstream": (  # the chain rule's upstream factor left out
        {"answer_drelu_in": "drelu_in = (relu_in > 0).float()"},
        {"test_drelu_in": ("upstream_missing", "the chain rule multiplies it by the upstream gradient, drelu_out")},
    ),
    "gelu_local_derivative_alone": (
        {
            "answer_dhln": "dhln = 0.5 * (1 + torch.erf(hln / 2**0.5)) "
            "+ hln * torch.exp(-hln**2 / 2) / (2 * torch.pi)**0.5"
        },
        {"test_dhln": ("upstream_missing", "dhln is the local derivative of `hgelu = hln * 0.5 * (1 + torch.erf(")},
    ),
    # each named since h-mist5 (they read 'N of M entries wrong. Re-derive the local derivative' before)
    "gelu_erf_without_sqrt2": (
        {
            "answer_dhln": "dhln = dhgelu * (0.5 * (1 + torch.erf(hln)) "
            "+ hln * torch.exp(-hln**2 / 2) / (2 * torch.pi) ** 0.5)"
        },
        {"test_dhln": ("missing_factor", "takes erf(x) where GELU has erf(x/√2)")},
    ),
    "softmax_sum_not_times_att": (
        {"answer_dscores": "dscores = att * datt - (datt * att).sum(2, keepdim=True)"},
        {"test_dscores": ("precedence", "dscores multiplies only datt by att, and subtracts Σ datt·att without it")},
    ),
    "leaky_default_slope": (
        {"answer_dleaky_in": "dleaky_in = torch.where(leaky_in > 0, dleaky_out, 0.01 * dleaky_out)"},
        {"test_dleaky_in": ("activation_mask", "slope 0.01")},
    ),
}

# student -> answer cells changed; every graded cell must keep its points
# mistakes that make a cell raise (MISTAKES' cells all run: the visible checks' tests run them too), the same form
RAISING = {
    # its wrong shape makes the cells after it raise: they keep their points by their rule (Exercise 1 has more)
    "dx_not_viewed": ({"answer_dx": "dx = dhpreln @ W1.T"}, {"test_dx": ("wrong_shape", "dx has shape (32, 30)")}),
    # a float64 dhpreln makes dx's cell raise; dx's code, right on a float32 dhpreln, still lacks its .view: its own
    # slip, which costs dx as it does alone (dx_not_viewed)
    "dhpreln_float64_dx_not_viewed": (
        {
            "answer_dhpreln": "dlnraw = lngain * dhln\ndhpreln = (lnvar_inv / n_hidden * (n_hidden * dlnraw - "
            "dlnraw.sum(1, keepdim=True) - lnraw * (dlnraw * lnraw).sum(1, keepdim=True))).double()",
            "answer_dx": "dx = dhpreln @ W1.T",
        },
        {
            "test_dhpreln": ("not_a_float32_tensor", "dtype float64"),
            "test_dx": ("raised_error", "dx's cell stopped with RuntimeError"),
        },
    ),
    "dscores_sum_without_keepdim": (  # (n, 3, 3) minus (n, 3) does not broadcast: the cell raises
        {"answer_dscores": "dscores = att * (datt - (datt * att).sum(2))"},
        {"test_dscores": ("raised_error", "dscores's cell stopped with RuntimeError")},
    ),
    "dk_result_transposed": (  # demb's cell then raises (dk @ Wk.T): demb keeps its points by its rule
        {"answer_dk": "dk = q.transpose(1, 2) @ dscores / head_size**0.5"},
        {"test_dk": ("transposed", "dimensions are in the wrong order")},
    ),
    "dhgelu_float64": (  # float64 flows down to dx's matrix product, whose cell raises: the later steps keep theirs
        {"answer_dhgelu": "dhgelu = dhdrop.double() * drop_mask / (1 - drop_p)"},
        {"test_dhgelu": ("not_a_float32_tensor", "dtype float64")},
    ),
    "datt_cell_raises": (  # v transposed the wrong way: its own cell raises, and the cells that need datt keep theirs
        {"answer_datt": "datt = datt_out @ v.transpose(0, 2).transpose(0, 1)"},
        {"test_datt": ("raised_error", "datt's cell stopped with RuntimeError")},
    ),
}

ALTERNATIVES = {
    "alt_a": {
        # the mask by masked_fill (not read off hdrop != 0: the notebook's GELU is exactly 0 below about -5.5 in
        # float32, where the mask keeps the gradient; a grading seed that drew such an hln made that form lose, in CI)
        "answer_dhgelu": "dhgelu = dhdrop.masked_fill(drop_mask == 0, 0.0) / (1 - drop_p)",
        "answer_dhln": "dhln = dhgelu * (torch.special.ndtr(hln) + hln * torch.exp(-0.5 * hln**2) "
        "/ (2 * torch.pi) ** 0.5)",
        "answer_dlngain": "dlngain = torch.einsum('ij,ij->j', lnraw, dhln)[None]",
        "answer_dlnbias": "dlnbias = dhln.sum(0).view(1, -1)",
        "answer_dhpreln": (  # from hpreln alone, with torch's biased variance
            "xc = hpreln - hpreln.mean(1, keepdim=True)\n"
            "s = (hpreln.var(1, keepdim=True, unbiased=False) + 1e-5) ** -0.5\nxhat = xc * s\ng = lngain * dhln\n"
            "dhpreln = s * (g - g.mean(1, keepdim=True) - xhat * (g * xhat).mean(1, keepdim=True))"
        ),
        "answer_dx": "dx = torch.einsum('nh,ih->ni', dhpreln, W1).view(n, 3, n_embd)",
        "answer_datt_out": "datt_out = dx * 1.0",
        "answer_datt": "datt = torch.einsum('bid,bjd->bij', datt_out, v)",
        "answer_dv": "dv = torch.einsum('bij,bid->bjd', att, datt_out)",
        "answer_dscores": (  # through the softmax's Jacobian: J[b, i, j, k] = d att[b, i, j] / d scores[b, i, k]
            "J = torch.diag_embed(att) - att.unsqueeze(3) * att.unsqueeze(2)\n"
            "dscores = torch.einsum('bij,bijk->bik', datt, J)"
        ),
        "answer_dq": "dq = torch.einsum('bij,bjd->bid', dscores, k) * head_size**-0.5",
        "answer_dk": "dk = torch.einsum('bij,bid->bjd', dscores, q) / head_size**0.5",
        "answer_demb": "demb = dx + dq @ Wq.T + dk @ Wk.T + dv @ Wv.T",
        "answer_drelu_in": "drelu_in = torch.where(relu_in > 0, drelu_out, torch.zeros_like(drelu_out))",
        "answer_dleaky_in": "dleaky_in = dleaky_out * ((leaky_in > 0).float() + 0.1 * (leaky_in <= 0).float())",
    },
    "alt_b": {
        "answer_dhgelu": "dhgelu = torch.where(drop_mask.bool(), dhdrop / (1 - drop_p), torch.zeros_like(dhdrop))",
        "answer_dhln": (  # 0.5 * (1 + erf(x/√2)), differentiated through erf
            "z = hln / 2**0.5\nPhi = 0.5 * (1 + torch.erf(z))\n"
            "dPhi = 0.5 * 2 / torch.pi**0.5 * torch.exp(-(z**2)) / 2**0.5\ndhln = dhgelu * (Phi + hln * dPhi)"
        ),
        "answer_dlngain": "dlngain = ((hln - lnbias) / lngain * dhln).sum(0, keepdim=True)",
        "answer_dlnbias": "dlnbias = torch.ones(1, n) @ dhln",
        "answer_dhpreln": (  # the atomic chain of Exercise 1's BatchNorm, along dimension 1
            "dlnraw = lngain * dhln\nlndiff = hpreln - lnmean\n"
            "dlnvar_inv = (lndiff * dlnraw).sum(1, keepdim=True)\n"
            "dlnvar = -0.5 * (lnvar + 1e-5) ** -1.5 * dlnvar_inv\n"
            "dlndiff = lnvar_inv * dlnraw + 2 * lndiff / n_hidden * dlnvar\n"
            "dhpreln = dlndiff.clone()\ndhpreln += -dlndiff.sum(1, keepdim=True) / n_hidden"
        ),
        "answer_dx": "dx = (dhpreln @ W1.T).view(-1, block_size, n_embd)",
        "answer_datt_out": "datt_out = dx + 0",
        "answer_datt": "datt = datt_out @ v.permute(0, 2, 1)",
        "answer_dv": "dv = att.permute(0, 2, 1) @ datt_out",
        "answer_dscores": "dscores = att * datt - att * (att * datt).sum(-1, keepdim=True)",
        "answer_dq": "dq = dscores @ k * head_size**-0.5",
        "answer_dk": "dk = (q.transpose(1, 2) @ dscores).transpose(1, 2) / head_size**0.5",
        "answer_demb": "demb = dv @ Wv.T\ndemb += dx\ndemb += dk @ Wk.T + dq @ Wq.T",
        "answer_drelu_in": "drelu_in = drelu_out * (relu_out > 0)",
        "answer_dleaky_in": "dleaky_in = dleaky_out.clone()\ndleaky_in[leaky_in <= 0] *= 0.1",
    },
    "alt_c": {  # in-place steps, float64 temporaries, negative dims, bmm and .mT, einsum
        "answer_dhgelu": "dhgelu = dhdrop.clone()\ndhgelu *= drop_mask\ndhgelu /= 1 - drop_p",
        "answer_dhln": "x64 = hln.double()\ncdf = 0.5 * (1 + torch.erf(x64 / 2**0.5))\n"
        "pdf = torch.exp(-(x64**2) / 2) / (2 * torch.pi) ** 0.5\ndhln = (dhgelu.double() * (cdf + x64 * pdf)).float()",
        "answer_dlngain": "dlngain = torch.sum(lnraw * dhln, dim=0, keepdim=True)",
        "answer_dlnbias": "dlnbias = dhln.mean(0, keepdim=True) * n",
        "answer_dhpreln": "dy = dhln * lngain\ndhpreln = lnvar_inv * (dy - dy.mean(-1, keepdim=True) "
        "- lnraw * (dy * lnraw).mean(-1, keepdim=True))",
        "answer_dx": "dx = (W1 @ dhpreln.T).T.reshape(n, block_size, n_embd)",
        "answer_datt_out": "datt_out = 1.0 * dx",
        "answer_datt": "datt = torch.bmm(datt_out, v.mT)",
        "answer_dv": "dv = (datt_out.transpose(1, 2) @ att).transpose(1, 2)",
        "answer_dscores": "dscores = att * datt\ndscores -= att * dscores.sum(-1, keepdim=True)",
        "answer_dq": "dq = torch.einsum('bij,bjd->bid', dscores / head_size**0.5, k)",
        "answer_dk": "dk = torch.bmm(dscores.permute(0, 2, 1), q) * head_size**-0.5",
        "answer_demb": "demb = dx + torch.einsum('btd,ed->bte', dq, Wq) + torch.einsum('btd,ed->bte', dk, Wk) "
        "+ torch.einsum('btd,ed->bte', dv, Wv)",
        "answer_drelu_in": "drelu_in = drelu_out.masked_fill(relu_in <= 0, 0.0)",
        "answer_dleaky_in": "dleaky_in = dleaky_out * torch.where(leaky_in > 0, 1.0, 0.1)",
    },
    "alt_d": {  # an in-place division of a new tensor, a distribution object, a Jacobian per row in a loop, sum()
        "answer_dhgelu": "dhgelu = torch.mul(dhdrop, drop_mask).div_(1 - drop_p)",
        "answer_dhln": "N = torch.distributions.Normal(0.0, 1.0)\n"
        "dhln = dhgelu * (N.cdf(hln) + hln * N.log_prob(hln).exp())",
        "answer_dlngain": "dlngain = (lnraw * dhln).sum(0).unsqueeze(0)",
        "answer_dlnbias": "dlnbias = dhln.T.sum(1).unsqueeze(0)",
        "answer_dhpreln": "dy = (lngain * dhln).double()\nr = lnraw.double()\ndhpreln = (lnvar_inv.double() "
        "* (dy - dy.mean(1, keepdim=True) - r * (dy * r).mean(1, keepdim=True))).float()",
        "answer_dx": "dx = dhpreln.mm(W1.t()).view_as(x)",
        "answer_datt_out": "datt_out = torch.clone(dx)",
        "answer_datt": "datt = (v @ datt_out.transpose(1, 2)).transpose(1, 2)",
        "answer_dv": "dv = torch.bmm(att.transpose(1, 2), datt_out)",
        "answer_dscores": "dscores = torch.zeros_like(att)\nfor b in range(att.shape[0]):\n"
        "    for i in range(att.shape[1]):\n        a = att[b, i]\n"
        "        dscores[b, i] = (torch.diag(a) - torch.outer(a, a)) @ datt[b, i]",
        "answer_dq": "dq = torch.bmm(dscores, k).div(head_size**0.5)",
        "answer_dk": "dk = dscores.mT @ (q / head_size**0.5)",
        "answer_demb": "paths = [dx, dq @ Wq.t(), dk @ Wk.t(), dv @ Wv.t()]\ndemb = sum(paths)",
        "answer_drelu_in": "drelu_in = torch.heaviside(relu_in, torch.tensor(0.0)) * drelu_out",
        "answer_dleaky_in": "dleaky_in = dleaky_out * (leaky_in > 0) + 0.1 * dleaky_out * (leaky_in <= 0)",
    },
    "alt_e": {  # forward values recomputed (softmax, the variance, lnraw), erfc, unflatten, an alias never changed
        "answer_dhgelu": "dhgelu = (dhdrop.double() * drop_mask.double() / (1 - drop_p)).to(torch.float32)",
        "answer_dhln": "dhln = dhgelu * (0.5 * torch.erfc(-hln / 2**0.5) "
        "+ hln * torch.exp(-0.5 * hln * hln) * (2 * torch.pi) ** -0.5)",
        "answer_dlngain": "dlngain = ((hpreln - lnmean) * lnvar_inv * dhln).sum(0, keepdim=True)",
        "answer_dlnbias": "dlnbias = dhln.sum(0).reshape(1, -1)",
        "answer_dhpreln": "mu = hpreln.mean(dim=1, keepdim=True)\n"
        "var = ((hpreln - mu) ** 2).mean(dim=1, keepdim=True)\nistd = torch.rsqrt(var + 1e-5)\n"
        "xh = (hpreln - mu) * istd\ng = dhln * lngain\n"
        "dhpreln = istd / n_hidden * (n_hidden * g - g.sum(1, keepdim=True) - xh * (g * xh).sum(1, keepdim=True))",
        "answer_dx": "dx = (dhpreln @ W1.T).unflatten(1, (block_size, n_embd))",
        "answer_datt_out": "datt_out = dx  # the same tensor: nothing changes either in place afterwards",
        "answer_datt": "datt = torch.matmul(datt_out, v.transpose(-1, -2))",
        "answer_dv": "dv = torch.matmul(att.mT, datt_out)",
        "answer_dscores": "p = scores.softmax(-1)\ndscores = p * (datt - (datt * p).sum(-1, keepdim=True))",
        "answer_dq": "dq = dscores.bmm(k) * (1.0 / head_size**0.5)",
        "answer_dk": "dk = (dscores.mT / head_size**0.5) @ q",
        "answer_demb": "demb = dx + (dq @ Wq.T + dk @ Wk.T + dv @ Wv.T)",
        "answer_drelu_in": "drelu_in = torch.where(relu_in > 0, drelu_out, 0.0)",
        "answer_dleaky_in": "dleaky_in = dleaky_out * (leaky_in > 0).float().clamp(min=0.1)",
    },
}

ALTERNATIVES["alt_g"] = {  # math's constants, Φ read off the forward pass (hgelu / hln), ReLU by indexing
    "answer_dhgelu": "dhgelu = dhdrop * drop_mask * (1.0 / (1.0 - drop_p))",
    "answer_dhln": "dhln = dhgelu * (hgelu / hln + hln * torch.exp(-hln**2 / 2) / (2 * torch.pi) ** 0.5)",
    "answer_dlngain": "dlngain = (dhln * (hln - lnbias) / lngain).sum(0, keepdim=True)",
    "answer_dlnbias": "dlnbias = dhln.sum(dim=0, keepdim=True)",
    "answer_dhpreln": "D = hpreln.shape[1]\ndy = lngain * dhln\ndhpreln = lnvar_inv / D * (D * dy "
    "- dy.sum(1, keepdim=True) - lnraw * (dy * lnraw).sum(1, keepdim=True))",
    "answer_dx": "dx = dhpreln @ W1.T\ndx = dx.view(n, block_size, n_embd)",
    "answer_datt_out": "datt_out = dx.clone()",
    "answer_datt": "datt = datt_out @ v.transpose(-2, -1)",
    "answer_dv": "dv = att.transpose(-2, -1) @ datt_out",
    "answer_dscores": "dscores = att * (datt - (att * datt).sum(dim=-1, keepdim=True))",
    "answer_dq": "import math\ndq = dscores @ k / math.sqrt(k.shape[-1])",
    "answer_dk": "dk = (dscores / head_size**0.5).transpose(1, 2) @ q",
    "answer_demb": "demb = dx.clone()\nfor dp, Wp in [(dq, Wq), (dk, Wk), (dv, Wv)]:\n    demb += dp @ Wp.T",
    "answer_drelu_in": "drelu_in = drelu_out.clone()\ndrelu_in[relu_in <= 0] = 0",
    "answer_dleaky_in": "dleaky_in = torch.where(leaky_out > 0, dleaky_out, 0.1 * dleaky_out)",
}

# One tensor under two names, changed in place afterwards (`demb = dx`, then `demb += ...`): each answer's value is
# right, and the tensor it changed (dx, dhdrop, datt, dhln, dleaky_out) was graded before, or is the notebook's own
ALTERNATIVES["alt_f_aliases"] = {
    "answer_dhgelu": "dhgelu = dhdrop\ndhgelu *= drop_mask\ndhgelu /= 1 - drop_p",
    "answer_dhln": "dhln = dhgelu * (0.5 * torch.erfc(-hln * 0.5**0.5) "
    "+ hln * torch.exp(-0.5 * hln**2) * 0.3989422804014327)",
    "answer_dlngain": "dlngain = (dhln * lnraw).sum(dim=0, keepdim=True)",
    "answer_dlnbias": "dlnbias = dhln.sum(dim=0, keepdims=True)",
    "answer_dhpreln": "dlnraw = dhln\ndlnraw *= lngain\ndhpreln = lnvar_inv / n_hidden * (n_hidden * dlnraw "
    "- dlnraw.sum(1, keepdim=True) - lnraw * (dlnraw * lnraw).sum(1, keepdim=True))",
    "answer_dx": "dx = torch.matmul(dhpreln, W1.T).view(n, block_size, -1)",
    "answer_datt_out": "datt_out = dx",
    "answer_datt": "datt = datt_out @ v.mT",
    "answer_dv": "dv = att.mT @ datt_out",
    "answer_dscores": "dscores = datt\ndscores *= att\ndscores -= att * dscores.sum(-1, keepdim=True)",
    "answer_dq": "import math\ndq = (dscores @ k) / math.sqrt(head_size)",
    "answer_dk": "dk = dscores.transpose(-2, -1) @ q / math.sqrt(head_size)",
    "answer_demb": "demb = dx\ndemb += dq @ Wq.T\ndemb += dk @ Wk.T\ndemb += dv @ Wv.T",
    "answer_drelu_in": "drelu_in = drelu_out * (relu_in > 0).to(drelu_out.dtype)",
    "answer_dleaky_in": "dleaky_in = dleaky_out\ndleaky_in[leaky_in <= 0] *= 0.1",
}

# Paths gathered in a container (found in an attacker's review): the probes did not see ``parts.append(..)`` change
# parts, so `demb = sum(parts)` read no upstream gradient and went unchecked by its rule (a copy so made kept its
# points); now each is re-run on the pins and checked
ALTERNATIVES["alt_h_containers"] = {
    **ALTERNATIVES["alt_g"],
    "answer_demb": "parts = []\nparts.append(dx)\nparts.append(dq @ Wq.T)\nparts.append(dk @ Wk.T)\n"
    "parts.append(dv @ Wv.T)\ndemb = sum(parts)",
    "answer_dhpreln": "grads = {}\ngrads.update(lnraw=lngain * dhln)\ng = grads['lnraw']\n"
    "dhpreln = lnvar_inv * (g - g.mean(1, keepdim=True) - lnraw * (g * lnraw).mean(1, keepdim=True))",
}

# A temporary named as a forward tensor in one answer cell (a judges' round): the step is right, but a later cell that
# reads that name (dx reads x.shape, dk reads q) runs on the temporary, in the student's notebook and as the probe
# replays it. The later step's code is right for the forward pass's tensor: it keeps its points, and its words name
# the line that rebound the name; a later step wrong for the forward pass's tensor too still loses its own.
# student -> (answer cells changed, the graded cells that lose, {graded cell: words it must hold})
_GELU_OF_X = "dhln = dhgelu * (0.5 * (1 + torch.erf(x / 2**0.5)) + x * torch.exp(-(x**2) / 2) / (2 * torch.pi) ** 0.5)"
REBOUND = {
    "rebound_x_in_dhln": (
        {
            "answer_dhln": "x = hln\ndhln = dhgelu * (0.5 * (1 + torch.erf(x / 2**0.5)) + x * torch.exp(-(x**2) / 2) "
            "/ (2 * torch.pi) ** 0.5)"
        },
        [],
        {"test_dx": ["read x after your cell of dhln rebound it (`x = hln`)"], "test_dscores": ["fix dx first"]},
    ),
    "rebound_q_in_dscores": (
        {"answer_dscores": "q = (att * datt).sum(-1, keepdim=True)\ndscores = att * (datt - q)"},
        [],
        {"test_dk": ["read q after your cell of dscores rebound it (`q = (att * datt).sum(-1, keepdim=True)`)"]},
    ),
    # a loop's variable, a walrus's: the later step's code reads them as the loop or the walrus left them
    "rebound_x_by_a_loop": (
        {"answer_dhln": "for x in [hln]:\n    " + _GELU_OF_X},
        [],
        {"test_dx": ["read x after your cell of dhln rebound it (`for x in [hln]:`)"]},
    ),
    "rebound_x_by_a_walrus": (
        {"answer_dhln": _GELU_OF_X.replace("erf(x", "erf((x := hln)")},
        [],
        {"test_dx": ["read x after your cell of dhln rebound it (`dhln = dhgelu * (0.5 * (1 + torch.erf((x := hln)"]},
    ),
    "rebound_k_by_a_loop": (
        {
            "answer_dscores": "dscores = torch.zeros_like(att)\nfor k in range(att.shape[0]):\n"
            "    dscores[k] = att[k] * (datt[k] - (datt[k] * att[k]).sum(1, keepdim=True))"
        },
        [],
        {"test_dq": ["read k after your cell of dscores rebound it (`for k in range(att.shape[0]):`)"]},
    ),
    "rebound_x_and_dx_doubled": (
        {
            "answer_dhln": "x = hln\ndhln = dhgelu * (0.5 * (1 + torch.erf(x / 2**0.5)) + x * torch.exp(-(x**2) / 2) "
            "/ (2 * torch.pi) ** 0.5)",
            "answer_dx": "dx = 2 * (dhpreln @ W1.T).view(x.shape)",
        },
        ["test_dx"],
        {},
    ),
}

# student -> (answer cells changed, {graded cell that must earn nothing: words})
CHEATS = {
    "c_copy_grad": (
        {
            "answer_dhln": "dhln = hln.grad.clone()",
            "answer_dscores": "dscores = scores.grad * 1.0",
            "answer_demb": "demb = emb.grad",
        },
        {"test_dhln": "autograd", "test_dscores": "autograd", "test_demb": "autograd"},
    ),
    "c_torch_backward_kernels": (  # torch's own backward functions, which autograd calls: autograd's answers too
        {
            "answer_dhln": "dhln = torch.ops.aten.gelu_backward(dhgelu, hln)",
            "answer_dscores": "dscores = torch._softmax_backward_data(datt, att, 2, att.dtype)",
            "answer_drelu_in": "drelu_in = torch.ops.aten.threshold_backward(drelu_out, relu_in, 0)",
            "answer_dleaky_in": "dleaky_in = torch.ops.aten.leaky_relu_backward(dleaky_out, leaky_in, 0.1, False)",
        },
        {
            "test_dhln": "autograd",
            "test_dscores": "autograd",
            "test_drelu_in": "autograd",
            "test_dleaky_in": "autograd",
        },
    ),
    "c_hidden_grad": (
        {"answer_dhpreln": grad_through_sgd("hpreln", "dhpreln")},
        {"test_dhpreln": "hpreln.grad"},
    ),
}


# Found in an attacker's review: cells that ran before the cell that starts grading read autograd's own gradients
# through torch.optim, out of the static reading's sight (26 of 26 points). Autograde runs the setup cells and the start
# cell first now, and the hidden tests report nothing when the start cell never ran.
# student -> (answer cells changed, what the student did to the notebook, {graded cell that must earn nothing: words})
LAID_OUT = {
    "c_read_above_the_start": (
        {
            "answer_dhln": "dhln = hln_read.clone()",
            "answer_dhpreln": "dhpreln = hpreln_read.clone()",
            "answer_dscores": "dscores = scores_read.clone()",
        },
        lambda nb: above_the_start(nb, read_above_the_start(["hln", "hpreln", "scores"])),
        {"test_dhln": "hln.grad", "test_dhpreln": "hpreln.grad", "test_dscores": "scores.grad"},
    ),
    "c_start_moved_down": (
        {"answer_dhpreln": grad_through_sgd("hpreln", "dhpreln")},
        start_moved_down,
        {"test_dhpreln": "hpreln.grad"},
    ),
    "c_start_deleted": (
        {"answer_dhpreln": grad_through_sgd("hpreln", "dhpreln")},
        start_deleted,
        {f"test_d{step.name}": "reported nothing" for step in OPERATOR_STEPS},
    ),
}


def submissions(release, source) -> dict:
    """student -> notebook: the solution, a blank one, every case above, and values pasted from the notebook's run."""
    class_ = {"solution": solved(release, source), "blank": release}
    for mistake, (changes, _) in {**MISTAKES, **RAISING}.items():
        class_[mistake] = solved(release, source, changes)
    for student, changes in ALTERNATIVES.items():
        class_[student] = solved(release, source, changes)
    for student, (changes, _) in CHEATS.items():
        class_[student] = solved(release, source, changes)
    for student, (changes, _, _) in REBOUND.items():
        class_[student] = solved(release, source, changes)
    for student, (changes, lay_out, _) in LAID_OUT.items():
        class_[student] = lay_out(solved(release, source, changes))
    visible = run_setup(tuple(c.source for c in source.cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647)
    pasted = {"answer_dlnbias": f"dlnbias = torch.tensor({visible['lnbias'].grad.tolist()})"}
    class_["c_pasted_values"] = solved(release, source, pasted)
    return class_


# A third review (December 2026): more of a student's own slips, several to a student where their steps differ (each
# step is judged from the student's own upstream gradients, so each costs its own cell), and two more sets of correct
# forms. These are appended to MISTAKES and RAISING as packed students: {student: (changes, {cell: (kind, words)})}.
MISTAKES.update(
    {
        "packed_slips_a": (
            {
                "answer_dhgelu": "dhgelu = dhdrop * (hdrop > 0) / (1 - drop_p)",  # mask: hdrop > 0
                "answer_dhln": "dhln = dhgelu * (0.5 * (1 + torch.erf(hln / 2**0.5)) + hln * torch.exp(-hgelu**2 / 2) "
                "/ (2 * torch.pi) ** 0.5)",
                "answer_dlngain": "dlngain = (hpreln * dhln).sum(0, keepdim=True)",
                "answer_dlnbias": "dlnbias = dhgelu.sum(0, keepdim=True)",
                "answer_dhpreln": "dlnraw = lngain * dhln\ndhpreln = lnvar_inv / n_hidden * (n_hidden * dlnraw - "
                "dhln.sum(1, keepdim=True) - lnraw * (dlnraw * lnraw).sum(1, keepdim=True))",
                "answer_dscores": "dscores = att * (datt - datt.sum(2, keepdim=True))",
                "answer_dq": "dq = dscores.transpose(1, 2) @ k / head_size**0.5",
                "answer_demb": "demb = dx + dq @ Wq.T + dk @ Wq.T + dv @ Wv.T",  # Wq copied for Wk
                "answer_drelu_in": "drelu_in = drelu_out * relu_in",
                "answer_dleaky_in": "dleaky_in = 0.1 * dleaky_out",
            },
            {
                # "entries wrong" before h-mist5, each of the ten but dq's
                "test_dhgelu": ("dropout_mask", "dhgelu's mask is hdrop > 0"),
                "test_dhln": ("other_tensor", "dhln takes the normal density φ of hgelu"),
                "test_dlngain": ("other_tensor", "dlngain reads hpreln where"),
                # (this dhgelu, wrong too, is not in dlnbias's report: a right dhgelu read there is named)
                "test_dlnbias": ("wrong_values", "entries wrong"),
                "test_dhpreln": ("missing_factor", "dhpreln's path through the mean sums dhln where"),
                "test_dscores": ("missing_factor", "dscores subtracts the plain sum of datt along the row"),
                "test_dq": ("transposed", "dq reads dscores transposed"),
                "test_demb": ("other_tensor", "demb reads Wq where"),
                "test_drelu_in": ("activation_mask", "drelu_in multiplies by relu_in itself"),
                "test_dleaky_in": ("activation_mask", "dleaky_in has slope 0.1 everywhere"),
            },
        ),
        "packed_slips_b": (
            {
                "answer_dhln": "dhln = dhgelu * ((1 + torch.erf(hln / 2**0.5)) + hln * torch.exp(-hln**2 / 2) "
                "/ (2 * torch.pi) ** 0.5)",
                "answer_dlngain": "dlngain = (lnraw * dhln).sum(0)",
                "answer_dhpreln": "dlnraw = lngain * dhln\ndhpreln = lnvar / n_hidden * (n_hidden * dlnraw - "
                "dlnraw.sum(1, keepdim=True) - lnraw * (dlnraw * lnraw).sum(1, keepdim=True))",
            },
            {
                "test_dhln": ("missing_factor", "dhln's Φ(x) term is missing its 0.5"),
                "test_dlngain": ("keepdim", "the values are right, so this step earns 0.5 of its 1"),
                "test_dhpreln": ("other_tensor", "dhpreln reads lnvar where"),  # "entries wrong" before
            },
        ),
        "packed_slips_c": (
            {
                "answer_dhln": "dhln = dhgelu * (0.5 * (1 + torch.erf(hln / 2**0.5)) + hln * torch.exp(-hln**2) "
                "/ (2 * torch.pi) ** 0.5)",
                "answer_dhpreln": "dlnraw = lngain * dhln\ndhpreln = lnvar_inv / n_hidden * (n_hidden * dlnraw - "
                "dlnraw.sum(1, keepdim=True) + lnraw * (dlnraw * lnraw).sum(1, keepdim=True))",  # the sign
            },
            {
                "test_dhln": ("missing_factor", "where the normal density has exp(-x²/2)"),
                "test_dhpreln": ("wrong_sign", "dhpreln adds the path through the variance where it subtracts it"),
            },
        ),
        "packed_slips_d": (
            {
                "answer_dhpreln": "dlnraw = lngain * dhln\ndhpreln = lnvar_inv / n_hidden * (n_hidden * dlnraw - "
                "dlnraw.sum(0, keepdim=True) - lnraw * (dlnraw * lnraw).sum(1, keepdim=True))",  # a batch mean
                "answer_datt_out": "datt_out = torch.zeros_like(dx)",
            },
            {
                "test_dhpreln": ("wrong_dimension", "dhpreln's path through the mean sums over the batch"),
                "test_datt_out": ("all_zeros", "datt_out is all zeros"),
            },
        ),
    }
)
RAISING.update(
    {
        "dx_W1_not_transposed": (
            {"answer_dx": "dx = (dhpreln @ W1).view(x.shape)"},
            {"test_dx": ("raised_error", "dx's cell stopped with RuntimeError")},
        ),
        "datt_and_dv_without_their_transposes": (  # both cells raise: the cells that need datt and dv keep theirs
            {"answer_datt": "datt = datt_out @ v", "answer_dv": "dv = datt_out @ att"},
            {
                "test_datt": ("raised_error", "datt's cell stopped with RuntimeError"),
                "test_dv": ("raised_error", "dv's cell stopped with RuntimeError"),
            },
        ),
        "dk_from_dq": (
            {"answer_dk": "dk = dq.transpose(1, 2) @ q / head_size**0.5"},
            {"test_dk": ("wrong_shape", "dk has shape (32, 16, 16)")},
        ),
        "demb_Wq_not_transposed": (
            {"answer_demb": "demb = dx + dq @ Wq + dk @ Wk.T + dv @ Wv.T"},
            {"test_demb": ("raised_error", "demb's cell stopped with RuntimeError")},
        ),
        "dx_viewed_in_the_wrong_order": (  # (n, 10, 3): the cells after it raise, and keep their points by their rule
            {"answer_dx": "dx = (dhpreln @ W1.T).view(n, n_embd, block_size)"},
            {"test_dx": ("transposed", "the dimensions are in the wrong order")},
        ),
    }
)
ALTERNATIVES["alt_h"] = {  # numpy-style axis=, math.sqrt, an exact 10/9, einsum over a transpose, add_ in a chain
    "answer_dhgelu": "dhgelu = dhdrop * drop_mask * (10 / 9)",
    "answer_dhln": "import math\ndhln = dhgelu * (0.5 * (1 + torch.special.erf(hln / math.sqrt(2))) "
    "+ hln * torch.exp(-hln**2 / 2) / math.sqrt(2 * math.pi))",
    "answer_dlngain": "dlngain = (dhln * lnraw).sum(axis=0, keepdims=True)",
    "answer_dlnbias": "dlnbias = dhln.sum(axis=0)[None]",
    "answer_dhpreln": "H = hpreln.size(-1)\ng = lngain * dhln\ndhpreln = lnvar_inv * (g - g.sum(-1, keepdim=True) / H "
    "- lnraw * (g * lnraw).sum(-1, keepdim=True) / H)",
    "answer_dx": "dx = dhpreln.matmul(W1.T).reshape(x.shape)",
    "answer_datt_out": "datt_out = dx.detach().clone()",
    "answer_datt": "datt = (datt_out.unsqueeze(2) * v.unsqueeze(1)).sum(-1)",
    "answer_dv": "dv = torch.einsum('bij,bjd->bid', att.transpose(1, 2), datt_out)",
    "answer_dscores": "dscores = att * (datt - torch.einsum('bij,bij->bi', datt, att)[..., None])",
    "answer_dq": "dq = dscores @ k * (1 / math.sqrt(head_size))",
    "answer_dk": "dk = torch.einsum('bij,bid->bjd', dscores, q) / math.sqrt(head_size)",
    "answer_demb": "demb = dx.clone().add_(dq @ Wq.T).add_(dk @ Wk.T).add_(dv @ Wv.T)",
    "answer_drelu_in": "drelu_in = drelu_out * relu_in.gt(0)",
    "answer_dleaky_in": "dleaky_in = torch.where(leaky_in > 0, 1.0, 0.1) * dleaky_out",
}
ALTERNATIVES["alt_i"] = {  # two steps rebinding, decimal constants, float64 LayerNorm, broadcast sums, a where on <= 0
    "answer_dhgelu": "dhgelu = dhdrop * drop_mask\ndhgelu = dhgelu / (1 - drop_p)",
    "answer_dhln": "cdf = 0.5 * (1.0 + torch.erf(hln * 0.7071067811865476))\npdf = torch.exp(-0.5 * hln**2) "
    "* 0.3989422804014327\ndhln = dhgelu * (cdf + hln * pdf)",
    "answer_dlngain": "dlngain = torch.sum(dhln * (hpreln - lnmean) * lnvar_inv, 0, keepdim=True)",
    "answer_dlnbias": "dlnbias = torch.ones(1, dhln.shape[0]) @ dhln",
    "answer_dhpreln": "g = (lngain * dhln).double()\nr = lnraw.double()\ndhpreln = (lnvar_inv.double() * (g - "
    "g.mean(1, keepdim=True) - r * (g * r).mean(1, keepdim=True))).to(dhln.dtype)",
    "answer_dx": "dx = (dhpreln @ W1.transpose(0, 1)).view(n, block_size, n_embd)",
    "answer_datt_out": "datt_out = dx.clone().detach()",
    "answer_datt": "datt = datt_out @ v.swapaxes(1, 2)",
    "answer_dv": "dv = (att.unsqueeze(3) * datt_out.unsqueeze(2)).sum(1)",
    "answer_dscores": "s = (att * datt).sum(dim=2, keepdim=True)\ndscores = att * datt - att * s",
    "answer_dq": "dq = (dscores @ k) * head_size**-0.5",
    "answer_dk": "dk = torch.matmul(dscores.transpose(-1, -2), q) / head_size**0.5",
    "answer_demb": "demb = dx + dq @ Wq.T\ndemb = demb + dk @ Wk.T\ndemb = demb + dv @ Wv.T",
    "answer_drelu_in": "drelu_in = drelu_out * (relu_in > 0).float()",
    "answer_dleaky_in": "dleaky_in = torch.where(leaky_in <= 0, dleaky_out * 0.1, dleaky_out)",
}

# A judges' round (December 2026): a ReLU mask of "not zero" lets the negative inputs through (it had the generic
# "entries wrong"), and a misplaced bracket takes ** 0.5 of GELU's derivative, negative below about -0.75: NaN, whose
# words named only a division by zero or log(0). Each costs its own step.
MISTAKES["relu_mask_of_nonzero"] = (
    {"answer_drelu_in": "drelu_in = drelu_out * relu_in.bool()"},
    {"test_drelu_in": ("activation_mask", "a mask of relu_in != 0 (or relu_in.bool())")},
)
MISTAKES["gelu_bracket_takes_the_root"] = (
    {
        "answer_dhln": "dhln = dhgelu * (0.5 * (1 + torch.erf(hln / 2**0.5)) + hln * torch.exp(-hln**2 / 2) "
        "/ (2 * torch.pi)) ** 0.5"
    },
    {"test_dhln": ("not_finite", "** 0.5 or ** -1.5 of a negative number")},
)

# A round of students' slips (December 2026), two students. Before: a floor division, a .view that mixes up the
# dimensions, two paths of demb dropped by a `=` for a `+=`, torch.sign for ReLU's slope, LeakyReLU's slope alone or
# negative below zero and GELU's bracket around one term only had the generic "entries wrong".
MISTAKES["packed_slips_e"] = (
    {
        "answer_dhgelu": "dhgelu = dhdrop * drop_mask // (1 - drop_p)",
        "answer_dx": "dx = (dhpreln @ W1.T).view(n, n_embd, 3).transpose(1, 2)",
        "answer_demb": "demb = dx.clone()\ndemb += dq @ Wq.T\ndemb = dk @ Wk.T\ndemb += dv @ Wv.T",
        "answer_drelu_in": "drelu_in = torch.sign(relu_in) * drelu_out",
        "answer_dleaky_in": "dleaky_in = torch.where(leaky_in > 0, dleaky_out, 0.1)",
    },
    {
        "test_dhgelu": ("integer_division", "every entry of dhgelu is a whole number"),
        "test_dx": ("rearranged", "dx holds the right values, but in the wrong places"),
        "test_demb": ("missing_path", "the paths through x and q are missing"),
        "test_drelu_in": ("activation_mask", "torch.sign(relu_in) is -1 there"),
        "test_dleaky_in": ("activation_mask", "the upstream gradient dleaky_out is missing there"),
    },
)
MISTAKES["packed_slips_f"] = (
    {
        "answer_dhln": "dhln = dhgelu * 0.5 * (1 + torch.erf(hln / 2**0.5)) + hln * torch.exp(-hln**2 / 2) "
        "/ (2 * torch.pi) ** 0.5",
        "answer_dlnbias": "dlnbias = dhln.mean(0, keepdim=True)",
        "answer_dleaky_in": "dleaky_in = torch.where(leaky_in > 0, dleaky_out, -0.1 * dleaky_out)",
    },
    {
        "test_dhln": ("precedence", "brackets missing"),
        "test_dlnbias": ("batch_size", "n = 32 times too small"),
        "test_dleaky_in": ("activation_mask", "slope -0.1"),
    },
)


# h-alts2's round (December 2026): more forms, each keeping every point: erf's derivative written out as 2/sqrt(pi),
# einsum with other letters, keepdims=, a mean in place of a sum over n_hidden, view_as, ones_like times dx for the skip
# connection, a scale factor named first, demb from zeros, ReLU's mask from relu_out, LeakyReLU's slope as a tensor
ALTERNATIVES.update(
    {
        "alt_h_alts2_a": {
            "answer_dhgelu": "dhgelu = dhdrop * drop_mask.float() / (1.0 - drop_p)",
            "answer_dhln": (
                "dhln = dhgelu * (0.5 * (1 + torch.erf(hln / 2**0.5)) + 0.5 * hln * (2 / torch.pi**0.5) *"
                " torch.exp(-hln**2 / 2) / 2**0.5)"
            ),
            "answer_dlngain": "dlngain = torch.einsum('bh,bh->h', lnraw, dhln).unsqueeze(0)",
            "answer_dlnbias": "dlnbias = torch.sum(dhln, 0, keepdim=True)",
            "answer_dhpreln": (
                "dxhat = dhln * lngain\n"
                "dhpreln = (1.0 / n_hidden) * lnvar_inv * (n_hidden * dxhat - dxhat.sum(1, keepdims=True) -"
                " lnraw * (dxhat * lnraw).sum(1, keepdims=True))"
            ),
            "answer_dx": "dx = dhpreln @ W1.T\ndx = dx.view_as(x)",
            "answer_datt_out": "datt_out = torch.ones_like(att_out) * dx  # skip connection",
            "answer_datt": "datt = torch.einsum('btc,bsc->bts', datt_out, v)",
            "answer_dv": "dv = torch.einsum('bts,btc->bsc', att, datt_out)",
            "answer_dscores": "dscores = att * datt - att * (att * datt).sum(dim=-1, keepdims=True)",
            "answer_dq": "dq = dscores @ k * k.shape[-1] ** -0.5",
            "answer_dk": "dk = dscores.transpose(-2, -1) @ q * head_size**-0.5",
            "answer_demb": "demb = dx + dq @ Wq.transpose(0, 1) + dk @ Wk.transpose(0, 1) + dv @ Wv.transpose(0, 1)",
            "answer_drelu_in": "drelu_in = drelu_out.clone()\ndrelu_in[relu_out == 0] = 0",
            "answer_dleaky_in": (
                "slope = torch.full_like(leaky_in, 0.1)\nslope[leaky_in > 0] = 1.0\ndleaky_in = slope * dleaky_out"
            ),
        },
        "alt_h_alts2_b": {
            "answer_dhgelu": "dhgelu = torch.where(drop_mask > 0, dhdrop, 0.0) / (1 - drop_p)",
            "answer_dhln": (
                "import math\nphi = torch.exp(-0.5 * hln**2) / math.sqrt(2 * math.pi)\n"
                "Phi = 0.5 * (1 + torch.erf(hln / math.sqrt(2)))\ndhln = dhgelu * (Phi + hln * phi)\nprint(dhln.shape)"
            ),
            "answer_dlngain": "dlngain = (lnraw * dhln).sum(0, keepdims=True).float()",
            "answer_dlnbias": "dlnbias = dhln.sum(0, keepdims=True).clone()",
            "answer_dhpreln": (
                "D = lngain.shape[1]\ndlnraw = lngain * dhln\n"
                "dhpreln = lnvar_inv * (dlnraw - dlnraw.mean(-1, keepdim=True) - lnraw * (dlnraw *"
                " lnraw).mean(-1, keepdim=True))\n"
                "assert dhpreln.shape == hpreln.shape"
            ),
            "answer_dx": "dx = (dhpreln @ W1.T).view(n, 3, -1)",
            "answer_datt_out": "datt_out = dx.clone().contiguous()",
            "answer_datt": "datt = datt_out @ v.transpose(2, 1)",
            "answer_dv": "dv = att.transpose(2, 1) @ datt_out",
            "answer_dscores": "tmp = (datt * att).sum(-1, keepdim=True)\ndscores = (datt - tmp) * att",
            "answer_dq": "scale = 1.0 / head_size**0.5\ndq = scale * (dscores @ k)",
            "answer_dk": "scale = 1.0 / head_size**0.5\ndk = scale * (dscores.transpose(1, 2) @ q)",
            "answer_demb": (
                "demb = torch.zeros_like(emb)\ndemb += dx\ndemb += dq @ Wq.T\ndemb += dk @ Wk.T\ndemb += dv @ Wv.T"
            ),
            "answer_drelu_in": "drelu_in = (relu_out > 0).float() * drelu_out",
            "answer_dleaky_in": (
                "dleaky_in = dleaky_out * torch.where(leaky_in > 0, torch.ones_like(leaky_in), 0.1 *"
                " torch.ones_like(leaky_in))"
            ),
        },
    }
)


# h-mist5's round (December 2026): GELU's product rule with its second term subtracted (it read "N of M entries wrong");
# the other slips of this round are the packed students' above, each of whose words is named now
MISTAKES["gelu_product_rule_minus"] = (
    {
        "answer_dhln": "dhln = dhgelu * (0.5 * (1 + torch.erf(hln / 2**0.5)) "
        "- hln * torch.exp(-hln**2 / 2) / (2 * torch.pi) ** 0.5)"
    },
    {"test_dhln": ("wrong_sign", "dhln subtracts the x·φ(x) term")},
)
# ... and four more that read "N of M entries wrong" or "off by a constant factor: 0.25 times": dropout's mask the
# wrong way round, LayerNorm's count n_hidden - 1, the attention's scale put into datt and dv (each its own step's)
MISTAKES["packed_slips_g"] = (
    {
        "answer_dhgelu": "dhgelu = dhdrop * (1 - drop_mask) / (1 - drop_p)",
        "answer_dhpreln": "dlnraw = lngain * dhln\ndhpreln = lnvar_inv / (n_hidden - 1) * ((n_hidden - 1) * dlnraw - "
        "dlnraw.sum(1, keepdim=True) - lnraw * (dlnraw * lnraw).sum(1, keepdim=True))",
        "answer_datt": "datt = datt_out @ v.transpose(1, 2) / head_size**0.5",
        "answer_dv": "dv = att.transpose(1, 2) @ datt_out / head_size**0.5",
    },
    {
        "test_dhgelu": ("dropout_mask", "dhgelu's mask is the wrong way round"),
        "test_dhpreln": ("bessel", "dhpreln counts n_hidden - 1 features"),
        "test_datt": ("attention_scale", "datt is divided by √head_size: the attention's scale belongs to the scores"),
        "test_dv": ("attention_scale", "dv is divided by √head_size"),
    },
)
MISTAKES["layernorm_lnvar_inv_squared"] = (  # a forward tensor to another power (diagnosis/left_out)
    {
        "answer_dhpreln": "dlnraw = lngain * dhln\ndhpreln = lnvar_inv**2 / n_hidden * (n_hidden * dlnraw - "
        "dlnraw.sum(1, keepdim=True) - lnraw * (dlnraw * lnraw).sum(1, keepdim=True))"
    },
    {"test_dhpreln": ("other_tensor", "dhpreln has lnvar_inv**2 where the local derivative")},
)

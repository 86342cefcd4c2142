"""The audit of tests/slow/test_alternative_solutions.py for Exercise 5 (dropout, GELU, LayerNorm, an attention head,
the skip connection, ReLU and LeakyReLU): other correct ways of writing each step, which must keep every point, and
realistic mistakes, which must lose exactly their own step (the steps after it, right for the student's own upstream
gradients, keep theirs). Beyond tests/support/cases_ex5.py. Cases the grader gets wrong are marked xfail.

Graded in process (tests/support/in_process.py), with the slow tier.
"""

import pytest
from support.audit import cell_of, params, release
from support.in_process import autograde, source_notebook

from autograder.authoring.submissions import solved

NB5 = "ex5_new_operators"

# Every alternative changes one answer cell, so that a lost point names its cell.
ALTERNATIVES = [
    "dhgelu = dhdrop * drop_mask * (1 / (1 - drop_p))",
    "dhgelu = dhdrop\ndhgelu *= drop_mask / (1 - drop_p)  # changes the given dhdrop too",
    "dhgelu = torch.where(drop_mask > 0, dhdrop / (1 - drop_p), 0.0)",
    "dhgelu = dhdrop.clone()\ndhgelu[drop_mask == 0] = 0\ndhgelu /= 1 - drop_p",
    "from math import sqrt, pi\ncdf = 0.5 * (1 + torch.erf(hln / sqrt(2)))\n"
    "pdf = torch.exp(-0.5 * hln**2) / sqrt(2 * pi)\n"
    "dhln = dhgelu * (cdf + hln * pdf)",
    "N = torch.distributions.Normal(0.0, 1.0)\ndhln = dhgelu * (N.cdf(hln) + hln * N.log_prob(hln).exp())",
    "import math\ndhln = dhgelu * (0.5 * torch.erfc(-hln / math.sqrt(2)) + hln * torch.exp(-hln * hln / 2) "
    "/ math.sqrt(2 * math.pi))",
    "def gelu_grad(x):\n"
    "    return 0.5 * (1 + torch.erf(x / 2**0.5)) + x * torch.exp(-(x**2) / 2) / (2 * torch.pi) ** 0.5\n\n\n"
    "dhln = dhgelu * gelu_grad(hln)",
    "dhln = dhgelu * (hgelu / hln + hln * torch.exp(-(hln**2) / 2) / (2 * torch.pi) ** 0.5)",
    "dlngain = torch.sum(dhln * lnraw, dim=0, keepdim=True)",
    "dlngain = ((hpreln - lnmean) * lnvar_inv * dhln).sum(0, keepdim=True)",
    "dlnbias = dhln.sum(0).unsqueeze(0)",
    "dlnbias = dhln.sum(dim=0, keepdims=True)",
    "dy = lngain * dhln\n"
    "dhpreln = lnvar_inv * (dy - dy.mean(1, keepdim=True) - lnraw * (dy * lnraw).mean(1, keepdim=True))",
    "D = hpreln.shape[1]\ndy = dhln * lngain\ndhpreln = lnvar_inv / D * (D * dy - dy.sum(1, keepdim=True) "
    "- lnraw * (dy * lnraw).sum(1, keepdim=True))",
    "dy = lngain * dhln\nxc = hpreln - lnmean\ndvar = (dy * xc).sum(1, keepdim=True) * -0.5 * lnvar_inv**3\n"
    "dmu = -(dy * lnvar_inv).sum(1, keepdim=True)\n"
    "dhpreln = dy * lnvar_inv + dvar * 2 * xc / n_hidden + dmu / n_hidden",
    "dhln = dhgelu\n"
    "dhln *= 0.5 * (1 + torch.erf(hln / 2**0.5)) + hln * torch.exp(-(hln**2) / 2) / (2 * torch.pi) ** 0.5",
    "dx = (dhpreln @ W1.t()).reshape(n, block_size, n_embd)",
    "dx = dhpreln.matmul(W1.T).view_as(x)",
    "datt_out = dx",
    "datt_out = dx.detach().clone()",
    "datt = torch.bmm(datt_out, v.transpose(1, 2))",
    "datt = datt_out @ v.mT",
    "dv = torch.bmm(att.transpose(1, 2), datt_out)",
    "dv = att.mT @ datt_out",
    "dscores = att * datt - att * (att * datt).sum(dim=-1, keepdim=True)",
    "dscores = torch.zeros_like(scores)\nfor b in range(att.shape[0]):\n    for i in range(att.shape[1]):\n"
    "        a = att[b, i]\n        dscores[b, i] = (torch.diag(a) - torch.outer(a, a)) @ datt[b, i]",
    "s = (datt * att).sum(2, keepdim=True)\ndscores = att * datt\ndscores -= att * s",
    "dscores = torch.stack([a * (d - (d * a).sum(-1, keepdim=True)) for a, d in zip(att, datt)])",
    "p = F.softmax(scores, 2)\ndscores = p * (datt - (p * datt).sum(2, keepdim=True))",
    "dq = dscores @ k / head_size**0.5\ncheck_answer('q')",
    "import math\ndq = torch.bmm(dscores, k) / math.sqrt(head_size)",
    "dq = (dscores @ k) * (1.0 / head_size**0.5)",
    "dk = dscores.mT @ q / head_size**0.5",
    "dk = torch.stack([ds.T @ qq for ds, qq in zip(dscores, q)]) / head_size**0.5",
    "dk = torch.bmm(dscores.transpose(1, 2), q) * head_size**-0.5",
    "demb = dx.clone()\nfor d, W in ((dq, Wq), (dk, Wk), (dv, Wv)):\n    demb += d @ W.T",
    "demb = dx + (dq @ Wq.T + dk @ Wk.T + dv @ Wv.T)",
    "demb = datt_out + dq @ Wq.T + dk @ Wk.T + dv @ Wv.T",
    "demb = dx + sum(d @ W.T for d, W in [(dq, Wq), (dk, Wk), (dv, Wv)])",
    "demb = torch.zeros_like(emb)\ndemb += dx\ndemb += torch.matmul(dq, Wq.T)\ndemb += torch.matmul(dk, Wk.T)\n"
    "demb += torch.matmul(dv, Wv.T)",
    "demb = dx\ndemb = demb + dq @ Wq.T\ndemb = demb + dk @ Wk.T\ndemb = demb + dv @ Wv.T",
    "drelu_in = drelu_out * (relu_in > 0).float()",
    "drelu_in = drelu_out.clone()\ndrelu_in[relu_in <= 0] = 0",
    "drelu_in = torch.where(relu_in > 0, drelu_out, 0.0)",
    "drelu_in = drelu_out * torch.heaviside(relu_in, torch.tensor(0.0))",
    "drelu_in = drelu_out * relu_in.gt(0)",
    "drelu_in = drelu_out * torch.sign(relu_out)",
    "drelu_in = drelu_out * torch.nan_to_num(relu_out / relu_in)",
    "drelu_in = drelu_out\ndrelu_in[relu_in <= 0] = 0  # changes the given drelu_out too",
    "dleaky_in = dleaky_out * torch.where(leaky_in > 0, 1.0, 0.1)",
    "dleaky_in = torch.where(leaky_out > 0, dleaky_out, 0.1 * dleaky_out)",
    "slope = torch.full_like(leaky_in, 0.1)\nslope[leaky_in > 0] = 1.0\ndleaky_in = slope * dleaky_out",
    "with torch.no_grad():\n    dleaky_in = dleaky_out * ((leaky_in > 0) + 0.1 * (leaky_in <= 0))",
    # a judges' round (December 2026): lnraw from F.layer_norm or torch.var_mean, the softmax's row sums by a batched
    # product, two paths of demb in one product, ReLU's mask by sign
    "xhat = F.layer_norm(hpreln, (n_hidden,), eps=1e-5)\ng = lngain * dhln\n"
    "dhpreln = lnvar_inv * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))",
    "var, mu = torch.var_mean(hpreln, dim=-1, keepdim=True, correction=0)\nrstd = (var + 1e-5).rsqrt()\n"
    "xhat = (hpreln - mu) * rstd\ng = lngain * dhln\n"
    "dhpreln = rstd * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))",
    "dscores = att * (datt - (datt.unsqueeze(2) @ att.unsqueeze(3)).squeeze(-1))",
    "demb = dx + torch.cat([dq, dk], -1) @ torch.cat([Wq, Wk], -1).T + dv @ Wv.T",
    "drelu_in = drelu_out * torch.sign(relu_in).clamp(min=0)",
    "dleaky_in = dleaky_out * (0.1 + 0.9 * (leaky_in > 0))",
]


ALTERNATIVES = {f"alt5_{i:02d}_{cell_of(c)[7:]}": {cell_of(c): c} for i, c in enumerate(ALTERNATIVES)}
ALTERNATIVES["alt5_matmul_helper"] = {  # one helper for the four matrix products of the head
    "answer_datt": "def mm_grads(a, b, dout):\n    return dout @ b.transpose(-1, -2), a.transpose(-1, -2) @ dout\n\n\n"
    "datt, _ = mm_grads(att, v, datt_out)",
    "answer_dv": "_, dv = mm_grads(att, v, datt_out)",
    "answer_dq": "dq, _ = mm_grads(q, k.transpose(1, 2), dscores / head_size**0.5)",
    "answer_dk": "dk = mm_grads(q, k.transpose(1, 2), dscores / head_size**0.5)[1].transpose(1, 2)",
}
ALTERNATIVES["alt5_given_dhdrop_masked_first"] = {
    "answer_dhgelu": "dhdrop = dhdrop * drop_mask\ndhgelu = dhdrop / (1 - drop_p)"
}
ALTERNATIVES["alt5_checked_dhln_scaled_in_place"] = {  # dhln changed after its check, in dhpreln's cell
    "answer_dhpreln": "dhln *= lngain\ndhpreln = lnvar_inv / n_hidden * (n_hidden * dhln - dhln.sum(1, keepdim=True) "
    "- lnraw * (dhln * lnraw).sum(1, keepdim=True))"
}
ALTERNATIVES["alt5_aliases_of_dx"] = {  # datt_out and demb both dx itself, demb then changed in place (dx too)
    "answer_datt_out": "datt_out = dx",
    "answer_demb": "demb = dx\ndemb += dq @ Wq.T\ndemb += dk @ Wk.T\ndemb += dv @ Wv.T",
}

# mistake -> (its code, the step that must lose its points)
MISTAKES = {
    "dropout_times_keep": ("dhgelu = dhdrop * drop_mask * (1 - drop_p)", "hgelu"),
    "dropout_by_p": ("dhgelu = dhdrop * drop_mask / drop_p", "hgelu"),
    "gelu_precedence": (
        "dhln = dhgelu * 0.5 * (1 + torch.erf(hln / 2**0.5)) + hln * torch.exp(-hln**2 / 2) / (2 * torch.pi) ** 0.5",
        "hln",
    ),
    "gelu_sqrt_pi": (
        "dhln = dhgelu * (0.5 * (1 + torch.erf(hln / 2**0.5)) + hln * torch.exp(-hln**2 / 2) / torch.pi**0.5)",
        "hln",
    ),
    "gelu_cdf_only": ("dhln = dhgelu * 0.5 * (1 + torch.erf(hln / 2**0.5))", "hln"),
    "lngain_from_hln": ("dlngain = (hln * dhln).sum(0, keepdim=True)", "lngain"),
    "lngain_no_keepdim": ("dlngain = (lnraw * dhln).sum(0)", "lngain"),
    "lnbias_wrong_dim": ("dlnbias = dhln.sum(1, keepdim=True)", "lnbias"),
    "layernorm_batch_size_for_features": (
        "dy = lngain * dhln\ndhpreln = lnvar_inv / n * (n * dy - dy.sum(1, keepdim=True) "
        "- lnraw * (dy * lnraw).sum(1, keepdim=True))",
        "hpreln",
    ),
    "layernorm_sign": (
        "dy = lngain * dhln\n"
        "dhpreln = lnvar_inv * (dy - dy.mean(1, keepdim=True) + lnraw * (dy * lnraw).mean(1, keepdim=True))",
        "hpreln",
    ),
    "layernorm_no_lnvar_inv": (
        "dy = lngain * dhln\ndhpreln = dy - dy.mean(1, keepdim=True) - lnraw * (dy * lnraw).mean(1, keepdim=True)",
        "hpreln",
    ),
    "dx_wrong_layout": ("dx = (dhpreln @ W1.T).view(n, n_embd, block_size).transpose(1, 2)", "x"),
    "dx_summed_over_the_batch": ("dx = (dhpreln.sum(0, keepdim=True) @ W1.T).expand(n, -1).reshape(x.shape)", "x"),
    "datt_swapped": ("datt = (datt_out @ v.transpose(1, 2)).transpose(1, 2)", "att"),
    "dscores_diagonal_only": ("dscores = att * (1 - att) * datt", "scores"),
    "dscores_sum_without_att": ("dscores = att * (datt - datt.sum(2, keepdim=True))", "scores"),
    "dscores_minus_att": ("dscores = datt - (datt * att).sum(2, keepdim=True)", "scores"),
    "dq_times_scale": ("dq = dscores @ k * head_size**0.5", "q"),
    "dq_transposed": ("dq = dscores.transpose(1, 2) @ k / head_size**0.5", "q"),
    "dk_no_scale": ("dk = dscores.transpose(1, 2) @ q", "k"),
    "demb_last_path_assigned": ("demb = dx.clone()\ndemb += dq @ Wq.T\ndemb += dk @ Wk.T\ndemb = dv @ Wv.T", "emb"),
    "demb_not_transposed": ("demb = dx + dq @ Wq.T + dk @ Wk.T + dv @ Wv", "emb"),
    "relu_times_output": ("drelu_in = relu_out * drelu_out", "relu_in"),
    "relu_mask_only": ("drelu_in = (relu_in > 0).float()", "relu_in"),
    "relu_ratio": ("drelu_in = drelu_out * relu_out / relu_in", "relu_in"),  # 0/0 at the kink
    "leaky_ratio": ("dleaky_in = dleaky_out * leaky_out / leaky_in", "leaky_in"),
    "leaky_default_slope": ("dleaky_in = torch.where(leaky_in > 0, dleaky_out, 0.01 * dleaky_out)", "leaky_in"),
    "leaky_slope_without_upstream": ("dleaky_in = torch.where(leaky_in > 0, dleaky_out, 0.1)", "leaky_in"),
    "dx_not_transposed_back": ("dx = (W1 @ dhpreln.T).view(n, block_size, n_embd)", "x"),  # (30, n) read as (n, 3, 10)
    "demb_cat_in_the_wrong_order": (
        "demb = dx + torch.cat([dq, dk], -1) @ torch.cat([Wk, Wq], -1).T + dv @ Wv.T",
        "emb",
    ),
}
# case -> why the grader gets it wrong (xfail, strict). The temporaries named as forward tensors that were here are
# graded right now, with the fast tier's cases (tests/support/cases_ex5.py, REBOUND)
XFAIL = {}


@pytest.fixture(scope="module")
def graded5():
    rel = release(NB5)
    src = source_notebook(NB5)
    class_ = {"solution": solved(rel, src)}
    for student, changes in ALTERNATIVES.items():
        class_[student] = solved(rel, src, changes)
    for student, (code, _) in MISTAKES.items():
        class_[student] = solved(rel, src, {cell_of(code): code})
    return autograde(NB5, class_)


@pytest.mark.parametrize("student", params(["solution", *ALTERNATIVES], XFAIL))
def test_ex5_alternative_keeps_every_point(graded5, student):
    graded = graded5[student]
    assert graded.lost() == [], {c: m for c, m in graded.messages.items() if not m.startswith("✔")}


@pytest.mark.parametrize("student", params(MISTAKES, XFAIL))
def test_ex5_mistake_loses_exactly_its_step(graded5, student):
    _, step = MISTAKES[student]
    graded = graded5[student]
    assert graded.lost() == [f"test_d{step}"], {c: (graded.points[c], m) for c, m in graded.messages.items()}


def test_ex5_alternatives_are_judged_by_their_rule(graded5):
    """No alternative is left to its value alone because the probe could not re-run its code."""
    notes = {(s, c): m for s in ALTERNATIVES for c, m in graded5[s].messages.items() if "could not re-run" in m}
    assert notes == {}, notes

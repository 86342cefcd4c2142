"""Exercise 5's LayerNorm: each example normalised over its own features (dimension 1), with a gain and a bias, and the
first layer back to the residual stream. Steps like Exercise 3's, over the other axis; their mistakes name the
habits that Exercise 3 leaves (the batch's axis, Bessel's n/(n-1))."""

from ...common.diagnoses import Reason
from ...common.words import say
from ..backward_rules import Step


def _dhpreln(f, d, dim=1, bessel=1.0, mean_term=1.0, variance_term=1.0, gain=True, scale=True, **habit):
    """LayerNorm's backward pass in one expression, from lnvar_inv and lnraw; the keywords make its known variants.

    ``dim``: the axis the sums run over (and whose size divides), 1 for LayerNorm, 0 for BatchNorm's habit. ``habit``:
    Exercise 3's fused formula copied over: ``gain_outside`` (lngain in front, out of the sums, as bngain may be),
    ``count`` (a number to divide by: n, the batch size, where the features' count belongs)."""
    s, xhat = f["lnvar_inv"] if scale else 1.0, f["lnraw"]
    outside = habit.get("gain_outside", False)
    dy = d["hln"] * (f["lngain"] if gain and not outside else 1.0)
    count = habit.get("count") or xhat.shape[dim]
    return (
        (f["lngain"] if outside else 1.0)
        * (s / count)
        * (
            count * dy
            - mean_term * dy.sum(dim, keepdim=True)
            - variance_term * bessel * xhat * (dy * xhat).sum(dim, keepdim=True)
        )
    )


def _features(f):
    return f["lnraw"].shape[1]


def _mean_over_the_batch(f, d):
    """The path through the mean summed over dimension 0 (Exercise 3's habit), the variance's over dimension 1."""
    count, dy = _features(f), d["hln"] * f["lngain"]
    variance = f["lnraw"] * (dy * f["lnraw"]).sum(1, keepdim=True)
    return f["lnvar_inv"] / count * (count * dy - dy.sum(0, keepdim=True) - variance)


def _mean_of_dhln(f, d):
    """The path through the mean summed from dhln, without lngain; the others from lngain * dhln."""
    count, dy = _features(f), d["hln"] * f["lngain"]
    variance = f["lnraw"] * (dy * f["lnraw"]).sum(1, keepdim=True)
    return f["lnvar_inv"] / count * (count * dy - d["hln"].sum(1, keepdim=True) - variance)


LAYERNORM_FORWARD = (
    "hln = lngain * (hpreln - hpreln.mean(1, keepdim=True)) "
    "* (hpreln.var(1, keepdim=True, unbiased=False) + 1e-5)**-0.5 + lnbias"
)


def _unbiased(f, d):
    """LayerNorm's backward pass re-derived from hpreln with torch.var's default, divided by n_hidden - 1."""
    count = _features(f)
    s = (f["lnvar"] * count / (count - 1) + 1e-5) ** -0.5
    xhat, dy = (f["hpreln"] - f["lnmean"]) * s, d["hln"] * f["lngain"]
    return s * (dy - dy.mean(1, keepdim=True) - xhat * (dy * xhat).mean(1, keepdim=True))


LAYERNORM_GAIN = Step(
    "lngain",
    "hln = lngain * lnraw + lnbias",
    {"hln": lambda f, d: (f["lnraw"] * d["hln"]).sum(0, keepdim=True)},
    1,
    mistakes={
        Reason(
            "zero_bias",
            say(
                "dlngain reads hln where lnraw belongs: lngain multiplies the normalised value lnraw, and hln equals "
                "it only while lngain is 1 and lnbias is 0"
            ),
        ): lambda f, d: (f["hln"] * d["hln"]).sum(0, keepdim=True),
    },
)
LAYERNORM_BIAS = Step("lnbias", "hln = lngain * lnraw + lnbias", {"hln": lambda f, d: d["hln"].sum(0, keepdim=True)}, 1)

LAYERNORM = Step(
    "hpreln",
    LAYERNORM_FORWARD,
    {"hln": _dhpreln},
    4,
    mistakes={
        Reason(
            "wrong_dimension",
            say(
                "dhpreln is BatchNorm's backward pass, over the batch (dimension 0): LayerNorm normalises each example "
                "over its own features (dimension 1), so the sums, and what they are divided by, run over the features"
            ),
        ): (
            lambda f, d: _dhpreln(f, d, dim=0),
            lambda f, d: _dhpreln(f, d, dim=0, bessel=f["lnraw"].shape[0] / (f["lnraw"].shape[0] - 1)),
        ),
        Reason(
            "bessel",
            say(
                "dhpreln has Exercise 3's factor n/(n-1) on the path through the variance: LayerNorm's variance here "
                "divides by the number of features (unbiased=False, as nn.LayerNorm does), like its mean, so that "
                "factor is 1"
            ),
        ): lambda f, d: _dhpreln(f, d, bessel=_features(f) / (_features(f) - 1)),
        Reason(
            "bessel",
            say(
                "dhpreln normalises with torch's default variance, divided by n_hidden - 1 (unbiased=True): the "
                "forward pass's LayerNorm divides by n_hidden (unbiased=False), as nn.LayerNorm does"
            ),
        ): _unbiased,
        Reason(
            "missing_path",
            say(
                "dhpreln is missing the path through the mean: every feature of an example moves that example's "
                "mean, which is subtracted from all of its features"
            ),
        ): lambda f, d: _dhpreln(f, d, mean_term=0.0),
        Reason(
            "missing_path",
            say(
                "dhpreln is missing the path through the variance: every feature of an example moves that example's "
                "variance, which scales all of its features"
            ),
        ): lambda f, d: _dhpreln(f, d, variance_term=0.0),
        Reason(
            "missing_path",
            say(
                "dhpreln has only the direct path through the normalised value: an example's mean and variance are "
                "computed from all of its features, so each adds a path of its own"
            ),
        ): lambda f, d: _dhpreln(f, d, mean_term=0.0, variance_term=0.0),
        Reason(
            "missing_factor",
            say("dhpreln is missing lngain: the normalised value is multiplied by lngain before it becomes hln"),
        ): lambda f, d: _dhpreln(f, d, gain=False),
        Reason(
            "factor_outside_sum",
            say(
                "dhpreln multiplies by lngain outside the sums, as Exercise 3's formula may with bngain: lngain has "
                "one value per feature, and the sums here run over the features, so it must multiply dhln inside "
                "them (dy = lngain * dhln, then the sums of dy)"
            ),
        ): lambda f, d: _dhpreln(f, d, gain_outside=True),
        Reason(
            "batch_size",
            say(
                "dhpreln divides by n, the batch size, as Exercise 3's formula does: LayerNorm's mean and variance "
                "run over each example's n_hidden features, so the count in its backward pass is n_hidden"
            ),
        ): lambda f, d: _dhpreln(f, d, count=f["lnraw"].shape[0]),
        Reason(
            "bessel",
            say(
                "dhpreln counts n_hidden - 1 features: LayerNorm's mean and variance here both divide by n_hidden "
                "(unbiased=False, as nn.LayerNorm does), so the count in its backward pass is n_hidden"
            ),
        ): lambda f, d: _dhpreln(f, d, count=_features(f) - 1),
        Reason(
            "missing_factor",
            say(
                "dhpreln is missing lnvar_inv: every path back to hpreln goes through the normalisation, which "
                "multiplies by lnvar_inv"
            ),
        ): lambda f, d: _dhpreln(f, d, scale=False),
        Reason(
            "wrong_sign",
            say(
                "dhpreln adds the path through the variance where it subtracts it: a larger variance makes every "
                "normalised value smaller, so that path comes with a minus, like the mean's"
            ),
        ): lambda f, d: _dhpreln(f, d, variance_term=-1.0),
        Reason(
            "wrong_dimension",
            say(
                "dhpreln's path through the mean sums over the batch (dimension 0): each example's mean is over its "
                "own features, so that sum runs over dimension 1, as the variance's does"
            ),
        ): _mean_over_the_batch,
        Reason(
            "missing_factor",
            say(
                "dhpreln's path through the mean sums dhln where it sums lngain * dhln: lngain multiplies dhln on "
                "every path back (dy = lngain * dhln, then the sums of dy)"
            ),
        ): _mean_of_dhln,
    },
)

FIRST_LAYER = Step(
    "x",
    "hpreln = x.view(n, -1) @ W1 + b1",
    {"hpreln": lambda f, d: (d["hpreln"] @ f["W1"].T).view(f["x"].shape)},
    1,
)

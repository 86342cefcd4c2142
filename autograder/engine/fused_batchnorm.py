"""The fused BatchNorm step of Exercises 3 and 4 (``fused_rules``): dhprebn in one expression, and the wrong variants
of it that students typically write, with what the diagnosis says about each."""

from ..common.diagnoses import Reason
from ..common.words import say
from .backward_rules import batch_size
from .step_mistakes import EPSILON_WORDS


def dhprebn_fused(
    f,
    d,
    bessel=None,
    mean_term=1.0,
    variance_term=1.0,
    gain=1,
    dim=0,
    bnvar_inv=None,
    bnraw=None,
    of="",
    constant=0.0,
    direct=None,
    outer=None,
    inner=None,
    summed=("mean", "variance"),
):
    """The BatchNorm backward pass in one expression; the keywords make its known wrong variants. ``of``: the suffix
    of the forward pass's tensors (``_biased``: the one whose variance divides by n, where ``bessel`` is 1); ``outer``
    and ``inner``: what the path through the variance reads in place of bnraw, in front of its sum and inside it;
    ``summed``: the paths whose sum over the batch is taken (a path left out of it keeps each example's own term)."""
    n = batch_size(f)
    bessel = n / (n - 1) if bessel is None else bessel
    s = f["bnvar_inv" + of] if bnvar_inv is None else bnvar_inv
    xhat = f["bnraw" + of] if bnraw is None else bnraw
    dy = d["hpreact" + of]
    scale = f["bngain"] ** gain * s / n  # gain: how often bngain is in the formula (0: missing, 2: twice)
    return scale * (
        (n if direct is None else direct) * dy  # direct: the factor of the direct path in the bracket, n
        - mean_term * _sum(dy, dim, "mean" in summed)
        - variance_term * bessel * _or(outer, xhat) * _sum(dy * _or(inner, xhat), dim, "variance" in summed)
        - constant  # a number subtracted in the bracket: `n / n - 1 * x` is 1 - x
    )


def _or(value, otherwise):
    return otherwise if value is None else value


def _sum(value, dim, taken):
    return value.sum(dim, keepdim=True) if taken else value


def dhprebn_biased(f, d, bessel=1.0):
    """The whole formula redone with the biased variance (divided by n), as the BatchNorm paper has it; ``bessel``
    None: the course's formula, n/(n-1) kept, fed bnvar_inv and bnraw recomputed with that variance."""
    bndiff = f["hprebn"] - f["hprebn"].mean(0, keepdim=True)
    s = ((bndiff**2).mean(0, keepdim=True) + 1e-5) ** -0.5
    return dhprebn_fused(f, d, bessel=bessel, bnvar_inv=s, bnraw=bndiff * s)


def unbiased(f, d, bessel=None):
    """Exercise 3's first dhprebn, from the forward pass whose variance divides by n-1, for the biased one's answer."""
    return dhprebn_fused(f, {"hpreact": f["dhpreact"]}, bessel=bessel)


BESSEL = say(
    "the forward pass divides the variance by n-1 (Bessel's correction) but the mean by n, and the two paths of your "
    "derivation must keep that difference"
)
BIASED = "_biased"


def batchnorm_mistakes(answer: str, of: str = "", bessel=None) -> dict:
    """The mistakes both BatchNorm steps share: a path, bngain or the epsilon missing, sums over the wrong dimension.
    ``of`` and ``bessel``: the forward pass's suffix and its factor between the paths (n/(n-1), or 1)."""
    fused = lambda **wrong: lambda f, d: dhprebn_fused(f, d, bessel=bessel, of=of, **wrong)
    raw_inv, other = lambda f: f["bnvar" + of] ** -0.5, "" if of else BIASED
    outside = lambda f: 1.0 / (f["bnvar" + of] ** 0.5 + 1e-5)  # the epsilon added after the root
    return {
        Reason(
            "missing_path",
            say(
                "{answer} is missing the path through the mean: every input moves its neuron's batch mean, and the "
                "mean is subtracted from every example",
                answer=answer,
            ),
        ): fused(mean_term=0.0),
        Reason(
            "missing_path",
            say(
                "{answer} is missing the path through the variance: every input moves its neuron's batch variance, "
                "which scales every example",
                answer=answer,
            ),
        ): fused(variance_term=0.0),
        Reason(
            "missing_path",
            say(
                "{answer} has only the direct path through the normalised value: the mean and the variance are "
                "computed from every example of the batch, so each adds a path of its own",
                answer=answer,
            ),
        ): fused(mean_term=0.0, variance_term=0.0),
        Reason(
            "wrong_sign",
            say(
                "{answer} adds the path through the variance where it is subtracted: a larger input spreads its "
                "neuron's batch wider, and that shrinks every normalised value (the derivative of 1/sqrt(var + 1e-5) "
                "is negative)",
                answer=answer,
            ),
        ): fused(variance_term=-1.0),
        Reason(
            "wrong_sign",
            say(
                "{answer} adds the path through the mean where it is subtracted: the batch mean is subtracted from "
                "every example, so each input's share of it comes back with a minus sign",
                answer=answer,
            ),
        ): fused(mean_term=-1.0),
        Reason(
            "missing_factor",
            say(
                "{answer} is missing bngain: the normalised value is multiplied by bngain before it becomes hpreact",
                answer=answer,
            ),
        ): fused(gain=0),
        Reason(
            "missing_factor",
            say(
                "{answer} is missing bnraw in one of the two places the path through the variance has it: once in "
                "front of its sum over the batch, and once inside that sum, with the upstream gradient",
                answer=answer,
            ),
        ): (fused(outer=1.0), fused(inner=1.0)),
        Reason(
            "other_tensor",
            say(
                "{answer} reads bndiff in the path through the variance where the normalised value belongs: bndiff "
                "is not divided by the standard deviation yet (bnraw = bndiff * bnvar_inv)",
                answer=answer,
            ),
        ): (
            lambda f, d: dhprebn_fused(f, d, bessel=bessel, of=of, outer=f["bndiff" + of]),
            lambda f, d: dhprebn_fused(f, d, bessel=bessel, of=of, inner=f["bndiff" + of]),
        ),
        Reason(
            "missing_factor",
            say(
                "{answer} is missing bnvar_inv in front of the bracket: each path, the direct one too, goes through "
                "the division by the batch's standard deviation",
                answer=answer,
            ),
        ): fused(bnvar_inv=1.0),
        Reason(
            "not_summed_over_broadcast",
            say(
                "{answer} leaves out the sum over the batch in the path through the mean: every example moves its "
                "neuron's mean, so each input gets the upstream gradient summed over the whole batch there",
                answer=answer,
            ),
        ): fused(summed=("variance",)),
        Reason(
            "not_summed_over_broadcast",
            say(
                "{answer} leaves out the sum over the batch in the path through the variance: every example moves its "
                "neuron's variance, so that path sums the upstream gradient times bnraw over the whole batch",
                answer=answer,
            ),
        ): fused(summed=("mean",)),
        Reason(
            "other_tensor",
            say(
                "{answer} takes bnraw into the sum over the batch in the path through the variance: one bnraw is each "
                "example's own, in front of the sum, and only the other is summed with the upstream gradient",
                answer=answer,
            ),
        ): lambda f, d: dhprebn_fused(f, d, bessel=bessel, of=of, outer=1.0, inner=f["bnraw" + of] ** 2),
        Reason(
            "factor_twice",
            say(
                "{answer} has bngain twice: once in front of the bracket and once inside it, in the upstream gradient "
                "scaled by bngain (dbnraw = bngain * dhpreact). The formula with bngain in front takes the upstream "
                "gradient of hpreact as it is",
                answer=answer,
            ),
        ): fused(gain=2),
        Reason(
            "batch_size",
            say(
                "{answer} is missing the n of the direct path: with 1/n in front of the bracket, its first term is n "
                "times the upstream gradient (the other two are sums over the batch, each about n times one entry)",
                answer=answer,
            ),
        ): fused(direct=1.0),
        Reason(
            "epsilon",
            say(
                "{answer} adds BatchNorm's epsilon after the square root: the forward pass divides by sqrt(variance + "
                "1e-5), the 1e-5 inside the root, where 1 / (sqrt(variance) + 1e-5) has it outside (that matters where "
                "a neuron's batch variance is small, as neuron 0's is here)",
                answer=answer,
            ),
        ): (
            lambda f, d: dhprebn_fused(f, d, bessel=bessel, of=of, bnvar_inv=outside(f)),
            lambda f, d: dhprebn_fused(
                f, d, bessel=bessel, of=of, bnvar_inv=outside(f), bnraw=f["bndiff" + of] * outside(f)
            ),
        ),
        Reason("epsilon", say("{answer} is missing BatchNorm's epsilon: {why}", answer=answer, why=EPSILON_WORDS)): (
            lambda f, d: dhprebn_fused(f, d, bessel=bessel, of=of, bnvar_inv=raw_inv(f)),
            lambda f, d: dhprebn_fused(
                f, d, bessel=bessel, of=of, bnvar_inv=raw_inv(f), bnraw=f["bndiff" + of] * raw_inv(f)
            ),
        ),
        Reason(
            "wrong_dimension",
            say(
                "{answer} sums over the wrong dimension: a neuron's mean and variance are taken over the batch "
                "(dimension 0), so the sums in its gradient run over the batch too",
                answer=answer,
            ),
        ): fused(dim=1),
        **{  # a tensor of the other BatchNorm block (bnraw for bnraw_biased, or back): the variances' n and n-1 mixed
            Reason(
                "bessel",
                say(
                    "{answer} reads {wrong}, a tensor of the other BatchNorm block, where this forward pass's {right} "
                    "belongs",
                    answer=answer,
                    wrong=name + other,
                    right=name + of,
                ),
            ): (lambda f, d, t=name: dhprebn_fused(f, d, bessel=bessel, of=of, **{t: f[t + other]}))
            for name in ("bnvar_inv", "bnraw")
        },
    }


def precedence_mistakes() -> dict:
    """`n / n - 1` where n / (n - 1) belongs (or `1 / n - 1` where 1 / (n - 1) does): Python divides and multiplies
    before it subtracts, so the factor of the path through the variance becomes a number subtracted on its own. In
    the formula with n / (n - 1) (bessel 1, and 1 or 1/n left in the bracket), and in the one with 1 / (n - 1) and
    the bracket divided by n (dhpreact - dhpreact.sum(0) / n - 1 / n - 1 * bnraw * ...: bessel n, 1 in the bracket)."""
    return {
        Reason(
            "precedence",
            say(
                "dhprebn subtracts a number from every entry where the factor n/(n-1) of the path through the variance "
                "belongs: `n / n - 1 * x` is (n / n) - (1 * x), because Python divides and multiplies before it "
                "subtracts. n - 1 needs its brackets, n / (n - 1)"
            ),
        ): (
            lambda f, d: dhprebn_fused(f, d, bessel=1.0, constant=1.0),
            lambda f, d: dhprebn_fused(f, d, bessel=1.0, constant=1.0 / batch_size(f)),
            lambda f, d: dhprebn_fused(f, d, bessel=float(batch_size(f)), constant=1.0),
        ),
    }

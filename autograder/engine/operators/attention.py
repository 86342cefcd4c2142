"""Exercise 5's attention block: one head over the three context characters, inside a skip connection
(``x = emb + att_out``). Batched over the examples: every tensor has the batch first, and the rules transpose the
last two dimensions."""

from ...common.diagnoses import Reason
from ...common.words import say
from ..backward_rules import Step


def _t(x):
    return x.transpose(1, 2)


def _scale(f):
    """1/√head_size, the scores' scale: head_size is the size of a query (and a key)."""
    return f["q"].shape[-1] ** -0.5


def _softmax(f, d, dim=2, normalised=True):
    s, g = f["att"], d["att"]
    return s * (g - (g * s).sum(dim, keepdim=True)) if normalised else s * g


def _scale_mistakes(answer: str, product):
    """The known wrong scales of dq or dk, whose right value is ``product(f, d) * _scale(f)``."""
    return {
        Reason(
            "attention_scale",
            say(
                "{answer} is missing the scores' 1/√head_size: the forward pass divides q @ kᵀ by √head_size, so "
                "every gradient through the scores is divided by it too",
                answer=answer,
            ),
        ): product,
        Reason(
            "attention_scale",
            say(
                "{answer} divides by head_size where the forward pass divides by its square root, √head_size",
                answer=answer,
            ),
        ): lambda f, d: product(f, d) * _scale(f) ** 2,
        Reason(
            "attention_scale",
            say("{answer} multiplies by √head_size where the forward pass divides by it", answer=answer),
        ): lambda f, d: product(f, d) / _scale(f),
        Reason(
            "attention_scale",
            say(
                "{answer} divides by √n_embd: the scores are scaled by the size of the queries and keys "
                "(head_size), not by the size of an embedding",
                answer=answer,
            ),
        ): lambda f, d: product(f, d) / f["emb"].shape[-1] ** 0.5,
    }


def _scaled_here(answer: str) -> Reason:
    return Reason(
        "attention_scale",
        say(
            "{answer} is divided by √head_size: the attention's scale belongs to the scores (scores = q @ kᵀ / "
            "√head_size), not to att_out = att @ v, whose backward pass has no scale",
            answer=answer,
        ),
    )


RESIDUAL_BRANCH = Step(
    "att_out",
    "x = emb + att_out",
    {"x": lambda f, d: d["x"].clone()},
    1,
    mistakes={
        Reason(
            "skip_connection",
            say(
                "datt_out is half of dx: an addition passes its whole gradient to each of its inputs, it does not "
                "split it between them"
            ),
        ): lambda f, d: 0.5 * d["x"],
    },
)

WEIGHTS = Step(
    "att",
    "att_out = att @ v",
    {"att_out": lambda f, d: d["att_out"] @ _t(f["v"])},
    1,
    mistakes={
        Reason(
            "transposed",
            say(
                "datt is transposed in its last two dimensions: att[b, i, j] is query i's weight on position j's "
                "value, so datt[b, i, j] pairs row i of datt_out with value j"
            ),
        ): lambda f, d: f["v"] @ _t(d["att_out"]),
        _scaled_here("datt"): lambda f, d: d["att_out"] @ _t(f["v"]) * _scale(f),
    },
)

VALUES = Step(
    "v",
    "att_out = att @ v",
    {"att_out": lambda f, d: _t(f["att"]) @ d["att_out"]},
    1,
    mistakes={
        Reason(
            "transposed",
            say(
                "dv multiplies by att without transposing it: value j is used by every query i, with weight "
                "att[b, i, j], so dv[b, j] sums over the queries i"
            ),
        ): lambda f, d: f["att"] @ d["att_out"],
        _scaled_here("dv"): lambda f, d: _t(f["att"]) @ d["att_out"] * _scale(f),
    },
)

SOFTMAX = Step(
    "scores",
    "att = F.softmax(scores, 2)",
    {"att": _softmax},
    3,
    mistakes={
        Reason(
            "wrong_dimension",
            say(
                "dscores takes the softmax's sum over the other axis: each query's weights (a row of att, along "
                "dimension 2) sum to 1, so the sum in the backward pass runs along dimension 2 too"
            ),
        ): lambda f, d: _softmax(f, d, dim=1),
        Reason(
            "missing_path",
            say(
                "dscores is missing the path through the softmax's normalisation: each score moves every weight of "
                "its row, through the row's sum of exponentials"
            ),
        ): lambda f, d: _softmax(f, d, normalised=False),
        Reason(
            "missing_path",
            say(
                "dscores keeps only the diagonal of the softmax's Jacobian, att·(1 − att): a score moves every weight "
                "of its row (through the row's sum of exponentials), not only its own, so each entry of dscores "
                "collects datt from its whole row"
            ),
        ): lambda f, d: f["att"] * (1 - f["att"]) * d["att"],
        Reason(
            "input_for_output",
            say(
                "dscores reads scores where att belongs: the softmax's derivative is written in its outputs, the "
                "weights att (att·(datt − Σ datt·att)), not in its inputs"
            ),
        ): lambda f, d: _softmax({"att": f["scores"]}, d),
        Reason(
            "missing_factor",
            say(
                "dscores subtracts the plain sum of datt along the row: the softmax's backward pass weights it by the "
                "row's weights, Σ datt·att ((datt * att).sum(2, keepdim=True))"
            ),
        ): lambda f, d: f["att"] * (d["att"] - d["att"].sum(2, keepdim=True)),
        Reason(
            "precedence",
            say(
                "dscores multiplies only datt by att, and subtracts Σ datt·att without it: in att·(datt − Σ datt·att) "
                "att multiplies both terms, so the bracket goes around them"
            ),
        ): lambda f, d: f["att"] * d["att"] - (f["att"] * d["att"]).sum(2, keepdim=True),
        Reason(
            "attention_scale",
            say(
                "dscores is divided by √head_size: the softmax's backward pass has no scale. The 1/√head_size "
                "belongs to the next step back, from dscores to dq and dk (scores = q @ kᵀ / √head_size)"
            ),
        ): lambda f, d: _softmax(f, d) * _scale(f),
    },
)

QUERIES = Step(
    "q",
    "scores = q @ k.transpose(1, 2) / head_size**0.5",
    {"scores": lambda f, d: d["scores"] @ f["k"] * _scale(f)},
    2,
    mistakes={
        **_scale_mistakes("dq", lambda f, d: d["scores"] @ f["k"]),
        Reason(
            "transposed",
            say(
                "dq reads dscores transposed: scores[b, i, j] compares query i with key j, so query i collects "
                "from row i of dscores"
            ),
        ): lambda f, d: _t(d["scores"]) @ f["k"] * _scale(f),
    },
)

KEYS = Step(
    "k",
    "scores = q @ k.transpose(1, 2) / head_size**0.5",
    {"scores": lambda f, d: _t(d["scores"]) @ f["q"] * _scale(f)},
    2,
    mistakes={
        **_scale_mistakes("dk", lambda f, d: _t(d["scores"]) @ f["q"]),
        Reason(
            "transposed",
            say(
                "dk uses dscores without transposing it: key j is compared with every query i (column j of the "
                "scores), so dk[b, j] sums over the queries i"
            ),
        ): lambda f, d: d["scores"] @ f["q"] * _scale(f),
    },
)

_ATTENTION_PATHS = {
    "q": lambda f, d: d["q"] @ f["Wq"].T,
    "k": lambda f, d: d["k"] @ f["Wk"].T,
    "v": lambda f, d: d["v"] @ f["Wv"].T,
}

EMBEDDING = Step(
    "emb",
    "x = emb + att_out; q = emb @ Wq; k = emb @ Wk; v = emb @ Wv",
    {"x": lambda f, d: d["x"].clone(), **_ATTENTION_PATHS},
    3,
    mistakes={
        Reason(
            "skip_connection",
            say(
                "demb is missing the skip connection's gradient: x = emb + att_out hands dx straight back to emb, "
                "besides the paths through the attention head"
            ),
        ): lambda f, d: sum(path(f, d) for path in _ATTENTION_PATHS.values()),
        Reason(
            "missing_path",
            say(
                "demb has only the skip connection's gradient: the attention head reads emb too, through q, k and v, "
                "and each adds a path"
            ),
        ): lambda f, d: d["x"].clone(),
        Reason(
            "transposed",
            say(
                "demb's path through v multiplies by Wv without transposing it: Wv is square, so the shapes allow it, "
                "but v = emb @ Wv sends dv back through Wv.T, as q and k send theirs through Wq.T and Wk.T"
            ),
        ): lambda f, d: d["x"] + _ATTENTION_PATHS["q"](f, d) + _ATTENTION_PATHS["k"](f, d) + d["v"] @ f["Wv"],
    },
)

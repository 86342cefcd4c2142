"""What a gradient of the wrong shape tells: a keepdim dropped or added, a transpose, a sum over the wrong dimension or
over none, and what right values in a shape off by a size-1 dimension earn."""

from ...common.diagnoses import NOTE, Reason
from ...common.words import say


def only_size_one_dims_differ(got: tuple, want: tuple) -> bool:
    """Whether the two shapes differ only by dimensions of size 1: a keepdim dropped or added."""
    got, want = tuple(got), tuple(want)
    return len(got) != len(want) and tuple(s for s in got if s != 1) == tuple(s for s in want if s != 1)


def shape_only_share(earned: float, points: float) -> Reason:
    """The line of right values in a shape off by size-1 dimensions: what they earn of the step's points."""
    return Reason(
        NOTE,
        say(
            "the values are right, so this step earns {earned:g} of its {points:g}; the exact shape earns the rest",
            earned=earned,
            points=points,
        ),
    )


def shape_problem(got: tuple, want: tuple, name: str, n: int | None = None) -> Reason:
    """Why d<name> of shape ``got`` is not of ``want``'s, in words that name the likely slip (n: the batch size)."""
    got, want = tuple(got), tuple(want)
    if len(got) == len(want) == 2 and got == want[::-1]:
        if 1 in want:  # one number per neuron, from a sum: no matrix product gives it
            words = say(
                "d{name} has shape {got}, but {name} has shape {want}: it looks transposed. Give it {name}'s shape (no "
                ".T, and sum with keepdim=True).",
                name=name,
                got=got,
                want=want,
            )
        else:
            words = say(
                "d{name} has shape {got}, but {name} has shape {want}: it looks transposed. Let the shapes decide the "
                "order of a matrix product.",
                name=name,
                got=got,
                want=want,
            )
        return Reason("transposed", words)
    squeezed = tuple(s for s in want if s != 1)
    if len(got) < len(want) and got == squeezed:
        dims = [i for i, s in enumerate(want) if s == 1]
        return Reason(
            "keepdim",
            say(
                "d{name} has shape {got}, but {name} has shape {want}: dimension {dim} of size 1 was dropped. Keep it "
                "(keepdim=True) so the shapes match exactly.",
                name=name,
                got=got,
                want=want,
                dim=dims[0],
            ),
        )
    if len(got) > len(want) and tuple(s for s in got if s != 1) == squeezed:
        extra = next(i for i, s in enumerate(got) if s == 1 and (i >= len(want) or want[i] != 1))
        if len(want) == 1:
            words = say(
                "d{name} has shape {got}, but {name} has shape {want}: dimension {dim} of size 1 is one too many "
                "({name} is a vector, so sum without keepdim).",
                name=name,
                got=got,
                want=want,
                dim=extra,
            )
        else:
            words = say(
                "d{name} has shape {got}, but {name} has shape {want}: dimension {dim} of size 1 is one too many "
                "(keep only the dimensions it has).",
                name=name,
                got=got,
                want=want,
                dim=extra,
            )
        return Reason("keepdim", words)
    if len(got) == len(want) + 1 and got[1:] == want:
        return Reason(
            "not_summed_over_broadcast",
            say(
                "d{name} has shape {got}, but {name} has shape {want}: the forward pass broadcast {name} over the "
                "batch (dimension 0), so its gradient must be summed over it.",
                name=name,
                got=got,
                want=want,
            ),
        )
    if len(got) == len(want):
        summed = [i for i, (g, w) in enumerate(zip(got, want)) if w == 1 and g != 1]
        if summed and all(g == w or w == 1 for g, w in zip(got, want)):
            return Reason(
                "not_summed_over_broadcast",
                say(
                    "d{name} has shape {got}, but {name} has shape {want}: the forward pass broadcast {name} along "
                    "dimension {dim}, so its gradient must be summed along that dimension.",
                    name=name,
                    got=got,
                    want=want,
                    dim=summed[0],
                ),
            )
        ones_got = [i for i, g in enumerate(got) if g == 1]
        ones_want = [i for i, w in enumerate(want) if w == 1]
        if ones_got and ones_want and ones_got != ones_want:
            return Reason(
                "wrong_dimension",
                say(
                    "d{name} has shape {got}, but {name} has shape {want}: it looks summed over dimension {summed} "
                    "instead of dimension {right}.",
                    name=name,
                    got=got,
                    want=want,
                    summed=ones_got[0],
                    right=ones_want[0],
                ),
            )
        if sorted(got) == sorted(want):
            return Reason(
                "transposed",
                say(
                    "d{name} has shape {got}, but {name} has shape {want}: the dimensions are in the wrong order.",
                    name=name,
                    got=got,
                    want=want,
                ),
            )
        reduced = [i for i, (g, w) in enumerate(zip(got, want)) if g == 1 and w != 1]
        if reduced and all(g == w or g == 1 for g, w in zip(got, want)):
            return Reason(
                "wrong_shape",
                say(
                    "d{name} has shape {got}, but {name} has shape {want}: it is summed over dimension {dim}, where "
                    "{name} has an entry of its own for each index (the forward pass broadcast it along no dimension), "
                    "so its gradient keeps that dimension whole.",
                    name=name,
                    got=got,
                    want=want,
                    dim=reduced[0],
                ),
            )
    if n and len(got) == len(want) == 1 and got[0] == n != want[0]:
        return Reason(
            "wrong_dimension",
            say(
                "d{name} has shape {got}, but {name} has shape {want}: it looks summed over dimension 1 (each "
                "example's row) instead of dimension 0, the batch, over which the forward pass broadcast {name}.",
                name=name,
                got=got,
                want=want,
            ),
        )
    return Reason(
        "wrong_shape",
        say(
            "d{name} has shape {got}, but {name} has shape {want}. A gradient always has the shape of its tensor.",
            name=name,
            got=got,
            want=want,
        ),
    )

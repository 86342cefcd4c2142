"""The lecture each notebook goes with, and links to its chapters (the video's own), for every ``lecture`` cell.

``python -m autograder.authoring`` writes those cells from here; the tests fail when a notebook's copy, or a
timestamp anywhere in the course text, disagrees.
"""

from .course_links import course_url

VIDEO = "https://www.youtube.com/watch?v=q8SA3rM6ckI"
TITLE = "Building makemore Part 4: Becoming a Backprop Ninja"
MICROGRAD_VIDEO = "https://www.youtube.com/watch?v=VMj-3S1tku0"  # the first lecture of the series
MICROGRAD_TITLE = "The spelled-out intro to neural networks and backpropagation: building micrograd"

CHAPTERS = [  # (start in seconds, title), from the video's description
    (0, "intro: why you should care & fun history"),
    (446, "starter code"),
    (781, "exercise 1: backproping the atomic compute graph"),
    (3917, "brief digression: bessel's correction in batchnorm"),
    (5191, "exercise 2: cross entropy loss backward pass"),
    (5797, "exercise 3: batch norm layer backward pass"),
    (6602, "exercise 4: putting it all together"),
    (6864, "outro"),
]

# notebook -> the chapters it goes with (by start), each with a note or ""
PARTS = {
    "micrograd_warmup": [(0, "why backprop is worth knowing by hand, and how people wrote it before autograd")],
    "ex1_atomic_backward": [
        (446, "the network, the batch and the forward pass of the setup cells"),
        (781, "Parts 1 and 2, and Part 3 up to the variance, in the order of this notebook"),
        (3917, "Bessel's correction, then the rest of Part 3 and Part 4"),
    ],
    "ex2_cross_entropy_backward": [(5191, "")],
    "ex3_batchnorm_backward": [(5797, ""), (3917, "its first minutes, on why the variance divides by n - 1")],
    "ex4_manual_training": [(6602, ""), (6864, "")],
    "ex5_new_operators": [
        (5797, "Part 3's LayerNorm is the same derivation, over the other axis"),
        (5191, "the softmax, whose backward pass Part 4's attention head needs"),
    ],
    "ex6_bug_hunt": [
        (781, "the backward pass your colleague wrote, step by step, in the order of the function you fix"),
        (0, "why to know what a backward pass computes: a wrong one can still train"),
    ],
}


def timestamp(seconds: int) -> str:
    """1:05:17 (or 7:26 below an hour), as YouTube shows it."""
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def chapter_url(seconds: int) -> str:
    return f"{VIDEO}&t={seconds}s"


def _chapter_line(start: int, note: str) -> str:
    starts = [s for s, _ in CHAPTERS]
    title = dict(CHAPTERS)[start]
    end = next((s for s in starts if s > start), None)
    until = f" to {timestamp(end)}" if end else ""
    line = f"- [{timestamp(start)}]({chapter_url(start)}){until}, *{title}*"
    return line + (f": {note}" if note else "")


def lecture_cell(notebook: str) -> str:
    """The markdown of the notebook's ``lecture`` cell."""
    lines = [
        f"**The lecture.** This notebook goes with [{TITLE}]({VIDEO}) by Andrej Karpathy, these chapters:",
        "",
        *(_chapter_line(start, note) for start, note in PARTS[notebook]),
        "",
    ]
    if notebook == "micrograd_warmup":
        lines.append(
            f"What you build here is the scalar engine of the series' first lecture, [{MICROGRAD_TITLE}]"
            f"({MICROGRAD_VIDEO}). "
        )
    elif notebook == "ex5_new_operators":
        lines.append(
            "The lecture does none of this notebook's operators: these chapters hold the moves you reuse here. "
        )
    else:
        lines.append("Try each step yourself first, then play that part of the video to compare. ")
    lines[-1] += (
        f"The [course guide]({course_url('README.md')}) has the order of work and links to everything else "
        "(cheat sheet, derivations, why it matters)."
    )
    return "\n".join(lines)

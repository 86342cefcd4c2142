"""The course's data set, names.txt, shipped with the package (origin and licence: README.md here)."""

import os
from pathlib import Path

NAMES_VARIABLE = "BACKPROP_NINJA_NAMES"  # overrides the embedded copy, for the grader, the demo and the tests
SEED_VARIABLE = "BACKPROP_NINJA_SEED"  # the grading seed, set by the grader in the kernel: with names.txt it
# decides every tensor a notebook builds
EDITION_VARIABLE = "BACKPROP_NINJA_EDITION"  # the edition being graded, set by the grader in the kernel: the
# language of the lines the kernel prints while grading
NAMES_SHA256 = "0a30b5557f192f32ab962680889aac5f6fda0f4cecf40a6d0b5694f58ea8cc4d"
EMBEDDED_NAMES = Path(__file__).resolve().parent / "names.txt"


def names_path(configured: str = "") -> str:
    """The names.txt to grade with: the configured path, else $BACKPROP_NINJA_NAMES, else the embedded copy."""
    path = os.path.abspath(configured or os.environ.get(NAMES_VARIABLE) or EMBEDDED_NAMES)
    if not os.path.isfile(path):
        how = "GradingExecute.names_path" if configured else f"${NAMES_VARIABLE}"
        raise FileNotFoundError(f"names.txt not found at {path} (set by {how}): the grader needs the data set")
    return path

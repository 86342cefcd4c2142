"""A sandboxed kernel's environment variables: an allow-list of the grader's, and the few the sandbox sets."""

import os

from ..common.editions import EDITION_VARIABLE
from ..data import NAMES_VARIABLE

# Variables passed from the grader's environment when they are set; every other one is dropped (tokens,
# passwords and keys included, whatever their prefix: a kernel could print them into its feedback).
PASSED_VARIABLES = {
    "LANG": "the locale: how text is encoded",
    "LC_ALL": "the locale, when one setting overrides all",
    "LC_CTYPE": "the locale's character set",
    "TZ": "the time zone",
    "OMP_NUM_THREADS": "the kernel's threads: class grading gives each of W workers its share of the cores",
    "MKL_NUM_THREADS": "the same, for MKL",
    "OPENBLAS_NUM_THREADS": "the same, for OpenBLAS",
    "NBGRADER_EXECUTION": "'autograde' while nbgrader grades: only then do the hidden tests report answers",
    "BACKPROP_NINJA_SEED": "the seed of this student and notebook, which the student never saw",
    EDITION_VARIABLE: "the language of the notebook's edition: the words the kernel prints while grading",
    NAMES_VARIABLE: "where names.txt is (granted read-only)",
}
# differ between the notebooks of one sandbox (its kernel parent's)
NOTEBOOK_VARIABLES = {"BACKPROP_NINJA_SEED", EDITION_VARIABLE}
PRIVATE_HOME = "/tmp"  # HOME and TMPDIR: IPython's profile and every cache land in the private /tmp
MATPLOTLIB_CACHE = "/tmp/matplotlib"  # matplotlib warns on stderr when it has no writable config folder


def kernel_environment(grader_env: dict, interpreter: str, package_dir: str) -> dict:
    """The kernel's environment: the PASSED_VARIABLES that are set, and the few the sandbox sets itself."""
    env = {name: grader_env[name] for name in PASSED_VARIABLES if name in grader_env}
    env.update(
        HOME=PRIVATE_HOME,
        TMPDIR=PRIVATE_HOME,
        MPLCONFIGDIR=MATPLOTLIB_CACHE,
        PATH=os.pathsep.join([os.path.dirname(interpreter), "/usr/bin", "/bin"]),
        # the grader's own autograder package, the one granted (KernelPaths.package_dir), however it is installed:
        # a copy of another revision that the grader runs from PYTHONPATH, too (benchmarks/revision.py)
        PYTHONPATH=os.path.dirname(package_dir),
    )
    return env

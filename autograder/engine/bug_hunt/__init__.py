"""Exercise 6, the bug hunt: a colleague's backward pass with planted bugs, a gradient checker, the fixes.

catalogue  the colleague's pass (the course's atomic backward pass as one function), the bugs, whose bugs are whose
checks     each planted bug's fix, judged as any gradient step; the gradients the student names as buggy
untouched  the lines without a planted bug: a fix that breaks one of its part of the pass loses its points
checker    the student's numerical_gradient, run on the grader's functions against autograd
"""

from ..verdict import Check
from .catalogue import PER_STUDENT
from .checker import POINTS as CHECKER_POINTS
from .checker import judge_checker
from .checks import FOUND_CHECK, fix_check

CHECKS = {
    "test_checker": Check("numerical_gradient", CHECKER_POINTS, judge_checker),
    "test_found": FOUND_CHECK,
    **{f"test_bug_{slot}": fix_check(slot) for slot in range(1, PER_STUDENT + 1)},
}

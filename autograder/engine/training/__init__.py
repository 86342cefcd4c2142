"""Exercise 4's verdicts: the gradients backward_pass returns, the training run, the BatchNorm calibration.

network             the grader's copy of the notebook's network: forward pass, the course's backward pass, training
reference_runs      the tolerances and points, and the grader's own runs the checks compare with
gradient_checks     the 7 parameter gradients backward_pass returns
batch_size_checks   the same gradients on a batch of another size
run_checks          the training run of training_step
departures          why a training_step given the right gradients leaves autograd's run
calibration_checks  BatchNorm's statistics over the training set
"""

from ..verdict import Check
from .calibration_checks import TITLE as CALIBRATION
from .calibration_checks import judge_calibration
from .gradient_checks import gradient_check
from .network import PARAMETER_NAMES
from .reference_runs import POINTS
from .run_checks import TITLE as TRAINING
from .run_checks import judge_training

CHECKS = {
    **{f"test_d{name}": gradient_check(name) for name in PARAMETER_NAMES},
    "test_training": Check(TRAINING, POINTS["training"], judge_training),
    "test_calibration": Check(CALIBRATION, POINTS["calibration"], judge_calibration),
}

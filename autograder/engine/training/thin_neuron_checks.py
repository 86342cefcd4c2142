"""**A neuron as thin as the epsilon.** backward_pass is also called on the check batch with neuron 0 given a batch
variance of BatchNorm's epsilon there (``network.thin_neuron``, as Exercise 1's setup does to its batch). At the usual
variances, of about 1, an epsilon left out of bnvar_inv, or added outside its power, changes nothing the tolerance sees;
on that neuron it changes its column of dhprebn by a third, and so dW1's.
"""

from ...common.diagnoses import Reason
from ...common.words import say
from ..tolerance import close, magnitude, max_difference
from ..wire import Report
from .batch_size_checks import gradient_scale
from .reference_runs import thin_neuron_reference


def at_a_thin_neuron(name: str, report: Report, namespace: dict) -> Reason | None:
    """Why d<name>, right on the check batch, is not right with neuron 0 thinned; None when it is, or when the kernel
    has no such call to show (backward_pass raised on the check batch, or returned no tensor of d<name>'s shape)."""
    forward, grads = thin_neuron_reference(namespace)
    want, got = grads[name], report.tensor("thin_d" + name)
    if got is None or not got.is_floating_point() or got.shape != want.shape:
        return None
    if close(got.double(), want.double(), gradient_scale(name, forward, grads)):
        return None
    return Reason(
        "epsilon",
        say(
            "d{name} is right on the check batch, but not when a neuron's batch variance is as small as BatchNorm's "
            "epsilon (1e-5), as the autograder makes neuron 0's on that batch (largest difference {error:.3g}, "
            "largest value {scale:.3g}). That is where the epsilon weighs: keep it where the forward pass has it, "
            "inside the power, bnvar_inv = (bnvar + 1e-5)**-0.5, or take bnvar_inv from the cache",
            name=name,
            error=max_difference(got, want),
            scale=magnitude(want),
        ),
    )

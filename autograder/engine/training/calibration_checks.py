"""**Calibration.** ``bnmean`` and ``bnvar`` must be the statistics of ``hprebn`` over the whole
training set, for the student's own trained parameters (so a training mistake does not cost
the calibration).
"""

from ...common.diagnoses import NOTE, Reason
from ..explain import difference
from ..judge import not_a_tensor
from ..tolerance import close, magnitude, max_difference
from ..verdict import Verdict
from ..wire import Report
from . import network
from .reference_runs import POINTS, reference_run


def _statistics(parameters, X) -> dict:
    return dict(zip(("bnmean", "bnvar"), network.calibrate(parameters, X)))


def judge_calibration(report: Report, namespace: dict, seed: int, tainted: set) -> Verdict:
    verdict = Verdict("BatchNorm calibration", 0, POINTS["calibration"])
    parameters = [report.tensor(name) for name in ("C", "W1", "b1")]
    initial = namespace["initial_parameters"]
    if any(p is None or p.shape != p0.shape or not p.is_floating_point() for p, p0 in zip(parameters, initial)):
        verdict.lines.append(Reason("unreadable", "the parameters C, W1, b1 could not be read"))
        return verdict
    Xtr = namespace["Xtr"]
    expected = _statistics(parameters, Xtr)
    # What the student's float32 sums add up: hprebn's values (its root mean square) and their squares.
    second_moment = (expected["bnvar"] + expected["bnmean"] ** 2).max().item()
    scale = {"bnmean": second_moment**0.5, "bnvar": second_moment}
    what = {"bnmean": "mean", "bnvar": "variance"}
    others = [
        ("the initial parameters, before training: calibrate after training", lambda: _statistics(initial, Xtr)),
        ("the validation set: calibrate on the training set, Xtr", lambda: _statistics(parameters, namespace["Xdev"])),
        (
            "one minibatch: calibrate on the whole training set, Xtr",
            lambda: _statistics(parameters, Xtr[reference_run(namespace)["last_batch"]]),
        ),
    ]
    for name in ("bnmean", "bnvar"):
        info = report.info(name)
        problem = not_a_tensor(name, info)
        answer = report.tensor(name) if problem is None else None
        if name in tainted:
            problem = Reason("autograd", f"{name} is computed with autograd, so it earns nothing")
        elif problem and info.get("kind", "missing") in ("missing", "none"):
            problem = Reason(
                "not_answered",
                f"not calibrated yet: {name} is not defined (did the calibration cell run without an error?)",
            )
        elif problem is None and (answer is None or not answer.is_floating_point()):
            problem = Reason("not_a_float32_tensor", f"{name} must be a tensor of floats")
        if problem:
            verdict.lines.append(problem)
            continue
        want = tuple(expected[name].shape)
        if tuple(answer.shape) != want:
            hint = ": keep dimension 0 (keepdim=True)" if tuple(answer.shape) == want[1:] else ""
            verdict.lines.append(
                Reason(
                    "keepdim" if hint else "wrong_shape",
                    f"{name} has shape {tuple(answer.shape)}, but it must be {want}, one value per "
                    f"neuron, like bngain{hint}",
                )
            )
            continue
        answer = answer.double()
        if close(answer, expected[name], scale[name]):
            verdict.points += 1
            verdict.lines.append(
                Reason(
                    NOTE,
                    f"{name} is the {what[name]} of hprebn over the training set "
                    f"(max difference {max_difference(answer, expected[name]):.2g})",
                )
            )
            continue
        for description, statistics in others:
            if close(answer, statistics()[name], scale[name]):
                verdict.lines.append(
                    Reason("wrong_statistics", f"{name} is the {what[name]} of hprebn over {description}")
                )
                break
        else:
            if name == "bnvar" and close(answer, expected[name].sqrt(), scale[name] ** 0.5):
                verdict.lines.append(
                    Reason("variance_for_std", "bnvar is the standard deviation: it must be the variance")
                )
            else:
                off = difference(answer, expected[name], magnitude(expected[name]))
                verdict.lines.append(
                    Reason(
                        "wrong_statistics",
                        f"{name} is not the {what[name]} of hprebn over the training set: largest difference "
                        f"{off.largest_error:.3g} (values up to {off.scale:.3g}). "
                        f"hprebn is C[Xtr] viewed as ({len(Xtr)}, 3 * n_embd), times W1, plus b1",
                    )
                )
    return verdict

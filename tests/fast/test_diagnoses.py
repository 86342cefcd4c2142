"""The report's diagnosis kinds against the engine's real messages: each typical mistake, judged in process
by the grader's own checks, is sorted into the kind that names it."""

import json

import nbformat
import pytest
import torch

from autograder.authoring import SOURCE_DIR
from autograder.authoring.submissions import grade_id
from autograder.common.naming import SETUP_PREFIX
from autograder.engine import wire
from autograder.engine.backward_rules import STEP_BY_NAME, local_gradient
from autograder.engine.exercises import CHECKS
from autograder.engine.reference import autograd_gradients, forward_values, run_setup
from autograder.grading.report.misconceptions import DIAGNOSES, classify, most_frequent, read_diagnoses, verdict_reason

NB = "ex1_atomic_backward"
SEED = 12345


@pytest.fixture(scope="module")
def reference():
    nb = nbformat.read(SOURCE_DIR / f"{NB}.ipynb", as_version=4)
    namespace = run_setup(tuple(c.source for c in nb.cells if grade_id(c).startswith(SETUP_PREFIX)), SEED)
    return namespace, forward_values(namespace), autograd_gradients(namespace)


def not_accumulated(f, g):
    dC = torch.zeros_like(g["C"])
    dC[f["Xb"]] += g["emb"]  # repeated characters overwrite each other
    return dC


# step -> (its wrong answer, made from the forward values f and autograd's gradients g; the kind expected)
MISTAKES = {
    "probs": (lambda f, g: -g["probs"], "wrong_sign"),
    "logprobs": (lambda f, g: g["logprobs"] * f["hprebn"].shape[0], "batch_size"),
    "bnbias": (lambda f, g: g["bnbias"].view(-1), "keepdim"),
    "b2": (lambda f, g: g["logits"], "not_summed_over_broadcast"),
    "counts_sum_inv": (lambda f, g: (f["counts"] * g["probs"]).sum(0, keepdim=True), "wrong_dimension"),
    "W2": (lambda f, g: g["W2"].T, "transposed"),
    "bndiff2": (lambda f, g: g["bndiff2"] * (f["hprebn"].shape[0] - 1) / f["hprebn"].shape[0], "bessel"),
    "hpreact": (lambda f, g: 2 * g["hpreact"], "constant_factor"),
    "counts": (lambda f, g: local_gradient(STEP_BY_NAME["counts"], f, g, drop="counts_sum"), "missing_path"),
    "norm_logits": (lambda f, g: g["counts"], "passed_through"),
    "C": (not_accumulated, "not_accumulated"),
    "bnraw": (lambda f, g: g["bnraw"] / 0, "not_finite"),
    "h": (lambda f, g: torch.zeros_like(g["h"]), "all_zeros"),
    "emb": (lambda f, g: torch.randn_like(g["emb"]), "wrong_values"),
    "W1": (lambda f, g: g["W1"].double(), "not_a_float32_tensor"),
    "b1": (None, "not_answered"),
}


@pytest.mark.parametrize("step", MISTAKES)
def test_a_typical_mistake_gets_the_kind_that_names_it(reference, step):
    namespace, forward, grads = reference
    make, kind = MISTAKES[step]
    reported = {f"d{name}": wire.encode(value) for name, value in grads.items()}
    reported[f"d{step}"] = wire.encode(make(forward, grads)) if make else wire.encode(None, present=False)
    verdict = CHECKS[NB][f"test_d{step}"](wire.Report(reported), namespace, SEED, set())
    reason = verdict_reason(verdict.text())
    assert reason is not None and classify(reason) == kind, verdict.text()


NO_ANSWER_CASES = [  # JudgeAnswers' reasons for a graded cell that reported nothing, and their diagnosis
    ({"kernel_died_in": 2}, "did_not_run"),
    ({"notebook_time_limit_in": 3}, "did_not_run"),
    ({}, "did_not_run"),  # interrupted at its own timeout
]


def test_autograd_and_the_graders_own_notes_have_kinds(reference):
    from nbformat.v4 import new_code_cell

    from autograder.preprocessors.judge_answers import why_no_answer

    cell = new_code_cell("report(globals(), 'dprobs')")
    assert classify(why_no_answer(cell, 3, {}, set())[0]) == "no_answer"
    namespace, _, grads = reference
    reported = {f"d{name}": wire.encode(value) for name, value in grads.items()}
    verdict = CHECKS[NB]["test_dprobs"](wire.Report(reported), namespace, SEED, {"dprobs"})
    assert classify(verdict_reason(verdict.text())) == "autograd"
    for line, kind in [
        *((why_no_answer(cell, 3, state, {3})[0], kind) for state, kind in NO_ANSWER_CASES),
        ("the grader could not read the answer this cell reported", "unreadable"),
        ("dlogits takes the softmax over the wrong dimension: an example's probabilities ...", "wrong_dimension"),
        ("dhprebn is missing the factor n/(n-1) on the path through the variance", "bessel"),
        ("dlogits has no term for the target: differentiate ...", "target_term"),
        ("something the table has no words for", "other"),
    ]:
        assert classify(line) == kind, line
    assert verdict_reason("✔ dprobs: 1 of 1 point\n  correct: max difference 0\n") is None


def test_the_diagnoses_of_a_class_are_read_from_its_autograded_notebooks(tmp_path):
    def notebook(verdicts):
        cells = [
            {
                "cell_type": "code",
                "metadata": {"nbgrader": {"grade": True, "grade_id": gid, "points": 1}},
                "source": "",
                "outputs": [{"output_type": "stream", "name": "stdout", "text": text}],
            }
            for gid, text in verdicts.items()
        ]
        return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})

    keepdim = "✘ dbnbias: 0 of 1 point\n  dbnbias has shape (64,), but bnbias has shape (1, 64): dimension 0 of size 1 was dropped. Keep it (keepdim=True) so the shapes match exactly.\n"  # noqa: E501
    sign = "✘ dprobs: 0 of 1 point\n  dprobs has the right size but the wrong sign: check the sign\n"
    right = "✔ dprobs: 1 of 1 point\n  correct: max difference 0\n"
    for student, verdicts in {
        "ada": {"test_dprobs": right, "test_dbnbias": keepdim},
        "ben": {"test_dprobs": sign, "test_dbnbias": keepdim},
        "cy": {"test_dprobs": right, "test_dbnbias": keepdim},
    }.items():
        folder = tmp_path / "autograded" / student / "backprop_ninja"
        folder.mkdir(parents=True)
        (folder / f"{NB}.ipynb").write_text(notebook(verdicts))
    found = read_diagnoses(tmp_path, "backprop_ninja", ["ada", "ben", "cy", "nobody"], [NB])
    assert most_frequent(found) == {
        (NB, "test_dbnbias"): [("keepdim", ["ada", "ben", "cy"])],
        (NB, "test_dprobs"): [("wrong_sign", ["ben"])],
    }
    assert set(DIAGNOSES) >= {d.kind for d in found}

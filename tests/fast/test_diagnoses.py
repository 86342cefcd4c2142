"""Diagnosis kinds, from where a sentence is made to the class report: each typical mistake, judged in process by
the grader's own checks, gets the kind that names it (``Verdict.diagnosis``); JudgeAnswers writes the kind into the
graded cell's metadata, and the report reads it from there, never from the words."""

import copy
import json
import pickle

import nbformat
import pytest
import torch
from nbformat.v4 import new_code_cell, new_output

from autograder.authoring import SOURCE_DIR
from autograder.authoring.submissions import grade_id
from autograder.common.diagnoses import DIAGNOSES, METADATA, NOTE, OTHER, Reason, kind_of
from autograder.common.naming import ANSWER_MIME, SETUP_PREFIX
from autograder.common.words import say
from autograder.data import EMBEDDED_NAMES
from autograder.engine import wire
from autograder.engine.backward_rules import STEP_BY_NAME, local_gradient
from autograder.engine.exercises import CHECKS
from autograder.engine.reference import autograd_gradients, forward_values, run_setup
from autograder.engine.verdict import Verdict
from autograder.grading.report.misconceptions import most_frequent, read_diagnoses
from autograder.preprocessors.judge_answers import JudgeAnswers, why_no_answer

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
    "counts_sum": (
        lambda f, g: -(f["counts_sum"] ** -2),
        "upstream_missing",
    ),  # the chain rule's dcounts_sum_inv left out
    "C": (not_accumulated, "not_accumulated"),
    "bnraw": (lambda f, g: g["bnraw"] / 0, "not_finite"),
    "h": (lambda f, g: torch.zeros_like(g["h"]), "all_zeros"),
    "emb": (lambda f, g: torch.randn_like(g["emb"]), "wrong_values"),
    "embcat": (lambda f, g: g["embcat"] + 1, "constant_offset"),  # a gradient started from ones (dC = ones_like(C))
    "W1": (lambda f, g: g["W1"].double(), "not_a_float32_tensor"),
    "bnvar": (lambda f, g: -0.5 * f["bnvar"] ** -1.5 * g["bnvar_inv"], "epsilon"),
    "b1": (None, "not_answered"),
}


def reported(grads: dict, **answers) -> dict:
    """Every gradient as autograd has it, except ``answers`` (name -> tensor, or None for not answered)."""
    values = {f"d{name}": wire.encode(value) for name, value in grads.items()}
    values.update(
        {n: wire.encode(v) if v is not None else wire.encode(None, present=False) for n, v in answers.items()}
    )
    return values


@pytest.mark.parametrize("step", MISTAKES)
def test_a_typical_mistake_gets_the_kind_that_names_it(reference, step):
    namespace, forward, grads = reference
    make, kind = MISTAKES[step]
    report = wire.Report(reported(grads, **{f"d{step}": make(forward, grads) if make else None}))
    verdict = CHECKS[NB][f"test_d{step}"](report, namespace, SEED, set())
    assert verdict.diagnosis == kind, verdict.text()


def test_autograd_and_the_graders_own_reasons_have_kinds(reference):
    namespace, _, grads = reference
    verdict = CHECKS[NB]["test_dprobs"](wire.Report(reported(grads)), namespace, SEED, {"dprobs"})
    assert verdict.diagnosis == "autograd"
    cell = new_code_cell("report(globals(), 'dprobs')")
    assert kind_of(why_no_answer(cell, 3, {}, set())[0]) == "no_answer"
    for state in [{"kernel_died_in": 2}, {"notebook_time_limit_in": 3}, {}]:  # {}: interrupted at its own timeout
        assert kind_of(why_no_answer(cell, 3, state, {3})[0]) == "did_not_run"


def test_a_verdicts_diagnosis_is_its_first_reason():
    sign = Reason("wrong_sign", say("dprobs has the right size but the wrong sign"))
    note = Reason(NOTE, say("(judged from your own dlogprobs, which is wrong too)"))
    assert Verdict("dprobs", 0, 1, [note, sign, Reason("all_zeros", say("..."))]).diagnosis == "wrong_sign"
    assert Verdict("dprobs", 1, 1, [sign]).diagnosis is None  # every point earned: no diagnosis
    assert Verdict("dprobs", 0, 1, ["a sentence nobody tagged"]).diagnosis == OTHER
    assert Verdict("dprobs", 0, 1, [note]).diagnosis == OTHER
    assert Verdict("dprobs", 0.5, 1, []).diagnosis == OTHER


def test_a_reason_is_a_string_that_keeps_its_kind():
    reason = Reason("keepdim", say("dbnbias has shape {got}", got=(64,)))
    assert (
        reason == "dbnbias has shape (64,)" and isinstance(reason, str) and f"  {reason}" == "  dbnbias has shape (64,)"
    )
    for again in (copy.copy(reason), copy.deepcopy(reason), pickle.loads(pickle.dumps(reason))):
        assert again == reason and again.kind == "keepdim"
    assert kind_of("an untagged sentence") == OTHER
    with pytest.raises(ValueError):
        Reason("keep_dim", say("a kind the table does not have"))
    assert all(kind == kind.lower() and " " not in kind and DIAGNOSES[kind] for kind in DIAGNOSES)


def test_the_kind_goes_from_judge_answers_to_the_report(reference, tmp_path):
    """A real notebook judged by JudgeAnswers: each graded cell's execute_result names its verdict's kind (what a
    student put there is replaced), and read_diagnoses reads the kinds back from the autograded notebook."""
    _, forward, grads = reference
    answers = {"dprobs": -grads["probs"], "dbnbias": grads["bnbias"].view(-1), "dcounts": None}
    payload = reported(grads, **answers, dC_index_add=grads["C"])  # its code, in the source notebook, calls index_add
    nb = nbformat.read(SOURCE_DIR / f"{NB}.ipynb", as_version=4)
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and grade_id(c) in CHECKS[NB]]
    for cell in graded:
        cell.outputs = [
            new_output("display_data", data={ANSWER_MIME: payload}),
            new_output("execute_result", data={"text/plain": "1.0"}, metadata={METADATA: {"diagnosis": "keepdim"}}),
        ]
    resources = {
        "nbgrader": {"notebook": NB, "student": "ada"},
        "backprop_ninja": {"seed": SEED, "names_path": str(EMBEDDED_NAMES), "incidents": []},
    }
    nb, _ = JudgeAnswers().preprocess(nb, resources)
    kinds = {grade_id(c): c.outputs[-1]["metadata"][METADATA]["diagnosis"] for c in graded}
    wrong = {"test_dprobs": "wrong_sign", "test_dbnbias": "keepdim", "test_dcounts": "not_answered"}
    assert kinds == {gid: wrong.get(gid) for gid in kinds}

    folder = tmp_path / "autograded" / "ada" / "backprop_ninja"
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{NB}.ipynb")
    found = read_diagnoses(tmp_path, "backprop_ninja", ["ada", "nobody"], [NB])
    assert {d.step: d.kind for d in found} == wrong
    sign = next(d for d in found if d.step == "test_dprobs")
    assert sign.reason.startswith("dprobs has the right size but the wrong sign"), sign.reason


def test_most_frequent_counts_students_per_kind(tmp_path):
    def cell(gid, kind):
        result = {"output_type": "execute_result", "data": {"text/plain": "0.0"}, "execution_count": None}
        return {
            "cell_type": "code",
            "metadata": {"nbgrader": {"grade": True, "grade_id": gid, "points": 1}},
            "source": "",
            "outputs": [
                {"output_type": "stream", "name": "stdout", "text": f"✘ {gid}\n  words\n"},
                {**result, "metadata": {METADATA: {"diagnosis": kind}}},
            ],
        }

    for student, kinds in {
        "ada": {"test_dprobs": None, "test_dbnbias": "keepdim"},
        "ben": {"test_dprobs": "wrong_sign", "test_dbnbias": "keepdim"},
        "cy": {"test_dprobs": None, "test_dbnbias": "keepdim"},
    }.items():
        folder = tmp_path / "autograded" / student / "backprop_ninja"
        folder.mkdir(parents=True)
        cells = [cell(gid, kind) for gid, kind in kinds.items()]
        (folder / f"{NB}.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4}))
    found = read_diagnoses(tmp_path, "backprop_ninja", ["ada", "ben", "cy", "nobody"], [NB])
    assert most_frequent(found) == {
        (NB, "test_dbnbias"): [("keepdim", ["ada", "ben", "cy"])],
        (NB, "test_dprobs"): [("wrong_sign", ["ben"])],
    }


def test_a_reason_that_cannot_be_made_says_how_to_make_it():
    with pytest.raises(ValueError, match=r"add the kind there \(autograder/common/diagnoses.py\)"):
        Reason("no_such_kind", say("d{name} is wrong", name="x"))
    with pytest.raises(TypeError, match=r"write Reason\(kind, say"):
        Reason("wrong_sign", "dx has the wrong sign")


def test_whole_numbers_are_said_of_a_rounded_gradient_not_of_a_constant():
    from autograder.engine.diagnosis.offsets import whole_numbers

    probs = torch.softmax(torch.randn(32, 27, generator=torch.Generator().manual_seed(0)), 1)
    targets = torch.nn.functional.one_hot(torch.arange(32) % 27, 27)
    gradient = (probs - targets) / 32
    scale = gradient.abs().max().item()
    assert whole_numbers((probs - targets) // 32, gradient, scale)  # 0 and -1: a floor division
    assert not whole_numbers(torch.ones_like(gradient), gradient, scale)  # ones_like: nothing was rounded
    assert not whole_numbers(gradient, gradient, scale)

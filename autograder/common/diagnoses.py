"""The kinds of diagnosis: every reason the grader gives a student carries a key of ``DIAGNOSES``.

A ``Reason`` is the sentence the student reads, with its kind beside it. The engine and the
preprocessors make them; JudgeAnswers writes each graded cell's kind into its output's metadata;
the class report counts kinds, never reads the sentences back (which may change, or be translated).
"""

from .editions import ENGLISH
from .words import Words, render

# kind -> how the class report names it (the report sorts them by how many students each has)
DIAGNOSES = {
    "not_answered": "not answered",
    "did_not_run": "the cell did not run to the end (the kernel died, or a time limit stopped it)",
    "no_answer": "no answer reached the grader (reports suppressed or the grading module replaced)",
    "autograd": "taken from autograd",
    "not_a_float32_tensor": "not a float32 tensor",
    "keepdim": "keepdim dropped or a size-1 dimension added",
    "not_summed_over_broadcast": "not summed over a broadcast dimension",
    "wrong_dimension": "summed or normalised over the wrong dimension",
    "transposed": "transposed, or dimensions in the wrong order",
    "wrong_shape": "wrong shape",
    "wrong_return": "backward_pass does not return the list of gradients, in order",
    "bessel": "n for n-1 (Bessel's correction)",
    "batch_size": "a division by the batch size missing or extra",
    "wrong_sign": "wrong sign",
    "constant_factor": "off by a constant factor",
    "constant_offset": "off by the same amount in every entry (started from ones?)",
    "missing_path": "a path of the gradient missing",
    "missing_factor": "a factor of the local derivative missing",
    "factor_twice": "a factor counted twice (bngain in dbnraw and in front of the bracket)",
    "missing_term": "a term of the forward pass missing (the mean, bnbias)",
    "epsilon": "BatchNorm's epsilon missing",
    "variance_for_std": "the variance and the standard deviation confused",
    "path_twice": "a path added twice",
    "passed_through": "upstream gradient passed through unchanged",
    "upstream_missing": "the local derivative alone, the upstream gradient left out (the chain rule)",
    "wrong_upstream": "another tensor's gradient read as the upstream gradient (the chain rule)",
    "max_path": "the max's path sent to the wrong logit",
    "not_accumulated": "repeated indices not accumulated",
    "changed_in_place": "changed in place after its check",
    "not_finite": "NaN or infinite values",
    "all_zeros": "all zeros",
    "target_term": "the target's term misplaced",
    "not_raw_logits": "cross-entropy not given the raw logits",
    "rows_not_zero": "rows that do not sum to zero",
    "wrong_batch": "not computed from this batch",
    "one_batch_size": "right at one batch size only (a size written in as a number)",
    "not_following_input": "right on this batch only (a copy of the chunked forward pass?)",
    "raised_error": "the code raised an error",
    "not_updated_in_place": "parameters not updated in place",
    "wrong_update": "a wrong parameter update",
    "goal_not_reached": "the validation loss goal not reached",
    "wrong_statistics": "not the statistics of hprebn over the training set",
    "product_rule": "a term of the product rule missing (GELU without x·φ(x))",
    "approximation": "an approximation's derivative for the exact operator",
    "dropout_mask": "dropout's mask not applied, or not rescaled, in the backward pass",
    "attention_scale": "the 1/√d of the attention scores missing or wrong",
    "skip_connection": "the skip connection's gradient lost or split",
    "activation_mask": "an activation's slope wrong where its input is negative or at the kink",
    "factor_outside_sum": "a factor that varies along a sum taken out of it (lngain outside LayerNorm's sums)",
    "input_for_output": "an operator's input read where its output belongs (scores for att)",
    "precedence": "brackets missing: Python's order of operations (x ** -3/2, 1.0 / n - 1)",
    "integer_division": "whole numbers where the gradient has fractions (a floor division //)",
    "rearranged": "the right values in the wrong places (dimensions mixed up in a reshape)",
    "other_tensor": "another forward tensor read in a local derivative (bnraw where bngain belongs)",
    "off_by_one": "an example of the batch left out (a loop or a slice one short)",
    "one_position": "one position of a dimension taken alone, or left out (dC from Xb[:, 0] and demb[:, 0] only)",
    "power_rule": "the power rule's exponent not lowered by one",
    "inverted": "a local derivative turned upside down (x where 1/x belongs)",
    "next_step": "the next step's local derivative taken in early (dh times tanh's 1 - h**2)",
    "wrong_values": "wrong values (re-derive the local derivative)",
    "other_forward_pass": "computed from the tensors of another forward pass (n-1 where n belongs)",
    "not_asked_function": "not computed with the function its cell asks for (dC with index_add_)",
    "differs_from_chunked": "not equal to the chunked forward pass",
    "unreadable": "the answer could not be read",
    # Exercise 6, the bug hunt: a planted bug still in its fix, the bugs named, the gradient checker
    "clipped_loss": "the loss clipped instead of the gradient",
    "zero_bias": "a formula right only at zero bias and unit gain",
    "aliased": "one tensor under two names, changed in place (.clone() missing)",
    "broke_a_right_line": "a line without a planted bug made wrong while fixing the others",
    "fix_unseen": "a fix computed from wrong gradients on which the bug and its fix agree (all zeros)",
    "bugs_missed": "a planted bug not named",
    "not_a_bug": "a gradient without a bug named as buggy",
    "one_sided_difference": "a one-sided difference instead of the central one",
    "inaccurate_difference": "a numerical gradient off by more than its step allows",
    "other": "other reasons",
}
OTHER = "other"
NOTE = "note"  # a line that explains a verdict without being its reason ("judged from your own dX")
NOT_ATTEMPTED = {"not_answered", "did_not_run", "no_answer"}  # no answer to learn a misconception from
METADATA = (
    "backprop_ninja"  # a graded cell's execute_result: metadata[METADATA] holds its verdict's kind, title, points
)


class Reason(str):
    """A sentence for the student that knows its diagnosis kind: ``Reason("wrong_sign", say("d{name} has ...", ...))``.
    It is a ``str`` (the English sentence), so verdicts print and compare it as before; ``render`` gives it in an
    edition's language (``common.words``). Its words must be ``Words``: a plain ``str`` could not be translated. A
    plain ``str`` line of a verdict has the kind ``other``."""

    kind: str
    words: Words

    def __new__(cls, kind: str, text: Words):
        if kind not in DIAGNOSES and kind != NOTE:
            raise ValueError(
                f"no diagnosis kind {kind!r} in DIAGNOSES: use one of its keys, or add the kind there "
                "(autograder/common/diagnoses.py), with the words the class report names it by"
            )
        if not isinstance(text, Words):
            raise TypeError(
                f"a Reason's words are say(...) or say_n(...), not {type(text).__name__}: {text!r:.80} "
                '(write Reason(kind, say("...")), so that the editions can translate it)'
            )
        reason = super().__new__(cls, str(text))
        reason.kind, reason.words = kind, text
        return reason

    def __getnewargs__(self):  # copies and pickles keep the kind and the words
        return self.kind, self.words

    def render(self, code: str = ENGLISH) -> str:
        return render(self.words, code)


def kind_of(line: str) -> str:
    return getattr(line, "kind", OTHER)


def label(kind: str) -> str:
    return DIAGNOSES.get(kind, DIAGNOSES[OTHER])

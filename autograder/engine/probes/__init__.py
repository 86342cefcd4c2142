"""Rule probes: a step judged by its rule as well as by one batch's numbers.

The kernel's side re-runs the student's code for an answer with the step's inputs pinned to random tensors; the
grader's side applies the step's rule to the same inputs. Why, which code is re-run and when a probe cannot judge:
docs/design/probes.md.

  rerun         the kernel's side: the answer's code, the pinned inputs, the namespace it runs in again
  snapshots     what each statement read when it ran, taken in the kernel, so a re-run sees the same
  judge_rule    the grader's side: the rule's answer on the pinned inputs, and the verdict
  written_with  the grader's side of an answer asked for with a given function: its code must call it
"""

"""The grading engine: pure functions from tensors to verdicts. It never imports nbgrader.

backward_rules   the local backward rule of every step (the single table the grader reads)
step_mistakes    the wrong formulas students typically write for those steps, each with its words
fused_rules      the fused steps of Exercises 2 and 3 (dlogits, dhprebn), as rules of the same kind
fused_batchnorm  the fused BatchNorm formula and its known wrong variants (Exercises 3 and 4)
tolerance        when two gradients count as equal, and why
wire             how answers travel from the kernel to the grader (the trust boundary), and a cell's Report
verdict          what every graded cell runs and returns: a Check, a Verdict
explain          why an answer differs from its reference (dtype, NaN, a constant factor, wrong entries)
reference        the grader's own run of a notebook's setup: forward values, autograd's gradients
judge            the verdict on one graded gradient (error carried forward)
diagnosis/       why a wrong gradient is wrong, in words (diagnose), through the chain rule (chain_rule: the local
                 derivative alone, an upstream path left out, another tensor's gradient read), its shape (shapes),
                 the step's rule with one thing changed (slips: another forward tensor read, one path off by a
                 constant, an example of the batch left out), a power's exponent (powers), the batch size's n
                 written as another size (divisors), a factor left out (left_out), a constant offset, and how the
                 student's cells wrote an answer (answer_notes: a misspelt name, a cell stopped part way)
probes/          rule probes: a step's code re-run on random upstream gradients (rerun, on the snapshots of what
                 each statement read when it ran), against the step's rule (judge_rule)
exposures        which of the grader's inputs exposes which known mistake, and the margins
fast_forwards    loss_fast and hpreact_fast: what each block must equal, and its known wrong variants
value_checks     answers that are not gradients: loss_fast, hpreact_fast, rows of dlogits summing to zero
training/        Exercise 4: the grader's network, and the verdicts on backward_pass, the training run, the calibration
operators/       Exercise 5: the table of operators the lecture never did (dropout, GELU, LayerNorm, attention, the skip
                 connection, ReLU, LeakyReLU), and the inputs that expose their mistakes
honesty/         answers taken from autograd earn nothing (the static reading, cell_code, the decoy)
bug_hunt/        Exercise 6: the colleague's pass and its planted bugs, the fixes, the bugs named, the gradient checker
exercises        which check grades which cell of which notebook
"""

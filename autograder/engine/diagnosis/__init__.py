"""Why a gradient is wrong, in plain words that do not give the formula away: its shape, a known mistake, the chain
rule (the local derivative alone, an upstream path left out or another tensor's gradient read), the step's rule with
one thing changed (another forward tensor read, one path off by a constant, an example left out), a constant factor
or offset, or how many entries are off; and notes on how the student's cells wrote the answer (answer_notes: a misspelt
name, a cell that stopped after it had written part of it)."""

"""Why a gradient is wrong, in plain words that do not give the formula away: its shape, a known mistake, the chain
rule (the local derivative alone, an upstream path left out or another tensor's gradient read), a constant factor or
offset, or how many entries are off."""

"""Where a probe's pin stays random: where the student's own gradient is not exactly zero.

``dprobs`` is exactly zero off the targets, whatever the batch: code for ``dcounts_sum_inv`` that uses it (a one-hot
of the targets as a mask, published so) is right for every upstream gradient with those zeros, as code that reads
no upstream gradient at all is judged by its value. Exact zeros already carried forward for a whole gradient (a
``dlogit_maxes`` of zeros); this carries them forward entry by entry (docs/design/probes.md)."""

import torch


def kept_entries(own, shape):
    """1 where the pin of a gradient of ``shape`` stays random, 0 where the student's own value is exactly zero; 1.0
    (every entry) when the student's value is no float tensor of that many entries."""
    if not (isinstance(own, torch.Tensor) and own.is_floating_point() and own.numel() == torch.Size(shape).numel()):
        return 1.0
    return (own.detach().reshape(tuple(shape)) != 0).to(torch.float32)

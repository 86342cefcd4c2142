"""The dynamic sign of answers taken from autograd: what ``.grad`` holds while grading (docs/design/engine.md)."""

import zlib

import torch


def decoy(grad: torch.Tensor, seed: int, name: str) -> torch.Tensor:
    """What ``<name>.grad`` holds while grading; the grader computes the same from its reference. Seeded noise at the
    gradient's scale, and nothing of the gradient itself: the kernel knows the seed, so noise added to the right
    gradient could be rebuilt and taken off again."""
    g = torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(name.encode())) % 2**63)
    noise = torch.randn(grad.shape, generator=g, dtype=torch.float64).to(grad.dtype)
    amplitude = 0.5 * max(grad.detach().abs().max().item() if grad.numel() else 0.0, 1e-3)
    return (amplitude * noise).to(grad.dtype)

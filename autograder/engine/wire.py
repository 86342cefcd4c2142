"""How answers travel from the student's kernel to the grader: plain JSON in a cell output.

The kernel only *reports* tensors; the grader, in its own process, decides what they are
worth. Decoding never unpickles anything: dtype comes from a fixed list and the bytes must
fill the stated shape exactly.
"""

import base64
import math

import numpy as np
import torch

MIME = "application/x-backprop-ninja+json"
MAX_ELEMENTS = 1_000_000  # far above any gradient here; stops a hostile payload from eating memory

_DTYPES = {
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "int64": np.int64,
    "int32": np.int32,
    "int16": np.int16,
    "int8": np.int8,
    "uint8": np.uint8,
    "bool": np.bool_,
}


def encode(value, present: bool = True) -> dict:
    """One reported value: a tensor, None, missing, or something else (described)."""
    if not present:
        return {"kind": "missing"}
    if value is None:
        return {"kind": "none"}
    if not isinstance(value, torch.Tensor):
        return {"kind": "other", "type": type(value).__name__}
    t = value.detach()
    dtype = str(t.dtype).replace("torch.", "")
    info = {
        "kind": "tensor",
        "dtype": dtype,
        "shape": list(t.shape),
        "requires_grad": bool(value.requires_grad),
        "device": str(t.device),
    }
    if t.numel() > MAX_ELEMENTS:
        return {"kind": "other", "type": f"tensor of {t.numel()} elements"}
    if dtype not in _DTYPES:  # bfloat16, complex, ...: sent as float64, the original dtype kept in "dtype"
        t = t.to(torch.float64) if not t.is_complex() else t.abs().to(torch.float64)
    array = np.ascontiguousarray(t.cpu().numpy())
    info["data_dtype"] = str(array.dtype)
    info["data"] = base64.b64encode(array.tobytes()).decode("ascii")
    return info


def decode(info) -> torch.Tensor | None:
    """The tensor of one reported value, or None when it is not a well-formed tensor."""
    try:
        if info.get("kind") != "tensor":
            return None
        shape = [int(s) for s in info["shape"]]
        if any(s < 0 for s in shape) or math.prod(shape) > MAX_ELEMENTS:
            return None
        np_dtype = _DTYPES[info["data_dtype"]]
        raw = base64.b64decode(info["data"], validate=True)
        if len(raw) != math.prod(shape) * np.dtype(np_dtype).itemsize:
            return None
        return torch.from_numpy(np.frombuffer(raw, dtype=np_dtype).copy().reshape(shape))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None

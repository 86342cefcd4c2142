"""How answers travel from the student's kernel to the grader: plain JSON in a cell output.

The kernel only *reports* tensors; the grader, in its own process, decides what they are
worth. Decoding never unpickles anything: dtype comes from a fixed list and the bytes must
fill the stated shape exactly.
"""

import base64
import math

import numpy as np
import torch

PROBE = "(probe)"  # the key of a rule probe's report in a cell's payload (never a variable's name)
CUT_SHORT = "(cut short)"  # the key of what stopped the answer's cell before all its lines that write it had run
MAX_ELEMENTS = 1_000_000  # far above any gradient here; stops a hostile payload from eating memory
MAX_TEXT, MAX_TEXTS = 200, 100  # a reported text's characters, a list's texts: far above an id or gradient names

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
        return {"kind": "other", "type": "tensor", "elements": t.numel()}  # too large to send
    if dtype not in _DTYPES:  # bfloat16, complex, ...: sent as float64, the original dtype kept in "dtype"
        t = t.to(torch.float64) if not t.is_complex() else t.abs().to(torch.float64)
    array = np.ascontiguousarray(t.cpu().numpy())
    info["data_dtype"] = str(array.dtype)
    info["data"] = base64.b64encode(array.tobytes()).decode("ascii")
    return info


def encode_text(value, present: bool = True) -> dict:
    """One reported text, or list of texts (Exercise 6's id and the gradients it names), cut to the limits."""
    if not present:
        return {"kind": "missing"}
    if value is None:
        return {"kind": "none"}
    if isinstance(value, str):
        return {"kind": "text", "text": value[:MAX_TEXT]}
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        texts = sorted(value) if isinstance(value, (set, frozenset)) else list(value)
        return {"kind": "texts", "texts": [v[:MAX_TEXT] for v in texts[:MAX_TEXTS]]}
    return {"kind": "other", "type": type(value).__name__}


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


class Report:
    """What one graded cell reported: its payload, read without trusting it.

    Every judge reads a cell's answers through this one object: ``info`` is the wire description of
    a name (a missing or malformed entry reads as missing), ``tensor`` the decoded value (None when
    it is not a well-formed tensor; decoded once), ``floats`` the same when it holds floats.
    """

    def __init__(self, payload: dict | None = None):
        self._payload = dict(payload) if isinstance(payload, dict) else {}
        self._decoded = {}

    def info(self, name: str) -> dict:
        info = self._payload.get(name)
        return info if isinstance(info, dict) else {"kind": "missing"}

    def kind(self, name: str) -> str:
        return str(self.info(name).get("kind", "missing"))

    def __contains__(self, name: str) -> bool:
        return name in self._payload

    def raw(self, name: str):
        """The entry exactly as it arrived (to compare two reports of one name)."""
        return self._payload.get(name)

    def tensor(self, name: str) -> torch.Tensor | None:
        if name not in self._decoded:
            self._decoded[name] = decode(self.info(name))
        return self._decoded[name]

    def floats(self, name: str) -> torch.Tensor | None:
        t = self.tensor(name)
        return t if t is not None and t.is_floating_point() else None

    def text(self, name: str) -> str | None:
        """A reported text (``encode_text``), or None when it is none."""
        info = self.info(name)
        text = info.get("text")
        return text[:MAX_TEXT] if info.get("kind") == "text" and isinstance(text, str) else None

    def texts(self, name: str) -> list | None:
        """A reported list of texts, or None when it is none."""
        info = self.info(name)
        texts = info.get("texts")
        if info.get("kind") != "texts" or not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return None
        return [t[:MAX_TEXT] for t in texts[:MAX_TEXTS]]

    def with_values(self, **tensors) -> "Report":
        """This report with some names replaced by the grader's own tensors (a value the notebook hands out)."""
        return Report({**self._payload, **{name: encode(t) for name, t in tensors.items()}})

    @property
    def probe(self) -> dict | None:
        """The rule probe's report of this cell (see ``probes``), or None."""
        probe = self._payload.get(PROBE)
        return probe if isinstance(probe, dict) and isinstance(probe.get("pins"), dict) else None

    @property
    def cut_short(self) -> str | None:
        """What stopped the answer's newest cell before every statement of it that writes the answer ran to its end,
        after one had (``in_kernel.snapshot_hook.cut_short``), as "Type: message"; None when nothing did."""
        error = self._payload.get(CUT_SHORT)
        if not isinstance(error, str) or not error.strip():
            return None
        error = error[:MAX_TEXT].rstrip()
        return error.removesuffix(":") if error.count(":") == 1 else error  # (no message: its type alone)

    def with_probe(self, probe: dict) -> "Report":
        """This report with another report of the rule probe in place of its own (``kept_by_rule.kept_as_set_up``)."""
        return Report({**self._payload, PROBE: probe})

    def probe_result(self) -> torch.Tensor | None:
        """The answer the probe computed, as floats (None when it is no float tensor)."""
        t = decode((self.probe or {}).get("result") or {})
        return t if t is not None and t.is_floating_point() else None

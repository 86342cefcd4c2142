"""What a graded cell sends the grader: the named tensors, as ``wire`` encodes them, on the notebook's own output."""

from IPython.display import display

from ..common.naming import ANSWER_MIME
from ..engine import wire
from .probe_runner import run_probe
from .snapshot_hook import cut_short, stopped_before
from .switches import grading, started


def report(namespace: dict, *names: str, probe: tuple = ()) -> None:
    """Send the named variables, as they are now, to the grader (at autograde only).

    ``probe``: names that the student's code for ``names[0]`` reads (its upstream gradients, or the input of
    a forward value); that code is re-run with them pinned to random tensors, and its result is sent too.
    """
    if not grading():
        print("This cell is graded by the autograder.")
        return
    if not started():  # the cell that starts grading never ran (deleted): what the answers hold may be autograd's
        return
    payload = {name: wire.encode(namespace.get(name), name in namespace) for name in names}
    if names[0] not in namespace and (error := stopped_before(names[0])):
        payload[names[0]]["raised"] = error  # the student wrote it, and their cell stopped before it
    elif names[0] in namespace and (error := cut_short(names[0])):
        payload[wire.CUT_SHORT] = error  # ... or after it had written some of it
    if probe:
        try:
            payload[wire.PROBE] = run_probe(namespace, names[0], probe)
        except Exception as error:  # whatever the student's namespace holds, the answer itself is still reported
            payload[wire.PROBE] = {"answer": names[0], "pins": {}, "status": "failed", "reason": repr(error)[:200]}
    send(payload)


def send(payload: dict) -> None:
    display({ANSWER_MIME: payload, "text/plain": "(answer reported to the grader)"}, raw=True)

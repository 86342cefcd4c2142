"""What a graded cell tells about the gradients graded before it: one changed after its own check (in place, or
through a second name of the same tensor)."""

from ..common.diagnoses import Reason
from ..common.words import say


def changed_after_check(checked: dict, report, answer: str) -> list:
    """What a graded cell can tell about the gradients graded before it: the names of ``checked`` (each one's
    report at its own graded cell) that this cell's report shows with other values. Autograde runs the
    notebook once, top to bottom, so a difference means a later cell changed the tensor, usually in place.
    ``report`` is this cell's ``wire.Report``."""
    lines = []
    for name, then in checked.items():
        now = report.raw(name)
        if name == answer or now is None or now == then or _missing(then) and _missing(now):
            continue  # (_missing: not defined at its check, and still not: its own cell's report said what stopped it)
        if report.raw(answer) == now:
            lines.append(
                Reason(
                    "changed_in_place",
                    say(
                        "{name} changed after its check: it now holds the values of {answer}, so the two names are "
                        "one tensor (`{answer} = {name}` without .clone()?) and `{answer} += ...` changed {name} too. "
                        "{name} keeps the points of its own cell; write `{answer} = {name}.clone()`",
                        name=name,
                        answer=answer,
                    ),
                )
            )
        else:
            lines.append(
                Reason(
                    "changed_in_place",
                    say(
                        "{name} changed after its check: was it modified in place? ({name} keeps the points of its "
                        "own cell, but every later step that reads it reads the changed values)",
                        name=name,
                    ),
                )
            )
    return lines


_missing = lambda entry: isinstance(entry, dict) and entry.get("kind") == "missing"

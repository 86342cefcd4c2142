"""What every judge returns and what every graded cell runs: a ``Verdict``, a ``Check``."""

from dataclasses import dataclass, field
from typing import Callable

from ..common.diagnoses import NOTE, OTHER, kind_of
from ..common.editions import ENGLISH
from ..common.words import render, say_n

# the characters of one line a student reads (a cut line ends in "…"): the grader's own lines are at most about 560
# (Exercises 1 and 4 to 6's cases); a text the kernel reports (a probe's reason, a type's name, an error) is the
# student's to forge, and a graded cell's report, held within the cell's budget alone (``output_budget``), made each
# verdict of a notebook about a megabyte, past the notebook's own budget
LINE_CHARS = 2000


@dataclass
class Verdict:
    """The grader's word on one graded cell."""

    title: str  # what was graded: a tensor's name, "dcounts", or words, ``say("training run")``
    points: float  # earned
    max_points: float
    # what the student reads under the title, one sentence a line: each a ``common.diagnoses.Reason``
    lines: list = field(default_factory=list)
    # the student's upstream gradients that differ from autograd's, which this answer was judged with: wrong ones
    # (error carried forward, ``probes.kept_by_rule.carried_forward``), or ones within their own tolerance whose
    # difference still shows here; ``judge.first_to_fix`` follows them up to the step to fix
    carried_from: tuple = ()
    wrong_from: tuple = ()  # of those, the ones beyond their own tolerance: what the carried-forward line calls wrong
    # points earned by its code, but the notebook's value is not the gradient (a forward tensor it read was rebound
    # by an earlier cell, ``kept_by_rule.kept_as_set_up``): the steps below name it as the one to fix first
    wrong_in_notebook: bool = False
    # what the class pipeline reads of this cell beside its points and diagnosis (Exercise 6: the id the student
    # entered, ``grading.results.bug_hunt_ids``); written into the cell's metadata only when there is some
    facts: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.points == self.max_points

    @property
    def diagnosis(self) -> str | None:
        """The kind of the first line that is a reason (not a NOTE); None when the verdict earned every point."""
        if self.passed:
            return None
        return next((kind for kind in map(kind_of, self.lines) if kind != NOTE), OTHER)

    def text(self, code: str = ENGLISH) -> str:
        """What the student reads in the graded cell, in the language of edition ``code``."""
        mark = "✔" if self.passed else "✘"
        most = int(self.max_points) if float(self.max_points).is_integer() else self.max_points  # a plural's count
        score = say_n(
            "{title}: {points:g} of {count:g} point",
            "{title}: {points:g} of {count:g} points",
            most,
            title=self.title,
            points=self.points,
        )
        head = f"{mark} {render(score, code)}"
        return "\n".join([_cut(head)] + [_cut(f"  {render(line, code)}") for line in self.lines]) + "\n"


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


@dataclass(frozen=True)
class Check:
    """The check of one graded cell: what it grades, for how many points, and how.

    ``judge(report, namespace, seed, tainted)`` reads the cell's ``wire.Report``, the grader's setup
    namespace for this seed, the seed, and the names computed with autograd, and returns a Verdict.
    A check that ``reads_code`` is also given ``code``: the sources of the notebook's code cells before the graded
    cell, in order (what the kernel ran, as the grader holds it, never as the kernel reports it).
    """

    title: str
    points: float
    judge: Callable
    reads_code: bool = False
    # what the graded cell's hidden test must send for the check to judge fairly (a gradient step: its answer and the
    # upstream gradients the notebook does not give, and every upstream gradient to probe); the fast tier reads them
    reports: tuple = ()
    probes: tuple = ()

    def __call__(self, report, namespace: dict, seed: int, tainted: set, code: tuple = ()) -> Verdict:
        if self.reads_code:
            return self.judge(report, namespace, seed, tainted, code)
        return self.judge(report, namespace, seed, tainted)

    def nothing(self, why: str) -> Verdict:
        """No points, for a reason (a ``Reason``) found before any answer could be judged (the cell did not run...)."""
        return Verdict(self.title, 0, self.points, [why])

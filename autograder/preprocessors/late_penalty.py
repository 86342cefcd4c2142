"""The course's late-submission policy, plugged into nbgrader's own seam (``LateSubmissionPlugin``).

The due date is in the gradebook, a submission's time is its timestamp.txt; nbgrader's ``AssignLatePenalties`` asks
this plugin how many points to take off each notebook (docs/instructors.md, "Late submissions").
"""

import math

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

DAY = 24 * 3600


class LatePenalty(LateSubmissionPlugin):
    """A share of the notebook's score off for every day (or part of a day) late, after a grace period."""

    percent_per_day = Float(
        10.0, help="Percent of the notebook's score taken off for each started day after the due date."
    ).tag(config=True)
    grace_minutes = Float(
        0.0, help="Minutes after the due date that still count as on time (an upload that took a while)."
    ).tag(config=True)
    max_percent = Float(100.0, help="The most that is taken off, in percent of the score.").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float:
        late = total_seconds_late - 60 * self.grace_minutes
        if late <= 0:
            return 0.0
        percent = min(self.max_percent, self.percent_per_day * math.ceil(late / DAY))
        return score * percent / 100

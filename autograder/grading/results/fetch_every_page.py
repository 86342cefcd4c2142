"""The students' ``nbgrader fetch_feedback`` (``c.ExchangeFactory.fetch_feedback`` in the machine's
nbgrader_config.py, docs/jupyterhub.md): nbgrader's, which looks for a page of each notebook in the student's own
copy of a submission, and also for each notebook of the released assignment that the submission lacks under its
name. The grader writes a page for a notebook it could not grade (``ungraded_pages``: missing, or handed in under
another name); without this the student who most needs that page never finds it.

A page in the exchange is named after the submission's secret, which only the student's nbgrader holds, so looking
for more names finds nothing of anyone else's.
"""

import glob
import os

from nbgrader.exchange.default.fetch_feedback import ExchangeFetchFeedback
from nbgrader.utils import notebook_hash

from ..intake.exchange import KEPT


class FetchEveryPage(ExchangeFetchFeedback):
    def init_src(self):
        super().init_src()
        found = {(notebook, timestamp) for notebook, timestamp, _ in self.feedback_files}
        assignment = self.coursedir.assignment_id or "*"
        for submission in glob.glob(os.path.join(self.cache_path, f"*+{assignment}+*")):
            _, assignment_id, timestamp = os.path.basename(submission).split("+")
            secret_file = os.path.join(submission, KEPT[1])
            if not os.path.isfile(secret_file):
                continue  # (nbgrader's older pages, named without a secret: its own lookup covers them)
            with open(secret_file) as f:
                secret = f.read()
            released = glob.glob(os.path.join(self.course_path, "outbound", assignment_id, "*.ipynb"))
            for notebook in sorted(os.path.splitext(os.path.basename(path))[0] for path in released):
                page = os.path.join(self.outbound_path, f"{notebook_hash(secret=secret, notebook_id=notebook)}.html")
                if (notebook, timestamp) not in found and os.path.exists(page):
                    self.feedback_files.append((notebook, timestamp, page))
                    self.log.info(f"Found the grader's page for '{assignment_id}/{notebook}', not handed in by name")

"""A grading worker's watchdog counts the grader's own time per student, not the time its notebooks ran."""

import time

from autograder.common.phases import EXECUTING
from autograder.grading.workers.watchdog import Watchdog


def test_the_grader_s_own_time_runs_out_but_executing_a_notebook_does_not_count():
    expired = []
    watchdog = Watchdog(0.4, expired.append)
    watchdog.start("ada")
    with EXECUTING:  # a notebook running for longer than the limit
        time.sleep(0.8)
    assert expired == [] and watchdog.used() < 0.4
    watchdog.done()
    watchdog.start("bob")
    time.sleep(1.2)  # the grader's own work, stuck
    assert expired == ["bob"]
    time.sleep(0.5)
    assert expired == ["bob"]  # once

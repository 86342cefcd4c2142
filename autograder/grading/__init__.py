"""Grading a whole class (``backprop-ninja grade``): collect, repair, autograde in parallel workers, report.

class_grading  the command: plan, stage, run the workers, merge, write grades.csv and problems.json
worker         one worker process: nbgrader's own autograde and feedback, one student at a time
collect        an LMS download (zip or folder) laid out as submitted/<student>/<assignment>/
repair         each submitted notebook checked against the release; broken nbgrader cells mended
report         the instructor's class report (class_report.html) from grades.csv and problems.json
"""

"""What the tests share, imported as ``support.<module>`` (tests/ is on the tests' path; conftest.py only holds
fixtures):

course          a real course folder driven by the real nbgrader commands, the grade command, feedback pages
edits           a submission broken the ways students break one: cells deleted, copied, edited, stripped, faked
in_process      autograde a notebook in this process, with the grader's own preprocessors and checks
words           a pseudo-translation of the grader's words, and what of a page escaped it
cases_ex1, cases_ex2_ex3, cases_ex4    each exercise's table of mistakes, alternatives and cheats
warmup          the micrograd warm-up's solutions and checks
users           ordinary users of the machine (made by the test as root), with an install of the course they can reach
"""

"""The one exception type the course's library code raises when a command cannot go on."""


class GradingError(Exception):
    """A command cannot go on (no course here, no sandbox, a worker that will not start...).

    The message says what is wrong and what to do about it. Library code raises it; only
    ``autograder/cli.py`` turns it into a message on stderr and an exit code.
    """

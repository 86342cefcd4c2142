"""Links from the notebooks into course/, made absolute so that they work on Colab, where a notebook has no folder.

Authors write any link that ends in ``course/<file>[#anchor]``; ``python -m autograder.authoring`` rewrites it from
the one repository address, and the tests fail when a notebook keeps a relative or stale link.
"""

import re

from ..common.links import course_url, repository_url

# ](target) where target leads to course/<rest>: relative, or absolute on GitHub or Colab (any owner, any branch)
COURSE_LINK = re.compile(
    r"\]\((?:\.{1,2}/)*"
    r"(?:https://github\.com/[^/)\s]+/[^/)\s]+/blob/[^/)\s]+/"
    r"|https://colab\.research\.google\.com/github/[^/)\s]+/[^/)\s]+/blob/[^/)\s]+/)?"
    r"course/(?P<rest>[^)\s]+)\)"
)


def with_absolute_course_links(markdown: str, repository: str | None = None) -> str:
    """The markdown with every link into course/ written as ``course_url`` writes it."""
    repository = repository or repository_url()
    return COURSE_LINK.sub(lambda m: f"]({course_url(m.group('rest'), repository)})", markdown)

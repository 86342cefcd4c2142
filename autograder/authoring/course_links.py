"""For course maintainers: links from the notebooks to the course text that work on Colab too.

A notebook opened in Colab has no folder around it, so a relative link such as
``../../course/derivations.md`` leads nowhere. Every link from a notebook into ``course/`` is
therefore absolute, built from the one repository address (``[project.urls] Repository`` in
``pyproject.toml``, as the Colab badges are): a page opens on GitHub, a notebook in Colab.
Authors write the link in any form that ends in ``course/<file>[#anchor]`` (``course/why.md``,
``../../course/why.md``, or an absolute address of another fork); ``python -m autograder.authoring``
rewrites it, and the tests fail when a notebook keeps a relative or stale link.
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

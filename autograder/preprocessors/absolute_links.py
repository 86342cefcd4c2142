"""Make the relative links of the notebook's text absolute: feedback is read far from the repository.

A link such as ``../../course/derivations.md#bessels-correction`` works beside the release
notebook in the repository and nowhere else: not in ``feedback/<student>/``, not in an e-mail
attachment. Each relative link of a markdown cell is resolved against the notebook's folder in
the repository (``release/backprop_ninja/``) and becomes the web address of that file in the
course's repository (``[project.urls] Repository`` of pyproject.toml, read by ``authoring.badges``).
"""

import posixpath
import re

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from ..authoring.badges import COURSE_ROOT, RELEASE_DIR, file_url, repository_url

NOTEBOOK_FOLDER = RELEASE_DIR.relative_to(COURSE_ROOT).as_posix()
LINK = re.compile(r"(\]\(|\b(?:href|src)=[\"'])([^)\"'\s]+)")  # markdown's ](target) and HTML's href="target"
ABSOLUTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|#|/)", re.I)  # a scheme, an anchor of this page, a root path


def absolute(target: str, repository: str) -> str:
    """``target`` as an address that works anywhere; unchanged when it already does or leaves the repository."""
    if ABSOLUTE.match(target):
        return target
    path, hash_mark, fragment = target.partition("#")
    resolved = posixpath.normpath(posixpath.join(NOTEBOOK_FOLDER, path))
    if resolved.startswith(".."):
        return target
    return file_url(repository, resolved) + hash_mark + fragment


class AbsoluteLinks(Preprocessor):
    """Point every relative link of the markdown cells to the file in the course's repository."""

    enabled = Bool(
        True, help="Run in the pipelines it is listed in (nbconvert's preprocessors are off by default)."
    ).tag(config=True)

    def preprocess(self, nb, resources):
        repository = repository_url()
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = LINK.sub(lambda m: m.group(1) + absolute(m.group(2), repository), cell.source)
        return nb, resources

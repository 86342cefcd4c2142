"""The course's addresses on the web, from the one place that names the repository.

``[project.urls] Repository`` in ``pyproject.toml``: the Colab badges, the notebooks' links into ``course/`` and the
feedback pages' links all come from it (``authoring.badges``, ``authoring.course_links``).
"""

import re
from pathlib import Path

COURSE_ROOT = Path(__file__).resolve().parent.parent.parent
COURSE_DIR = COURSE_ROOT / "course"  # the course text, and the optional warm-up notebooks
BRANCH = "main"  # Colab opens the notebook as committed on this branch


def repository_url(pyproject: Path = COURSE_ROOT / "pyproject.toml") -> str:
    """``[project.urls] Repository``, e.g. https://github.com/owner/name."""
    text = pyproject.read_text()
    try:
        import tomllib

        url = tomllib.loads(text)["project"]["urls"]["Repository"]
    except ImportError:  # Python 3.10: a line of the form  Repository = "https://..."
        url = re.search(r'^Repository\s*=\s*"([^"]+)"', text, re.M).group(1)
    return url.rstrip("/").removesuffix(".git")


def colab_url(repository: str, notebook: Path) -> str:
    match = re.fullmatch(r"https://github\.com/([^/]+/[^/]+)", repository)
    if not match:
        raise ValueError(f"Colab opens notebooks from GitHub: {repository} is not https://github.com/<owner>/<name>")
    path = notebook.relative_to(COURSE_ROOT).as_posix()
    return f"https://colab.research.google.com/github/{match.group(1)}/blob/{BRANCH}/{path}"


def course_url(rest: str, repository: str | None = None) -> str:
    """The address of ``course/<rest>`` (``rest`` may end in ``#anchor``): GitHub for a page, Colab for a notebook."""
    repository = repository or repository_url()
    path, _, anchor = rest.partition("#")
    if path.endswith(".ipynb"):
        url = colab_url(repository, COURSE_DIR / path)
    else:
        url = f"{repository}/blob/{BRANCH}/course/{path}"
    return url + (f"#{anchor}" if anchor else "")

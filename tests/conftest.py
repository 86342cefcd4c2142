"""The tests' fixtures; what they share otherwise is in tests/support/."""

import os

import pytest

from autograder.common.tools import start_up

# The tests run nbgrader in process too, as the course's entry points do: alembic on PATH.
start_up()

from support.course import NAMES, temporary_course  # noqa: E402
from support.users import root_tools_on_path  # noqa: E402

from autograder.data import NAMES_VARIABLE  # noqa: E402

os.environ[NAMES_VARIABLE] = str(NAMES)  # notebooks run from temporary folders read it too: never download
root_tools_on_path()


def pytest_collection_modifyitems(items):
    """The order in which xdist hands the modules out (test.sh: ``--dist loadfile --no-loadscope-reorder``): tests/slow
    first, then tests/fast, each by number of tests, most first. A slow module takes minutes, whatever its number of
    tests (the cluster of hosts: 6 tests, 2-3 minutes); handed out last, it would hold one worker long past the
    other's end. The fast modules take seconds, and fill the two workers' ends in."""
    count = {}
    for item in items:
        count[item.path] = count.get(item.path, 0) + 1
    items.sort(key=lambda item: (item.path.parent.name != "slow", -count[item.path], str(item.path)))


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread():
    """One torch thread in a test process. pytest-xdist runs a process per core: with torch's two threads each on two
    cores, a thread waits for one that is not running (the fast tier took 135 CPU s with them, 121 without)."""
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def course():
    """A course of its own for each test module: modules reuse student names ("solution", "blank"), and
    nbgrader skips a student it already autograded."""
    assert NAMES.is_file(), f"the tests need {NAMES}"
    with temporary_course() as c:
        yield c


@pytest.fixture(scope="session")
def new_gradebook(tmp_path_factory):
    """A new gradebook.db as nbgrader makes one (its tables, alembic's stamp, the course), made once: a new gradebook
    costs nbgrader an alembic run (a subprocess, 2-3 s). Copy it, then write into the copy."""
    from nbgrader.api import Gradebook

    path = tmp_path_factory.mktemp("new_gradebook") / "gradebook.db"
    with Gradebook(f"sqlite:///{path}"):
        pass
    return path


@pytest.fixture(scope="session")
def editions_class():
    """A class of Exercise 1 in the three editions, graded (tests/slow/editions_class.py): shared by the slow tests
    of the editions and of accessibility."""
    from editions_class import editions_class as graded

    with graded() as c:
        yield c

"""The student-only install (environment-student.yml): PyTorch's CPU wheel, JupyterLab, matplotlib and what the
release notebooks import, nothing of the grader; every import of every notebook a student opens is satisfied."""

import ast
import re
import sys
from importlib import metadata

import nbformat
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from support.course import REPO

from autograder.authoring import badges

STUDENT = REPO / "environment-student.yml"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def student_pip():
    environment = yaml.safe_load(STUDENT.read_text())
    return next(d["pip"] for d in environment["dependencies"] if isinstance(d, dict))


def student_requirements():
    return [Requirement(line) for line in student_pip() if not line.startswith("-")]


def closure(requirements):
    """The distributions these requirements install, read from the metadata of this (instructor's) environment."""
    seen, todo = set(), list(requirements)
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.distribution(name).requires or []:
            sub = Requirement(line)
            if sub.marker is None or sub.marker.evaluate({"extra": ""}):
                todo.append(sub)
    return seen


def notebook_imports(path):
    nb = nbformat.read(path, as_version=4)
    modules = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Import):
                modules |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names)


def test_every_import_of_a_students_notebook_is_installed_by_the_student_environment():
    installed = closure(student_requirements())
    providers = metadata.packages_distributions()
    for path in badges.notebooks():  # the release notebooks and the warm-up
        for module in notebook_imports(path):
            dists = {canonicalize_name(d) for d in providers.get(module, [])}
            assert dists & installed, f"{path.name} imports {module}, which environment-student.yml does not install"


def test_the_student_environment_is_small_pinned_like_the_lock_and_cpu_only():
    names = {canonicalize_name(r.name) for r in student_requirements()}
    assert {"torch", "jupyterlab", "matplotlib"} <= names
    assert not names & {"nbgrader", "pytest", "distributed", "psycopg"}  # the instructor's and the tests' extras
    assert f"--extra-index-url {CPU_INDEX}" in student_pip()
    lock = dict(re.findall(r"^([a-z0-9_.-]+)==([^ \\]+)", (REPO / "requirements.lock").read_text(), re.M))
    lock = {canonicalize_name(name): version for name, version in lock.items()}
    for requirement in student_requirements():
        (pin,) = requirement.specifier
        version = lock[canonicalize_name(requirement.name)]
        assert pin.operator == "==" and version.split("+")[0] == pin.version, requirement
    one_command = next(line for line in STUDENT.read_text().splitlines() if "pip install" in line)
    assert f"--extra-index-url {CPU_INDEX}" in one_command
    assert sorted(one_command.split()[-len(names) :]) == sorted(str(r) for r in student_requirements())


def test_the_course_guide_sends_students_to_it():
    guide = (REPO / "course" / "README.md").read_text()
    assert "environment-student.yml" in guide and CPU_INDEX in guide

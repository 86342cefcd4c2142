"""The package's layers point down only: every import of every module (function-level ones included) goes to its own
layer or one below. A maintainer can read the tree bottom up, and a grading run never loads the authoring tools."""

import ast
import importlib
import importlib.util
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "autograder"
# bottom first; a module may import its own layer and those before it
LAYERS = ["common", "data", "engine", "in_kernel", "sandbox", "preprocessors", "grading", "authoring", "cli"]


def layer(module: str) -> str:
    parts = module.removesuffix(".__init__").split(".")
    return parts[1] if len(parts) > 1 else "autograder"


def imports(path: Path) -> set:
    """Every autograder module ``path`` imports, anywhere in it, as dotted names."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("autograder")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("autograder"):
                found.add(target)
    return found


def modules():
    return [p for p in PACKAGE.rglob("*.py") if "shared_cells" not in p.parts]


def test_every_import_points_down():
    wrong = []
    for path in modules():
        here = layer(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        for target in imports(path):
            there = layer(target)
            if there == "autograder" or LAYERS.index(there) > LAYERS.index(here):
                wrong.append(f"{path.relative_to(PACKAGE)} ({here}) imports {target} ({there})")
    assert not wrong, "\n".join(sorted(wrong))


def test_every_module_is_in_a_layer_and_the_top_package_runs_nothing():
    assert {layer(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)) for p in modules()} - {
        "autograder"
    } <= set(LAYERS)
    top = ast.parse((PACKAGE / "__init__.py").read_text())
    assert all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in top.body)  # its docstring


def test_the_engine_never_imports_nbgrader_or_jupyter():
    for path in (PACKAGE / "engine").rglob("*.py"):
        names = {a.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ImportFrom)}
        assert not [m for m in names if m.split(".")[0] in ("nbgrader", "nbclient", "jupyter_client", "nbformat")], path


def test_every_module_and_folder_stays_small():
    """One job a module: none over 300 lines; a folder of more than 15 modules wants rooms of its own. (The shared
    cells are notebook cells' sources, not modules: a notebook's helper cell holds what its checks need.)"""
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in modules()}
    assert {name: n for name, n in sizes.items() if n > 300} == {}
    folders = {}
    for p in modules():
        folders.setdefault(str(p.parent.relative_to(PACKAGE.parent)), []).append(p.name)
    assert {folder: len(names) for folder, names in folders.items() if len(names) > 15} == {}


def test_what_the_benchmarks_and_tools_import_from_the_package_exists():
    """The benchmarks and tools run only by hand: a name moved in the package must not leave one that no longer starts
    (bench_manual_backward.py imported SETUP_PREFIX from engine.reference, long after it moved to common.naming)."""
    missing = []
    for path in sorted(
        [*PACKAGE.parent.joinpath("benchmarks").glob("*.py"), *PACKAGE.parent.joinpath("tools").glob("*.py")]
    ):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("autograder"):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    if (
                        not hasattr(module, alias.name)
                        and importlib.util.find_spec(f"{node.module}.{alias.name}") is None
                    ):
                        missing.append(f"{path.name}: from {node.module} import {alias.name}")
    assert not missing, missing

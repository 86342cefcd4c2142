"""Setup cells run ahead (``autograder/in_kernel/setup_ahead.py``): a kernel that takes the seed-free setup cells from
its kernel parent ends up as a kernel that ran them: the same names in the same order, the same values, functions
bound to its own namespace, the same output and random generators; and one whose cells are not exactly the expected
ones computes everything itself from the first difference on.

Each run is an IPython shell (what a kernel is) in a forked process, as autograde runs the notebook: the setup cells
as nbgrader restores them, the grading seed set. "Ahead" runs the cells in a process that plays the kernel parent,
then forks the kernel from it.
"""

import ast
import hashlib
import io
import os
import pickle
import random
import re
import sys
import types

import nbformat
import pytest
import torch
from IPython.core.inputtransformer2 import TransformerManager
from IPython.core.interactiveshell import InteractiveShell
from support.in_process import as_autograde_runs_it, source_notebook
from traitlets.config import Config

from autograder.common.setup_cells import seed_free_cells, setup_to_run_ahead
from autograder.data import EMBEDDED_NAMES, NAMES_VARIABLE, SEED_VARIABLE
from autograder.in_kernel import known_cells, setup_ahead

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = ("ex1_atomic_backward", "ex4_manual_training", "ex6_bug_hunt")  # the three settings cells that differ
AFTER = """block_size = 2  # the student's own; build_dataset must read the kernel's
X, Y = build_dataset(["emma", "ava"])
print(X.shape, random.random(), torch.rand(1).item())
"""


def autograde_cells(name: str, edition: str = "en") -> list:
    """The notebook's code cells as autograde runs them (in the language of ``edition``)."""
    source = source_notebook(name)
    release = (
        source
        if edition == "en"
        else nbformat.read(os.path.join(ROOT, "editions", edition, "backprop_ninja", f"{name}.ipynb"), as_version=4)
    )
    nb = as_autograde_runs_it(release, source)
    return [c for c in nb.cells if c.cell_type == "code"]


def fingerprint(value, namespace):
    if isinstance(value, torch.Tensor):
        return "tensor", value.dtype, tuple(value.shape), hashlib.sha256(value.detach().numpy().tobytes()).hexdigest()
    if isinstance(value, types.FunctionType):
        code = value.__code__
        own = value.__globals__ is namespace
        return "function", value.__qualname__, value.__module__, own, code.co_code, value.__defaults__, value.__doc__
    if isinstance(value, torch.Generator):
        return "generator", hashlib.sha256(value.get_state().numpy().tobytes()).hexdigest()
    if isinstance(value, types.ModuleType):
        return "module", value.__name__
    if isinstance(value, types.MethodType):
        return "method", value.__qualname__, type(value.__self__).__name__
    return "value", re.sub(r" at 0x[0-9a-f]+", "", repr(value))  # (IPython's own objects)


def run(sources: list, ahead=None) -> dict:
    """The sources run in a fresh IPython shell, in a forked process: what the kernel ends up with. ``ahead``: the
    (cells, indices) a kernel parent ran ahead first, in this process before it forks."""
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        with os.fdopen(read, "rb") as f:
            found = pickle.loads(f.read())
        os.waitpid(pid, 0)
        return found
    try:
        os.close(read)
        # One thread, as in support/in_process.py: OpenMP's thread pool does not survive a fork, and this process may
        # have used it before (under pytest-xdist the modules a worker ran before this one differ from run to run).
        torch.set_num_threads(1)
        variables = {SEED_VARIABLE: "1234567", NAMES_VARIABLE: str(EMBEDDED_NAMES)}
        os.environ.update(NBGRADER_EXECUTION="autograde", **variables)
        random.seed(7)  # (the kernel parent's, inherited by its kernels)
        ran_ahead = None
        if ahead is not None:
            cells, indices = ahead
            ran_ahead = setup_ahead.run_ahead([cells[i] for i in indices])
            assert ran_ahead is not None
            setup_ahead.arm(cells, indices, ran_ahead, known_cells.transformed(sources))
        config = Config()
        config.HistoryManager.hist_file = ":memory:"
        InteractiveShell.clear_instance()
        shell = InteractiveShell.instance(config=config)
        setup_ahead.load_ipython_extension(shell)
        printed = []
        for source in sources:
            out, err = io.StringIO(), io.StringIO()
            sys.stdout, sys.stderr = out, err
            try:
                result = shell.run_cell(source, store_history=True)
            finally:
                sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
            printed.append((out.getvalue(), err.getvalue(), result.success, repr(result.result)))
        ns = shell.user_ns
        found = {
            "names": list(ns),
            "values": {k: fingerprint(v, ns) for k, v in ns.items() if k[0] != "_" and k not in ("In", "Out")},
            "history": list(shell.history_manager.input_hist_raw),
            "printed": printed,
            "count": shell.execution_count,
            "random": hashlib.sha256(repr(random.getstate()).encode()).hexdigest(),
            "torch": hashlib.sha256(torch.get_rng_state().numpy().tobytes()).hexdigest(),
            "taken": sorted(k for k, v in ns.items() if ran_ahead and v is ran_ahead.namespace.get(k) and k[0] != "_"),
            "transformers": [type(t).__name__ for t in shell.ast_transformers],
            "transform_cell": type(shell.input_transformer_manager.transform_cell).__name__,
        }
        with os.fdopen(write, "wb") as f:
            f.write(pickle.dumps(found))
    finally:
        os._exit(0)


def test_every_notebook_runs_the_same_three_cells_ahead():
    ahead = {}
    for name in ("ex1_atomic_backward", "ex2_cross_entropy_backward", "ex3_batchnorm_backward", *NOTEBOOKS[1:],
                 "ex5_new_operators"):  # fmt: skip
        setup = setup_to_run_ahead(autograde_cells(name))
        assert setup["ahead"] == [1, 2, 3], name  # after the settings, before the parameters
        ahead[name] = tuple(setup["cells"][i] for i in setup["ahead"])
    assert len(set(ahead.values())) == 1  # one run ahead serves all six
    assert [s.splitlines()[0] for s in next(iter(ahead.values()))] == [
        "import hashlib",
        "# names.txt: 32,033 names from the makemore repository (MIT licence).",
        "# The vocabulary: '.' (index 0) marks the start and the end of a name, then a..z.",
    ]


@pytest.mark.parametrize("name, edition", [(n, "en") for n in NOTEBOOKS] + [(NOTEBOOKS[0], "ru"), (NOTEBOOKS[0], "zh")])
def test_a_kernel_that_takes_the_cells_ahead_ends_up_as_one_that_ran_them(name, edition):
    cells = autograde_cells(name, edition)
    setup = setup_to_run_ahead(cells)
    sources = [c.source for c in cells[: len(setup["cells"]) + 3]] + [AFTER]  # the parameters and batch too
    plain, ahead = run(sources), run(sources, (setup["cells"], setup["ahead"]))
    assert {"Xtr", "Ytr", "Xdev", "words", "stoi"} <= set(ahead.pop("taken"))  # the very objects run ahead
    assert not plain.pop("taken")
    assert ahead.pop("transform_cell") == "KnownTransforms" and plain.pop("transform_cell") == "method"
    assert ahead == plain
    assert "27" in plain["printed"][3][0] and "(182625, 3)" in plain["printed"][3][0]  # the dataset cell printed
    assert plain["values"]["build_dataset"][3]  # bound to the kernel's namespace, in both
    assert ahead["transformers"] == []  # gone after the last cell it could take


@pytest.mark.parametrize(
    "change",
    [
        lambda s: [s[0], s[1], s[2], "words = words[:1000]", *s[3:]],  # a cell of the student's within the setup
        lambda s: [s[0], s[1], s[2], s[3].replace("random.seed(42)", "random.seed(43)"), *s[4:]],  # not the cell
        lambda s: ["import json", *s],  # a cell before the settings
        lambda s: [s[0], s[2], s[1], *s[3:]],  # out of order
    ],
)
def test_a_kernel_whose_cells_differ_computes_them_itself_from_the_first_difference(change):
    cells = autograde_cells(NOTEBOOKS[0])
    setup = setup_to_run_ahead(cells)
    sources = change([c.source for c in cells[: len(setup["cells"]) + 3]] + [AFTER])
    plain, ahead = run(sources), run(sources, (setup["cells"], setup["ahead"]))
    assert "Xtr" not in ahead.pop("taken")  # the dataset the kernel computed itself
    plain.pop("taken"), plain.pop("transform_cell"), ahead.pop("transform_cell")
    assert ahead == plain


def test_only_cells_that_need_no_seed_and_read_nothing_of_the_settings_are_run_ahead():
    settings, imports = "SEED = 1\nn = 3\n", "import random\n"
    assert seed_free_cells([settings, imports, "x = 2\n", "g = SEED + 1\n"]) == range(1, 3)
    assert seed_free_cells([settings, imports, "x = n * 2\n", "g = SEED\n"]) == range(0)  # reads the settings
    assert seed_free_cells([imports, "x = 2\n"]) == range(0)  # no seed defined
    assert seed_free_cells([settings, "import os\nos.environ['BACKPROP_NINJA_SEED']\n"]) == range(0)


@pytest.mark.parametrize(
    "source",
    [
        "class A:\n    pass\n",
        "%time x = 1\n",
        "import sys\nprint('x', file=sys.stderr)\n",
        "import warnings\nwarnings.warn('x')\n",
        "1 + 1\n",  # a value IPython would show
        "raise ValueError('x')\n",
        "f = lambda: 1\n",
        "from __future__ import annotations\n",
    ],
)
def test_a_cell_that_cannot_be_taken_as_it_ran_is_not_run_ahead(source):
    assert setup_ahead.run_ahead(["x = 1\n", source]) is None
    assert setup_ahead.run_ahead(["x = 1\nprint(x)\n"]) is not None


def test_the_input_transformations_a_kernel_takes_are_ipythons_own():
    """IPython's input transformation of a cell (it tokenizes the cell, twice a run) is taken from the parent's for the
    locked cells and kept for the cell transformed last; the same as IPython's, for any cell, and computed again once a
    student's cell changes the transformations."""
    cells = [c.source for c in autograde_cells(NOTEBOOKS[0])]
    own, manager = TransformerManager(), TransformerManager()
    manager.transform_cell = known = known_cells.KnownTransforms(manager, known_cells.transformed(cells[:12]))
    for cell in [*cells, "%time x = 1", "x?", "y = !ls", "  indented = 1", cells[-1], "%%time\nx = 1"]:
        assert manager.transform_cell(cell) == own.transform_cell(cell)
    assert known.last[0] == "%%time\nx = 1"
    manager.cleanup_transforms.append(lambda lines: [line.replace("SEED", "seed") for line in lines])
    assert "seed = " in manager.transform_cell(cells[0]) and "SEED = " in own.transform_cell(cells[0])


TOKEN_SYNTAX = [
    "%time x = 1",
    "x = %time y",
    "x = !ls",
    "x?",
    "x??",
    "!ls",
    ",f a b",
    ";f a b",
    "/f a b",
    "if x:\n    /f a b",
    "x = 1 \\\n/f a",
    "x = 1\n\x0c/f a",
    "%%time\nx = 1",
    "%%capture\nx = (a\n     / b)",
    "In [1]: x = 1",
    ">>> x = 1",
    "  x = 1",
    "x = (a,\n     / b)",
    "x = (a\n     , b)",
    "s = 'what?'  # 100% sure!",
    "x = 1; y = 2",
]


@pytest.mark.parametrize("name", ["ex1_atomic_backward", "ex2_cross_entropy_backward", "ex5_new_operators"])
def test_a_cell_without_ipython_s_syntax_is_transformed_as_ipython_does_without_tokenizing_it(name):
    """A cell in which none of IPython's token transformations can find anything (no `%`, `!`, `?`, no line that starts
    with `,`, `;` or `/`) is transformed without them (``known_cells._untokenized``): the same text as IPython's, for
    every cell of the notebook and of the cases' submissions, and for IPython's syntax, which is still tokenized."""
    from support import cases_ex1, cases_ex2_ex3, cases_ex5

    release = nbformat.read(os.path.join(ROOT, "release", "backprop_ninja", f"{name}.ipynb"), as_version=4)
    made = {
        "ex1": lambda: cases_ex1.submissions(release, source_notebook(name)),
        "ex2": lambda: cases_ex2_ex3.submissions(name, release, source_notebook(name)),
        "ex5": lambda: cases_ex5.submissions(release, source_notebook(name)),
    }[name[:3]]()
    students = {c.source for nb in made.values() for c in nb.cells if c.cell_type == "code"}
    students -= {c.source for c in release.cells if c.cell_type == "code"}  # the students' own cells
    own, manager = TransformerManager(), TransformerManager()
    manager.transform_cell = known_cells.KnownTransforms(manager, {})
    for cell in [c.source for c in autograde_cells(name)] + sorted(students) + TOKEN_SYNTAX:
        assert manager.transform_cell(cell) == own.transform_cell(cell), cell
    assert sum(known_cells._untokenized(manager, cell) is not None for cell in students) > 0.9 * len(students)
    assert all(
        known_cells._untokenized(manager, cell) is None for cell in TOKEN_SYNTAX[:12]
    )  # (a cell magic is a line transformation)


def test_the_parses_and_file_names_a_kernel_takes_are_ipythons_own():
    """A locked cell's parse is the parent's (its very statements, in a new module) while the compiler's flags are a
    kernel's first and every AST hook is the course's; IPython's own otherwise. The same tree either way, and the same
    file name for every cell."""
    from ipykernel import compiler
    from IPython.core.compilerop import CachingCompiler

    for kept in (known_cells._transformed, known_cells._parsed, known_cells._hashes):
        kept.clear()
    cells = [c.source for c in autograde_cells(NOTEBOOKS[0]) if c.source.strip()]
    transforms = known_cells.transformed(cells[:40])  # (locked cells and answers alike, for the test)
    shell = types.SimpleNamespace(compile=CachingCompiler(), ast_transformers=[])
    own, known = CachingCompiler(), known_cells.KnownParse(shell)
    taken = lambda cell: cell in known_cells._parsed and known(cell).body[0] is known_cells._parsed[cell][1].body[0]
    for cell in [TransformerManager().transform_cell(c) for c in cells]:
        assert ast.dump(known(cell)) == ast.dump(own.ast_parse(cell))
        assert taken(cell) == (cell in transforms.values())
    locked = transforms[cells[10]]
    assert known(locked) is not known(locked) and known(locked).body is not known_cells._parsed[locked][1].body
    shell.ast_transformers.append(setup_ahead.TakeAhead(types.SimpleNamespace(execution_count=1)))
    assert taken(locked)
    shell.ast_transformers.append(ast.NodeTransformer())  # a student's hook may change the statements themselves
    assert not taken(locked) and ast.dump(known(locked)) == ast.dump(own.ast_parse(locked))
    shell.ast_transformers.pop()
    shell.compile.flags |= __import__("__future__").annotations.compiler_flag  # a cell's `from __future__ import`
    assert not taken(locked)

    from autograder.engine.probes.rerun import parsed

    assert (locked.rstrip("\n"),) in parsed.kept.values  # the probes' parse, of the cell as IPython's history keeps it

    assert compiler.murmur2_x86 is known_cells.murmur2_x86
    seed = known_cells.HASH_SEED
    for text in [*cells[:3], "x = 1", "é" * 7]:
        assert compiler.murmur2_x86(text, seed) == known_cells._murmur2_x86(text, seed)
    assert (cells[0], known_cells.HASH_SEED) in known_cells._hashes


@pytest.mark.parametrize("awaits", [0, known_cells.TOP_LEVEL_AWAIT], ids=["autoawait off", "autoawait on"])
def test_the_code_a_kernel_takes_is_what_ipython_compiles(monkeypatch, awaits):
    """Each statement of a locked cell, as IPython compiles it one by one (the last expression of a cell in "single"
    mode too), is the parent's bytecode in the kernel's file name: the same code, in the same file, and the same
    compiler flags after it, as IPython's own compiler makes, with IPython's autoawait on or off (the grading kernels'
    ``--InteractiveShell.autoawait=False``: until 2026-12-07 they took none of the parent's code). A cell the parent
    never saw, and a statement after a `from __future__` import, are compiled in the kernel."""
    from IPython.core.compilerop import CachingCompiler

    for kept in (known_cells._transformed, known_cells._parsed, known_cells._hashes, known_cells._compiled):
        kept.clear()
    future = "from __future__ import annotations\ndef f(x: undefined) -> None:\n    return x\nf(1)"
    cells = [c.source for c in autograde_cells(NOTEBOOKS[0]) if c.source.strip()]
    transforms = known_cells.transformed([*cells[:40], future])
    taken, renamed = [], known_cells._renamed

    def counted(code, name):  # the statements taken (not the code objects they hold, renamed on the way)
        taken.append(code)
        monkeypatch.setattr(known_cells, "_renamed", renamed)
        try:
            return renamed(code, name)
        finally:
            monkeypatch.setattr(known_cells, "_renamed", counted)

    monkeypatch.setattr(known_cells, "_renamed", counted)
    shell = types.SimpleNamespace(compile=CachingCompiler(), ast_transformers=[])
    parse = known_cells.KnownParse(shell)
    own, known = CachingCompiler(), known_cells._known_compiler(CachingCompiler)()
    shell.compile = known

    def files(code):
        return [code.co_filename] + [f for c in code.co_consts if isinstance(c, types.CodeType) for f in files(c)]

    cell_file = "/tmp/ipykernel_7/123.py"  # (ipykernel's name for a cell)
    for cell in [TransformerManager().transform_cell(c) for c in [*cells, future]]:
        body, before = parse(cell).body, len(taken)
        modes = [(s, "exec") for s in body[:-1]] + [(body[-1], "single" if isinstance(body[-1], ast.Expr) else "exec")]
        for statement, mode in modes:
            module = ast.Module([statement], []) if mode == "exec" else ast.Interactive([statement])
            with own.extra_flags(awaits), known.extra_flags(awaits):
                mine, theirs = known(module, cell_file, mode), own(module, cell_file, mode)
            assert mine == theirs and files(mine) == files(theirs) == [cell_file] * len(files(mine))
            assert known.flags == own.flags
        was_taken = len(taken) - before
        if cell == transforms[future]:
            assert was_taken == 1  # the import; then the flags differ from the parent's
        else:
            assert was_taken == (len(modes) if cell in transforms.values() else 0), cell[:60]

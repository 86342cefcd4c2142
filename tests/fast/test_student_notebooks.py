"""The student's notebooks without a kernel: what they import, their data, their self-checks, their links.

* Colab: every release notebook needs nothing but PyTorch and fetches its data when it is missing.
* The self-checks teach: one table, hints for the usual mistakes, optional exercises checked.
* The Colab badges and the conda environment stay in step with the repository.
(Running the notebooks in real kernels, nbgrader validate and JupyterLab: tests/slow/test_student_side.py.)
"""

import ast
import contextlib
import io
import re
import sys

import nbformat
import pytest
import torch
import yaml
from support.course import ASSIGNMENT, NAMES, REPO
from support.edits import SECRETS

from autograder.authoring import SOURCE_DIR, badges, from_engine, shared_cell
from autograder.authoring.submissions import grade_id, solved
from autograder.common.naming import SETUP_PREFIX
from autograder.engine.backward_rules import STEPS
from autograder.engine.reference import autograd_gradients, run_setup, strip_hidden

EX1 = "ex1_atomic_backward"

EX3 = "ex3_batchnorm_backward"


RELEASE = REPO / "release" / ASSIGNMENT


def release(name):
    return nbformat.read(RELEASE / f"{name}.ipynb", as_version=4)


def source(name):
    return nbformat.read(SOURCE_DIR / f"{name}.ipynb", as_version=4)


# All on Colab; nothing of this repository. tqdm: Colab has it, and its tqdm.auto draws the bar with ipywidgets,
# which Colab has too (locally nbgrader brings it).
ALLOWED_IMPORTS = {"torch", "matplotlib", "numpy", "IPython", "tqdm"}


def optional_namespace(name, seed=2147483647):
    """A notebook's setup, self-check helpers and optional helpers, run outside Jupyter."""
    nb = source(name)
    namespace = dict(run_setup(tuple(c.source for c in nb.cells if grade_id(c).startswith(SETUP_PREFIX)), seed))
    for cell_id in ["self-check-helpers", "optional-helpers"]:
        exec(strip_hidden(next(c.source for c in nb.cells if c.id == cell_id)), namespace)
    return namespace


def run_optional_check(namespace, answer, check):
    """Define the student's answer (code), run the check cell (code); return what it prints."""
    exec(answer, namespace)
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        exec(check, namespace)
    return out.getvalue() + err.getvalue()


NEW_OPTIONAL = [
    (EX1, "optional-relu", "optional-check-relu"),
    (EX1, "optional-gelu", "optional-check-gelu"),
]


SHIFT, CTRL = 8, 2

HELPERS = shared_cell("self_check_helpers")


@pytest.fixture(scope="module")
def notebook_namespace():
    """Exercise 1's setup (autograd's gradients in .grad) with the self-check helpers defined, outside Jupyter."""
    nb = source(EX1)
    namespace = dict(run_setup(tuple(c.source for c in nb.cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647))
    exec(strip_hidden(HELPERS), namespace)
    return namespace


def show(namespace, *names, **answers):
    namespace = {**namespace, **answers}
    exec(strip_hidden(HELPERS), namespace)  # rebinds the helpers' globals to this copy
    with contextlib.redirect_stdout(io.StringIO()) as out:
        namespace["self_check"](*names)
    return namespace, out.getvalue()


def hint(table: str, gradient: str) -> str:
    row = next(r for r in table.splitlines() if "|" in r and r.split("|")[1].strip() == gradient)
    return row.split("|")[-1].strip()


@pytest.mark.parametrize("path", badges.notebooks(), ids=lambda p: p.stem)
def test_release_notebook_needs_only_what_colab_has(path):
    """Every notebook a student opens (the release and the warm-up): what Colab has, nothing of this repository."""
    nb, name = nbformat.read(path, as_version=4), path.stem
    assert nb.metadata.kernelspec.name == "python3"
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for module in modules:
                top = module.split(".")[0]
                assert top in sys.stdlib_module_names or top in ALLOWED_IMPORTS, f"{name}: imports {module}"
        assert "cuda" not in cell.source, f"{name}: a GPU is not needed and may not be there"
    text = path.read_text()
    for secret in SECRETS:
        assert secret not in text, f"{name}: {secret!r} in the release"


def test_names_txt_is_downloaded_and_verified_when_missing(tmp_path, monkeypatch):
    """The data cell as Colab runs it (no names.txt, no variable): download, check the hash, keep the file."""
    cell = shared_cell("setup_data")
    monkeypatch.delenv("BACKPROP_NINJA_NAMES")
    monkeypatch.chdir(tmp_path)
    good, bad = NAMES.as_uri(), tmp_path / "not_names.txt"
    bad.write_text("alice\nbob\n")
    prelude = "import hashlib, os, urllib.request\n"
    namespace = {}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(prelude + cell.replace('NAMES_URL = "https://', f'NAMES_URL = "{good}" or "https://'), namespace)
    assert "downloading" in printed.getvalue() and len(namespace["words"]) == 32033
    assert (tmp_path / "names.txt").read_bytes() == NAMES.read_bytes()
    (tmp_path / "names.txt").unlink()
    with pytest.raises(RuntimeError, match="not the expected names.txt"):
        with contextlib.redirect_stdout(io.StringIO()):
            exec(prelude + cell.replace('NAMES_URL = "https://', f'NAMES_URL = "{bad.as_uri()}" or "https://'), {})
    assert not (tmp_path / "names.txt").exists()


@pytest.mark.parametrize(
    "name, answer, check, gradient, hint",
    [
        (
            EX1,
            "def dhpreact_relu(hpreact, dh):\n    return (hpreact > 0).float()",  # dh forgotten
            "check_relu_backward(dhpreact_relu)",
            "dhpreact, this batch",
            "the local derivative alone: multiply it by dh",
        ),
        (
            EX1,
            "def dhpreact_relu(hpreact, dh):\n    return (hpreact >= 0) * dh",  # 1 at 0, autograd uses 0
            "check_relu_backward(dhpreact_relu)",
            "dhpreact, some hpreact exactly 0",
            "wrong only where hpreact is exactly 0",
        ),
        (
            EX1,
            "def dhpreact_gelu(x, dh):\n    return 0.5 * (1 + torch.erf(x / 2**0.5)) * dh",  # x * pdf forgotten
            "check_gelu_backward(dhpreact_gelu)",
            "dhpreact, float64, -5 to 5",
            "entries differ: re-derive the local",
        ),
    ],
    ids=["relu-without-dh", "relu-1-at-0", "gelu-without-x-pdf"],
)
def test_optional_check_shows_a_wrong_answer_with_a_hint(name, answer, check, gradient, hint):
    text = run_optional_check(optional_namespace(name), answer, check)
    row = next(r for r in text.splitlines() if "|" in r and r.split("|")[1].strip() == gradient)
    assert row.startswith("✘") and "✘ no" in row and hint in row.split("|")[-1], text


@pytest.mark.parametrize("name, answer, check", NEW_OPTIONAL)
def test_optional_stub_is_not_answered_yet_and_skipped_while_grading(name, answer, check, monkeypatch):
    cells = {c.id: c.source for c in release(name).cells}
    text = run_optional_check(optional_namespace(name), cells[answer], cells[check])
    assert text.startswith("Not answered yet.") and "not answered yet" in text and "✘" not in text, text
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    text = run_optional_check(optional_namespace(name), cells[answer], cells[check])
    assert text == "(optional checks are skipped while grading)\n", text


def test_ex1_optional_helper_is_the_notebooks_own_forward_pass():
    """forward_pass(PARAMS) repeats the setup's forward pass: the same loss and every gradient, bit for bit."""
    namespace = optional_namespace(EX1, seed=7)
    mine = namespace["forward_pass"](namespace["PARAMS"])
    for key, value in mine.items():
        assert torch.equal(value.detach(), namespace[key].detach()), key
        assert key == "loss" or torch.equal(value.grad, namespace[key].grad), key


def test_self_check_helpers_are_self_contained_and_silenced_at_autograde():
    visible = strip_hidden(HELPERS)
    assert HELPERS.endswith("### END HIDDEN TESTS") and "import autograder" not in visible
    imported = {
        a.name.split(".")[0]
        for node in ast.walk(ast.parse(visible))
        if isinstance(node, ast.Import)
        for a in node.names
    }
    imported |= {node.module.split(".")[0] for node in ast.walk(ast.parse(visible)) if isinstance(node, ast.ImportFrom)}
    # runs on Colab: nothing of this repository
    assert imported - sys.stdlib_module_names <= {"IPython", "matplotlib"}, imported
    engine = {f.__name__ for f in from_engine.FUNCTIONS} | {"local_gradient"}  # the grader's code, not checks
    engine |= {"plot_fonts", "show_plot"}  # plotting, not checks: they run while grading too
    public = [
        f.name
        for f in ast.parse(visible).body
        if isinstance(f, ast.FunctionDef) and not f.name.startswith("_") and f.name not in engine
    ]
    silenced = re.search(r"start_grading\(globals\(\), self_checks=\((.*?)\)\)", HELPERS).group(1)
    assert set(public) == {"cmp", "self_check", "check_answer", "check_value"}
    assert all(f'"{f}"' in silenced for f in public)


def test_self_check_table_names_the_usual_mistakes(notebook_namespace):
    g = autograd_gradients(notebook_namespace)
    _, table = show(
        notebook_namespace,
        "logprobs",
        "probs",
        "counts_sum_inv",
        "bngain",
        "W2",
        "b1",
        "bndiff2",
        "bnbias",
        "bnvar",
        "h",
        "emb",
        "hpreact",
        dlogprobs=g["logprobs"] * 32,
        dprobs=-g["probs"],
        dcounts_sum_inv=torch.ones(1, 27),
        dbngain=g["bngain"].view(-1),
        dW2=g["W2"].T,
        db1=g["hprebn"],
        dbndiff2=g["bndiff2"] * 31 / 32,
        dbnbias=g["bnbias"] * 32 / 31,
        dbnvar=g["bnvar"] / 0 * 0,
        dh=g["h"] + 0.01,
        demb=g["emb"].numpy(),
    )
    assert table.startswith("0 of 12 gradients match autograd. Next: dlogprobs.")
    assert table.splitlines()[1].split("|")[1:6] == [
        " gradient        ",
        " shape      ",
        " exact ",
        " approximate ",
        " max difference ",
    ]
    assert "n = 32 times too large" in hint(table, "dlogprobs")
    assert "wrong sign" in hint(table, "dprobs")
    assert hint(table, "dcounts_sum_inv").startswith("dlogprobs above is not right yet: fix it first")  # above it
    assert "after that: dimension 0 is 1 but must be 32" in hint(table, "dcounts_sum_inv")  # then its own
    assert hint(table, "dbngain").startswith(  # the right values, without keepdim
        "the values are right (that earns part of the step), but dimension 0 (of size 1) is missing: keep it"
    )
    own = lambda gradient: hint(table, gradient).split("If this one is still off after that: ")[-1]  # (all above off)
    assert own("dW2").startswith("transposed")
    assert own("db1").startswith("b1 was broadcast over the batch (dimension 0): sum its gradient")
    assert "Bessel" in own("dbndiff2") and "(n-1)/n" in own("dbndiff2")
    assert "n/(n-1) times too large" in own("dbnbias")
    assert "NaN" in hint(table, "dbnvar")
    assert "2048 of 2048 entries differ" in hint(table, "dh")
    assert hint(table, "demb") == "should be a torch tensor, not of type ndarray"
    assert hint(table, "dhpreact") == "not answered yet"
    assert "Traceback" not in table


def test_self_check_shows_html_in_jupyter_and_a_checklist(notebook_namespace):
    namespace, _ = show(notebook_namespace, "logprobs")
    rows = [
        namespace["_compare"](k, notebook_namespace[k].grad if k != "C" else None, notebook_namespace[k].grad)
        for k in ["logprobs", "C"]
    ]
    html = namespace["CheckTable"](rows, checklist=True)._repr_html_()
    assert "<table>" in html and "<th style='text-align:left'>approximate</th>" in html
    assert "✔ 1." in html and "· 2." in html and "1 of 2 gradients match autograd. Next: dC." in html


def test_check_answer_prints_to_stderr_only_when_something_is_wrong(notebook_namespace, capsys):
    g = notebook_namespace["probs"].grad
    namespace, _ = show(
        notebook_namespace,
        dprobs=-g,
        dcounts_sum_inv=(notebook_namespace["counts"] * -g).sum(1, keepdim=True),
        dlogprobs=notebook_namespace["logprobs"].grad.clone(),
    )
    for name in ["logprobs", "probs", "counts_sum_inv", "counts"]:
        namespace["check_answer"](name)
    out, err = capsys.readouterr()
    assert out.startswith("✔ dlogprobs: shape (32, 27) ok") and out.count("\n") == 1
    lines = err.splitlines()
    assert lines[0].startswith("✘ dprobs: values differ from autograd's") and "wrong sign" in lines[0]
    assert lines[1] == (  # the downstream step, right for its wrong upstream gradient, points upstream
        "✘ dcounts_sum_inv: right for the gradients it is computed from as you have them, but dprobs above is not "
        "right yet: this step keeps its points; fix dprobs first, then run this cell again"
    )
    assert lines[2] == "✘ dcounts: not answered yet"


def run_cells(namespace, *cells):
    """Run each cell's code in the namespace as IPython does (remembering it in In); return what they print."""
    history = namespace.setdefault("In", [""])
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        for code in cells:
            history.append(code)
            exec(code, namespace)
    return out.getvalue() + err.getvalue()


@pytest.fixture
def answered_up_to(notebook_namespace):
    """Exercise 1 with the course's answers and their checks run up to (not including) a step."""

    def run(stop):
        namespace = {**notebook_namespace}
        exec(strip_hidden(HELPERS), namespace)
        cells = {grade_id(c): c.source for c in solved(release(EX1), source(EX1)).cells}
        for step in STEPS[: [s.name for s in STEPS].index(stop)]:
            run_cells(namespace, cells[f"answer_d{step.name}"], cells[f"test_d{step.name}"])
        return namespace, cells

    return run


@pytest.mark.parametrize("step", [s for s in STEPS if len(s.terms) > 1], ids=lambda s: s.name)
def test_running_an_answer_cell_twice_changes_nothing(answered_up_to, step):
    """Its check and every check after it print the same as when it ran once."""
    later = [
        c
        for s in STEPS[[s.name for s in STEPS].index(step.name) + 1 :]
        for c in (f"answer_d{s.name}", f"test_d{s.name}")
    ]
    outputs = []
    for runs in (1, 2):
        namespace, cells = answered_up_to(step.name)
        twice = [cells[f"answer_d{step.name}"]] * runs + [cells[f"test_d{step.name}"]]
        outputs.append(run_cells(namespace, *twice, *(cells[c] for c in later), cells["check_all"]))
    assert outputs[0].startswith(f"✔ d{step.name}: shape") and "All 26 gradients match autograd." in outputs[0]
    assert outputs[1] == outputs[0]


def test_a_path_added_twice_is_named(answered_up_to):
    namespace, cells = answered_up_to("counts")
    run_cells(namespace, "dcounts = counts_sum_inv * dprobs", "dcounts += torch.ones_like(counts) * dcounts_sum")
    twice = run_cells(namespace, "dcounts += torch.ones_like(counts) * dcounts_sum", cells["test_dcounts"])
    assert twice.startswith("✘ dcounts: values differ") and "the path through counts_sum is added twice" in twice
    assert "did a cell run twice?" in twice


@pytest.mark.parametrize(
    "stop, answer, words",
    [
        (
            "W1",
            "dW1 = embcat.T @ dhpreact",
            "computed from the wrong upstream gradient: this is what dW1 would be if dhpreact were its upstream "
            "gradient. W1 is used to make hprebn (`hprebn = embcat @ W1 + b1`), so its gradient comes through dhprebn",
        ),
        (
            "bndiff",
            "dbndiff = bnvar_inv * dbnraw\ndbndiff += 2 * bndiff * dbnraw",
            "the path through bndiff2 is computed from the wrong upstream gradient: it is what that path would be if "
            "dbnraw were its upstream gradient",
        ),
    ],
    ids=["dW1-from-dhpreact", "dbndiff-paths-swapped"],
)
def test_a_gradient_from_another_upstream_gradient_is_named_under_its_cell(answered_up_to, stop, answer, words):
    """As the grader names it (engine/diagnosis/chain_rule.py): before, "N of M entries differ: re-derive the local
    derivative", which sent the student to the local derivative they had right."""
    namespace, cells = answered_up_to(stop)
    out = run_cells(namespace, answer, cells[f"test_d{stop}"])
    assert out.startswith(f"✘ d{stop}: values differ") and words in out, out


def test_an_answer_cell_that_begins_with_an_update_is_named(answered_up_to):
    """`dcounts += ...` as the cell's first line adds to what dcounts held: not "re-derive the local derivative"."""
    namespace, cells = answered_up_to("counts")
    run_cells(namespace, cells["answer_dcounts"], cells["test_dcounts"])
    out = run_cells(namespace, "dcounts += counts_sum_inv * dprobs", cells["test_dcounts"])
    assert out == (
        "✘ dcounts: values differ from autograd's (max difference 2.6e-01): the last cell that computes dcounts "
        "begins with `dcounts += ...`: it changes what dcounts held before that cell ran, and again at every run. "
        "Start that cell with `dcounts = ...`\n"
    ), out
    assert run_cells(namespace, cells["answer_dcounts"], cells["test_dcounts"]).startswith("✔ dcounts")


def test_a_gradient_changed_in_place_after_its_check_is_named_where_it_happens(answered_up_to):
    namespace, cells = answered_up_to("hprebn")
    aliased = "dhprebn = dbndiff\ndhprebn += 1.0 / n * torch.ones_like(hprebn) * dbnmeani"
    out = run_cells(namespace, aliased, cells["test_dhprebn"])
    assert out.splitlines()[0].startswith("✔ dhprebn: shape (32, 64) ok"), out  # dhprebn itself is right
    assert out.splitlines()[1] == (
        "✘ dbndiff changed after its check: dhprebn is the same tensor (dhprebn = dbndiff without .clone()?), "
        "so dhprebn += ... changed dbndiff too. Write dhprebn = dbndiff.clone()"
    )
    assert run_cells(namespace, cells["test_dembcat"]).count("dbndiff") == 0  # said once, where it happened
    table = run_cells(namespace, 'self_check("bndiff", "hprebn")')
    assert hint(table, "dbndiff").startswith("dbndiff changed after its check: dhprebn is the same tensor")


def test_colab_badges_are_up_to_date():
    stale = badges.stale_pages()
    assert stale == [], f"run: python -m autograder.authoring.badges (stale: {[str(p) for p in stale]})"
    repository = badges.repository_url()
    for page in badges.PAGES:
        links = re.findall(r"\(https://colab\.research\.google\.com/github/([^)]+)\)", page.read_text())
        owner_name = repository.removeprefix("https://github.com/")
        assert sorted(links) == sorted(
            f"{owner_name}/blob/{badges.BRANCH}/{p.relative_to(REPO).as_posix()}" for p in badges.notebooks()
        ), page
        assert {p.parent.name for p in badges.notebooks()} == {"course", ASSIGNMENT}  # the warm-up, the release


def test_badges_follow_the_one_repository_address(tmp_path):
    page = tmp_path / "README.md"
    page.write_text("intro\n<!-- colab-badges -->\nend\n")
    text = badges.rewritten(page, "https://github.com/someone/fork")
    assert (
        "colab.research.google.com/github/someone/fork/blob/main/release/backprop_ninja/ex1_atomic_backward.ipynb"
        in text
    )
    assert text.endswith("<!-- /colab-badges -->\nend\n")
    page.write_text(text)
    assert badges.rewritten(page, "https://github.com/someone/fork") == text  # idempotent


def test_conda_environment_installs_what_pip_installs():
    """The same packages at the same versions: requirements.lock, which tools/install.sh installs."""
    environment = yaml.safe_load((REPO / "environment.yml").read_text())
    pip = next(d["pip"] for d in environment["dependencies"] if isinstance(d, dict))
    assert pip == ["-r requirements.lock"]
    assert "pip install --no-deps -e ." in (REPO / "environment.yml").read_text()
    python = next(d for d in environment["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert tuple(map(int, python.removeprefix("python=").split("."))) >= (3, 10)


@pytest.mark.parametrize(
    "edition, titles", [("en", "central difference"), ("zh", "中心差分"), ("ru", "центральная разность")]
)
def test_the_optional_tables_are_titled_in_the_notebooks_words(answered_up_to, edition, titles):
    """Exercise 1's optional checks, run as a student runs them: their tables' own columns are titled in the edition's
    words, and a right central difference is ✔ in every row."""
    namespace, _ = answered_up_to("logprobs")
    folder = REPO / ("release" if edition == "en" else f"editions/{edition}") / "backprop_ninja"
    notebook = nbformat.read(folder / f"{EX1}.ipynb", as_version=4)
    run_cells(namespace, next(c.source for c in notebook.cells if grade_id(c) == "optional_helpers"))
    estimate = "lambda step, index: (loss_at(step, index, 1e-6) - loss_at(step, index, -1e-6)) / 2e-6"
    table = run_cells(namespace, f"check_central_difference('W2', {estimate})")
    head = next(line for line in table.splitlines() if "|" in line)
    assert titles in head and "autograd (float64)" in head.replace("（", " (").replace("）", ")"), table
    assert [line.split("|")[0].strip() for line in table.splitlines()[2:]] == ["✔"] * 5, table


def test_half_the_values_names_the_power_rule_only_where_the_forward_line_squares(answered_up_to):
    for stop, squares in (("bndiff", True), ("hpreact", False)):
        namespace, cells = answered_up_to(stop)
        halved = f"{cells[f'answer_d{stop}']}\nd{stop} = 0.5 * d{stop}"
        out = run_cells(namespace, halved, cells[f"test_d{stop}"])
        assert "half the right values" in out and ("power rule" in out) == squares, out

"""The student's side: the notebooks as students really use them, on Colab and in JupyterLab.

* Colab: every release notebook needs nothing but PyTorch and fetches its data; a notebook that
  went through Colab (its saved form, outputs and all) grades exactly like the original, for
  every notebook in source/, in one autograde run.
* JupyterLab: ``nbgrader validate`` gives a clear answer without hidden tests; the notebook
  opens and runs in a real JupyterLab in headless Chromium (a screenshot is kept).
* The self-checks teach: one table, hints for the usual mistakes, a checklist at the end.
* The Colab badges and the conda environment stay in step with the repository.
"""

import contextlib
import json
import os
import random
import re
import secrets
import shutil
import string
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
import requests
from browser import Chromium
from nbclient import NotebookClient
from support.course import ARTIFACTS, ASSIGNMENT, NAMES, REPO, free_port
from support.edits import SECRETS

from autograder.authoring import SOURCE_DIR
from autograder.authoring.submissions import grade_id, solved
from autograder.engine.exercises import CHECKS

NOTEBOOKS = sorted(p.stem for p in SOURCE_DIR.glob("*.ipynb"))
EX1 = "ex1_atomic_backward"
EX3 = "ex3_batchnorm_backward"
EX4 = "ex4_manual_training"
RELEASE = REPO / "release" / ASSIGNMENT
# A student's answers to the optional exercises at the end of a notebook: {notebook: {cell id: code}}.
OPTIONAL_ANSWERS = {
    EX1: {
        "optional-dC-versions": """
def dC_by_loop(demb):
    dC = torch.zeros_like(C)
    for k in range(Xb.shape[0]):
        for j in range(Xb.shape[1]):
            dC[Xb[k, j]] += demb[k, j]
    return dC


def dC_by_index_add(demb):
    return torch.zeros_like(C).index_add_(0, Xb.view(-1), demb.view(-1, C.shape[1]))


def dC_by_one_hot(demb):
    return F.one_hot(Xb.view(-1), C.shape[0]).float().T @ demb.view(-1, C.shape[1])
""",
        "optional-zero-init": """
WRONG_STEP = "W2"


def wrong_formula(v):
    return 2 * v["h"].T @ v["logits"].grad  # twice too large, but h is all zeros when the parameters are
""",
        "optional-gradcheck": """
GRADCHECK_STEP = "bnvar"


def central_difference(name, index, eps=1e-6):
    return (loss_at(name, index, eps) - loss_at(name, index, -eps)) / (2 * eps)
""",
        "optional-relu": """
def dhpreact_relu(hpreact, dh):
    return (hpreact > 0) * dh
""",
        "optional-gelu": """
def dhpreact_gelu(hpreact, dh):
    cdf = 0.5 * (1 + torch.erf(hpreact / 2**0.5))
    pdf = torch.exp(-hpreact**2 / 2) / (2 * torch.pi) ** 0.5
    return (cdf + hpreact * pdf) * dh
""",
    },
}


def release(name):
    return nbformat.read(RELEASE / f"{name}.ipynb", as_version=4)


def source(name):
    return nbformat.read(SOURCE_DIR / f"{name}.ipynb", as_version=4)


def solved_with_extras(release_nb, source_nb, name):
    """The course's solutions, and the optional exercises of OPTIONAL_ANSWERS.

    Exercise 4 trains for as many steps as the student chooses (the autograder trains its own short run
    regardless): this student chose a short run, so that the notebook runs here in seconds, not minutes.
    """
    nb = solved(release_nb, source_nb)
    for cell in nb.cells:
        if cell.id in OPTIONAL_ANSWERS.get(name, {}):
            cell.source = OPTIONAL_ANSWERS[name][cell.id].strip("\n")
        if cell.cell_type == "code" and not cell.metadata.get("nbgrader"):
            cell.source = re.sub(r"^max_steps = [\d_]+", "max_steps = 200", cell.source, flags=re.M)
    return nb


def outputs_text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("display_data", "execute_result"):
            parts.append(output.data.get("text/plain", ""))
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
    return "".join(parts)


# ----------------------------------------------------------------------------------------------------------
# Colab: the release needs nothing but PyTorch, fetches its data, and survives Colab's saved form
# ----------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """Every notebook in source/, filled with the course's solutions and run top to bottom by nbclient."""
    done = {}
    for name in NOTEBOOKS:
        folder = tmp_path_factory.mktemp(f"run_{name}")
        nb = solved_with_extras(release(name), source(name), name)
        start = time.perf_counter()
        NotebookClient(nb, timeout=900, allow_errors=True, resources={"metadata": {"path": str(folder)}}).execute()
        print(f"{name}: ran in {time.perf_counter() - start:.1f} s")
        done[name] = nb
    return done


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_solved_notebook_runs_without_errors(executed, name):
    errors = [
        (grade_id(c) or c.id, outputs_text(c))
        for c in executed[name].cells
        if any(o.output_type == "error" for o in c.get("outputs", []))
    ]
    assert errors == []


def test_solved_ex1_passes_every_check_and_the_checklist(executed):
    cells = {grade_id(c) or c.id: c for c in executed[EX1].cells}
    for gid, cell in cells.items():
        if gid.startswith("test_d"):
            assert {o.get("name") for o in cell.outputs} == {"stdout"}, gid  # nothing on stderr: no ✘
            assert outputs_text(cell).startswith(f"✔ {gid.removeprefix('test_')}: shape"), outputs_text(cell)
    checklist = outputs_text(cells["check_all"])
    assert checklist.startswith("All 26 gradients match autograd.")
    rows = [line for line in checklist.splitlines() if re.match(r"✔ \d+\.", line)]
    assert [r.split("|")[1].strip() for r in rows][0::25] == ["dlogprobs", "dC"] and len(rows) == 26
    assert "text/html" in cells["check_all"].outputs[0].data  # a table in Jupyter and Colab


def test_running_each_answer_cell_twice_leaves_every_check_unchanged(executed, tmp_path):
    """Exercise 1 with each answer cell run twice in a row: every check prints what it printed after one run."""
    nb = solved_with_extras(release(EX1), source(EX1), EX1)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        if grade_id(cell).startswith("answer_"):
            cells.append(nbformat.v4.new_code_cell(cell.source))  # the same code again, as a second run
    nb.cells = cells
    NotebookClient(nb, timeout=900, allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}).execute()
    checks = lambda notebook: {
        grade_id(c): outputs_text(c) for c in notebook.cells if grade_id(c).startswith(("test_", "check_"))
    }
    once, twice = checks(executed[EX1]), checks(nb)
    assert len(once) == 27 + 5 and twice == once


def test_ex1_optional_exercises_check_a_students_answers(executed):
    text = {c.id: outputs_text(c) for c in executed[EX1].cells}
    assert text["optional-check-dC"].startswith("3 of 3 versions match C.grad. Fastest:"), text["optional-check-dC"]
    for version in ("dC_by_loop", "dC_by_one_hot", "dC_by_index_add"):  # which is slowest depends on the load
        assert re.search(rf"{version} +\| ✔ \(27, 10\) .*\| \d+\.\d{{3}} +\| \d+x", text["optional-check-dC"])
    assert len(re.findall(r"\| 1x +\|", text["optional-check-dC"])) >= 1  # the slowest, against which the others count
    assert text["optional-check-zero-init"].startswith("Found one: this wrong dW2 passes with zero parameters")
    assert "twice the right values" in text["optional-check-zero-init"]
    assert text["optional-check-gradcheck"].startswith("5 of 5 entries of dbnvar: your central difference agrees")
    relu, gelu = text["optional-check-relu"], text["optional-check-gelu"]
    assert relu.startswith("2 of 2 cases: your dhpreact matches autograd through F.relu."), relu
    assert re.search(r"✔ \| dhpreact, some hpreact exactly 0 +\| ✔ \(32, 64\) +\| ✔ yes", relu), relu
    assert gelu.startswith("2 of 2 cases: your dhpreact matches autograd through F.gelu."), gelu
    assert re.search(r"✔ \| dhpreact, float64, -5 to 5 +\| ✔ \(1001,\) +\| ✔ yes +\| \d\.\de-1[4-7]", gelu), gelu


def test_solved_ex3_ticks_every_graded_cell_the_biased_variance_too(executed):
    cells = {grade_id(c): c for c in executed[EX3].cells if grade_id(c)}
    for gid in ("test_dbngain", "test_dbnbias", "test_dhprebn", "test_dhprebn_biased"):
        assert {o.get("name") for o in cells[gid].outputs} == {"stdout"}, gid  # nothing on stderr: no ✘
        assert outputs_text(cells[gid]).startswith(f"✔ {gid.removeprefix('test_')}: shape"), outputs_text(cells[gid])


# What Colab writes when a student downloads a notebook (File -> Download .ipynb), as measured on
# Colab's saved files: nbformat 4.0 (no top-level cell ids), Colab's kernelspec and metadata, a
# random id in every cell's metadata, nbgrader's deletable/editable flags dropped, outputs kept.
def colab_saved(nb, name: str) -> str:
    rng = random.Random(name)
    colab_id = lambda: "".join(rng.choice(string.ascii_letters + string.digits + "-_") for _ in range(12))  # noqa: E731
    cells = []
    for cell in nb.cells:
        metadata = {k: v for k, v in cell.metadata.items() if k not in ("deletable", "editable", "execution")}
        metadata["id"] = colab_id()
        saved = {"cell_type": cell.cell_type, "metadata": metadata, "source": cell.source.splitlines(keepends=True)}
        if cell.cell_type == "code":
            if cell.outputs:
                metadata["outputId"] = f"{rng.getrandbits(128):032x}"
                metadata["colab"] = {"base_uri": "https://localhost:8080/"}
            saved["execution_count"] = cell.execution_count
            saved["outputs"] = json.loads(json.dumps(cell.outputs))
        cells.append(saved)
    return json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 0,
            "metadata": {
                "colab": {"provenance": [], "name": f"Copy of {name}.ipynb"},
                "kernelspec": {"name": "python3", "display_name": "Python 3"},
                "language_info": {"name": "python"},
            },
            "cells": cells,
        },
        indent=2,
        ensure_ascii=False,
    )


@pytest.fixture(scope="module")
def colab_course(course, executed, tmp_path_factory):
    """One autograde run: each notebook as saved by JupyterLab ("jupyter") and as downloaded from Colab ("colab")."""
    root = course.root
    downloads = tmp_path_factory.mktemp("downloads")
    for name in NOTEBOOKS:
        course.submit("jupyter", name, executed[name])
        download = downloads / f"Copy of {name}.ipynb"
        download.write_text(colab_saved(executed[name], name))
        folder = root / "submitted" / "colab" / ASSIGNMENT
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(download, folder / f"{name}.ipynb")  # its real name, as the student is told to restore it
    start = time.perf_counter()
    course.nbgrader("autograde", ASSIGNMENT)
    print(f"autograde of {2 * len(NOTEBOOKS)} notebooks: {time.perf_counter() - start:.1f} s")
    return course


def test_colab_saved_form_is_what_colab_writes(executed):
    text = colab_saved(executed[EX1], EX1)
    raw = json.loads(text)
    assert raw["nbformat_minor"] == 0 and raw["metadata"]["kernelspec"] == {
        "name": "python3",
        "display_name": "Python 3",
    }
    assert all("id" not in c and re.fullmatch(r"[\w-]{12}", c["metadata"]["id"]) for c in raw["cells"])
    assert not any("deletable" in c["metadata"] or "editable" in c["metadata"] for c in raw["cells"])
    assert sum(bool(c.get("outputs")) for c in raw["cells"]) == sum(bool(c.get("outputs")) for c in executed[EX1].cells)
    read = nbformat.reads(text, as_version=4)  # what nbgrader reads: a 4.0 notebook, cells without ids
    assert read.nbformat_minor == 0 and not any("id" in c for c in read.cells)
    assert [c.metadata.get("nbgrader") for c in read.cells] == [c.metadata.get("nbgrader") for c in executed[EX1].cells]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_saved_by_colab_grades_exactly_like_the_original(colab_course, name):
    original, colab = colab_course.scores("jupyter", name), colab_course.scores("colab", name)
    assert colab == original
    if name in CHECKS:  # a graded notebook: the solutions earn everything
        assert original == colab_course.max_scores(name)
        assert sum(original.values()) > 0


# ----------------------------------------------------------------------------------------------------------
# JupyterLab: nbgrader validate, and the notebook in a real browser
# ----------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def validated(tmp_path_factory):
    """``nbgrader validate`` as a student runs it, on every notebook solved and blank: in their own folder,
    no course, no hidden tests. Two at a time, each kernel on one thread (two threads each would wait for each
    other's cores)."""

    def validate(folder: Path, name: str, kind: str) -> str:
        start = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "nbgrader", "validate", f"{name}.ipynb"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        print(f"nbgrader validate, {name} {kind}: {time.perf_counter() - start:.1f} s")
        return result.stdout + result.stderr

    runs = {}
    for name in CHECKS:
        for kind in ["solved", "blank"]:
            folder = tmp_path_factory.mktemp(f"validate_{kind}")
            nb = solved(release(name), source(name)) if kind == "solved" else release(name)
            nbformat.write(nb, folder / f"{name}.ipynb")
            runs[name, kind] = folder
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = {key: pool.submit(validate, folder, *key) for key, folder in runs.items()}
        return {key: future.result() for key, future in done.items()}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_validate_passes_a_solved_notebook(validated, name):
    out = validated[name, "solved"]
    assert "Success! Your notebook passes all the tests." in out, out[-3000:]
    assert "FAILED" not in out and "✘" not in out


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_validate_names_every_unanswered_cell_of_a_blank_notebook(validated, name):
    out = validated[name, "blank"]
    graded = [grade_id(c) for c in source(name).cells if c.metadata.get("nbgrader", {}).get("points")]
    # Every graded cell fails with a line that says why, and only the graded cells: in Exercise 4 the locked cell
    # that runs the training loop is not graded (its line says that training_step raised), and Step 1's cell is
    # the student's own, which validate skips.
    assert f"VALIDATION FAILED ON {len(graded)} CELL(S)" in out, out[-3000:]
    assert out.count("✘ ") >= len(graded), out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    for secret in SECRETS:
        assert secret not in out, secret
    if name == EX1:
        for step in [g.removeprefix("test_") for g in graded]:
            assert f"✘ {step}: not answered yet" in out, step


CELLS = "document.querySelectorAll('.jp-NotebookPanel .jp-Cell')"
SHIFT, CTRL = 8, 2


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium: run tools/install.sh")
def test_notebook_runs_in_jupyterlab_in_a_browser(tmp_path):
    """A student opens the release notebook in JupyterLab, runs the setup, answers dlogprobs, runs the checks."""
    start = time.perf_counter()
    root = tmp_path / "student"
    root.mkdir()
    shutil.copy(RELEASE / f"{EX1}.ipynb", root)
    shutil.copy(NAMES, root / "names.txt")
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)  # no news feed and no update check: the test runs offline
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    token, port = secrets.token_hex(16), free_port()
    env = {k: v for k, v in os.environ.items() if k != "BACKPROP_NINJA_NAMES"}  # the notebook reads ./names.txt
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "runtime")
    log = open(tmp_path / "jupyterlab.log", "w")
    lab = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            f"--ServerApp.token={token}",
            f"--port={port}",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.root_dir={root}",
            f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--allow-root",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    browser = None
    try:
        base, end = f"http://127.0.0.1:{port}", time.time() + 120
        while True:
            assert lab.poll() is None and time.time() < end, (tmp_path / "jupyterlab.log").read_text()[-3000:]
            with contextlib.suppress(requests.ConnectionError):
                if requests.get(f"{base}/api/status", params={"token": token}, timeout=5).ok:
                    break
            time.sleep(0.2)

        def sessions():
            return requests.get(f"{base}/api/sessions", params={"token": token}, timeout=5).json()

        browser = Chromium(tmp_path / "chromium")
        browser.send("Page.navigate", url=f"{base}/lab/tree/{EX1}.ipynb?token={token}")
        # The kernel is ready once the server sees the notebook's websocket and the page shows the kernel idle
        # (the indicator also says idle before the kernel starts, and JupyterLab ignores a run while it starts).
        end = time.time() + 120
        while not any(s["path"] == f"{EX1}.ipynb" and (s["kernel"] or {}).get("connections") for s in sessions()):
            assert time.time() < end, "JupyterLab started no kernel for the notebook"
            time.sleep(0.2)
        browser.wait_for(
            f"{CELLS}.length > 14 && !!document.querySelector("
            "'.jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status=\"idle\"]')"
        )
        cells = release(EX1).cells
        kinds = [c.cell_type == "code" for c in cells]

        def run(index):  # Shift+Enter on the selected cell (the notebook then selects the next one)
            browser.wait_for(f"{CELLS}.length > {index}")
            browser.key("Enter", "Enter", 13, modifiers=SHIFT)
            if kinds[index]:
                browser.wait_for(f"/\\[\\d+\\]/.test({CELLS}[{index}].querySelector('.jp-InputPrompt').textContent)")

        browser.js(f"{CELLS}[0].querySelector('.jp-InputArea').click()")
        browser.key("Escape", "Escape", 27)  # command mode, first cell selected
        answer = next(i for i, c in enumerate(cells) if grade_id(c) == "answer_dlogprobs")
        for index in range(answer):  # the settings, data, parameters, forward pass and self-check helpers
            run(index)
        browser.key("Enter", "Enter", 13)  # edit the answer cell as a student types it
        browser.key("a", "KeyA", 65, modifiers=CTRL)
        browser.send("Input.insertText", text="dlogprobs = -F.one_hot(Yb, vocab_size).float() / n")
        browser.key("Escape", "Escape", 27)
        run(answer)
        run(answer + 1)  # its graded cell: the one-line check
        group = next(i for i, c in enumerate(cells) if grade_id(c) == "check_cross_entropy")
        for _ in range(group - answer - 2):
            browser.key("j", "KeyJ", 74, text="j")
        run(group)
        output = f"{CELLS}[%d].querySelector('.jp-OutputArea').textContent"
        line, table = browser.js(output % (answer + 1)), browser.js(output % group)
        browser.js(f"{CELLS}[{group}].scrollIntoView({{block: 'center'}})")
        time.sleep(1)
        screenshot = browser.screenshot(ARTIFACTS / "jupyterlab_ex1.png")
        print(f"screenshot: {screenshot} (test took {time.perf_counter() - start:.0f} s)")
        title = browser.js(
            "document.querySelector('#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current "
            ".lm-TabBar-tabLabel').textContent"
        )
        setup_text = browser.js(output % next(i for i, c in enumerate(cells) if grade_id(c) == "setup_forward"))
    finally:
        if browser:
            browser.close()
        lab.terminate()
        try:
            lab.wait(60)
        except subprocess.TimeoutExpired:  # once in a busy slow tier, its shutdown outlasted the minute: not our test
            lab.kill()
            lab.wait(10)
        log.close()
    assert title == f"{EX1}.ipynb"
    assert setup_text.startswith("loss 3.3585")
    assert line.startswith("✔ dlogprobs: shape (32, 27) ok, values match autograd's"), line
    assert table.startswith("1 of 8 gradients match autograd. Next: dprobs."), table
    assert table.count("not answered yet") == 7 and "max difference" in table


# ----------------------------------------------------------------------------------------------------------
# Self-checks that teach: one shared cell, runnable anywhere, hints instead of tracebacks
# ----------------------------------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------------------------
# The badges and the local setups stay in step with the repository
# ----------------------------------------------------------------------------------------------------------

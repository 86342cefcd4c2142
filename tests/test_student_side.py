"""The student's side: the notebooks as students really use them, on Colab and in JupyterLab.

* Colab: every release notebook needs nothing but PyTorch and fetches its data; a notebook that
  went through Colab (its saved form, outputs and all) grades exactly like the original, for
  every notebook in source/, in one autograde run.
* JupyterLab: ``nbgrader validate`` gives a clear answer without hidden tests; the notebook
  opens and runs in a real JupyterLab in headless Chromium (a screenshot is kept).
* The self-checks teach: one table, hints for the usual mistakes, a checklist at the end.
* The Colab badges and the conda environment stay in step with the repository.
"""

import ast
import base64
import contextlib
import io
import json
import os
import random
import re
import secrets
import shutil
import socket
import string
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import requests
import torch
import yaml
from nbclient import NotebookClient

from autograder.authoring import badges
from autograder.authoring import SOURCE_DIR, shared_cell
from autograder.engine.exercises import CHECKS
from autograder.engine.reference import SETUP_PREFIX, autograd_gradients, run_setup, strip_hidden
from autograder.authoring.submissions import grade_id, solved
from conftest import ASSIGNMENT, NAMES, REPO

NOTEBOOKS = sorted(p.stem for p in SOURCE_DIR.glob("*.ipynb"))
EX1 = "ex1_atomic_backward"
EX3 = "ex3_batchnorm_backward"
EX4 = "ex4_manual_training"
RELEASE = REPO / "release" / ASSIGNMENT
ARTIFACTS = REPO / "tests" / "artifacts"
SECRETS = ["HIDDEN TESTS", "report(", "start_grading", "grading_seed", "from autograder", "autograder.in_kernel",
           "BEGIN SOLUTION", "x-backprop-ninja"]

# A student's answers to the optional exercises at the end of a notebook: {notebook: {cell id: code}}.
OPTIONAL_ANSWERS = {EX1: {
    "optional-dC-versions": '''
def dC_loop(demb):
    dC = torch.zeros_like(C)
    for k in range(Xb.shape[0]):
        for j in range(Xb.shape[1]):
            dC[Xb[k, j]] += demb[k, j]
    return dC


def dC_index_add(demb):
    return torch.zeros_like(C).index_add_(0, Xb.view(-1), demb.view(-1, C.shape[1]))


def dC_one_hot(demb):
    return F.one_hot(Xb.view(-1), C.shape[0]).float().T @ demb.view(-1, C.shape[1])
''',
    "optional-zero-init": '''
WRONG_STEP = "W2"


def wrong_formula(v):
    return 2 * v["h"].T @ v["logits"].grad  # twice too large, but h is all zeros when the parameters are
''',
    "optional-gradcheck": '''
GRADCHECK_STEP = "bnvar"


def central_difference(name, index, eps=1e-6):
    return (loss_at(name, index, eps) - loss_at(name, index, -eps)) / (2 * eps)
''',
    "optional-relu": '''
def dhpreact_relu(hpreact, dh):
    return (hpreact > 0) * dh
''',
    "optional-gelu": '''
def dhpreact_gelu(hpreact, dh):
    cdf = 0.5 * (1 + torch.erf(hpreact / 2**0.5))
    pdf = torch.exp(-hpreact**2 / 2) / (2 * torch.pi) ** 0.5
    return (cdf + hpreact * pdf) * dh
''',
}, EX3: {
    "optional-biased-variance": '''
def dhprebn_biased(dhpreact, bngain, bnraw, bnvar_inv):
    return bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) - bnraw * (dhpreact * bnraw).sum(0))
''',
}}


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

ALLOWED_IMPORTS = {"torch", "matplotlib", "numpy", "IPython"}  # all on Colab; nothing of this repository


@pytest.mark.parametrize("name", sorted(p.stem for p in RELEASE.glob("*.ipynb")))
def test_release_notebook_needs_only_what_colab_has(name):
    nb = release(name)
    assert nb.metadata.kernelspec.name == "python3"
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for module in modules:
                top = module.split(".")[0]
                assert top in sys.stdlib_module_names or top in ALLOWED_IMPORTS, f"{name}: imports {module}"
        assert "cuda" not in cell.source, f"{name}: a GPU is not needed and may not be there"
    text = (RELEASE / f"{name}.ipynb").read_text()
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
    errors = [(grade_id(c) or c.id, outputs_text(c)) for c in executed[name].cells
              if any(o.output_type == "error" for o in c.get("outputs", []))]
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


def test_ex1_optional_exercises_check_a_students_answers(executed):
    text = {c.id: outputs_text(c) for c in executed[EX1].cells}
    assert text["optional-check-dC"].startswith("3 of 3 versions match C.grad. Fastest:"), text["optional-check-dC"]
    assert re.search(r"dC_loop +\| ✔ \(27, 10\) .*\| \d+\.\d{3} +\| 1x", text["optional-check-dC"])
    assert text["optional-check-zero-init"].startswith("Found one: this wrong dW2 passes with zero parameters")
    assert "twice the right values" in text["optional-check-zero-init"]
    assert text["optional-check-gradcheck"].startswith("5 of 5 entries of dbnvar: your central difference agrees")
    relu, gelu = text["optional-check-relu"], text["optional-check-gelu"]
    assert relu.startswith("2 of 2 cases: your dhpreact matches autograd through F.relu."), relu
    assert re.search(r"✔ \| dhpreact, some hpreact exactly 0 +\| ✔ \(32, 64\) +\| ✔ yes", relu), relu
    assert gelu.startswith("2 of 2 cases: your dhpreact matches autograd through F.gelu."), gelu
    assert re.search(r"✔ \| dhpreact, float64, -5 to 5 +\| ✔ \(1001,\) +\| ✔ yes +\| \d\.\de-1[4-7]", gelu), gelu


def test_ex3_optional_exercise_checks_a_students_answer(executed):
    cells = {c.id: c for c in executed[EX3].cells}
    text = outputs_text(cells["optional-check-biased-variance"])
    assert text.startswith("Your dhprebn matches autograd with the biased variance."), text
    assert re.search(r"✔ \| dhprebn, variance / n +\| ✔ \(32, 64\) +\| ✔ yes", text), text
    assert "text/html" in cells["optional-check-biased-variance"].outputs[0].data


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


@pytest.mark.parametrize("name, answer, check, gradient, hint", [
    (EX1, "def dhpreact_relu(hpreact, dh):\n    return (hpreact > 0).float()",  # dh forgotten
     "check_relu_backward(dhpreact_relu)", "dhpreact, this batch", "the local derivative alone: multiply it by dh"),
    (EX1, "def dhpreact_relu(hpreact, dh):\n    return (hpreact >= 0) * dh",  # 1 at 0, autograd uses 0
     "check_relu_backward(dhpreact_relu)", "dhpreact, some hpreact exactly 0", "wrong only where hpreact is exactly 0"),
    (EX1, "def dhpreact_gelu(x, dh):\n    return 0.5 * (1 + torch.erf(x / 2**0.5)) * dh",  # x * pdf forgotten
     "check_gelu_backward(dhpreact_gelu)", "dhpreact, float64, -5 to 5", "entries differ: re-derive the local"),
    (EX3, "def dhprebn_biased(dhpreact, bngain, bnraw, bnvar_inv):\n    return bngain * bnvar_inv / n * "
          "(n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))",  # the n - 1 formula
     "check_biased_variance(dhprebn_biased)", "dhprebn, variance / n", "the term through the variance is wrong"),
], ids=["relu-without-dh", "relu-1-at-0", "gelu-without-x-pdf", "biased-with-n-1-factor"])
def test_optional_check_shows_a_wrong_answer_with_a_hint(name, answer, check, gradient, hint):
    text = run_optional_check(optional_namespace(name), answer, check)
    row = next(r for r in text.splitlines() if "|" in r and r.split("|")[1].strip() == gradient)
    assert row.startswith("✘") and "✘ no" in row and hint in row.split("|")[-1], text


# The new optional exercises: (notebook, the student's cell, the check cell under it).
NEW_OPTIONAL = [(EX1, "optional-relu", "optional-check-relu"), (EX1, "optional-gelu", "optional-check-gelu"),
                (EX3, "optional-biased-variance", "optional-check-biased-variance")]


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
    return json.dumps({"nbformat": 4, "nbformat_minor": 0,
                       "metadata": {"colab": {"provenance": [], "name": f"Copy of {name}.ipynb"},
                                    "kernelspec": {"name": "python3", "display_name": "Python 3"},
                                    "language_info": {"name": "python"}},
                       "cells": cells}, indent=2, ensure_ascii=False)


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
    assert raw["nbformat_minor"] == 0 and raw["metadata"]["kernelspec"] == {"name": "python3", "display_name": "Python 3"}
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
    no course, no hidden tests."""
    results = {}
    for name in CHECKS:
        for kind in ["solved", "blank"]:
            folder = tmp_path_factory.mktemp(f"validate_{kind}")
            nb = solved(release(name), source(name)) if kind == "solved" else release(name)
            nbformat.write(nb, folder / f"{name}.ipynb")
            start = time.perf_counter()
            result = subprocess.run([sys.executable, "-m", "nbgrader", "validate", f"{name}.ipynb"], cwd=folder,
                                    capture_output=True, text=True, timeout=900)
            print(f"nbgrader validate, {name} {kind}: {time.perf_counter() - start:.1f} s")
            results[name, kind] = result.stdout + result.stderr
    return results


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_validate_passes_a_solved_notebook(validated, name):
    out = validated[name, "solved"]
    assert "Success! Your notebook passes all the tests." in out, out[-3000:]
    assert "FAILED" not in out and "✘" not in out


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_validate_names_every_unanswered_cell_of_a_blank_notebook(validated, name):
    out = validated[name, "blank"]
    graded = [grade_id(c) for c in source(name).cells if c.metadata.get("nbgrader", {}).get("points")]
    # Every graded cell fails with a line that says why; in Exercise 4 so do the locked cells that run the
    # backward pass (its first-steps check) and the training loop (a traceback: training_step raised).
    failing = len(graded) + (2 if name == EX4 else 0)
    assert f"VALIDATION FAILED ON {failing} CELL(S)" in out, out[-3000:]
    assert out.count("✘ ") >= len(graded), out[-3000:]
    assert out.count("Traceback") == (1 if name == EX4 else 0), out[-3000:]
    for secret in SECRETS:
        assert secret not in out, secret
    if name == EX1:
        for step in [g.removeprefix("test_") for g in graded]:
            assert f"✘ {step}: not answered yet" in out, step


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Chromium:
    """Headless Chromium driven through the DevTools protocol (a websocket, no driver needed)."""

    FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-background-timer-throttling", "--disable-renderer-backgrounding", "--window-size=1400,1000"]

    def __init__(self, profile: Path):
        import websocket

        self.process = subprocess.Popen([shutil.which("chromium"), *self.FLAGS, f"--user-data-dir={profile}",
                                         "--remote-debugging-port=0", "about:blank"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file, end = profile / "DevToolsActivePort", time.time() + 60
        while not (port_file.exists() and len(port_file.read_text().split()) == 2):
            assert time.time() < end and self.process.poll() is None, "Chromium did not start"
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        page = next(t for t in requests.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json() if t["type"] == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.calls = 0

    def send(self, method, **params):
        self.calls += 1
        self.socket.send(json.dumps({"id": self.calls, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.calls:
                assert "error" not in message, message
                return message.get("result", {})

    def js(self, expression):
        return self.send("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def wait_for(self, expression, timeout=180):
        end = time.time() + timeout
        while not (value := self.js(expression)):
            assert time.time() < end, f"timed out waiting for {expression}"
            time.sleep(0.2)
        return value

    def key(self, key, code, keycode, modifiers=0, text=None):
        event = dict(key=key, code=code, windowsVirtualKeyCode=keycode, modifiers=modifiers)
        self.send("Input.dispatchKeyEvent", type="keyDown", **event, **({"text": text} if text else {}))
        self.send("Input.dispatchKeyEvent", type="keyUp", **event)

    def close(self):
        self.socket.close()
        self.process.terminate()
        self.process.wait(30)


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
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    token, port = secrets.token_hex(16), _free_port()
    env = {k: v for k, v in os.environ.items() if k != "BACKPROP_NINJA_NAMES"}  # the notebook reads ./names.txt
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "runtime")
    log = open(tmp_path / "jupyterlab.log", "w")
    lab = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", f"--ServerApp.token={token}",
                            f"--port={port}", "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={root}",
                            f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
                            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
                            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--allow-root"],
                           env=env, stdout=log, stderr=subprocess.STDOUT)
    browser = None
    try:
        base, end = f"http://127.0.0.1:{port}", time.time() + 120
        while True:
            assert lab.poll() is None and time.time() < end, (tmp_path / "jupyterlab.log").read_text()[-3000:]
            with contextlib.suppress(requests.ConnectionError):
                if requests.get(f"{base}/api/status", params={"token": token}, timeout=5).ok:
                    break
            time.sleep(0.2)
        browser = Chromium(tmp_path / "chromium")
        browser.send("Page.navigate", url=f"{base}/lab/tree/{EX1}.ipynb?token={token}")
        browser.wait_for(f"{CELLS}.length > 14 && !!document.querySelector("
                         "'.jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status=\"idle\"]')")
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
        ARTIFACTS.mkdir(exist_ok=True)
        screenshot = ARTIFACTS / "jupyterlab_ex1.png"
        screenshot.write_bytes(base64.b64decode(browser.send("Page.captureScreenshot", format="png")["data"]))
        print(f"screenshot: {screenshot} (test took {time.perf_counter() - start:.0f} s)")
        title = browser.js("document.querySelector('#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current "
                           ".lm-TabBar-tabLabel').textContent")
        setup_text = browser.js(output % next(i for i, c in enumerate(cells) if grade_id(c) == "setup_forward"))
    finally:
        if browser:
            browser.close()
        lab.terminate()
        lab.wait(60)
        log.close()
    assert title == f"{EX1}.ipynb"
    assert setup_text.startswith("loss 3.5571")
    assert line.startswith("✔ dlogprobs: shape (32, 27) ok, values match autograd's"), line
    assert table.startswith("1 of 8 gradients match autograd. Next: dprobs."), table
    assert table.count("not answered yet") == 7 and "max difference" in table


# ----------------------------------------------------------------------------------------------------------
# Self-checks that teach: one shared cell, runnable anywhere, hints instead of tracebacks
# ----------------------------------------------------------------------------------------------------------

HELPERS = shared_cell("self_check_helpers")


def test_self_check_helpers_are_self_contained_and_silenced_at_autograde():
    visible = strip_hidden(HELPERS)
    assert HELPERS.endswith("### END HIDDEN TESTS") and "import autograder" not in visible
    imported = {a.name.split(".")[0] for node in ast.walk(ast.parse(visible)) if isinstance(node, ast.Import) for a in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(ast.parse(visible)) if isinstance(node, ast.ImportFrom)}
    assert imported <= {"sys", "html", "IPython"}, imported  # runs on Colab: nothing of this repository
    public = [f.name for f in ast.parse(visible).body if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")]
    silenced = re.search(r"start_grading\(globals\(\), self_checks=\((.*?)\)\)", HELPERS).group(1)
    assert set(public) == {"cmp", "self_check", "check_answer", "check_value"}
    assert all(f'"{f}"' in silenced for f in public)


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


def test_self_check_table_names_the_usual_mistakes(notebook_namespace):
    g = autograd_gradients(notebook_namespace)
    _, table = show(notebook_namespace, "logprobs", "probs", "counts_sum_inv", "bngain", "W2", "b1", "bndiff2",
                    "bnbias", "bnvar", "h", "emb", "hpreact",
                    dlogprobs=g["logprobs"] * 32, dprobs=-g["probs"], dcounts_sum_inv=torch.ones(1, 27),
                    dbngain=g["bngain"].view(-1), dW2=g["W2"].T, db1=g["hprebn"], dbndiff2=g["bndiff2"] * 31 / 32,
                    dbnbias=g["bnbias"] * 32 / 31, dbnvar=g["bnvar"] / 0 * 0, dh=g["h"] + 0.01,
                    demb=g["emb"].numpy())
    assert table.startswith("0 of 12 gradients match autograd. Next: dlogprobs.")
    assert table.splitlines()[1].split("|")[1:6] == [" gradient        ", " shape      ", " exact ", " approximate ",
                                                    " max difference "]
    assert "n = 32 times too large" in hint(table, "dlogprobs")
    assert "wrong sign" in hint(table, "dprobs")
    assert hint(table, "dcounts_sum_inv").startswith("dimension 0 is 1 but must be 32")
    assert hint(table, "dbngain").startswith("dimension 0 (of size 1) is missing: keep it with keepdim=True")
    assert hint(table, "dW2").startswith("transposed")
    assert hint(table, "db1").startswith("b1 was broadcast over the batch (dimension 0): sum its gradient")
    assert "Bessel" in hint(table, "dbndiff2") and "(n-1)/n" in hint(table, "dbndiff2")
    assert "n/(n-1) times too large" in hint(table, "dbnbias")
    assert "NaN" in hint(table, "dbnvar")
    assert "2048 of 2048 entries differ" in hint(table, "dh")
    assert hint(table, "demb") == "should be a torch tensor, not a ndarray"
    assert hint(table, "dhpreact") == "not answered yet"
    assert "Traceback" not in table


def test_self_check_shows_html_in_jupyter_and_a_checklist(notebook_namespace):
    namespace, _ = show(notebook_namespace, "logprobs")
    rows = [namespace["_compare"](k, notebook_namespace[k].grad if k != "C" else None, notebook_namespace[k].grad)
            for k in ["logprobs", "C"]]
    html = namespace["CheckTable"](rows, checklist=True)._repr_html_()
    assert "<table>" in html and "<th style='text-align:left'>approximate</th>" in html
    assert "✔ 1." in html and "· 2." in html and "1 of 2 gradients match autograd. Next: dC." in html


def test_check_answer_prints_to_stderr_only_when_something_is_wrong(notebook_namespace, capsys):
    g = notebook_namespace["probs"].grad
    namespace, _ = show(notebook_namespace, dprobs=-g, dcounts_sum_inv=(notebook_namespace["counts"] * -g).sum(1, keepdim=True),
                        dlogprobs=notebook_namespace["logprobs"].grad.clone())
    for name in ["logprobs", "probs", "counts_sum_inv", "counts"]:
        namespace["check_answer"](name)
    out, err = capsys.readouterr()
    assert out.startswith("✔ dlogprobs: shape (32, 27) ok") and out.count("\n") == 1
    lines = err.splitlines()
    assert lines[0].startswith("✘ dprobs: values differ from autograd's") and "wrong sign" in lines[0]
    assert "But dprobs above is not right yet: fix it first" in lines[1]  # the downstream step points upstream
    assert lines[2] == "✘ dcounts: not answered yet"


# ----------------------------------------------------------------------------------------------------------
# The badges and the local setups stay in step with the repository
# ----------------------------------------------------------------------------------------------------------

def test_colab_badges_are_up_to_date():
    stale = badges.stale_pages()
    assert stale == [], f"run: python -m autograder.authoring.badges (stale: {[str(p) for p in stale]})"
    repository = badges.repository_url()
    for page in badges.PAGES:
        links = re.findall(r"\(https://colab\.research\.google\.com/github/([^)]+)\)", page.read_text())
        owner_name = repository.removeprefix("https://github.com/")
        assert sorted(links) == sorted(f"{owner_name}/blob/{badges.BRANCH}/release/{ASSIGNMENT}/{p.name}"
                                       for p in RELEASE.glob("*.ipynb")), page


def test_badges_follow_the_one_repository_address(tmp_path):
    page = tmp_path / "README.md"
    page.write_text("intro\n<!-- colab-badges -->\nend\n")
    text = badges.rewritten(page, "https://github.com/someone/fork")
    assert "colab.research.google.com/github/someone/fork/blob/main/release/backprop_ninja/ex1_atomic_backward.ipynb" in text
    assert text.endswith("<!-- /colab-badges -->\nend\n")
    page.write_text(text)
    assert badges.rewritten(page, "https://github.com/someone/fork") == text  # idempotent


def test_conda_environment_pins_what_pip_installs():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    environment = yaml.safe_load((REPO / "environment.yml").read_text())
    pip = next(d["pip"] for d in environment["dependencies"] if isinstance(d, dict))
    assert sorted(p for p in pip if not p.startswith("-e")) == sorted(project["dependencies"])
    assert "-e .[test]" in pip
    python = next(d for d in environment["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert tuple(map(int, python.removeprefix("python=").split("."))) >= (3, 10)

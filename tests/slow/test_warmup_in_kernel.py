"""The optional warm-up notebook in a real Jupyter kernel, as JupyterLab or Colab runs it: solved, every check
ticks; blank, it runs to the end without a traceback and every check says what is not answered yet."""

import pytest
from nbclient import NotebookClient
from support.warmup import CHECKS, SOLUTIONS, filled


def executed(answers, folder):
    nb = filled(answers)
    NotebookClient(nb, timeout=300, allow_errors=True, resources={"metadata": {"path": str(folder)}}).execute()
    return {c.id: c for c in nb.cells if c.cell_type == "code"}


def streams(cell, name):
    return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == name)


@pytest.mark.parametrize("kind", ["solved", "blank"])
def test_the_warmup_runs_in_a_kernel(kind, tmp_path):
    cells = executed(SOLUTIONS if kind == "solved" else {}, tmp_path)
    errors = [cid for cid, c in cells.items() if any(o.output_type == "error" for o in c.outputs)]
    assert errors == []
    for check in CHECKS:
        out, err = streams(cells[check], "stdout"), streams(cells[check], "stderr")
        if kind == "solved":
            assert "✔" in out and err == "", (check, out, err)
        else:
            assert "not answered yet" in err and "✔" not in out, (check, out, err)
    plot = cells["saturation-plot"]
    assert any("image/png" in o.get("data", {}) for o in plot.outputs)  # the plot shows inline

"""The sizes a notebook's words give follow its settings.

A notebook's sizes are its own locked cell ``setup_settings`` (``n_embd``, ``n_hidden``, ``batch_size``, Exercise 5's
``head_size``); the grader, its reference and the self-checks follow it by themselves, but the markdown and the comments
say sizes by hand: shapes such as ``(n, 64)``, ``n = 32``, "a batch of 32", "``n_hidden = 200``", "12,297 parameters".
Changing ``n_hidden`` left them saying the old number, in English and in both editions, and no test failed. Here every
such number is held to the sizes the notebook's own setup makes (docs/maintaining.md, "Changing a notebook's
settings").
"""

import re

import nbformat
import pytest

from autograder.authoring import SHARED_CELLS, SOURCE_DIR
from autograder.authoring.submissions import grade_id
from autograder.common.naming import SETUP_PREFIX
from autograder.engine.reference import run_setup
from autograder.engine.training.network import OTHER_BATCH_SIZE

NOTEBOOKS = sorted(SOURCE_DIR.glob("*.ipynb"))
# a shape in words: (n, 64), (1, 64), (n, 3, 10), (64,); not a call's arguments (.transpose(1, 2))
SHAPE = re.compile(r"(?<![\w.])\(((?:n|\d+)(?:, ?(?:n|\d+))*(?:, ?(?:n|\d+)|,))\)")
SETTING = re.compile(r"`?\b(n_embd|n_hidden|batch_size|head_size|block_size)\b`?\s*=\s*(\d+)`?")
COUNT = re.compile(
    r"\ball (\d+)(?=[.,;:]| columns)|\b(\d+) (?:numbers|features|neurons|hidden units)\b"
)  # of one dimension
BATCH = re.compile(r"\bn = (\d+)\b|\bbatch of (\d+)\b|\b(\d+) examples\b")
PARAMETERS = re.compile(r"\b(\d[\d,]*) parameters\b")


def sizes(nb) -> dict:
    """The notebook's sizes, from its own setup cells run at its own seed."""
    setup = run_setup(tuple(c.source for c in nb.cells if grade_id(c).startswith(SETUP_PREFIX)), 2147483647)
    names = ["n_embd", "n_hidden", "batch_size", "head_size", "block_size", "vocab_size"]
    found = {name: setup[name] for name in names if isinstance(setup.get(name), int)}
    found["parameters"] = {len(setup["parameters"]), sum(p.numel() for p in setup["parameters"])}
    return found


def words(nb):
    """(cell id, text) for what a student reads as words: markdown, and the comments of the code cells written in the
    notebook (not the shared cells, which serve every notebook's sizes, nor setup_settings, the sizes themselves)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            yield cell.id, cell.source
        elif grade_id(cell) not in {*(p.stem for p in SHARED_CELLS.glob("*.py")), "setup_settings"}:
            yield cell.id, "\n".join(line.split("#", 1)[1] for line in cell.source.splitlines() if "#" in line)


def stale_sizes(nb) -> list:
    """Each size the words give that the settings do not: (cell id, the words, the sizes it may be)."""
    size = sizes(nb)
    dimensions = {1, *(v for k, v in size.items() if k != "parameters"), size["n_embd"] * size["block_size"]}
    batches = {size["batch_size"], OTHER_BATCH_SIZE}
    stale = []
    for cell_id, text in words(nb):
        for shape in SHAPE.finditer(text):
            numbers = {int(d) for d in re.findall(r"\d+", shape.group(1))}
            if not numbers <= dimensions:
                stale.append((cell_id, shape.group(0), f"dimensions {sorted(dimensions)}"))
        for said in SETTING.finditer(text):
            name, number = said.group(1), int(said.group(2))
            if size.get(name) != number:
                stale.append((cell_id, said.group(0), f"{name} = {size.get(name)}"))
        for said in COUNT.finditer(text):
            if int(next(g for g in said.groups() if g)) not in dimensions:
                stale.append((cell_id, said.group(0), f"dimensions {sorted(dimensions)}"))
        for said in BATCH.finditer(text):
            if int(next(g for g in said.groups() if g)) not in batches:
                stale.append((cell_id, said.group(0), f"batch_size = {size['batch_size']} (or {OTHER_BATCH_SIZE})"))
        for said in PARAMETERS.finditer(text):
            if int(said.group(1).replace(",", "")) not in size["parameters"]:
                stale.append((cell_id, said.group(0), f"parameters: {sorted(size['parameters'])}"))
    return stale


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_words_give_the_notebooks_own_sizes(path):
    stale = stale_sizes(nbformat.read(path, as_version=4))
    assert not stale, (
        f"{path.name}: its words give sizes its setup_settings does not make (cell, words, what they may be): "
        f"{stale}; edit the words (docs/maintaining.md, 'Changing a notebook's settings'), run "
        ".venv/bin/python -m autograder.authoring, and translate the sentences it lists"
    )


def test_a_changed_setting_leaves_the_old_sizes_named():
    """What a maintainer who changes Exercise 3's n_hidden and batch_size, and nothing else, is shown."""
    nb = nbformat.read(SOURCE_DIR / "ex3_batchnorm_backward.ipynb", as_version=4)
    settings = next(c for c in nb.cells if grade_id(c) == "setup_settings")
    settings.source = settings.source.replace("n_hidden = 64", "n_hidden = 100").replace(
        "batch_size = 32", "batch_size = 40"
    )
    stale = stale_sizes(nb)
    said = {words for _, words, _ in stale}
    assert {"(n, 64)", "(1, 64)", "all 64", "n = 32", "batch of 32"} <= said, said
    assert "setup-upstream" in {cell for cell, _, _ in stale}  # a locked setup cell of the notebook's own

"""The editions are generated from the English and the catalogs, and cannot drift from them.

* The catalogs' templates hold every piece of words of the course, and every edition's catalog is merged with them.
* editions/ is exactly what the English release, course/ and the catalogs make.
* A translation changes words only: with every message pseudo-translated, each edition notebook has the English
  one's cells, grade ids, points and code, every piece of words is translated, and links lead to the edition's own
  files and headings.
"""

import ast
import functools
import re

import nbformat
import pytest
from support.course import REPO
from support.pseudo_locale import MARK, pseudo_locale

from autograder.authoring import catalogs, editions
from autograder.common.edition_text import translated_cell_source
from autograder.common.editions import METADATA, TRANSLATED
from autograder.common.links import repository_url
from autograder.common.translate import code_pieces, markdown_pieces, translate_code, translate_markdown

RELEASE = REPO / "release" / "backprop_ninja"


def test_the_catalogs_hold_every_piece_of_words_of_the_english():
    assert catalogs.stale_catalogs() == [], "run: python -m autograder.authoring"


def test_the_editions_are_what_the_english_and_the_catalogs_make():
    stale = [str(p.relative_to(REPO)) for p in editions.stale_files(repository_url())]
    assert stale == [], "run: python -m autograder.authoring"


@functools.cache  # (each English cell is compared with its edition in several tests)
def _code_without_words(source: str) -> str:
    """The code's syntax tree with every string replaced: what a translation must leave alone."""

    class Strip(ast.NodeTransformer):
        def visit_Constant(self, node):
            return ast.Constant("") if isinstance(node.value, str) else node

        def visit_JoinedStr(self, node):
            return ast.Constant("")

    return ast.dump(Strip().visit(ast.parse(source)))


@pytest.mark.parametrize("notebook", sorted(p.name for p in RELEASE.glob("*.ipynb")))
def test_a_translated_notebook_changes_words_only(tmp_path, notebook):
    english = nbformat.read(RELEASE / notebook, as_version=4)
    with pseudo_locale(tmp_path, "ru"):
        edition = editions.edition_notebook(RELEASE / notebook, "ru")
    assert [c.cell_type for c in edition.cells] == [c.cell_type for c in english.cells]
    assert [c.metadata.get("nbgrader") for c in edition.cells] == [c.metadata.get("nbgrader") for c in english.cells]
    assert edition.metadata["backprop_ninja"] == {"edition": "ru"}
    for ours, theirs in zip(english.cells, edition.cells):
        pieces = code_pieces(ours.source) if ours.cell_type == "code" else markdown_pieces(ours.source)
        assert theirs.source.count(MARK) >= len(pieces), f"{notebook}: words of a cell escaped the catalog"
        if ours.cell_type == "code":
            assert _code_without_words(ours.source) == _code_without_words(theirs.source)
        links = re.findall(r"https://[^)\s]+/blob/\w+/((?:course|release)/[^)#\s]+)", theirs.source)
        assert not links, f"{notebook} links to the English {links}"


def test_links_lead_to_the_editions_files_and_headings(tmp_path):
    with pseudo_locale(tmp_path, "ru"):
        ex1 = editions.edition_notebook(RELEASE / "ex1_atomic_backward.ipynb", "ru")
        page = editions.edition_page(REPO / "course" / "further_exercises.md", "ru", repository_url())
    text = "\n".join(c.source for c in ex1.cells)
    assert "/blob/main/editions/ru/course/derivations.md#the-matrix-product-entry-by-entry-ж" in text
    assert "/blob/main/editions/ru/course/micrograd_warmup.ipynb" in text
    assert "](#1-vectorise-dc-and-time-it-ж)" in page  # a heading of the page itself
    assert "](../backprop_ninja/ex1_atomic_backward.ipynb)" in page  # the edition's notebook
    assert "](README.md)" in page


def test_pieces_go_back_where_they_were_and_stay_valid_python():
    source = (
        "# A comment\n# that wraps.\nx = 1  # inline words\n"
        'def f(v):\n    """Return the words."""\n'
        '    print(f"value {v:.3g} is \'big\'", "names.txt")\n'
        '    print("first half of a sentence "\n          "and the second half")\n'
        "### BEGIN HIDDEN TESTS\n# hidden words\nprint('hidden words')\n### END HIDDEN TESTS\n"
    )
    assert translate_code(source, lambda t: None) == source
    tricky = translate_code(source, lambda t: 'он сказал "да" \\ ' + t)
    ast.parse(tricky)
    assert "# hidden words\nprint('hidden words')" in tricky  # hidden tests are not words for a student
    assert "{v:.3g}" in tricky and "names.txt" in tricky
    assert [p.text for p in code_pieces(source)] == [
        "A comment\nthat wraps.",
        "inline words",
        "Return the words.",
        "value {v:.3g} is 'big'",
        "first half of a sentence and the second half",
    ]
    markdown = "# Title\n\nA paragraph\nthat wraps.\n\n```python\nx = 1  # a comment\n```\n\n<!-- marker -->\n"
    assert [p.text for p in markdown_pieces(markdown)] == ["# Title", "A paragraph\nthat wraps.", "a comment"]
    assert translate_markdown(markdown, str.upper).startswith("# TITLE\n\nA PARAGRAPH\nTHAT WRAPS.\n\n```python\n")


def test_english_is_the_english(tmp_path):
    cell = nbformat.read(RELEASE / "ex1_atomic_backward.ipynb", as_version=4).cells[0]
    assert translated_cell_source("markdown", cell.source, "en") == cell.source


def test_the_glossary_page_is_the_editions_term_lists():
    from autograder.authoring import glossary

    assert not glossary.stale(), "run: python -m autograder.authoring"
    assert "| backpropagation | обратное распространение ошибки | 反向传播 |" in glossary.page()
    for english, words in glossary.terms().items():  # every term in every edition: no empty cell on the page
        assert set(words) == set(TRANSLATED) and all(word for word, _ in words.values()), (english, words)


RUSSIAN = (
    "Вы напишете вручную градиент функции потерь по каждому промежуточному тензору двухслойной сети. "
    "Autograd в PyTorch вычисляет те же градиенты, так что после каждой группы вы можете проверить себя."
)
CHINESE = (
    "你将亲手写出损失函数对两层网络中每一个中间张量的梯度。PyTorch 的 autograd 会计算同样的梯度，方便你在每组之后自查。"
)


def _translated(nb, text: str):
    """The notebook with every piece of words replaced by ``text``."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        translate = translate_markdown if cell.cell_type == "markdown" else translate_code
        cell.source = translate(cell.source, lambda _: text)
    return nb


@pytest.mark.parametrize("text, edition", [(RUSSIAN, "ru"), (CHINESE, "zh")])
def test_a_submissions_edition_is_read_from_its_words(text, edition):
    from autograder.common.edition_text import edition_of

    english = nbformat.read(RELEASE / "ex2_cross_entropy_backward.ipynb", as_version=4)
    assert edition_of(english) == "en"
    translated = _translated(english, text)
    assert edition_of(translated) == edition
    translated.metadata.clear()  # a Colab round trip drops the notebook's own metadata: the words stay
    assert edition_of(translated) == edition
    # an English notebook with a student's note in another language stays English
    noted = nbformat.from_dict(english)
    noted.cells.append(nbformat.v4.new_markdown_cell(text))
    assert edition_of(noted) == "en"


def test_letters_written_as_escapes_count_as_the_words_they_are():
    """A notebook without 20 Cyrillic or Chinese characters in its cells is read from its metadata without parsing
    its code; letters written as escapes in a string (\\u0416) are still counted, as the string's words."""
    from autograder.common.edition_text import edition_of

    nb = nbformat.read(RELEASE / "ex2_cross_entropy_backward.ipynb", as_version=4)
    nb.metadata[METADATA] = {"edition": "ru"}
    assert edition_of(nb) == "ru"  # hardly any Russian text: the metadata decides
    nb.cells.append(nbformat.v4.new_code_cell('note = "' + "\\u0416" * 30 + '"'))
    assert edition_of(nb) == "en"  # 30 Cyrillic letters among thousands of Latin ones: English


@pytest.mark.parametrize("code", ["ru", "zh"])
def test_every_notebook_of_an_edition_is_read_as_that_edition(code):
    from autograder.common.edition_text import edition_of

    for path in sorted((REPO / "editions" / code).rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        nb.metadata.clear()  # as Colab hands it back
        assert edition_of(nb) == code, path


@pytest.mark.parametrize("code", ["ru", "zh"])
def test_every_message_is_translated_and_keeps_what_it_must(code):
    from autograder.authoring.catalog_checks import problems

    # every catalog at once: a reworded hint and a reworded paragraph once showed only grader.po's message open, and
    # notebooks.po's only after it was translated and the module run again
    found = {domain: problems(code, domain) for domain in catalogs.DOMAINS}
    said = [
        f"autograder/locale/{code}/{d}.po: {len(p)} messages to translate or mend, e.g. {p[:3]}"
        for d, p in found.items()
        if p
    ]
    assert not said, (
        "; ".join(said) + f"; list them with .venv/bin/python -m autograder.authoring.catalog_checks {code}, edit the "
        ".po (docs/translating.md), then run .venv/bin/python -m autograder.authoring to write editions/"
    )


def test_catalog_checks_exits_1_while_a_message_is_open_and_the_authoring_command_says_what_is_open(
    monkeypatch, capsys
):
    """A maintainer (or a script) can rely on the exit status; the authoring command, which writes the editions with
    the English in place of what is missing, ends by saying so."""
    from autograder.authoring import __main__ as authoring
    from autograder.authoring import catalog_checks

    monkeypatch.setattr("sys.argv", ["catalog_checks"])
    monkeypatch.setattr(catalog_checks, "problems", lambda code, domain: [])
    assert catalog_checks.main() == 0
    authoring._say_what_is_left_to_translate()
    assert "to translate" not in capsys.readouterr().out
    open_message = [("d{name} is wrong", "not translated")]
    monkeypatch.setattr(catalog_checks, "problems", lambda code, domain: open_message if domain == "grader" else [])
    assert catalog_checks.main() == 1
    authoring._say_what_is_left_to_translate()
    out = capsys.readouterr().out
    assert "to translate or mend: 1 messages in autograder/locale/ru/grader.po" in out
    assert "show the English" in out and "catalog_checks" in out


def test_catalog_checks_says_where_each_open_message_is(monkeypatch, capsys):
    """A maintainer who reworded a hint read "'d{name} has shape ... (of size 1) is missi': not translated": a message
    cut in the middle of a word, and no line of the catalog to find it at. Each open message now starts with the file
    and its line (file:line, which an editor opens), and a cut one ends with an ellipsis."""
    from autograder.authoring import catalog_checks

    message = next(m for m in catalogs.read("ru", "grader") if m.id and len(m.id if isinstance(m.id, str) else "") > 90)
    monkeypatch.setattr("sys.argv", ["catalog_checks", "ru"])
    found = [(message.id, "not translated")]
    monkeypatch.setattr(catalog_checks, "problems", lambda code, domain: found if domain == "grader" else [])
    assert catalog_checks.main() == 1
    line = next(line for line in capsys.readouterr().out.splitlines() if "not translated" in line)
    # (quoted as Python quotes it: in double quotes when the message has an apostrophe, "a row's max")
    assert line.startswith(f"  autograder/locale/ru/grader.po:{message.lineno}: {message.id[:89] + '…'!r}"), line
    source = (REPO / "autograder" / "locale" / "ru" / "grader.po").read_text().splitlines()
    assert source[message.lineno - 1].startswith("msgid"), source[message.lineno - 1]


@pytest.mark.parametrize("code", ["ru", "zh"])
def test_an_editions_notebooks_are_the_english_ones_in_other_words(code):
    """The committed editions, not a pseudo-translation: the same cells, grade ids, points and code."""
    fix = "editions/ is stale: run .venv/bin/python -m autograder.authoring"
    for english_path in sorted(RELEASE.glob("*.ipynb")) + sorted((REPO / "course").glob("*.ipynb")):
        folder = "backprop_ninja" if english_path.parent == RELEASE else "course"
        english = nbformat.read(english_path, as_version=4)
        edition = nbformat.read(REPO / "editions" / code / folder / english_path.name, as_version=4)
        assert [c.cell_type for c in edition.cells] == [c.cell_type for c in english.cells], (
            f"{english_path.name}: {fix}"
        )
        assert [c.metadata.get("nbgrader") for c in edition.cells] == [
            c.metadata.get("nbgrader") for c in english.cells
        ], f"{english_path.name}: {fix}"
        for ours, theirs in zip(english.cells, edition.cells):
            if ours.cell_type == "code":
                assert _code_without_words(ours.source) == _code_without_words(theirs.source), (
                    f"{english_path.name}: {fix}"
                )


def test_a_note_that_both_term_lists_give_is_on_the_glossary_page_once():
    from autograder.authoring import glossary

    row = next(line for line in glossary.page().splitlines() if line.startswith("| kink (of ReLU) |"))
    assert row.count("where the derivative jumps") == 1, row


# a check's line that names what it is about before a colon: "✘ dprobs: not answered yet"
CHECK_LINE = re.compile(r"""print\(f["']([✔✘]) \{[^{}]+\}([:：])""")


@pytest.mark.parametrize("code, colon", [("zh", "："), ("ru", ":")])
def test_a_checks_line_puts_the_editions_colon_after_what_it_names(code, colon):
    """The Chinese self-checks printed "✘ dprobs: 尚未作答" with the English colon, where every other Chinese line
    has the full-width one: the line ``f"✘ {name}: {problem}"`` holds no words, so no catalog held it."""
    found = {}
    notebooks = sorted((REPO / "editions" / code).rglob("*.ipynb"))
    for path in notebooks:
        for cell in nbformat.read(path, as_version=4).cells:
            for mark, after in CHECK_LINE.findall(cell.source):
                found.setdefault(after, set()).add(path.name)
    assert found and set(found) == {colon}, found
    assert code_pieces('print(f"✘ {name}: {problem}")') and not code_pieces('print(f"{a} {b}")')


@pytest.mark.parametrize(
    "code, joined", [("en", "; counts feeds 2 lines"), ("ru", "; counts входит"), ("zh", "；counts 进入")]
)
def test_a_hint_of_two_sentences_is_joined_in_the_editions_punctuation(code, joined):
    """The self-check's hint for a wrong dcounts read "...重新推导局部导数; counts 进入前向传播的 2 行"
    in Chinese: the helper joined its two sentences with "; ", outside every catalog."""
    import contextlib
    import io

    import torch

    from autograder.authoring import SOURCE_DIR
    from autograder.common.naming import SETUP_PREFIX, grade_id
    from autograder.engine.reference import run_setup, strip_hidden

    setup = [c.source for c in nbformat.read(SOURCE_DIR / "ex1_atomic_backward.ipynb", as_version=4).cells]
    folder = RELEASE if code == "en" else REPO / "editions" / code / "backprop_ninja"
    cells = nbformat.read(folder / "ex1_atomic_backward.ipynb", as_version=4).cells
    namespace = dict(run_setup(tuple(s for s, c in zip(setup, cells) if grade_id(c).startswith(SETUP_PREFIX)), 1))
    exec(strip_hidden(next(c.source for c in cells if grade_id(c) == "self_check_helpers")), namespace)
    grad = namespace["counts"].grad
    namespace["dcounts"] = grad + grad.abs().max() * torch.linspace(0, 1, grad.numel()).view(grad.shape)  # no rule
    with contextlib.redirect_stdout(io.StringIO()) as out:
        namespace["self_check"]("counts")
    assert joined in out.getvalue(), out.getvalue()


@pytest.mark.parametrize("code", TRANSLATED)
def test_a_lecture_chapter_keeps_its_english_title_with_the_editions_beside_it(code):
    """The glossary's rule for the video's chapters: the English title, in italics, then its translation in brackets.
    Exercise 5's list gave two titles with no translation, in Russian and in Chinese."""
    from autograder.authoring.lecture import CHAPTERS

    bare = []
    for path in sorted((REPO / "editions" / code / "backprop_ninja").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for _, title in CHAPTERS:
                for found in re.finditer(re.escape(f"*{title}*"), cell.source):
                    if not cell.source[found.end() :].startswith((" (", "（")):
                        bare.append((path.stem, title))
    assert bare == []


@pytest.mark.parametrize("code", TRANSLATED)
def test_a_progress_bar_speaks_the_editions_words(code):
    """What tqdm shows beside its bar is words: a one-word English desc ("training") is not taken for words by the
    extraction, and a keyword's name (set_postfix(loss=...)) is not extracted at all, so neither may stand there."""
    shown, keywords = [], []
    for path in sorted((REPO / "editions" / code / "backprop_ninja").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and "tqdm" in cell.source:
                for node in ast.walk(ast.parse(cell.source)):
                    name = getattr(node, "func", None) and getattr(node.func, "attr", getattr(node.func, "id", ""))
                    if name == "tqdm":
                        shown += [ast.literal_eval(k.value) for k in node.keywords if k.arg == "desc"]
                    elif name == "set_postfix_str":
                        shown += [ast.unparse(node.args[0])]
                    elif name == "set_postfix":
                        keywords += [k.arg for k in node.keywords]
    assert shown and not keywords and all(not text.isascii() for text in shown), (shown, keywords)


@pytest.mark.parametrize("code", TRANSLATED)
def test_the_colab_badge_table_is_titled_in_the_editions_words(code):
    """The first table of an edition's course guide, where a student opens the notebooks, had English column titles."""
    guide = (REPO / "editions" / code / "course" / "README.md").read_text().splitlines()
    head = guide[guide.index("<!-- colab-badges -->") + 1]
    assert head.count(" | ") == 1 and "notebook" not in head and not head.replace("Colab", "").isascii(), head

"""The feedback pages' exporter gives the page nbconvert's HTMLExporter gives, without its BeautifulSoup pass, and with
what makes it accessible (its language and last styles; tests/fast/test_accessibility.py checks them)."""

import base64
import copy
import sys

import nbformat
from bs4 import BeautifulSoup
from nbconvert.exporters import HTMLExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from nbgrader.converters import GenerateFeedback
from nbgrader.coursedir import CourseDirectory
from support.course import REPO
from traitlets.config import Config

from autograder.preprocessors import FeedbackExporter, feedback_exporter
from autograder.preprocessors.feedback_exporter import (
    COMPILED_TEMPLATES,
    NBGRADER_TEMPLATES,
    NO_ALT,
    PAGE_STYLE,
    TEMPLATES,
    CellsMade,
    RememberingHighlight,
    localize,
)
from autograder.preprocessors.safe_html import clean_html, page_names

WIDGET = {"model_id": "0a1b", "version_major": 2, "version_minor": 0}
PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a")).decode()
DATA = f"data:image/png;base64,{PNG}"
RELEASE = REPO / "release" / "backprop_ninja"


def tree(html: str):
    """The page as (tag, attributes, children) and text, however its attributes were ordered or quoted."""

    def walk(node):
        if node.name is None:
            return str(node)
        attrs = {k: " ".join(v) if isinstance(v, list) else v for k, v in node.attrs.items()}
        return node.name, sorted(attrs.items()), [walk(child) for child in node.children]

    return walk(BeautifulSoup(html, "html.parser"))


def feedback_notebook():
    graded = new_code_cell(
        "assert dC.shape == C.shape",
        metadata={"nbgrader": {"grade": True, "grade_id": "test_dC", "locked": True, "points": 1, "score": 1}},
    )
    code = new_code_cell("plt.plot(losses)  # <img> in code is text", execution_count=3)
    code.outputs = [
        new_output("stream", name="stdout", text="loss 2.31 <not a tag>\n"),
        new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
        new_output("display_data", data={"text/html": f'<img src="{DATA}" alt="mine"><IMG\nsrc={DATA}>'}),
        new_output("execute_result", data={"text/plain": "tensor(2.31)"}, execution_count=3),
        # tqdm.auto's progress bar, as Exercise 4 shows it in Jupyter: a widget without its saved state
        new_output("display_data", data={"application/vnd.jupyter.widget-view+json": WIDGET, "text/plain": "100%"}),
    ]
    return new_notebook(
        cells=[new_markdown_cell(f"# Exercise 4\nThe *loss* falls: ![]({DATA})"), code, graded],
        metadata={"language_info": {"name": "python", "pygments_lexer": "ipython3"}},
    )


def feedback_converter(folder):
    """nbgrader's GenerateFeedback, with this exporter, as nbgrader_config.py sets it."""
    config = Config()
    config.GenerateFeedback.exporter_class = FeedbackExporter
    return GenerateFeedback(coursedir=CourseDirectory(root=str(folder)), config=config)


def page_resources(notebook: str) -> dict:
    """What nbgrader's GetGrades and the page's styles leave in the resources of a page: 1 of 2 points."""
    return {"nbgrader": {"notebook": notebook, "score": 1, "max_score": 2, "late_penalty": 0}, "inlining": {"css": []}}


def test_the_feedback_page_is_html_exporters_own(tmp_path):
    converter = feedback_converter(tmp_path)
    resources = page_resources("ex4_manual_training")
    notebook, pages = feedback_notebook(), []
    ours = FeedbackExporter(parent=converter, config=converter.config)
    theirs = HTMLExporter(  # with our template, as ours chooses it in place of nbgrader's
        parent=converter,
        config=converter.config,
        template_name="feedback_page",
        extra_template_basedirs=ours.extra_template_basedirs,
        extra_template_paths=ours.extra_template_paths,
    )
    assert ours.template_name == "feedback_page"  # in place of nbgrader's "feedback", which it extends
    assert ours.extra_template_basedirs[-1] == str(TEMPLATES)
    assert ours.extra_template_paths[-1] == str(NBGRADER_TEMPLATES)
    for exporter in (ours, theirs):
        nb, exporter_resources = nbformat.from_dict(copy.deepcopy(notebook)), copy.deepcopy(resources)
        if exporter is theirs:
            localize(theirs, nb, exporter_resources)  # the words our template asks for, as ours gives them
        html, _ = exporter.from_notebook_node(nb, exporter_resources)
        pages.append(html)
    ours, theirs = pages
    assert (
        converter.exporter_class is FeedbackExporter and "<h4>Exercise 4: 1 of 2 points</h4>" in ours
    )  # the notebook's title
    assert 'Graded cell <code>dC</code></span><span class="pull-right">Score: 1 / 1' in ours  # the step, not its id
    assert "<title>Exercise 4</title>" in ours
    assert "Test cell" not in ours  # nbgrader's list of links, which the summary table replaces
    # nbgrader's page, with the cells in one <main> of its own <body>: not in a second <body> with the same ids
    for tag in ("body", "main"):
        assert len(BeautifulSoup(ours, "html.parser").find_all(tag)) == 1, tag
    ids = [e["id"] for e in BeautifulSoup(ours, "html.parser").find_all(id=True)]
    assert len(ids) == len(set(ids)) and "notebook-container" in ids
    # ours, less the page's language, its title (the notebook's, not its file name) and its last styles, is
    # HTMLExporter's page
    soup = BeautifulSoup(ours, "html.parser")
    soup.title.string = "ex4_manual_training"
    assert soup.html.attrs.pop("lang") == "en" and "lang" not in BeautifulSoup(theirs, "html.parser").html.attrs
    last_style = soup.head.find_all("style")[-1]
    assert last_style.string == PAGE_STYLE and last_style.find_next_sibling() is None
    last_style.decompose()
    assert tree(str(soup)) == tree(theirs)
    # every image has an alt text: the markdown's (empty here), the student's own, else nbconvert's
    alts = [img.get("alt") for img in BeautifulSoup(ours, "html.parser").find_all("img")]
    assert alts == ["", NO_ALT, "mine", NO_ALT], alts


def test_the_words_around_the_cells_are_in_the_students_language(tmp_path):
    converter = feedback_converter(tmp_path)
    nb = feedback_notebook()
    nb.metadata["backprop_ninja"] = {"edition": "ru"}
    answer = new_code_cell("dW2 = h.T @ dlogits")
    answer.metadata.nbgrader = {"solution": True, "grade": False, "grade_id": "answer_dW2", "comment": "Хорошо"}
    nb.cells.append(answer)
    resources = page_resources("ex1_atomic_backward")
    page, _ = FeedbackExporter(parent=converter, config=converter.config).from_notebook_node(nb, resources)
    text = " ".join(BeautifulSoup(page, "html.parser").get_text(" ").split())
    for words in ("Exercise 4: 1 из 2 баллов", "Оцениваемая ячейка dC", "Баллы: 1 / 1", "(наверх)"):
        assert words in text, words
    assert "Ваш ответ" in text and "Комментарии:" in text and "Хорошо" in text
    for english in ("Score", "Student's answer", "Grade cell", "Test cell", "(Top)", "Comments:"):
        assert english not in text, english


def test_a_page_made_from_what_an_earlier_page_remembered_is_the_same_page(tmp_path, monkeypatch):
    """Each worker remembers the cells it highlighted or rendered and the templates it compiled, for the next
    students: their pages are the pages made from nothing, and what it remembers stays within a bound."""
    converter = feedback_converter(tmp_path)
    resources = page_resources("ex4_manual_training")
    notebook = feedback_notebook()

    def page():
        exporter = FeedbackExporter(parent=converter, config=converter.config)  # one a student, as nbgrader makes it
        return exporter.from_notebook_node(copy.deepcopy(notebook), copy.deepcopy(resources))[0]

    monkeypatch.setattr(feedback_exporter, "CELLS_MADE", CellsMade(2**20))
    monkeypatch.setattr(COMPILED_TEMPLATES, "compiled", {})
    first = page()
    made = dict(feedback_exporter.CELLS_MADE.made)
    assert sorted(key[0] for key in made).count("highlight") == 2  # the two code cells
    assert "markdown" in {key[0] for key in made} and COMPILED_TEMPLATES.compiled
    assert page() == first and feedback_exporter.CELLS_MADE.made == made  # nothing made again
    plain = Highlight2HTML(pygments_lexer="ipython3")
    for key, html in made.items():
        assert key[0] != "highlight" or html == plain(key[1])
    held = sorted(sys.getsizeof(key[1]) + sys.getsizeof(html) for key, html in made.items())
    monkeypatch.setattr(feedback_exporter, "CELLS_MADE", CellsMade(held[-1] + held[-2] - 1))  # not the two largest
    assert page() == first and 0 < len(feedback_exporter.CELLS_MADE.made) < len(made)


def test_what_the_cells_made_hold_is_bounded_in_bytes(monkeypatch):
    """The bound counts the bytes of the sources and their HTML: a student's cell of 15 Mi characters (string
    literals and an emoji) was kept as 195 Mi characters of HTML, 4 bytes each, that the worker held for the students
    after them."""
    monkeypatch.setattr(feedback_exporter, "CELLS_MADE", CellsMade(200_000))
    highlight = RememberingHighlight(pygments_lexer="ipython3")
    large = ")" + "'\\n'" * 2500 + "#\U0001f600"  # 10,000 characters, 130,000 of HTML
    assert highlight(large) == Highlight2HTML(pygments_lexer="ipython3")(large)
    assert not feedback_exporter.CELLS_MADE.made  # more than the bound: never kept
    for i in range(200):
        highlight(f"x{i} = 'abc' + {i}  # a cell of its own \U0001f600")
    held = sum(sys.getsizeof(key[1]) + sys.getsizeof(html) for key, html in feedback_exporter.CELLS_MADE.made.items())
    assert 0 < held <= 200_000


HOSTILE = (
    '<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">js</a>'
    '<a href="data:text/html,hi">data</a><iframe src="https://example.org"></iframe><b style="position:fixed">b</b>'
)
# Runs nothing, reaches past its cell: classes and ids of the page's, addresses fetched as it opens, a style's value
REACHING = (
    '<div class="modal-backdrop steps-row" id="notebook"><a class="btn" href="/hub/logout">out</a></div>'
    '<h2 id="test_dC">fake</h2><h3 id="answer_x-comment">fake</h3><a href="//evil.example/">x</a>'
    '<img src="/user/instructor/api/contents"><img src="https://tracker.example/p.png">'
    '<table><tr><td style="text-align: expression(alert(1))">c</td></tr></table>\n\n## test_dC\n'
)


def assert_reaches_no_further_than_its_cells(page: str):
    soup = BeautifulSoup(page, "html.parser")
    cells = soup.find(id="notebook-container")
    assert not cells.select(".modal-backdrop, .steps-row, .btn") and "expression" not in str(cells)
    headings = ["h1", "h2", "h3"]
    ids = [heading["id"] for heading in soup.find_all(headings, id=True)]  # none an id or anchor of the page's
    assert ids and not [e for e in soup.find_all(id=ids) if e.name not in headings] + soup.find_all(attrs={"name": ids})
    assert all(a["href"].startswith(("https://", "#")) for a in cells.find_all(href=True)), cells.find_all(href=True)
    assert all(img.get("src", "data:image/").startswith("data:image/") for img in cells.find_all("img"))


def test_nothing_a_submission_displays_or_writes_in_markdown_runs_in_its_page(tmp_path):
    """Every output came from a kernel that ran the student's code, and a student may edit any markdown cell: the page
    holds their HTML cleaned (scripts and handlers shown as text or left out) and no script output, while what
    markdown makes stays (headings, links, images in data: addresses)."""
    converter = feedback_converter(tmp_path)
    nb = feedback_notebook()
    nb.cells[1].outputs += [
        new_output("display_data", data={"text/html": HOSTILE}),
        new_output("display_data", data={"text/markdown": HOSTILE}),
        new_output("display_data", data={"application/javascript": "alert(4)"}),
        new_output(
            "display_data", data={"image/svg+xml": '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(5)"/>'}
        ),
    ]
    nb.cells.append(new_markdown_cell(f"## Mine\n{HOSTILE}\n[ok](https://example.org) ![p]({DATA})"))
    nb.cells.append(new_markdown_cell(REACHING))
    nb.cells[1].outputs.append(new_output("display_data", data={"text/html": REACHING}))
    page, _ = FeedbackExporter(parent=converter, config=converter.config).from_notebook_node(
        nb, page_resources("ex4_manual_training")
    )
    cells = BeautifulSoup(page, "html.parser").find(id="notebook-container")
    assert not cells.find_all(["script", "iframe", "svg"])
    for element in cells.find_all(True):
        assert not [name for name in element.attrs if name.startswith("on") or name == "style"], element
        for name in ("href", "src"):
            address = element.get(name, "").lower()
            assert not address.startswith(("javascript:", "data:text")), element
    assert cells.get_text().count("<script>alert(1)</script>") == 3  # the HTML output, the markdown one, the cell
    assert "alert(4)" not in page
    assert cells.find(href="https://example.org") and cells.find("img", src=DATA, alt="p") and cells.find(id="Mine")
    assert_reaches_no_further_than_its_cells(page)


def test_cleaning_changes_nothing_the_course_itself_writes_in_markdown():
    """The course's markdown cells, in every edition, as HTMLExporter renders them: the cleaning keeps them as they
    are, so an honest student's page is the page made without it."""
    exporter = HTMLExporter()
    for path in sorted(RELEASE.glob("*.ipynb")) + sorted((REPO / "editions").glob("*/backprop_ninja/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                html = exporter.markdown2html({"cell": cell, "resources": {}}, cell.source)
                assert clean_html(html, page_names(nb)) == html, (path.name, cell.source[:80])


def test_the_formgraders_pages_show_the_staff_no_script_a_submission_put_there():
    """nbgrader's Formgrader shows a submission with an HTMLExporter made from the course's nbgrader_config.py and
    its own template, which renders markdown cells without cleaning them: the configuration cleans them and the
    outputs, as the feedback pages are."""
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config()
    config.HTMLExporter.template_name = "formgrade"  # as nbgrader's FormgradeExtension sets them
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    answer = new_code_cell("x = 1", metadata={"nbgrader": {"solution": True, "grade_id": "answer_x", "locked": False}})
    answer.metadata.nbgrader.update(grade=False)
    answer.outputs = [new_output("display_data", data={"text/html": html}) for html in (HOSTILE, REACHING)]
    nb = new_notebook(
        cells=[new_markdown_cell(f"# Exercise\n{HOSTILE}"), new_markdown_cell(REACHING), answer],
        metadata={"language_info": {"name": "python"}},
    )
    shown = dict.fromkeys(("assignment_id", "notebook_id", "submission_id", "student", "first_name", "last_name"), "x")
    shown.update(index=0, total=1, base_url="/", notebook_path="x.ipynb")
    page, _ = HTMLExporter(config=config).from_notebook_node(nb, resources=shown)
    cells = BeautifulSoup(page, "html.parser").find(id="notebook-container")
    assert not cells.find_all(["script", "iframe"]) and "onerror" not in str(cells)
    assert cells.get_text().count("<script>alert(1)</script>") == 2 and cells.find("h1").get_text().startswith("Ex")
    assert_reaches_no_further_than_its_cells(page)


def test_an_images_size_from_the_kernel_adds_no_attribute_to_its_tag(tmp_path):
    """nbconvert writes an image's width and height into its tag unquoted, and its file name as its address: the
    kernel chose them (display(..., metadata=...)). SafeOutputMetadata, at autograde and before each feedback page,
    keeps sizes that are numbers and no file name."""
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.preprocessors import SafeOutputMetadata

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config()
    assert SafeOutputMetadata in config.Autograde.autograde_preprocessors
    assert SafeOutputMetadata in config.GenerateFeedback.preprocessors
    nb = feedback_notebook()
    forged = {"width": "1 onerror=alert(1)", "height": 2}
    nb.cells[1].outputs += [
        new_output("display_data", data={"image/png": PNG}, metadata={"image/png": forged}),
        new_output("display_data", data={"image/jpeg": PNG}, metadata={"height": "3 onload=alert(2)", "width": 4.5}),
        new_output("display_data", data={"image/png": PNG}, metadata={"filenames": {"image/png": "javascript:x"}}),
    ]
    nb, _ = SafeOutputMetadata().preprocess(nb, {})
    converter = feedback_converter(tmp_path)
    page, _ = FeedbackExporter(parent=converter, config=converter.config).from_notebook_node(
        nb, page_resources("ex4_manual_training")
    )
    cells = BeautifulSoup(page, "html.parser").find(id="notebook-container")
    for element in cells.find_all(True):
        assert not [name for name in element.attrs if name.startswith("on")], element
    assert "javascript:" not in str(cells)
    assert cells.find("img", height="2") and cells.find("img", width="4.5")  # the sizes that are numbers stay


def mathjax_sources(page: str) -> list:
    return [s["src"] for s in BeautifulSoup(page, "html.parser").find_all("script", src=True) if "mathjax" in s["src"]]


def test_the_math_a_student_writes_makes_no_link_that_runs_a_script(tmp_path):
    """MathJax turns ``\\href{javascript:...}{text}`` in a student's markdown into a link that runs in the page's origin
    (the staff's Jupyter server, in the Formgrader) when clicked. Both pages load MathJax 2 with its Safe extension,
    which keeps only http(s), file and relative links (nbgrader's templates call nbconvert's ``mathjax()`` macro with
    its default address: ``HTMLExporter.mathjax_url`` does not reach them). The pages' own MathJax configuration sets
    nothing of Safe's. No MathJax runs offline in the tests' browser, so this checks the configuration."""
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config.loader import PyFileConfigLoader

    math = new_markdown_cell(r"$\href{javascript:alert(1)}{x}$")
    nb = new_notebook(cells=[math], metadata={"language_info": {"name": "python"}})
    converter = feedback_converter(tmp_path)
    feedback, _ = FeedbackExporter(parent=converter, config=converter.config).from_notebook_node(
        nb, page_resources("ex1_atomic_backward")
    )
    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    shown = dict.fromkeys(("assignment_id", "notebook_id", "submission_id", "student", "first_name", "last_name"), "x")
    shown.update(index=0, total=1, base_url="/", notebook_path="x.ipynb")
    formgrader, _ = HTMLExporter(config=config).from_notebook_node(nb, resources=shown)
    for page in (feedback, formgrader):
        (source,) = mathjax_sources(page)
        assert source.startswith("https://cdnjs.cloudflare.com/ajax/libs/mathjax/2."), source
        assert "Safe" in source.split("config=", 1)[1].split("&")[0].split(","), source
        assert "safeProtocols" not in page and "Safe:" not in page  # Safe's own defaults: no javascript:, no data:

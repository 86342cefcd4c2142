"""The students' feedback pages: nbconvert's HTMLExporter without its last pass through BeautifulSoup, made readable
by everyone.

That pass only added alt texts to images, done here with the same words, and tabindexes to JupyterLab cells, which
nbgrader's classic feedback template has none of (docs/design/nbgrader-seams.md; what it saves:
docs/performance.md). What nbgrader's template and nbconvert's sanitizer leave out for WCAG 2.1 AA is added here: the
page's language, the ARIA roles of the table of steps, and styles over nbgrader's and Bootstrap's where their colours
are too faint (docs/design/accessibility.md).
"""

import functools
import html as html_text
import re
import sys
from pathlib import Path

import jinja2
import nbgrader
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from traitlets import Bool, observe

from ..common.editions import edition, notebook_edition
from ..common.words import say, say_n
from .safe_html import clean_html, page_names
from .summarize_steps import ROLES

TEMPLATES = Path(__file__).parent / "templates"  # feedback_page: nbgrader's feedback template with one <body>
NBGRADER_TEMPLATES = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"
NO_ALT = "No description has been provided for this image"  # HTMLExporter's own words
IMAGE_WITHOUT_ALT = re.compile(r"<img(?![^>]*\salt=)(?=[\s/>])", re.IGNORECASE)
HTML_TAG = re.compile(r"<html\b[^>]*>", re.IGNORECASE)  # the template's first: nbgrader's has no lang
TITLE_TAG = re.compile(r"<title>[^<]*</title>")  # nbgrader's header names the page by the notebook's file name
CLASSED_DIV = re.compile(r'<div class="([^"]*)">')  # as the sanitizer writes the table's <div>s

# The page's last styles, over Bootstrap 3's and nbgrader's (every pair of colours at least 4.5:1,
# tests/fast/test_accessibility.py).
PAGE_STYLE = """
a { text-decoration: underline; }  /* links in text are told apart by more than their colour */
a:focus-visible { outline: 3px solid #1d4f91; outline-offset: 2px; }
div.nbgrader_cell .panel-heading a { color: #fff; }  /* nbgrader's #bbb on the panel's blue: 2.4:1 */
pre { background-color: #fff; white-space: pre-wrap; overflow-wrap: anywhere; }  /* Pygments' colours need white;
   long lines wrap: no region scrolls sideways, out of the keyboard's reach, and the page reflows when zoomed */
"""


def page_language(nb) -> str:
    """The BCP 47 tag of the language of the edition the student handed in (English when it is not known: the
    metadata came with the student's notebook, and may be anything)."""
    return edition(notebook_edition(nb.metadata)).html_lang


def with_roles(page: str) -> str:
    """The page with the ARIA role of every <div> whose class has one in ROLES."""

    def add(match):
        role = next((ROLES[name] for name in match[1].split() if name in ROLES), None)
        return match[0] if role is None else f'<div class="{match[1]}" role="{role}">'

    return CLASSED_DIV.sub(add, page)


def _number(value) -> str:
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return "?"


def notebook_title(nb) -> str | None:
    """The notebook's title, in its edition's language: the first line of its first markdown cell, when a heading."""
    first = next((cell.source.strip() for cell in nb.cells if cell.cell_type == "markdown"), "")
    line = first.splitlines()[0] if first else ""
    return (line[2:].strip() or None) if line.startswith("# ") else None


def page_heading(resources: dict, code: str, title: str | None) -> str:
    """The page's heading, in the language of edition ``code``: the notebook (its ``title`` if it has one) and its
    score (nbgrader's GetGrades puts them in ``resources`` as the page is made)."""
    scores = resources.get("nbgrader", {})
    heading = say_n(
        "{notebook}: {score} of {count:g} point",
        "{notebook}: {score} of {count:g} points",
        float(_number(scores.get("max_score")).replace("?", "0")),  # (nbgrader always gives it)
        notebook=title or scores.get("notebook", ""),
        score=_number(scores.get("score")),
    )
    return html_text.escape(heading.render(code))


def cell_heading(cell, code: str) -> str:
    """The heading over an answer, graded or task cell, in the language of edition ``code``: the anchors the page's
    links go to, what the cell is, its score and a link to the top of the page."""
    meta = cell.metadata.nbgrader
    grade_id = html_text.escape(str(meta.get("grade_id", "")))
    anchors = f'<a name="comment-{grade_id}"></a>' if meta.get("solution") or meta.get("task") else ""
    anchors += f'<a name="{grade_id}"></a>' if meta.get("grade") else ""
    if meta.get("solution"):
        label = say("Your answer")
    elif meta.get("task"):
        label = say("Your task")
    else:
        shown = grade_id.removeprefix("test_")  # the step it grades: test_dW2 grades dW2
        label = say("Graded cell {name}", name=f"<code>{shown}</code>")
    right = f'<a href="#top">{say("(top)").render(code)}</a>'
    if meta.get("grade") or meta.get("task"):
        score = say("Score: {score} / {points}", score=_number(meta.get("score")), points=_number(meta.get("points")))
        right = f"{score.render(code)} {right}"
    label = f'<span class="nbgrader-label">{label.render(code)}</span>'
    return f'{anchors}<div class="panel-heading">{label}<span class="pull-right">{right}</span></div>'


def localize(exporter: HTMLExporter, nb, resources: dict) -> None:
    """What the feedback_page template needs to speak the language of the student's edition, given to ``exporter``."""
    code = notebook_edition(nb.metadata)
    heading = functools.partial(page_heading, code=code, title=notebook_title(nb))
    exporter.register_filter("page_heading", heading)
    exporter.register_filter("cell_heading", functools.partial(cell_heading, code=code))
    resources["page_words"] = {"comments": say("Comments:").render(code)}


class CompiledTemplates(jinja2.BytecodeCache):
    """The templates, compiled once for the process: nbgrader makes an exporter for each student, and each compiled
    them all anew (0.16 s a student). Jinja checks each one's source against what it was compiled from."""

    def __init__(self):
        self.compiled = {}

    def load_bytecode(self, bucket) -> None:
        if bucket.key in self.compiled:
            bucket.bytecode_from_string(self.compiled[bucket.key])

    def dump_bytecode(self, bucket) -> None:
        self.compiled[bucket.key] = bucket.bytecode_to_string()


COMPILED_TEMPLATES = CompiledTemplates()


class CellsMade:
    """The HTML made from cells' sources, kept for the process: most cells are the course's, the same in every
    student's notebook, and highlighting their code and rendering their markdown were a third of a feedback page's
    time. Keyed by the source and all else the HTML depends on; at most ``limit`` bytes of sources and HTML (as
    sys.getsizeof counts them), then anew, and an HTML larger than that is never kept: a student's cell of 15 Mi
    characters was highlighted as 195 Mi characters of HTML, 4 bytes each, that the worker held for the students
    after them (an attacker's review measured 3.7 GiB at the peak, 1.4 GiB held after)."""

    def __init__(self, limit: int):
        self.made, self.held, self.limit = {}, 0, limit

    def get(self, key: tuple, source: str, make) -> str:
        made = self.made.get(key)
        if made is None:
            made = make()
            size = sys.getsizeof(source) + sys.getsizeof(made)
            if size > self.limit:
                return made
            if self.held + size > self.limit:
                self.made.clear()
                self.held = 0
            self.made[key], self.held = made, self.held + size
        return made


CELLS_MADE = CellsMade(32 * 2**20)  # the course's locked cells, in its three editions: 3.6 MB


class RememberingHighlight(Highlight2HTML):
    """Highlight2HTML through ``CELLS_MADE``: Pygments' HTML depends on the source, the language and the formatter's
    options alone."""

    def __call__(self, source, language=None, metadata=None):
        magics = metadata.get("magics_language") if metadata else None
        options = repr(sorted(self.extra_formatter_options.items()))
        key = ("highlight", source, language or self.pygments_lexer, magics, options)
        return CELLS_MADE.get(
            key, source, lambda: super(RememberingHighlight, self).__call__(source, language, metadata)
        )


class FeedbackExporter(HTMLExporter):
    """HTMLExporter, for nbgrader's GenerateFeedback (``exporter_class`` in nbgrader_config.py)."""

    sanitize_html = Bool(True, help="Clean the HTML of outputs and markdown (safe_html.py); no script output").tag(
        config=True
    )

    def _create_environment(self):
        environment = super()._create_environment()
        environment.bytecode_cache = COMPILED_TEMPLATES
        # its own, over those nbgrader_config.py gives every HTMLExporter (safe_html): they clean already
        environment.filters.update(markdown2html=self.markdown2html, clean_html=clean_html)
        return environment

    @jinja2.pass_context
    def markdown2html(self, context, source):
        """HTMLExporter's, cleaned (``safe_html``), through ``CELLS_MADE`` for a cell without attachments when images
        are not embedded (its HTML then depends on the source and the exporter's settings alone)."""
        names = page_names(context.get("nb", {}))  # the ids its headings may not take
        make = lambda: clean_html(super(FeedbackExporter, self).markdown2html(context, source), names)
        if context.get("cell", {}).get("attachments") or self.embed_images:
            return make()
        options = (self.anchor_link_text, self.exclude_anchor_links, repr(sorted(self.lexer_options.items())))
        return CELLS_MADE.get(("markdown", source, names, *options), source, make)

    @observe("template_name", "extra_template_basedirs", "extra_template_paths")
    def _one_body(self, change):
        """nbgrader's feedback template, which GenerateFeedback sets in its config after this exporter is made (unless
        the course configures another), becomes ours, which extends it (found from nbgrader's template folder)."""
        if self.template_name == "feedback":
            self.template_name = "feedback_page"
        if self.template_name != "feedback_page":
            return
        for trait, folder in (("extra_template_basedirs", TEMPLATES), ("extra_template_paths", NBGRADER_TEMPLATES)):
            if str(folder) not in getattr(self, trait):
                setattr(self, trait, [*getattr(self, trait), str(folder)])

    def from_notebook_node(self, nb, resources=None, **kw):
        # What HTMLExporter sets up before it renders: the code highlighter of the notebook's language, and the
        # choice of each output's richest type
        language = nb.metadata.get("language_info", {})
        lexer = language.get("pygments_lexer", language.get("name"))
        resources = self._init_resources(resources)
        highlight = self.filters.get("highlight_code", RememberingHighlight(pygments_lexer=lexer, parent=self))
        self.register_filter("highlight_code", highlight)
        types = WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self, resources=resources)
        self.register_filter("filter_data_type", types)
        localize(self, nb, resources)
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        html = HTML_TAG.sub(f'<html lang="{page_language(nb)}">', html, count=1)
        if title := notebook_title(nb):
            html = TITLE_TAG.sub(lambda _: f"<title>{html_text.escape(title)}</title>", html, count=1)
        html = html.replace("</head>", f'<style type="text/css">{PAGE_STYLE}</style>\n</head>', 1)
        return with_roles(IMAGE_WITHOUT_ALT.sub(f'<img alt="{NO_ALT}"', html)), resources

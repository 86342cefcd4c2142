"""The HTML of a feedback page that a submission controls, cleaned: every output (the student's code ran before each
one, and can display any HTML, markdown or script) and every markdown cell (none of the course's is locked, so a
student may edit any). A page is opened by the student and by the course's staff, maybe in a browser logged in to
their Jupyter server, where a script could act as them.

nbconvert's own cleaning (``HTMLExporter.sanitize_html``, which ``FeedbackExporter`` turns on: no script output, no
widget) keeps too few tags for rendered markdown: it would escape paragraphs, headings, images and table headers into
text. This keeps what markdown makes, and tags and attributes that run nothing.

nbgrader's Formgrader shows the autograded notebooks to the course's staff with an ``HTMLExporter`` made from the
course's configuration: nbgrader_config.py turns its cleaning on there too, with these filters.

Outputs also carry metadata the kernel chose, which nbconvert's templates write into an image's tag: its width and
height unquoted (``width=1 onerror=...`` is an attribute more), its file name as the address. ``SafeOutputMetadata``
keeps sizes that are numbers and drops file names, at autograde (the notebook the Formgrader shows) and again
before a feedback page is made.

Attributes that could act on the page around the cells, or on the staff's server, are narrowed to what markdown makes:

- ``class``: only markdown's and Pygments' (``anchor-link`` on a link, ``highlight`` on a ``<div>``, a token's on a
  ``<span>``), never a name of the page's or Bootstrap's (``modal-backdrop``, ``steps-row``) to overlay or fake it
  (the table of steps SummarizeSteps puts at the top is ours: the feedback page shows it uncleaned);
- ``id``: only on a heading (markdown's anchors), and only in a markdown cell, whose notebook is known, when it is
  none of the page's: its template's ids and its graded cells' anchors and fields (``test_dC``, ``comment-…``), which
  a duplicate earlier on the page would take over. Outputs and raw cells keep none;
- ``href``: an absolute ``http(s)://`` address, ``mailto:``, or an anchor on the page (``#…``). No relative or
  same-origin address (``/hub/logout``): a click would act in the staff's logged-in session;
- ``src`` (images): ``data:image/`` only. Any other address, remote ones too, is fetched as the page opens (with the
  staff's cookies, or telling a server who opened it and when); the course's notebooks have no image elsewhere;
- ``style`` (table cells): ``text-align`` left, right or center, as markdown's tables write it (bleach's
  CSSSanitizer checks names, not values: ``text-align: expression(...)`` went through).
"""

import re
from contextvars import ContextVar

import bleach
import jinja2
from bleach.css_sanitizer import CSSSanitizer
from nbgrader.preprocessors import NbGraderPreprocessor
from pygments.token import STANDARD_TYPES
from traitlets.config import LoggingConfigurable

TAGS = frozenset(
    {"a", "abbr", "acronym", "b", "blockquote", "br", "caption", "code", "dd", "del", "details", "div", "dl", "dt"}
    | {"em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "ol", "p", "pre", "q", "s"}
    | {"samp", "small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead"}
    | {"tr", "u", "ul", "var"}
)
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
ATTRIBUTES = {
    "*": {"title"},
    "a": {"href", "class"},
    "div": {"class"},
    "span": {"class"},
    "img": {"src", "alt", "width", "height"},
    "td": {"align", "colspan", "rowspan", "style"},
    "th": {"align", "colspan", "rowspan", "style"},
    "ol": {"start"},
} | {heading: {"id"} for heading in HEADINGS}
CLASSES = {"a": {"anchor-link"}, "div": {"highlight"}, "span": set(STANDARD_TYPES.values()) - {""}}
# The ids and anchors of the pages' templates: nbgrader's feedback page (ours extends it) and the Formgrader's
PAGE_IDS = frozenset({"top", "toc", "notebook", "notebook-container", "statusmessage"})
LINK = re.compile(r"(https?://|mailto:|#)", re.IGNORECASE)
TEXT_ALIGN = re.compile(r"\s*text-align\s*:\s*(left|right|center)\s*;?\s*", re.IGNORECASE)
_PAGE_NAMES: ContextVar[frozenset | None] = ContextVar("page_names", default=None)


def page_names(nb) -> frozenset:
    """The ids and anchor names a page of notebook ``nb`` gives itself: its template's, and those of each graded
    cell's (the feedback page's anchors, the Formgrader's score and comment fields)."""
    metadata = [cell.get("metadata", {}).get("nbgrader") for cell in nb.get("cells", [])]
    grade_ids = {meta.get("grade_id") for meta in metadata if isinstance(meta, dict)}
    made = ("{}", "comment-{}", "{}-comment", "{}_extra_credit")
    return PAGE_IDS | {way.format(g) for g in grade_ids if isinstance(g, str) and g for way in made}


def _allowed(tag: str, name: str, value: str) -> bool:
    """An attribute kept: one of ``ATTRIBUTES``, with a value as the module's docstring says (bleach then checks every
    address's scheme against the protocols)."""
    if name not in ATTRIBUTES["*"] | ATTRIBUTES.get(tag, set()):
        return False
    value = value.strip()
    if name == "href":
        return LINK.match(value) is not None
    if name == "src":
        return value.lower().startswith("data:image/")
    if name == "class":
        return all(one in CLASSES[tag] for one in value.split())
    if name == "id":
        names = _PAGE_NAMES.get()
        return names is not None and value not in names
    if name == "style":
        return TEXT_ALIGN.fullmatch(value) is not None
    return True


CLEANER = bleach.Cleaner(
    tags=TAGS,
    attributes=_allowed,
    protocols=["http", "https", "mailto", "data"],
    strip_comments=True,
    css_sanitizer=CSSSanitizer(allowed_css_properties=["text-align"]),
)


def clean_html(html, names: frozenset | None = None) -> str:
    """``html`` with every other tag escaped into text, every other attribute dropped (the ``clean_html`` filter of
    nbconvert's templates). A heading keeps its id only when the page's ``names`` are given and it is none of them."""
    known = _PAGE_NAMES.set(names)
    try:
        return CLEANER.clean(html.decode() if isinstance(html, bytes) else str(html))
    finally:
        _PAGE_NAMES.reset(known)


class CleanMarkdown(LoggingConfigurable):
    """The ``markdown2html`` filter of any HTMLExporter (its ``filters`` in nbgrader_config.py: the Formgrader's, whose
    template renders markdown cells without ``clean_html``): the exporter's own, cleaned."""

    jinja_pass_arg = jinja2.pass_context(lambda: None).jinja_pass_arg  # Jinja passes the context first, as it does
    # to HTMLExporter.markdown2html

    def __call__(self, context, source):
        return clean_html(self.parent.markdown2html(context, source), page_names(context.get("nb", {})))


def _a_size(value) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
        isinstance(value, str) and value.isdigit()
    )


class SafeOutputMetadata(NbGraderPreprocessor):
    """Each output's metadata without file names, and with a width or height only when it is a number (at the top or
    under a MIME type, where nbconvert's ``get_metadata`` looks)."""

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            metadata = output.get("metadata")
            if not isinstance(metadata, dict):
                continue
            metadata.pop("filenames", None)
            for where in [metadata, *(v for v in metadata.values() if isinstance(v, dict))]:
                for key in [k for k in ("width", "height") if k in where and not _a_size(where[k])]:
                    del where[key]
        return cell, resources

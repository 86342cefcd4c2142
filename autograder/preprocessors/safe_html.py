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
"""

import bleach
import jinja2
from bleach.css_sanitizer import CSSSanitizer
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets.config import LoggingConfigurable

TAGS = frozenset(
    {"a", "abbr", "acronym", "b", "blockquote", "br", "caption", "code", "dd", "del", "details", "div", "dl", "dt"}
    | {"em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "ol", "p", "pre", "q", "s"}
    | {"samp", "small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead"}
    | {"tr", "u", "ul", "var"}
)
ATTRIBUTES = {
    "*": {"class", "id", "title"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height"},
    "td": {"align", "colspan", "rowspan", "style"},
    "th": {"align", "colspan", "rowspan", "style"},
    "ol": {"start"},
}


def _allowed(tag: str, name: str, value: str) -> bool:
    """An attribute kept: one of ``ATTRIBUTES``; a ``data:`` address only as an image's source (bleach then checks
    every address's scheme against the protocols)."""
    if name not in ATTRIBUTES["*"] | ATTRIBUTES.get(tag, set()):
        return False
    if name in ("href", "src") and value.strip().lower().startswith("data:"):
        return tag == "img" and value.strip().lower().startswith("data:image/")
    return True


CLEANER = bleach.Cleaner(
    tags=TAGS,
    attributes=_allowed,
    protocols=["http", "https", "mailto", "data"],
    strip_comments=True,
    css_sanitizer=CSSSanitizer(allowed_css_properties=["text-align"]),
)


def clean_html(html) -> str:
    """``html`` with every other tag escaped into text, every other attribute dropped (the ``clean_html`` filter of
    nbconvert's templates)."""
    return CLEANER.clean(html.decode() if isinstance(html, bytes) else str(html))


class CleanMarkdown(LoggingConfigurable):
    """The ``markdown2html`` filter of any HTMLExporter (its ``filters`` in nbgrader_config.py: the Formgrader's, whose
    template renders markdown cells without ``clean_html``): the exporter's own, cleaned."""

    jinja_pass_arg = jinja2.pass_context(lambda: None).jinja_pass_arg  # Jinja passes the context first, as it does
    # to HTMLExporter.markdown2html

    def __call__(self, context, source):
        return clean_html(self.parent.markdown2html(context, source))


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

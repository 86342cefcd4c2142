"""What makes the feedback pages and the class report readable by everyone, checked without a browser: the page's
language, the roles of the table of steps, and the contrast of every colour the project sets (WCAG 2.1: text 4.5:1,
the charts' bars 3:1). axe-core checks the real pages in Chromium: tests/slow/test_accessibility_in_chromium.py."""

import re

import pytest
from bs4 import BeautifulSoup
from nbformat.v4 import new_code_cell, new_notebook, new_raw_cell
from nbgrader.converters import GenerateFeedback
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from autograder.common.diagnoses import METADATA
from autograder.common.editions import EDITIONS
from autograder.engine.verdict import Verdict
from autograder.grading.report import charts
from autograder.grading.report import class_report as report
from autograder.grading.report.class_report import TEMPLATES
from autograder.preprocessors import FeedbackExporter, SummarizeSteps
from autograder.preprocessors.feedback_exporter import PAGE_STYLE
from autograder.preprocessors.judge_answers import verdict_outputs
from autograder.preprocessors.summarize_steps import ROLES, STYLE

WHITE = "#ffffff"
BOOTSTRAP_LINK, BOOTSTRAP_PANEL = "#337ab7", "#337ab7"  # Bootstrap 3's link colour, and its primary panel's heading


def luminance(colour: str) -> float:
    """WCAG 2.1's relative luminance of a #rgb or #rrggbb colour."""
    digits = colour.lstrip("#")
    digits = "".join(d * 2 for d in digits) if len(digits) == 3 else digits
    channels = [byte / 255 for byte in bytes.fromhex(digits)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def declared(css: str, selector: str, prop: str) -> str:
    """The value of ``prop`` in the rule of ``selector`` (one rule a selector list, as the project writes them)."""
    rule = re.search(re.escape(selector) + r"\s*\{([^}]*)\}", css)
    assert rule, f"no rule {selector!r}"
    value = re.search(rf"(?:^|[;\s]){prop}\s*:[^;]*?(#[0-9a-fA-F]{{3,6}})\b", rule[1])
    assert value, f"{selector!r} sets no {prop}"
    return value[1]


def test_contrast_sanity():
    assert round(contrast("#777", WHITE), 2) == 4.48 and contrast("#000", "#fff") == 21  # WCAG's own examples


# (stylesheet, selector, the property whose colour is checked, the background it is drawn on): every colour the
# project's styles give text; test_every_text_colour_is_checked keeps the list complete.
TEXT = [
    (STYLE, ".step-right > div.step-mark", "color", WHITE),
    (STYLE, ".step-right > div.step-reason", "color", WHITE),
    (STYLE, ".step-wrong > div.step-mark, .step-wrong > div.step-reason", "color", WHITE),
    (STYLE, ".step-wrong > div.step-mark, .step-wrong > div.step-reason", "color", "#fdecea"),  # the first to fix
    (STYLE, ".step-first a", "color", "#fdecea"),
    (STYLE, ".steps-notes", "color", WHITE),
    (PAGE_STYLE, "div.nbgrader_cell .panel-heading a", "color", BOOTSTRAP_PANEL),
]
REPORT_TEMPLATE = TEMPLATES.loader.get_source(TEMPLATES, "class_report.html.j2")[0]
REPORT_CSS = re.search(r"<style>(.*?)</style>", REPORT_TEMPLATE, re.S)[1]
TEXT += [
    (REPORT_CSS, "body", "color", WHITE),
    (REPORT_CSS, "body", "color", "#f3f3f3"),  # a table's header
    (REPORT_CSS, ".note", "color", "#fff4e0"),
    (REPORT_CSS, "summary", "color", WHITE),
]


@pytest.mark.parametrize("css, selector, prop, background", TEXT)
def test_text_colours_reach_4_5_to_1(css, selector, prop, background):
    colour = declared(css, selector, prop)
    assert contrast(colour, background) >= 4.5, (selector, colour, background, contrast(colour, background))


def test_every_text_colour_is_checked():
    checked = {(css, selector) for css, selector, _, _ in TEXT}
    for css in (STYLE, PAGE_STYLE, REPORT_CSS):
        for selector, body in re.findall(r"([^{}/]+?)\s*\{([^}]*)\}", css):
            selector = selector.strip()
            if re.search(r"(?:^|[;\s])background\s*:", body) and re.search(r"(?:^|[;\s])color\s*:", body):
                # text on a background of its own: that pair
                assert contrast(declared(css, selector, "color"), declared(css, selector, "background")) >= 4.5
            elif re.search(r"(?:^|[;\s])color\s*:", body):
                assert (css, selector) in checked, selector
    assert declared(STYLE, ".step-first", "background") == "#fdecea"  # the background TEXT checks against


def test_links_keep_bootstraps_colour_on_white_and_are_underlined():
    assert contrast(BOOTSTRAP_LINK, WHITE) >= 4.5
    assert re.search(r"(?m)^a \{ text-decoration: underline; \}", PAGE_STYLE)
    focus = declared(PAGE_STYLE, "a:focus-visible", "outline")
    assert contrast(focus, WHITE) >= 3 and contrast(focus, "#fdecea") >= 3  # a visible focus ring (WCAG 1.4.11)


def test_code_is_drawn_on_white_in_colours_that_reach_4_5_to_1():
    """The code's colours are the Pygments style that nbconvert's classic template (nbgrader's feedback template's
    base) asks for; the page draws code on white."""
    assert declared(PAGE_STYLE, "pre", "background-color") in ("#fff", WHITE)
    css = "\n".join(style.get_text() for style in feedback_page(notebook()).find_all("style"))
    rules = re.findall(r"\.highlight \.(\w+) \{[^}]*?(?<![-\w])color: (#[0-9A-Fa-f]{3,6})", css)
    colours = {colour for token, colour in rules if token != "w"}  # .w: whitespace, no glyph to read
    assert len(colours) > 10 and all(contrast(c, WHITE) >= 4.5 for c in colours), sorted(
        colours, key=lambda c: contrast(c, WHITE)
    )


def test_the_charts_bars_reach_3_to_1_on_white():
    for colour in (report.BLUE, report.RED, report.ORANGE, report.GREEN, charts.AXIS):
        assert contrast(colour, WHITE) >= 3, colour
    assert len({report.RED, report.ORANGE, report.GREEN}) == 3


def feedback_page(nb) -> BeautifulSoup:
    """The page FeedbackExporter makes of ``nb`` as GenerateFeedback sets it up, after SummarizeSteps."""
    config = Config()
    config.GenerateFeedback.exporter_class = FeedbackExporter
    converter = GenerateFeedback(coursedir=CourseDirectory(root="/nonexistent"), config=config)
    nb, resources = SummarizeSteps().preprocess(nb, {"nbgrader": {"late_penalty": 0}})
    resources["nbgrader"].update(notebook="ex1_atomic_backward", score=1, max_score=3)
    html, _ = FeedbackExporter(parent=converter, config=converter.config).from_notebook_node(nb, resources)
    return BeautifulSoup(html, "html.parser")


def graded(gid, points, score, *reasons):
    cell = new_code_cell("check()", outputs=verdict_outputs(Verdict(gid.removeprefix("test_"), score, points, reasons)))
    cell.metadata.nbgrader = {"grade": True, "grade_id": gid, "points": points, "score": score}
    return cell


def notebook(**metadata):
    cells = [graded("test_dlogprobs", 1, 1, "correct"), graded("test_dprobs", 2, 0, "wrong sign <b>x</b>")]
    cells.append(new_raw_cell('<b role="note" onclick="alert(1)">mine</b>', metadata={"raw_mimetype": "text/html"}))
    cells.append(new_raw_cell('<div class="steps-row step-right">forged</div>', metadata={"raw_mimetype": "text/html"}))
    return new_notebook(cells=cells, metadata={"language_info": {"name": "python"}, **metadata})


@pytest.mark.parametrize(
    "metadata, lang",
    [({}, "en"), ({METADATA: {"edition": "ru"}}, "ru"), ({METADATA: {"edition": "zh"}}, "zh-Hans")]
    + [({METADATA: {"edition": "xx"}}, "en"), ({METADATA: {}}, "en"), ({METADATA: "ru"}, "en")]
    + [({METADATA: {"edition": ["ru"]}}, "en")],
)
def test_the_page_is_in_the_language_of_the_students_edition(metadata, lang):
    assert feedback_page(notebook(**metadata)).html["lang"] == lang


def test_every_edition_has_a_page_language():
    assert {e.html_lang for e in EDITIONS.values()} == {"en", "ru", "zh-Hans"}


def test_the_table_of_steps_is_a_table_to_assistive_technology_and_the_sanitizer_stays_on():
    page = feedback_page(notebook())
    (table,) = page.select('[role="table"]')
    rows = table.find_all(role="row", recursive=False)
    cells = [row.find_all(recursive=False) for row in rows]
    header, *body = [[(cell["role"], cell.get_text(strip=True)) for cell in row] for row in cells]
    assert header == [("columnheader", name) for name in ("result", "graded cell", "points", "what the grader found")]
    assert body == [
        [("cell", "✔"), ("rowheader", "dlogprobs"), ("cell", "1 / 1"), ("cell", "correct")],
        [("cell", "✘"), ("rowheader", "dprobsfix first"), ("cell", "0 / 2"), ("cell", "wrong sign <b>x</b>")],
    ]
    assert set(ROLES.values()) == {"table", "row", "columnheader", "rowheader", "cell"}
    # the raw cells went through nbconvert's sanitizer: a student's attributes are gone, its text is kept
    (mine,) = [b for b in page.find_all("b") if b.get_text() == "mine"]
    assert mine.attrs == {} and "onclick" not in str(page)
    assert page.find(string="forged").parent.attrs == {}  # no class, so no role, of the table's

"""Pages everyone can read, opened as their readers open them, in a real headless Chromium: the feedback pages of a
right and a wrong student of each edition and the class report pass axe-core at WCAG 2.1 A and AA; the table's step
links work from the keyboard; Chinese and Russian text is drawn in fonts that hold its glyphs.

The class is the editions' (tests/slow/editions_class.py): a right and a wrong student of each edition, handed in
as that edition's notebook, a blank notebook, a late student who hands in a fix (a regrade in the class report).
axe-core is the npm package that tools/install.sh --test puts in .venv/axe (tools/axe pins it).
"""

import json
import shutil
import subprocess
import time

import pytest
from browser import Chromium
from editions_class import KINDS, NB
from support.course import ARTIFACTS, ASSIGNMENT, REPO

from autograder.common.editions import EDITIONS, edition

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
    pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium: run tools/install.sh --test"),
]

AXE = REPO / ".venv" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]  # WCAG 2.0 and 2.1, levels A and AA


@pytest.fixture(scope="module")
def course(editions_class):
    return editions_class


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    chromium = Chromium(tmp_path_factory.mktemp("chromium"))
    yield chromium
    chromium.close()


def feedback(course, student):
    return course.root / "feedback" / student / ASSIGNMENT / f"{NB}.html"


def open_page(browser, path):
    url = path.as_uri()
    browser.send("Page.navigate", url=url)
    browser.wait_for(f"document.URL === {json.dumps(url)} && document.readyState === 'complete'")
    time.sleep(0.5)  # fonts and layout settle


def axe(browser, path) -> dict:
    """axe-core's results on the page at ``path``: its violations, and how many rules passed or need a person."""
    assert AXE.is_file(), f"no {AXE}: run tools/install.sh --test"
    open_page(browser, path)
    browser.send("Runtime.evaluate", expression=AXE.read_text())
    run = (
        f"axe.run(document, {{runOnly: {{type: 'tag', values: {json.dumps(TAGS)}}}}}).then(r => JSON.stringify("
        "{version: axe.version, violations: r.violations, passes: r.passes.length, incomplete: r.incomplete.map("
        "i => i.id)}))"
    )
    answer = browser.send("Runtime.evaluate", expression=run, awaitPromise=True, returnByValue=True)
    results = json.loads(answer["result"]["value"])
    print(
        f"axe-core {results['version']} on {path.name}: {len(results['violations'])} violations, "
        f"{results['passes']} rules passed, to check by hand: {results['incomplete'] or 'none'}"
    )
    for v in results["violations"]:
        print(f"  {v['id']} ({v['impact']}): {v['help']}, {len(v['nodes'])} elements")
        for node in v["nodes"][:5]:
            print(f"    {node['target']}: {node['failureSummary']}".replace("\n", " | ")[:400])
    return results


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("code", EDITIONS)
def test_feedback_pages_pass_axe_in_every_edition(course, browser, code, kind):
    results = axe(browser, feedback(course, f"{kind}_{code}"))
    assert browser.js("document.documentElement.lang") == edition(code).html_lang
    assert (
        browser.js("document.querySelectorAll('[role=table] [role=row]').length") == 28
    )  # 27 steps (26 gradients, dC_index_add), a header
    assert results["violations"] == [], [v["id"] for v in results["violations"]]


def test_the_class_report_passes_axe(course, browser):
    report = course.root / "class_report.html"
    results = axe(browser, report)
    assert browser.js("document.documentElement.lang") == "en"
    # every section has rows: the charts (with their numbers), misconceptions, a problem, students, a regrade
    sections = ["svg[role=img] desc", "details table", "table.diagnoses", "#problems ~ h3", "table.students"]
    sections.append("#history + p + table")
    assert browser.js(f"{json.dumps(sections)}.filter(s => !document.querySelector(s))") == []
    assert browser.js("document.querySelectorAll('svg[role=img]').length") == 3
    assert results["violations"] == [], [v["id"] for v in results["violations"]]


def test_axe_finds_what_stock_nbgrader_pages_lack(course, browser, tmp_path):
    """The control: the same page without its language and its last styles (nbgrader's own page) fails."""
    page = feedback(course, "wrong_en").read_text()
    ours = page[page.rindex("<style", 0, page.index("</head>")) : page.index("</head>")]  # the head's last styles
    stock = tmp_path / "stock.html"
    stock.write_text(page.replace(ours, "").replace('<html lang="en">', "<html>", 1))
    found = {v["id"] for v in axe(browser, stock)["violations"]}
    assert {"html-has-lang", "color-contrast", "link-in-text-block", "scrollable-region-focusable"} <= found, found


def test_the_step_links_work_from_the_keyboard(course, browser):
    """Tab to a step's link: it shows its focus; Enter brings its cell to the top, and the next Tab goes on from
    there."""
    open_page(browser, feedback(course, "wrong_en"))
    browser.send("Emulation.setFocusEmulationEnabled", enabled=True)
    link = "document.querySelector('[role=table] a[href=\"#test_dW2\"]')"
    for tabs in range(1, 60):
        browser.key("Tab", "Tab", 9)
        if browser.js(f"document.activeElement === {link}"):
            break
    focus = browser.js("(s => [s.outlineStyle, parseFloat(s.outlineWidth)])(getComputedStyle(document.activeElement))")
    print(f"the link of dW2 after {tabs} Tabs, its focus outline: {focus}")
    assert browser.js(f"document.activeElement === {link}") and browser.js(f"{link}.matches(':focus-visible')")
    assert focus[0] != "none" and focus[1] >= 2
    browser.key("Enter", "Enter", 13, text="\r")
    time.sleep(0.5)
    cell = "document.getElementsByName('test_dW2')[0]"
    assert browser.js("location.hash") == "#test_dW2"
    assert abs(browser.js(f"{cell}.getBoundingClientRect().top")) < 2
    browser.key("Tab", "Tab", 9)
    assert browser.js(f"{cell}.compareDocumentPosition(document.activeElement)") & 4  # after the cell's anchor


def fonts_holding(characters: str) -> set:
    """The font families fontconfig has that hold every one of ``characters``."""
    charset = " ".join(f"{ord(c):x}" for c in sorted(set(characters)))
    listed = subprocess.run(["fc-list", f":charset={charset}", "family"], capture_output=True, text=True, check=True)
    return {family.strip() for line in listed.stdout.splitlines() for family in line.split(",")}


def test_chinese_and_russian_text_is_drawn_in_fonts_that_hold_it(course, browser):
    """Each paragraph's characters beyond ASCII are held by a font Chromium drew it with (no tofu boxes); the
    screenshot of the Chinese page is kept in tests/artifacts/ for a person to look at."""
    for probe in ("ru", "zh"):
        open_page(browser, feedback(course, f"wrong_{probe}"))
        browser.js(
            "document.querySelectorAll('.rendered_html p').forEach(p => {"
            "if (/[\\u4e00-\\u9fff]/.test(p.textContent)) p.dataset.probe = 'zh';"
            "if (/[\\u0400-\\u04ff]/.test(p.textContent)) p.dataset.probe = 'ru'; })"
        )
        browser.send("DOM.enable")
        browser.send("CSS.enable")
        root = browser.send("DOM.getDocument")["root"]["nodeId"]
        node = browser.send("DOM.querySelector", nodeId=root, selector=f"[data-probe={probe}]")["nodeId"]
        assert node, f"no {probe} paragraph on the page"
        text = browser.js(f"document.querySelector('[data-probe={probe}]').textContent")
        drawn = {f["familyName"] for f in browser.send("CSS.getPlatformFontsForNode", nodeId=node)["fonts"]}
        beyond_ascii = "".join(c for c in text if ord(c) > 127)
        print(f"{probe}: {len(beyond_ascii)} characters beyond ASCII, drawn in {sorted(drawn)}")
        assert drawn & fonts_holding(beyond_ascii), (probe, drawn)
    browser.js("document.querySelector('[data-probe=zh]').scrollIntoView({block: 'center'})")
    time.sleep(0.5)
    ARTIFACTS.mkdir(exist_ok=True)
    print(f"screenshot: {browser.screenshot(ARTIFACTS / 'feedback_zh.png')}")

"""A pseudo-translation of the grader's words: every template, rendered, comes out between ⟦ and ⟧, so that a test can
see which text a student reads went through the catalog and which did not (an English sentence that escaped it).

``pseudo_translated(monkeypatch)`` puts it in place of the catalogs (``autograder.common.words.translations``);
``unmarked(text, names)`` is what is left of a text outside every ⟦...⟧ that is not a number, a mark or one of
``names`` (the titles that are tensor names): empty when every word went through the catalog.
"""

import functools
import re
from html.parser import HTMLParser

from nbgrader import utils

from autograder.authoring.submissions import copy_notebook
from autograder.common import links, words
from autograder.common.diagnoses import Reason
from autograder.common.naming import grade_id
from autograder.common.words import Words
from autograder.engine.exercises import CHECKS
from autograder.preprocessors import SummarizeSteps
from autograder.preprocessors.judge_answers import verdict_outputs

OPEN, CLOSE = "⟦", "⟧"
PSEUDO = "ru"  # the edition graded with the pseudo-translation: a real one, with Russian's plural rules unused
SYMBOLS = re.compile(r"[\d\s.,:;/()✔✘…+-]*")  # numbers and marks, which need no translation


class Pseudo:
    """gettext's translations, each template marked; the English plural rule picks the form."""

    def __init__(self):
        self.seen = set()  # the templates rendered (their singular form)

    def gettext(self, template: str) -> str:
        self.seen.add(template)
        return OPEN + template + CLOSE

    def ngettext(self, singular: str, plural: str, count) -> str:
        self.seen.add(singular)
        return OPEN + (singular if count == 1 else plural) + CLOSE


def pseudo_translated(monkeypatch) -> Pseudo:
    """Every edition's catalog replaced by the pseudo-translation (English's too: the test grades in PSEUDO)."""
    pseudo = Pseudo()
    monkeypatch.setattr(words, "translations", lambda code, domain=words.GRADER_DOMAIN: pseudo)
    # what is cached of the catalogs, cached afresh while they are pseudo (the editions' anchors: from the headings)
    monkeypatch.setattr(links, "_page_slugs", functools.cache(links._page_slugs.__wrapped__))
    return pseudo


def outside_marks(text: str) -> str:
    """``text`` without every outermost ⟦...⟧ (an unbalanced mark is left in, and so shows)."""
    kept, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == OPEN:
            if depth == 0:
                kept.append(text[start:i])
            depth += 1
        elif char == CLOSE and depth:
            depth -= 1
            if depth == 0:
                start = i + 1
    kept.append(text[start:] if depth == 0 else text[start:])
    return "".join(kept)


def unmarked(text: str, names=()) -> list:
    """The pieces of ``text`` outside the marks that are neither numbers and marks nor one of ``names``."""
    return [piece for piece in outside_marks(text).split() if piece not in names and not SYMBOLS.fullmatch(piece)]


def tensor_titles(notebook: str) -> set:
    """The titles of a notebook's checks that are tensor names ("dprobs", "loss_fast"), not words."""
    return {check.title for check in CHECKS[notebook].values() if not isinstance(check.title, Words)}


class _Text(HTMLParser):
    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.pieces = []
        self.feed(html)

    def handle_data(self, data):
        self.pieces.append(data)


def summary_html(nb, edition: str) -> str:
    """The feedback's table of steps (``SummarizeSteps``) of a judged notebook, each graded cell scored as the grader
    scored it, in ``edition``: its HTML."""
    nb = copy_notebook(nb)
    nb.metadata["backprop_ninja"] = {"edition": edition}
    for cell in nb.cells:
        if utils.is_grade(cell):
            results = [o for o in cell.get("outputs", []) if o.get("output_type") == "execute_result"]
            cell.metadata.nbgrader["score"] = float(results[-1]["data"]["text/plain"]) if results else 0.0
    nb, _ = SummarizeSteps().preprocess(nb, {"nbgrader": {"late_penalty": 1.5}})
    return nb.cells[0].source


def summary_text(nb, edition: str) -> str:
    """The text of that table, its pieces joined by spaces."""
    return " ".join(_Text(summary_html(nb, edition)).pieces)


def rendered(got, edition: str) -> tuple:
    """A graded submission (``in_process.Graded``) as JudgeAnswers would have written it in ``edition``: each graded
    cell's verdict rendered again. Returns (grade_id -> the cell's text, the notebook)."""
    nb = copy_notebook(got.notebook)
    messages = {}
    for cell in nb.cells:
        verdict = got.verdicts.get(grade_id(cell))
        if verdict is not None:
            cell.outputs = verdict_outputs(verdict, edition)
            messages[grade_id(cell)] = cell.outputs[0]["text"]
    return messages, nb


def untranslated(notebook: str, graded: dict) -> list:
    """What escapes the catalog when a notebook's students (``graded``: student -> Graded) read their feedback in
    PSEUDO: every line of every verdict and of the table of steps must be marked, every reason must hold Words, and
    every title be words or a tensor's name."""
    names, escaped = tensor_titles(notebook), []
    for student, got in graded.items():
        messages, nb = rendered(got, PSEUDO)
        for gid, text in messages.items():
            escaped += [(student, gid, line) for line in text.splitlines() if unmarked(line)]
        rest = unmarked(summary_text(nb, PSEUDO), names)
        if rest:
            escaped.append((student, "table of steps", rest))
        for gid, verdict in got.verdicts.items():
            escaped += [
                (student, gid, "a line that is no Reason with words", line)
                for line in verdict.lines
                if not (isinstance(line, Reason) and isinstance(line.words, Words))
            ]
            if not (isinstance(verdict.title, Words) or verdict.title in names):
                escaped.append((student, gid, "a title that is neither words nor a tensor's name", verdict.title))
    return escaped

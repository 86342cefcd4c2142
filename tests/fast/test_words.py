"""The grader's words are keys a translator can work with: every template is a literal whole sentence with flat named
placeholders, a reason refuses a plain string, and what the kernel and the feedback's table add is rendered in the
edition. Every verdict of the case tables goes through the catalog: tests/fast/test_ex*_in_process.py."""

import ast
import inspect
import re
import string
from pathlib import Path

import pytest
from support.words import PSEUDO, pseudo_translated, unmarked

from autograder.authoring import from_engine
from autograder.common.diagnoses import NOTE, Reason
from autograder.common.editions import EDITION_VARIABLE
from autograder.common.words import placeholders, say
from autograder.engine.verdict import Verdict
from autograder.in_kernel import switches
from autograder.preprocessors import GradingExecute
from autograder.preprocessors.summarize_steps import Row, table_html

PACKAGE = Path(__file__).resolve().parents[2] / "autograder"


def calls(name: str):
    """(path, line, call) of every call of ``name`` in the package."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
                yield path.relative_to(PACKAGE), node.lineno, node


def flat_fields(template: str) -> list:
    """What is wrong with a template's placeholders: each must be a plain name, its format spec plain too."""
    wrong = []
    for _, field, spec, conversion in string.Formatter().parse(template):
        if field is None:
            continue
        if not field.isidentifier():
            wrong.append(f"{{{field}}} is no plain name (no attribute, no index, no position)")
        if spec and "{" in spec or conversion:
            wrong.append(f"{{{field}}} has a nested field or a conversion")
    return wrong


def test_every_template_is_a_literal_with_flat_named_placeholders_and_its_parameters():
    found, wrong = 0, []
    for function, forms in (("say", 1), ("say_n", 2)):
        for path, line, call in calls(function):
            where = f"{path}:{line}"
            templates = call.args[:forms]
            if len(templates) < forms or not all(
                isinstance(t, ast.Constant) and isinstance(t.value, str) for t in templates
            ):
                wrong.append(f"{where}: the template is not a string literal (extraction reads literals only)")
                continue
            found += 1
            texts = [t.value for t in templates]
            for text in texts:
                wrong += [f"{where}: {problem}" for problem in flat_fields(text)]
            keywords = {k.arg for k in call.keywords}
            if None in keywords:
                wrong.append(f"{where}: parameters given as **mapping: name each one")
                continue
            used = [placeholders(text) - ({"count"} if function == "say_n" else set()) for text in texts]
            if any(u != keywords for u in used):
                wrong.append(f"{where}: placeholders {sorted(set().union(*used))} but parameters {sorted(keywords)}")
            if function == "say_n" and ("count" in keywords or len(call.args) != 3):
                wrong.append(f"{where}: say_n(singular, plural, count, **parameters), {{count}} being the number")
    assert found > 150, found  # the grader's words are here at all
    assert wrong == [], "\n".join(wrong)


def test_the_code_copied_into_the_notebooks_has_no_words_to_import():
    """The notebooks cannot import the package: the engine's functions written into them stay plain Python."""
    for function in from_engine.FUNCTIONS:
        assert "say(" not in inspect.getsource(function) and "say_n(" not in inspect.getsource(function), function
    for cell in (PACKAGE / "authoring" / "shared_cells").glob("*.py"):
        assert "common.words" not in cell.read_text(), cell


def test_a_reason_holds_words_never_a_plain_string():
    with pytest.raises(TypeError):
        Reason("wrong_sign", "dprobs has the right size but the wrong sign")
    reason = Reason("wrong_sign", say("{name} has the right size but the wrong sign", name="dprobs"))
    assert reason == "dprobs has the right size but the wrong sign" and reason.kind == "wrong_sign"


def test_a_verdict_and_its_title_render_in_the_edition(monkeypatch):
    pseudo_translated(monkeypatch)
    verdict = Verdict(say("training run"), 3, 4, [Reason(NOTE, say("with the right gradients, ..."))])
    assert verdict.text(PSEUDO) == "✘ ⟦⟦training run⟧: 3 of 4 points⟧\n  ⟦with the right gradients, ...⟧\n"
    assert Verdict("db1", 1, 1).text(PSEUDO) == "✔ ⟦db1: 1 of 1 point⟧\n"


def test_what_the_kernel_prints_while_grading_is_in_its_edition(monkeypatch, capsys):
    pseudo_translated(monkeypatch)
    monkeypatch.setenv(EDITION_VARIABLE, PSEUDO)
    switches._skipped()
    assert capsys.readouterr().out == "⟦(self-checks are skipped while grading: see the graded cells)⟧\n"
    with pytest.raises(switches.AutogradIsOff, match="^⟦autograd is switched off"):
        switches._refusal()()
    execute = GradingExecute()
    execute._edition = PSEUDO
    assert execute.kernel_variables(1)[EDITION_VARIABLE] == PSEUDO  # what the grader tells the kernel
    execute._output_bytes, execute._truncated, execute.max_output_bytes = {}, {}, 10
    outputs = []
    execute.output(outputs, {"msg_type": "stream", "content": {"name": "stdout", "text": "x" * 100}}, None, 0)
    assert outputs[0]["text"].startswith("\n⟦[output truncated by the grader"), outputs
    # a text sent as a list of strings, or metadata, counts by its characters, not its items
    for content in ({"name": "stdout", "text": ["x" * 100]}, {"data": {}, "metadata": {"x": "y" * 100}}):
        execute._output_bytes, execute._truncated, outputs = {}, {}, []
        execute.output(outputs, {"msg_type": "stream", "content": content}, None, 0)
        assert len(outputs) == 1 and "output truncated" in outputs[0]["text"], outputs


def test_the_table_of_steps_speaks_the_edition_headline_labels_and_notes_included(monkeypatch):
    pseudo_translated(monkeypatch)
    rows = [
        Row("test_dprobs", "dprobs", 0, 1, ["⟦dprobs has the wrong sign⟧"], False),
        Row("test_dcounts", "dcounts", 0, 2, ["⟦dprobs has the wrong sign⟧", "⟦2⟧", "⟦3⟧", "⟦4⟧"], False),
        Row("test_training", "⟦training run⟧", 4, 4, ["⟦follows⟧"], True),
    ]
    page = table_html(rows, 2.5, ["test_dprobs"], "https://example.org/course", PSEUDO)
    for expected in ("⟦fix first⟧", "⟦… (more in the cell)⟧", "⟦(score set by your instructor)⟧", "fail for the"):
        assert expected in page
    text = [piece for piece in page.replace(">", ">\n").replace("<", "\n<").splitlines() if not piece.startswith("<")]
    assert unmarked(" ".join(text), {"dprobs", "dcounts"}) == []
    assert (
        table_html(rows[2:], 0, [], "https://example.org/course", PSEUDO).count("⟦All 1 graded cells are right.⟧") == 1
    )


def test_points_are_counted_by_a_plural_whose_count_is_their_number():
    """ "Late submission: 1 points off", and Russian's "штраф в баллах: 1": a number of points inside a sentence must
    be the {count} of a say_n, or the sentence cannot agree with it (1 балл, 2 балла, 5 баллов)."""
    from babel.messages.pofile import read_po

    before_points = re.compile(r"\{(\w+)[^{}]*\} points?\b")
    with (PACKAGE / "locale" / "grader.pot").open("rb") as pot:
        wrong = [
            text
            for message in read_po(pot)
            for text in (message.id if isinstance(message.id, tuple) else (message.id,))
            for found in before_points.finditer(text or "")
            if found.group(1) != "count" or not isinstance(message.id, tuple)
        ]
    assert wrong == []


@pytest.mark.parametrize("domain", ["grader", "notebooks"])
def test_a_russian_number_never_stands_before_a_word_that_must_agree_with_it_outside_a_plural(domain):
    """ "в n = 32 раз больше" (the batch size: 32 раза), "в 1024 раз", "штраф 1 баллов": a Russian message without
    plural forms writes the number where nothing agrees with it ("в n раз больше (n = 32)")."""
    from babel.messages.pofile import read_po

    agreeing = re.compile(r"\{[^{}]+\}\s+(балл\w*|раза?)(?!\w)")
    with (PACKAGE / "locale" / "ru" / f"{domain}.po").open("rb") as po:
        wrong = [m.string for m in read_po(po) if not isinstance(m.id, tuple) and agreeing.search(m.string or "")]
    assert wrong == []


@pytest.mark.parametrize(
    "points, russian, chinese, both",
    [(1, "штраф 1 балл", "扣 1 分", "(2 балла)"), (2, "штраф 2 балла", "扣 2 分", "(4 балла)"),
     (5, "штраф 5 баллов", "扣 5 分", "(10 баллов)"), (21, "штраф 21 балл", "扣 21 分", "(42 балла)"),
     (1.5, "штраф 1,5 балла", "扣 1.5 分", "(3 балла)"), (0.5, "штраф 0,5 балла", "扣 0.5 分", "(1 балл)")],
)  # fmt: skip
def test_points_in_the_feedback_agree_with_their_number(points, russian, chinese, both):
    """... and Russian writes a fraction of a point with its decimal comma ("0,5 балла"); Chinese and English with a
    point."""
    from autograder.preprocessors.page_notes import late_note
    from autograder.preprocessors.summarize_steps import Row, headline_html

    late = {code: late_note(points, code) for code in ("en", "ru", "zh")}
    assert late["en"].startswith(f"Late submission: {points:g} point{'s' if points != 1 else ''} off")
    assert russian in late["ru"] and chinese in late["zh"]
    # what two graded cells lose for one reason: the points agree with their own number, not with the cells'
    died = [Row(f"test_d{n}", f"d{n}", 0, points, ["the kernel died"], False) for n in ("W2", "W1")]
    assert f"({2 * points:g} point{'s' if 2 * points != 1 else ''})" in headline_html(died, died[0], "en")
    assert both in headline_html(died, died[0], "ru") and f"（共 {2 * points:g} 分）" in headline_html(
        died, died[0], "zh"
    )


def _strings(code: str, domain: str) -> list:
    from babel.messages.pofile import read_po

    with (PACKAGE / "locale" / code / f"{domain}.po").open("rb") as po:
        return [s for m in read_po(po) for s in (m.string if isinstance(m.string, tuple) else (m.string,)) if s]


@pytest.mark.parametrize("domain", ["grader", "notebooks", "course"])
def test_a_chinese_factor_is_a_multiple_of_the_right_value(domain):
    """ "dbndiff2 小了 (n-1)/n = 31/32 倍" says it is far smaller than it is (it is 31/32 of the right value), and
    "小了 32 倍" is no Chinese way to say 1/32: a factor is "是正确值的 X 倍" or "只有正确值的 1/X"."""
    wrong = [s for s in _strings("zh", domain) if re.search(r"(?:[大小]了|会[大小])[^。；：，]*倍", s)]
    assert wrong == []


@pytest.mark.parametrize("domain", ["grader", "notebooks"])
def test_the_notebook_and_the_autograder_are_called_by_their_glossary_terms(domain):
    """The glossary's ноутбук and 笔记本: not блокнот (the word of JupyterLab's Russian menus, quoted only in the course
    pages), nor the English word left in a Chinese sentence ("按 notebook 的要求"); and автопроверка, not
    (авто)грейдер or проверяющий."""
    russian = [s for s in _strings("ru", domain) if re.search(r"блокнот|грейдер|проверяющ", s)]
    chinese = [s for s in _strings("zh", domain) if re.search(r"[\u4e00-\u9fff] ?notebook ?[\u4e00-\u9fff]", s)]
    assert russian == [] and chinese == []


def test_the_russian_headline_names_the_step_to_fix_without_a_pronoun_of_its_gender():
    """ "Сначала исправьте: калибровка BatchNorm (0 из 2 баллов), он отмечен ниже": a step's title is a gradient
    (он), калибровка or ошибка 1 (она), градиенты, испорченные вашими ошибками (они); no pronoun can stand for all."""
    from autograder.preprocessors.summarize_steps import Row, headline_html

    for title in ("dlogprobs", "калибровка BatchNorm", "ошибка 1 (dbnvar)", "градиенты, испорченные вашими ошибками"):
        row = Row("test_x", title, 0, 2, ["x"], False, "wrong_values")
        text = re.sub("<[^>]+>", "", headline_html([row], row, "ru"))
        assert "эта ячейка отмечена ниже" in text and not re.search(r"\b(он|она|оно|они)\b", text), text

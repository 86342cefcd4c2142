"""Russian and Chinese students write their answers in their edition's notebook as they write code: comments in their
language (full-width punctuation included), temporaries named in it, docstrings, printed text, CRLF line endings, tabs.
Graded in process in their edition (tests/support/in_process.py), a correct answer so written earns every point; a
name that looks like the answer's but holds a Cyrillic letter is told apart from it, in the student's language; and a
cell that Python cannot even parse costs its own step in every edition, as in English."""

import nbformat
import pytest
from support.cases_ex1 import MISTAKES
from support.course import REPO
from support.in_process import autograde, source_notebook

from autograder.authoring.submissions import solved

NB = "ex1_atomic_backward"

RUSSIAN = {
    "answer_dprobs": "dprobs = (1.0 / probs) * dlogprobs  # производная логарифма — это 1/x, поэлементно",
    "answer_dcounts_sum_inv": "# растягивание → сумма\nградиент = counts * dprobs\n"
    "dcounts_sum_inv = градиент.sum(1, keepdim=True)  # форма (n, 1)",
    "answer_dcounts_sum": '"""Градиент по counts_sum."""\ndcounts_sum = -counts_sum**-2 * dcounts_sum_inv',
    "answer_dnorm_logits": 'dnorm_logits = counts * dcounts\nprint(f"Готово: сумма {dnorm_logits.sum().item():.3f}")',
    "answer_dlogit_maxes": "# максимум\u00a0вычитается ради устойчивости\n"
    "dlogit_maxes = -dnorm_logits.sum(1, keepdim=True)",
    "answer_dlogits": "# два пути\r\ndlogits = dnorm_logits.clone()\r\n"
    "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes\r\n",
    "answer_dh": "with torch.no_grad():\n\tdh = dlogits @ W2.T\t# матричное произведение",
    "answer_dW2": "ｔｍｐ = h.T  # полноширинные буквы: для Python это tmp\ndW2 = ｔｍｐ @ dlogits",
    "answer_dbnvar": "ε = 1e-5\ndbnvar = -0.5 * (bnvar + ε) ** -1.5 * dbnvar_inv",
    "answer_dC": "dC = torch.zeros_like(C)\nfor строка in range(Xb.shape[0]):\n    for столбец in range(Xb.shape[1]):\n"
    "        dC[Xb[строка, столбец]] += demb[строка, столбец]  # накапливаем",
}
CHINESE = {
    "answer_dprobs": "dprobs = (1.0 / probs) * dlogprobs  # 对数的导数：1/x（逐元素）。",
    "answer_dcounts_sum_inv": "梯度 = counts * dprobs  # 广播 → 求和\n"
    "dcounts_sum_inv = 梯度.sum(1, keepdim=True)  # 形状：（n, 1）",
    "answer_dcounts": "dcounts = counts_sum_inv * dprobs  # 经过 probs 的路径\n"
    "dcounts += torch.ones_like(counts) * dcounts_sum  # 经过 counts_sum 的路径，累加",
    "answer_dnorm_logits": 'dnorm_logits = counts * dcounts\nprint("完成！形状：", tuple(dnorm_logits.shape))',
    "answer_dlogits": "dlogits = dnorm_logits.clone()\r\n# 最大值的路径\r\n"
    "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes",
    "answer_dhpreact": "dhpreact = (1.0 - h**2) * dh  # 和 autograd 的 hpreact.grad 对比过，不用 backward()",
    "answer_dbnbias": 'dbnbias = dhpreact.sum(0, keepdim=True)\n形状 = tuple(dbnbias.shape)\nprint(f"形状：{形状}")',
    "answer_dhprebn": "路径一 = dbndiff.clone()\n路径二 = 1.0 / n * torch.ones_like(hprebn) * dbnmeani\n"
    "dhprebn = 路径一 + 路径二  # 两条路径相加",
}
# `dсounts_sum` with a Cyrillic с, `dС` with a Cyrillic С: the same to the eye, other names to Python
LOOKALIKES = {
    "answer_dcounts_sum": "dсounts_sum = -counts_sum**-2 * dcounts_sum_inv",
    "answer_dC": "dС = torch.zeros_like(C)\ndС.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))",
}
# cells the parser refuses with no SyntaxError: the edition of a Russian or Chinese notebook, read from the words of
# its cells (edition_of), stopped the whole notebook's grading (MemoryError, ValueError) where English lost one step
UNPARSABLE = {
    "deep": MISTAKES["m_dW2_cell_too_deep"][0],
    "nul": {"answer_dW2": "dW2 = h.T @ dlogits\nname = 'a\x00b'"},  # a NUL character, pasted in
}
# a comma of the Chinese input method after a digit: Python says "invalid decimal literal", which names no character
INPUT_METHOD = {"answer_dcounts_sum_inv": "dcounts_sum_inv = (counts * dprobs).sum(1\uff0ckeepdim=True)  # 求和\uff0c"}
TOLD = {
    "en": "it holds letters that are not Latin (с (U+0441))",
    "ru": "в нём есть нелатинские буквы (с (U+0441))",
    "zh": "其中有非拉丁字母（с (U+0441)）",
}


def notebook(edition: str):
    folder = REPO / ("release" if edition == "en" else f"editions/{edition}") / "backprop_ninja"
    return nbformat.read(folder / f"{NB}.ipynb", as_version=4)


@pytest.fixture(scope="module")
def graded():
    source = source_notebook(NB)
    students = {"ru": solved(notebook("ru"), source, RUSSIAN), "zh": solved(notebook("zh"), source, CHINESE)}
    students.update({f"lookalike_{e}": solved(notebook(e), source, LOOKALIKES) for e in ("en", "ru", "zh")})
    students.update(
        {f"{k}_{e}": solved(notebook(e), source, c) for k, c in UNPARSABLE.items() for e in ("en", "ru", "zh")}
    )
    students["zh_input_method"] = solved(notebook("zh"), source, INPUT_METHOD)
    return autograde(NB, students)


@pytest.mark.parametrize("student", ["ru", "zh"])
def test_a_correct_answer_written_in_the_students_language_earns_every_point(graded, student):
    assert graded[student].lost() == [], graded[student].messages


@pytest.mark.parametrize("edition", ["en", "ru", "zh"])
def test_an_answer_name_with_a_cyrillic_lookalike_letter_is_told_apart_in_the_students_language(graded, edition):
    result = graded[f"lookalike_{edition}"]
    assert result.lost() == ["test_dC", "test_dcounts_sum"]  # not answered; the steps after them keep their points
    assert result.diagnoses["test_dcounts_sum"] == "not_answered"
    assert TOLD[edition] in result.messages["test_dcounts_sum"]
    assert "С (U+0421)" in result.messages["test_dC"]  # too short for a close spelling, a lookalike all the same


@pytest.mark.parametrize("cell, error", [("deep", "MemoryError"), ("nul", "ValueError")])
@pytest.mark.parametrize("edition", ["en", "ru", "zh"])
def test_a_cell_python_cannot_parse_costs_its_own_step_in_every_edition(graded, cell, error, edition):
    result = graded[f"{cell}_{edition}"]
    assert result.lost() == ["test_dW2"] and result.diagnoses["test_dW2"] == "raised_error"
    assert error in result.messages["test_dW2"]


def test_a_chinese_list_of_gradients_is_joined_with_the_enumeration_comma():
    """ "dprobs, dW1 本身没有 bug": the bug hunt's lists joined with an ASCII comma, where Chinese writes 、."""
    from support.cases_ex6 import answers, id_with

    name, text = "ex6_bug_hunt", id_with("bessel")
    folder = REPO / "editions" / "zh" / "backprop_ninja"
    release = nbformat.read(folder / f"{name}.ipynb", as_version=4)
    found = "buggy = ['dbndiff2', 'dprobs', 'dW1']"
    result = autograde(name, {"zh": solved(release, source_notebook(name), answers(text, answer_found=found))})["zh"]
    assert "dprobs、dW1 本身没有 bug" in result.messages["test_found"], result.messages["test_found"]


def test_an_input_methods_comma_is_named_with_the_one_python_needs(graded):
    """The step's words quote Python's error and name the full-width comma of its line (not the comment's)."""
    result = graded["zh_input_method"]
    assert result.lost() == ["test_dcounts_sum_inv"], result.messages
    assert "invalid decimal literal" in result.messages["test_dcounts_sum_inv"]
    assert "[\uff0c\u2192,]" in result.messages["test_dcounts_sum_inv"], result.messages["test_dcounts_sum_inv"]

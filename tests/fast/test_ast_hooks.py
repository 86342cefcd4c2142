"""The grading kernel's AST hooks (the snapshot calls, self-checks off) leave every node located and change no node
they are given: IPython's walk that fills in missing locations is skipped while only they ran (``located``), and a
locked cell's parse is its kernel parent's, shared by each run of it (``known_cells.KnownParse``)."""

import ast
import types

import pytest
from IPython.core.inputtransformer2 import TransformerManager
from support.in_process import source_notebook

from autograder.in_kernel import located, self_checks_off, snapshot_hook
from autograder.in_kernel.known_cells import KnownParse

NOTEBOOKS = [f"ex{n}_{name}" for n, name in enumerate(["atomic_backward", "cross_entropy_backward"], 1)] + [
    "ex3_batchnorm_backward",
    "ex4_manual_training",
    "ex5_new_operators",
    "ex6_bug_hunt",
]
STUDENT = """with torch.no_grad():
    dW2 = h.T @ dlogits
    assert torch.allclose(dW2, W2.grad)
    with torch.enable_grad():
        if not torch.allclose(db2, b2.grad):
            raise ValueError("no")
        db2 = dlogits.sum(0)
torch.testing.assert_close(dW2, W2.grad)
dh = dlogits @ W2.T
dh
"""


def dumped(node) -> str:
    return ast.dump(node, include_attributes=True)


def hooked(source: str, monkeypatch) -> tuple:
    """(the module IPython parses from ``source``, a dump of each of its statements before) after both hooks ran on
    it, with ``source`` the newest cell of the history."""
    shell = types.SimpleNamespace(history_manager=types.SimpleNamespace(input_hist_parsed=["", source]))
    monkeypatch.setattr(snapshot_hook, "get_ipython", lambda: shell)
    module = ast.parse(source)
    before = [dumped(s) for s in module.body]
    given = list(module.body)
    for hook in (snapshot_hook._SnapshotCalls(), self_checks_off._ChecksOff()):
        module = hook.visit(module)
    assert [dumped(s) for s in given] == before  # no statement changed in place
    return module


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_hooks_leave_nothing_for_ipython_to_locate(name, monkeypatch):
    code = [c.source for c in source_notebook(name).cells if c.cell_type == "code"]
    cells = [TransformerManager().transform_cell(c) for c in code]
    cells = [c.rstrip("\n") for c in cells if c.strip()] + [STUDENT.rstrip("\n")]
    snapshots = 0
    for source in cells:
        module = hooked(source, monkeypatch)
        hooks_made = dumped(module)
        ast.fix_missing_locations(module)
        assert dumped(module) == hooks_made, source[:80]
        snapshots += sum(isinstance(s, ast.Try) for s in ast.walk(module))
        compile(module, "<cell>", "exec")
    assert snapshots > 0


def test_a_student_hook_gets_ipython_s_own_transform(monkeypatch):
    """With any hook that is not the course's, IPython's own ``transform_ast`` runs (and fills in locations); the
    course's alone skip that walk."""
    calls = []
    shell = types.SimpleNamespace(ast_transformers=[self_checks_off._ChecksOff()])
    shell.transform_ast = lambda node: calls.append(node) or node
    located.install(shell)
    located.install(shell)
    assert isinstance(shell.transform_ast, located.LocatedTransform)
    module = ast.parse("assert torch.allclose(dW2, W2.grad)\nx = 1")
    module = shell.transform_ast(module)
    assert calls == [] and isinstance(module.body[0], ast.Expr)

    class Own(ast.NodeTransformer):
        pass

    shell.ast_transformers.append(Own())
    shell.transform_ast(module)
    assert calls == [module]
    assert not located.only_course_hooks([Own()]) and located.only_course_hooks([snapshot_hook._SnapshotCalls()])


def test_a_locked_cell_s_parse_is_shared_under_the_course_s_hooks(monkeypatch):
    """``KnownParse`` gives the parent's statements while every hook is the course's (the self-checks' too)."""
    from autograder.in_kernel import known_cells

    source = "x = 1\nwith open('f') as f:\n    assert torch.allclose(dW2, W2.grad)\n"
    monkeypatch.setattr(known_cells, "_parsed", {source: (0, ast.parse(source))})
    shell = types.SimpleNamespace(
        ast_transformers=[snapshot_hook._SnapshotCalls(), self_checks_off._ChecksOff()],
        compile=types.SimpleNamespace(flags=0, ast_parse=lambda *a, **k: "IPython's"),
    )
    parse = KnownParse(shell)
    assert parse(source).body == known_cells._parsed[source][1].body
    shell.ast_transformers.append(ast.NodeTransformer())
    assert parse(source) == "IPython's"


def test_self_checks_off_changes_no_statement_it_is_given():
    """A cell the snapshot hook leaves alone (run without history): self-checks off copies a `with` block it changes
    (it changed the parent's parse of a locked cell in place before)."""
    module = ast.parse(STUDENT)
    given, before = list(module.body), [dumped(s) for s in module.body]
    module = self_checks_off._ChecksOff().visit(module)
    assert [dumped(s) for s in given] == before
    assert module.body[0] is not given[0] and module.body[1] is not given[1] and module.body[2] is given[2]
    assert "__backprop_ninja_skipped__" in ast.unparse(module) and "W2.grad" not in ast.unparse(module)


def test_self_checks_off_walks_only_a_cell_whose_text_can_read_grad(monkeypatch):
    """Self-checks off reads the text the kernel parsed a cell from (``known_cells.parsed_from``): a cell without the
    word ``grad`` (``no_grad`` is another word) is not walked; every spelling of ``.grad`` Python reads as one still is,
    and its check is skipped, as it is with a module the text of which is not known or under a hook of the student's."""
    from autograder.in_kernel import known_cells

    shell = types.SimpleNamespace(
        ast_transformers=[snapshot_hook._SnapshotCalls(), self_checks_off._ChecksOff()],
        compile=types.SimpleNamespace(flags=0, ast_parse=lambda source, *a, **k: ast.parse(source)),
    )
    shell.compile.ast_parse = KnownParse(shell)
    monkeypatch.setattr(self_checks_off, "get_ipython", lambda: shell)
    walked = []
    without_checks = self_checks_off._without_checks
    monkeypatch.setattr(
        self_checks_off, "_without_checks", lambda body, *more: walked.append(body) or without_checks(body, *more)
    )

    def checked(source: str, parse=shell.compile.ast_parse) -> bool:
        walked.clear()
        module = self_checks_off._ChecksOff().visit(parse(source))
        return bool(walked), "__backprop_ninja_skipped__" in ast.unparse(module)

    for source in ["dW2 = h.T @ dlogits", "with torch.no_grad():\n    dW2 = h.T @ dlogits\n    x.requires_grad_()"]:
        assert checked(source) == (False, False), source
    for source in [
        "assert torch.allclose(dW2, W2.grad)",
        "assert torch.allclose(dW2, W2 . grad)",
        "assert torch.allclose(dW2, W2.\\\ngrad)",
        "assert torch.allclose(dW2, W2.ｇｒａｄ)",  # fullwidth letters: Python reads the name grad
        "assert torch.allclose(dW2, W2.gｒad)  # проверка",
        "with torch.no_grad():\n    assert torch.allclose(dW2, W2.grad)",
    ]:
        assert checked(source) == (True, True), source
        assert known_cells.parsed_from(shell, shell.compile.ast_parse.last[1]) == source
    # a check through a function of the student's that reads .grad, defined in the cell or in an earlier one (of
    # __main__); a function that does not read it, or not of __main__, is not one
    compare = "def compare(s, dt, t):\n    return torch.allclose(dt, t.grad)\n\n\n"
    assert checked(compare + "assert compare('h', dh, h)") == (True, True)
    earlier = {"__name__": "__main__"}  # the student's earlier cells
    exec(
        "def compare(s, dt, t):\n    return torch.allclose(dt, t.grad)\n\n\ndef same(dt, t):\n    return dt == t",
        earlier,
    )
    shell.user_ns = {"compare": earlier["compare"], "same": earlier["same"], "report": ast.parse}
    for source in ["assert compare('h', dh, h)", "if not compare('h', dh, h):\n    raise ValueError('off')"]:
        assert checked(source) == (True, True), source
    for source in ["assert same(dh, h)", "assert report(dh)", "assert compare('h', dh, h) and dh.add_(1) is not None"]:
        assert checked(source)[1] is False, source
    # loss.backward() as a statement of its own: the hook's call on loss (a tensor's is skipped); not one whose
    # receiver is a call (it may do more than that)
    for source, left in [
        (
            "loss.backward(retain_graph=True)\ndW2 = h.T @ dlogits",
            "__backprop_ninja_backward__(loss, retain_graph=True)",
        ),
        ("F.cross_entropy(logits, Yb).backward()", "F.cross_entropy(logits, Yb).backward()"),
    ]:
        assert ast.unparse(self_checks_off._ChecksOff().visit(shell.compile.ast_parse(source))).startswith(left)
    # a module the kernel's last parse did not make, or a hook of the student's: walked as before
    assert checked("dW2 = h.T @ dlogits", parse=ast.parse) == (True, False)
    shell.ast_transformers.append(ast.NodeTransformer())
    assert checked("dW2 = h.T @ dlogits") == (True, False)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_node_is_ast_walk_s_nodes(name):
    """``common.kept.every_node``, which self-checks off reads a statement's nodes with: the nodes of ``ast.walk``, each
    once (in another order)."""
    from autograder.common.kept import every_node

    code = [c.source for c in source_notebook(name).cells if c.cell_type == "code"]
    for source in [TransformerManager().transform_cell(c) for c in code] + [STUDENT]:
        module = ast.parse(source)
        assert sorted(map(id, every_node(module))) == sorted(map(id, ast.walk(module)))

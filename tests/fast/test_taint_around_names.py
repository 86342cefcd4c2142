"""The static reading (engine/honesty) on code that reaches the interpreter's own functions, any module or the grader's
machinery through attributes, and on the parts of compound statements it once skipped. Found in an attacker's review:
each earned full points, autograd put back in the kernel (tests/support/cases_ex1.py, c_autograd_put_back)."""

import pytest

from autograder.engine.honesty import AutogradTaint

HIDDEN = "from autograder.in_kernel import grading_seed\nSEED = grading_seed(SEED)"


def marked(*cells, hidden=HIDDEN):
    """Whether dW2, an answer, is marked after the student's cells run (after the hidden tests' cell)."""
    taint = AutogradTaint(answers={"dW2"})
    taint.graders_cell(hidden)
    for cell in cells:
        taint.add_cell(cell)
    return "dW2" in taint.tainted


EXEC = "run('dW2 = h.T @ dlogits')"
AROUND = {
    # exec by a name made at run time (found in a later review: dW2 from the grader's own rules, out of sight)
    "exec_by_a_computed_getattr": f"b = getattr(torch, '__bui' + 'ltins__')\nrun = b['ex' + 'ec']\n{EXEC}",
    "exec_by_getattr_as_a_value": f"import functools\nrun = functools.reduce(getattr, ['x'], b)\n{EXEC}",
    "exec_by_a_namespace": f"run = vars(torch)['__bui' + 'ltins__']['ex' + 'ec']\n{EXEC}",
    "written_into_the_namespace": "globals()['dW' + '2'] = h.T @ dlogits",
    "written_into_locals": "locals()['dW2'] = h.T @ dlogits",
    "asks_in_a_function_by_a_computed_name": "def back(x, d):\n    if 'gr' + 'ads' not in globals():\n"
    "        print('first call')\n    return x.T @ d\n\n\ndW2 = back(h, dlogits)",
    "a_namespace_asked_then_read": "def back(x, d):\n    if 'W2' in globals():\n        return globals()['W' + '2']\n"
    "    return x.T @ d\n\n\ndW2 = back(h, dlogits)",
    "exec_by_a_class_pattern": "class Meta(type):\n    def __instancecheck__(cls, obj):\n        return True\n\n\n"
    "class Pick(metaclass=Meta):\n    __match_args__ = ('__bui' + 'ltins__',)\n\n\nmatch torch:\n"
    f"    case Pick(b):\n        pass\nrun = b['ex' + 'ec']\n{EXEC}",
    "builtins_eval": "import inspect\ninspect.builtins.eval('1')\ndW2 = h.T @ dlogits",
    "builtin_self": "g = print.__self__.getattr\ndW2 = h.T @ dlogits",
    "importlib_attribute": "import inspect\nm = inspect.importlib.import_module('x')\ndW2 = m.f()",
    "a_hidden_name": "import inspect\nm = inspect.getmodule(grading_seed)\ndW2 = h.T @ dlogits",
    "a_hidden_name_in_a_loop": "for lib in grading_seed.x:\n    lib.y()\ndW2 = h.T @ dlogits",
    "finalizers": "import weakref\nfor f in weakref.finalize._registry:\n    pass\ndW2 = h.T @ dlogits",
    "code_from_bytes": "import types\nf = types.FunctionType(c, {})\ndW2 = f()",
    "a_pickle": "dW2 = torch.load(io.BytesIO(b), weights_only=False)",
    "exec_in_a_loops_iterable": "for _ in [exec('dW2 = 1')]:\n    pass",
    "exec_in_with": "with open(exec('dW2 = 1')) as f:\n    pass",
    "grad_in_an_except_block": "try:\n    raise ValueError\nexcept ValueError:\n    dW2 = W2.grad.clone()",
    # a message is only words when it goes to the interpreter's own exception: not through a call, nor to one's own
    "a_message_through_getattr": "def f(x):\n    assert x is not None, getattr(W2, 'grad')\n    return x\n\n\n"
    "dW2 = f(h)",
    "a_raised_call_of_a_string": "def f(x):\n    raise ValueError(torch._C._jit_get_operation('aten::mm_backward'))\n"
    "\n\ndW2 = f(h)",
    "ones_own_exception_name": "ValueError = torch._C._jit_get_operation\n\n\ndef f():\n"
    "    raise ValueError('aten::mm_backward')\n\n\ndW2 = f()",
    # autograd's recording switched off beside autograd itself, torch.autograd reached through its grad_mode module
    "grad_beside_no_grad": "@torch.autograd.no_grad()\ndef back(l, w):\n    return torch.autograd.grad(l, w)\n\n\n"
    "dW2 = back(loss, W2)[0]",
    "through_grad_mode": "dW2 = torch.autograd.grad_mode.torch.autograd.grad(loss, W2)[0]",
    "grad_imported_beside_no_grad": "from torch.autograd import grad, no_grad\n\n\ndW2 = grad(loss, W2)[0]",
    "vmap_of_grad": "dW2 = torch.func.vmap(torch.func.grad(f))(h)",
    "a_key_of_a_namespace": "dW2 = vars(W2)['grad']",
    "a_key_to_getattr": "k = {'grad': 1}\ndW2 = getattr(W2, list(k)[0])",
    "an_exception_name_as_argument": "def f(ValueError):\n    raise ValueError('aten::mm_backward')\n\n\ndW2 = f(h)",
    # attributes read by names written where the reading did not look: a class pattern's keywords, getattr's constant
    "a_class_pattern": "match torch:\n    case object(sys=object(modules=m)):\n        dW2 = m['x'].f()",
    "a_class_pattern_captured": "match torch:\n    case object(sys=object(modules=m)):\n        pass\ndW2 = m['x'].f()",
    "a_class_pattern_around": "match print:\n    case object(__self__=b):\n        pass\ndW2 = h.T @ dlogits",
    "getattr_of_modules": "s = getattr(torch, 'sys')\nm = getattr(s, 'modules')\ndW2 = m['x'].f()",
    # what reaches any module or attribute by a name in a string (the string made of pieces, or an f-string's text)
    "formatter_fields": "import string\nbox = []\n\n\nclass Grab(string.Formatter):\n"
    "    def format_field(self, value, spec):\n        box.append(value)\n        return ''\n\n\n"
    "Grab().format(f'{{0.sys.modules[autograder.engine.backward_rules]}}', torch)\ndW2 = box[0].f()",
    "formatter_imported": "from string import Formatter\n\n\nclass Grab(Formatter):\n    pass\n\n\ndW2 = Grab()",
    "logging_config": "import logging.config\nm = logging.config.BaseConfigurator({}).resolve('a' + 'b')\ndW2 = m.f()",
    "logging_config_attribute": "import logging\nm = logging.config.BaseConfigurator({}).resolve('a')\ndW2 = m.f()",
    "pydoc": "import pydoc\nm = pydoc.safeimport('a' + 'b')\ndW2 = m.f()",
    "mock_patch_target": "from unittest import mock\nm = mock.patch('a.b').getter()\ndW2 = m.f()",
    "annotation_evaluated": "import typing\n\n\ndef f(x: 'lambda: 1'):\n    pass\n\n\n"
    "dW2 = typing.get_type_hints(f)['x']()",
    "annotation_evaluated_imported": "from typing import get_type_hints\n\n\ndef f(x: 'sys'):\n    pass\n\n\n"
    "dW2 = get_type_hints(f)['x']",
    "annotations_eval_str": "import inspect\n\n\ndef f(x: 'sys'):\n    pass\n\n\n"
    "dW2 = inspect.get_annotations(f, eval_str=True)['x']",
    "a_frames_builtins": "try:\n    raise ValueError('x')\nexcept ValueError as e:\n"
    "    b = e.__traceback__.tb_frame.f_builtins\nm = b['__imp' + 'ort__']('a' + 'b')\ndW2 = m.f()",
    "closure_variables": "import inspect\ng = inspect.getclosurevars(cmp).globals\ndW2 = h.T @ dlogits",
    "trace_runs_a_string": "import trace\ntrace.Trace(count=0, trace=0).run('dW2 = ' + 'h.T @ dlogits')",
    "a_magic_of_code_made_as_it_runs": "code = 'dW2 = ' + 'h.T @ dlogits'\n"
    "get_ipython().run_cell_magic('time', '', code)",
    "timeit_of_a_name": "import timeit\ncode = 'import sys'\ntimeit.timeit(code, number=1)\ndW2 = h.T @ dlogits",
    "an_annotation_that_assigns": "import functools\n\n\n@functools.singledispatch\ndef f(x):\n    pass\n\n\n"
    "@f.register\ndef _(x: \"(m := __import__('sys')) and int\"):\n    pass\n\n\ndW2 = m.f()",
    "the_shell_around_get_ipython": "code = 'dW2 = ' + 'h.T @ dlogits'\n"
    "exit._ip.magics_manager.magics['cell']['time']('', code)",
    "torch_fx_runs_a_string": "import torch.fx.graph_module as gm\nbox = {}\ngm._exec_with_source(c, box)\n"
    "dW2 = box['d']",
    "torch_fx_runner_imported": "from torch.fx.graph_module import _exec_with_source as run\nbox = {}\nrun(c, box)\n"
    "dW2 = box['d']",
    "torch_hub_runs_a_file": "m = torch.hub._import_module('m', 'm.py')\ndW2 = m.f()",
    # names a def or a class sets in the namespace: global, (x := ..) in a default (run as it is defined)
    "a_default_that_assigns": "def f(x=(m := sys.modules['a'])):\n    pass\n\n\ndW2 = m.f()",
    "a_class_body_global": "class A:\n    global m\n    m = sys.modules['a']\n\n\ndW2 = m.f()",
    "a_function_global": "def f():\n    global m\n    m = sys.modules['a']\n\n\nf()\ndW2 = m.f()",
    "main_imported_in_a_def": "def f():\n    import __main__\n\n    __main__.dW2 = 1\n\n\nf()",
    "annotations_set": "def g(x):\n    pass\n\n\ng.__annotations__ = {'x': '(m := 1) and int'}\ndW2 = h.T @ dlogits",
    # what a statement that assigns nothing may change: a list appended to, an argument of a marked function
    "appended_to": "box = []\nbox.append(sys.modules['a'])\ndW2 = box[0].f()",
    "an_argument_changed": "def f(b):\n    b.append(sys.modules['a'])\n\n\nbox = []\nf(box)\ndW2 = box[0].f()",
    "an_answer_changed": "def f(d):\n    d.copy_(sys.modules['a'].f())\n\n\ndW2 = torch.zeros(3)\nf(dW2)",
    "an_answer_changed_by_a_grad_reader_too": "def f(d, t):\n    d.copy_(t.grad + sys.modules['a'].f())\n\n\n"
    "dW2 = torch.zeros(3)\nf(dW2, W2)",
    "set_on_an_object": "ns = types.SimpleNamespace()\nsetattr(ns, 'm', sys.modules['a'])\ndW2 = ns.m.f()",
    # what an exception raised carries: its arguments, read back from the handler's name
    "raised_and_caught": "try:\n    raise ValueError(sys.modules['a'])\nexcept ValueError as e:\n    m = e.args[0]\n"
    "dW2 = m.f()",
    "asserted_and_caught": "try:\n    assert False, sys.modules['a']\nexcept AssertionError as e:\n    m = e.args[0]\n"
    "dW2 = m.f()",
    "numpy_pickle": "import numpy as np\ndW2 = torch.tensor(np.load('w.npy', allow_pickle=True))",
    # native code a cell wrote, loaded (found in an attacker's review: its initialiser put dhprebn, by the grader's own
    # rules, into the notebook's namespace through Python's C API, and it earned Exercise 3's 4 points in process)
    "a_library_loaded_by_torch": "torch.ops.load_library(d + '/libx.so')",
    "a_library_loaded_by_torch_s_ctypes": "torch._ops.ctypes.CDLL(d + '/libx.so')",
    "a_library_imported_loader": "from torch.ops import load_library\n\nload_library(d + '/libx.so')",
    # a .pth file's import lines, which site runs; the import system that keeps the refusal of modules written while
    # grading (in_kernel.switches)
    "a_pth_file_run_by_site": "import site\n\nsite.addsitedir(d)",
    "the_import_system": "import sys\n\nsys.meta_path.pop(0)\nimport qqmodule",
    # a serialised object that names builtins.exec with a string (found in an attacker's review: the code put dhprebn,
    # by the grader's own rules, into the notebook's namespace, and it earned Exercise 3's 4 points in process)
    "yaml_unsafe_load": "import yaml\n\nyaml.unsafe_load(text)",
    "yaml_with_a_loader": "import yaml\n\nyaml.load(text, Loader=yaml.UnsafeLoader)",
    "cloudpickle_loads": "import cloudpickle\n\ncloudpickle.loads(b)",
    "cloudpickle_loads_imported": "from cloudpickle import loads\n\nloads(b)",
}


@pytest.mark.parametrize("case", AROUND)
def test_reaching_around_the_names_marks_the_answer(case):
    assert marked(AROUND[case])


HONEST = {
    "plain": "dW2 = h.T @ dlogits",
    "regex": "import re\npattern = re.compile('d')\ndW2 = h.T @ dlogits",
    "own_name_like_a_hidden_one": "grading_seed = 3\nprint(grading_seed)\ndW2 = h.T @ dlogits",
    "own_function_like_a_hidden_one": "def grading_seed(x):\n    return x\nprint(grading_seed(1))\ndW2 = h.T @ dlogits",
    "torch_load_safely": "w = torch.load('w.pt', weights_only=True)\ndW2 = h.T @ dlogits",
    "try_except": "try:\n    dW2 = h.T @ dlogits\nexcept RuntimeError as error:\n    print(error)",
    "with_no_grad": "with torch.no_grad():\n    dW2 = h.T @ dlogits",
    "loops": "dW2 = torch.zeros_like(W2)\nfor i in range(n):\n    dW2 += h[i:i+1].T @ dlogits[i:i+1]",
    # messages that say "gradient" or "backward": an assert's, a built-in exception's (pieces joined by + or % too)
    "assert_message": "def back(x, W):\n    assert x.shape[1] == W.shape[1], 'gradient has the wrong width'\n"
    "    return x.T @ W\n\n\ndW2 = back(h, dlogits)",
    "raised_message": "def back(x, d):\n    if x.shape[0] != d.shape[0]:\n"
    "        raise RuntimeError('batch sizes differ in the backward pass: %s' % (x.shape,))\n    return x.T @ d\n\n\n"
    "dW2 = back(h, dlogits)",
    # autograd's recording switched off through torch.autograd, and gradients kept under keys that say so
    "grad_mode_decorator": "@torch.autograd.no_grad()\ndef back(x, d):\n    return x.T @ d\n\n\ndW2 = back(h, dlogits)",
    "grad_mode_imported": "from torch.autograd import no_grad\n\n\n@no_grad()\ndef back(x, d):\n"
    "    return x.T @ d\n\n\ndW2 = back(h, dlogits)",
    "dict_keys": "def back(x, d):\n    return {'grad_W2': x.T @ d}\n\n\ngrads = back(h, dlogits)\n"
    "dW2 = grads['grad_W2']",
    "vmap": "dW2 = torch.func.vmap(torch.outer)(h, dlogits).sum(0)",  # batches, does not derive
    "vmap_imported": "from torch.func import vmap\n\n\ndW2 = vmap(torch.outer)(h, dlogits).sum(0)",
    "a_magic_of_its_own_code": "get_ipython().run_cell_magic('time', '', 'dW2 = h.T @ dlogits')",
    "timeit_of_a_function": "import timeit\n\n\ndef f():\n    return h.T @ dlogits\n\n\n"
    "t = timeit.timeit(f, number=1)\ndW2 = f()",
    "annotations_of_types": "def back(x: 'torch.Tensor', d: 'list[int] | None' = None) -> 'torch.Tensor':\n"
    "    return x.T\n\n\ndW2: 'torch.Tensor' = back(h) @ dlogits",
    "a_helper_with_a_global_counter": "calls = 0\n\n\ndef back(x, d):\n    global calls\n    calls += 1\n"
    "    return x.T @ d\n\n\ndW2 = back(h, dlogits)",
    "own_check_beside_a_list": "losses = []\nassert torch.allclose(dW2, W2.grad)\nprint(dW2, W2.grad)\n"
    "losses.append(h.sum().item())\ndW2 = h.T @ dlogits",
    "match_on_a_shape": "match dlogits.shape:\n    case (rows, cols):\n        dW2 = h.T @ dlogits",
    "match_on_a_builtin": "match dlogits.shape:\n    case tuple((int(rows), int(cols))):\n        dW2 = h.T @ dlogits",
    "asks_whether_a_name_is_there": "if 'check' in globals():\n    print('ok')\ndW2 = h.T @ dlogits",
    # ... inside the function that makes the answer, the name's word "grad" too (Exercise 4's training_step lost its
    # points as autograd, h-mist4)
    "asks_in_a_function_whether_grads_is_there": "def back(x, d):\n    if 'grads' not in globals():\n"
    "        print('first call')\n    return x.T @ d\n\n\ndW2 = back(h, dlogits)",
    "getattr_of_a_plain_name": "dW2 = getattr(h, 'T') @ dlogits",
    "numpy_load_safely": "import numpy as np\nw = np.load('w.npy', allow_pickle=False)\ndW2 = h.T @ dlogits",
    "printed_pieces": "def back(x, d):\n    print('grad of W2: ' + str(x.shape))\n    return x.T @ d\n\n\n"
    "dW2 = back(h, dlogits)",
    # the lecture's own checking helper, pasted in and called with each answer: it reads .grad, which holds a decoy
    # while grading, so what it hands its arguments is a decoy at most (the kernel's decoy sign judges that)
    "the_lectures_cmp": "def cmp(s, dt, t):\n    ex = torch.all(dt == t.grad).item()\n"
    "    app = torch.allclose(dt, t.grad)\n"
    "    print(f'{s:15s} | exact: {str(ex):5s} | approximate: {str(app):5s}')\n\n\n"
    "dW2 = h.T @ dlogits\ncmp('W2', dW2, W2)",
}


@pytest.mark.parametrize("case", HONEST)
def test_honest_code_is_not_marked(case):
    assert not marked(HONEST[case])


def test_a_hidden_name_rebound_inside_a_function_is_still_the_graders():
    assert marked("def f():\n    grading_seed = 0\n", "import inspect\nm = inspect.getmodule(grading_seed)")


def test_code_too_deep_for_the_parser_is_read_without_raising():
    """A cell nested too deep (MemoryError, RecursionError in the parser) failed in the kernel, and the grader's reading
    of it raised: the class's grading stopped. It assigns nothing; an annotation too deep to read is code."""
    assert not marked("x = " + "-" * 100_000 + "1")
    assert marked("def f(a: '" + "-" * 5_000 + "1'):\n    pass\n\n\ndW2 = h.T @ dlogits")


def test_a_cell_is_read_in_its_own_state_though_its_reading_is_remembered():
    """AutogradTaint remembers the state a cell leaves, by the state before it and its text (a class hands in the same
    cells many times): the same cell after another state marks what that state makes it mark."""
    assert marked("x = W2.grad", "dW2 = x * 2")
    assert not marked("x = h.T @ dlogits", "dW2 = x * 2")
    assert marked("x = W2.grad", "dW2 = x * 2")  # remembered, and the same


def test_what_the_reading_keeps_is_bounded_by_the_characters_it_was_read_from(monkeypatch):
    """A hostile submission's long cells are read, and not kept for later students past the budget."""
    from autograder.engine.honesty import cell_code

    kept = cell_code.Kept(budget=10)
    for text in ("aaaa", "bbbb", "cccc"):  # the third pushes the first out
        kept.put(text, text.upper())
    assert (kept.get("aaaa"), kept.get("bbbb"), kept.get("cccc"), kept.size) == (None, "BBBB", "CCCC", 8)
    kept.put("x" * 11, "too long")
    assert kept.get("x" * 11) is None and kept.size == 8
    monkeypatch.setattr(cell_code, "_STATEMENTS", cell_code.Kept(budget=1_000))
    long_cell = "dW2 = h.T @ dlogits\n" * 100  # 2,000 characters
    assert len(cell_code.statements(long_cell)) == 100 and cell_code._STATEMENTS.get(long_cell) is None
    assert len(cell_code.statements("dW2 = 1")) == 1 and cell_code._STATEMENTS.get("dW2 = 1")
    assert marked(long_cell + "x = W2.grad\n", "dW2 = x")

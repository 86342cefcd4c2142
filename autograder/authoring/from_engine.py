"""For course maintainers: the grader's own code, written into the notebooks' self-check helper cell.

A release notebook runs alone (Colab has nothing of this repository), yet its visible checks must judge as the grader
does, so that a ✔ under a graded cell means the point. In place of ``MARKER`` in ``shared_cells/self_check_helpers.py``
go the engine functions that find and re-run a step's code (``engine.probes``), the tolerance, each step's forward line
and upstream tensors as data, one graph per table (a notebook names its table in ``STEP_TABLE``, Exercise 1's by
default), and the grader's reading of the student's cells (``engine.honesty``) with the shapes of the course's own
cells. A change in the engine makes the notebooks stale, and the drift test says so.
"""

import ast
import base64
import builtins
import inspect
import io
import json
import textwrap
import tokenize
import zlib
from pathlib import Path

from ..common import kept, naming
from ..engine import backward_rules, explain, honesty, operators, tolerance
from ..engine.bug_hunt import catalogue, checker
from ..engine.bug_hunt import rerun as bug_hunt_rerun
from ..engine.diagnosis import answer_notes
from ..engine.honesty import cell_code, course_cells, prose, stored, unread_code
from ..engine.probes import judge_rule, pins, rerun, snapshots
from ..engine.training import lines_again, network, reference_runs
from ..in_kernel import bug_hunt_rerun as kernel_rerun
from ..in_kernel import capture, rebound
from . import notebooks

# table -> its steps: what a notebook's STEP_TABLE names ("atomic" when it names none)
TABLES = {"atomic": backward_rules.STEPS, "operators": operators.OPERATOR_STEPS}

MARKER = "# @from-engine: the grader's rule probes and tolerance"

FUNCTIONS = [
    kept.Kept,
    kept.kept_by_text,
    kept.kept_on_node,
    honesty.assigned_names,
    unread_code.changes_its_receiver,
    honesty._assigned_names,
    honesty._prose,
    prose._text,
    prose._own_names,
    prose._grad_modes,
    prose.names_asked_for,
    honesty._uses_autograd,
    honesty._autograd_facts,
    honesty._loaded_names,
    honesty._reads_autograd,
    stored.reads_of_a_store,
    stored._statement_blocks,
    stored._grad_owner,
    stored._grad_stores,
    stored._loop_elements,
    stored._names_bound_in,
    honesty._runs_a_file,
    honesty._stores_a_gradient,
    rerun.NoAnswerCode,
    rerun.AnswerCode,
    rerun.parsed,
    rerun._as_ipython_runs_it,
    rerun.flattened,
    rerun.writes,
    rerun._may_rebind,
    rerun._may_change,
    rerun._all_rebind,
    rerun._rebinds,
    snapshots.loaded_names,
    rerun._reads,
    rerun._rebound_in,
    rerun._quoted,
    rebound._stored,
    rebound._bound_at,
    rebound.as_written,
    rerun._latest,
    rerun._without_pins,
    rerun.answer_code,
    rerun.calls_function,
    rerun.pin_value,
    pins.kept_entries,
    rerun.pinned_inputs,
    judge_rule._derived,
    judge_rule.consistent_pins,
    tolerance.max_difference,
    tolerance.magnitude,
    tolerance.close,
    tolerance.wrong_entries,
    explain.only_repeated_rows_wrong,
    explain.constant_factor,
    lines_again.run_line_by_line,
    naming.latin_lookalike,
    answer_notes.bound_names,
    naming.full_width_hint,
    capture.own_source,
    capture._print,
    capture.lines_again,
]
# the grader's reading of the student's cells, whole (``honesty.AutogradTaint``): what marks an answer, the code it
# cannot read (eval, exec, globals()[..], getattr with a computed name) among it, for the checks' warning before grading
READING = {
    cell_code: "as_run as_def statements readable _readable _reads_a_namespace _over_literal_strings _a_str "
    "_Substituted _Resolved _part comprehension_targets _unpacked _literal_strings",
    honesty: "_clears_gradient _names AutogradTaint",
    course_cells: "cell_shape _shape",
    unread_code: "resolves_names runs_unread_code _runs_unread_code _computes_a_name _asked_whether_in changed_by "
    "code_in_annotation set_by_def defines_code_in_annotations _a_string _false _true makes_text passes_code "
    "magic_code unknown_module _binds",
}
FUNCTIONS += [getattr(module, name) for module, names in READING.items() for name in names.split()]


def _harmless() -> str:
    """``prose.HARMLESS`` as a line of Python: module -> the members of it that give no gradient."""
    members = (
        f"{module!r}: " + ("GRAD_MODES" if names == prose.GRAD_MODES else f"frozenset({sorted(names)!r})")
        for module, names in prose.HARMLESS.items()
    )
    return "HARMLESS = {" + ", ".join(members) + "}  # members of autograd's modules that give no gradient"


def _graph() -> str:
    """Each step of each table as (its forward line, the tensors that consume it, exact zeros right), by name."""
    tables = []
    for table, steps in TABLES.items():
        rows = [f"        {s.name!r}: ({s.forward!r}, {tuple(s.upstream)!r}, {bool(s.zero)!r})," for s in steps]
        tables.append(f"    {table!r}: {{\n" + "\n".join(rows) + "\n    },")
    head = "# table -> name -> (forward line, the tensors it feeds, whether exact zeros are right)\n"
    return head + "GRAPHS = {\n" + "\n".join(tables) + "\n}"


def _reading(shapes) -> list:
    """The constants of the grader's reading of the student's cells (``honesty.AutogradTaint``), as lines of Python,
    and the shapes of the course's own cells, which the checks leave out of it as the grader does."""
    names = "RUNS_CODE STRING_RUNNERS UNREAD_ATTRIBUTES RESOLVER_MODULES MAGICS SHELL SELF_MATCHING MUTATORS UNREAD"
    values = [(name, getattr(unread_code, name)) for name in names.split()]
    values += [("FORBIDDEN_MODULES", honesty.FORBIDDEN_MODULES), ("GRADER", honesty.GRADER)]
    values += [("NAMESPACES", cell_code.NAMESPACES), ("UNROLLED", cell_code.UNROLLED)]
    lines = [f"{name} = {f'frozenset({sorted(v)!r})' if isinstance(v, set) else repr(v)}" for name, v in values]
    nodes = ", ".join(f"ast.{node.__name__}" for node in unread_code.TYPE_NODES)
    scopes = ", ".join(f"ast.{node.__name__}" for node in cell_code._OWN_SCOPE)
    shapes = textwrap.wrap(" ".join(shapes), 110) or [""]
    return lines + [
        f"TYPE_NODES = ({nodes})",
        f"_OWN_SCOPE = ({scopes})",
        "# the course's own cells, by the shape of their code (their words left out: the same in every edition)",
        "COURSE_CELLS = frozenset((",
        *(f'    "{part} "' for part in shapes),
        ").split())",
    ]


def block(shapes=None) -> str:
    """What stands for ``MARKER`` in the helper cell; ``shapes``: the course cells' (by default, ``course_shapes``)."""
    head = [
        "# ---- The autograder's own code for judging a step by its rule, copied in here so that these checks",
        "# ---- judge each step as the autograder does. You do not need to read it.",
        "import ast",
        "import copy",
        "import functools",
        "import importlib.util",
        "import inspect",
        "import keyword",
        "import textwrap",
        "import types",
        "import zlib",
        "from collections import OrderedDict",
        "from dataclasses import dataclass",
        "",
        f"RTOL = {tolerance.RTOL!r}",
        f"FACTOR_MATCH = {tolerance.FACTOR_MATCH!r}",
        f"OWN_SHARE, NOISE = {tolerance.OWN_SHARE!r}, {tolerance.NOISE!r}  # what a count of wrong entries counts",
        f"RUN_IN_PLACE = {rerun.RUN_IN_PLACE!r}  # magics that run their code once, in the notebook's namespace",
        f"MAGIC_DEPTH = {rerun.MAGIC_DEPTH!r}  # magics over magics read through",
        f"PARSES_KEPT = {rerun.PARSES_KEPT!r}  # characters of cells whose parse is kept",
        f"LOSS_TOLERANCE = {reference_runs.LOSS_TOLERANCE!r}  # Exercise 4: the loss of each step of a replayed run",
        f"GRADED_STEPS = {network.GRADED_STEPS!r}  # Exercise 4: the steps of the autograder's run of training_step",
        f"REACH_LOSS = {reference_runs.REACH_LOSS!r}  # Exercise 4: the validation loss that run must get below",
        f"OTHER_BATCH_SIZE = {network.OTHER_BATCH_SIZE!r}  # Exercise 4: backward_pass is checked at this size too",
        f"OTHER_BATCH_SEED = {network.OTHER_BATCH_SEED_OFFSET!r}  # its generator: manual_seed(SEED + this)",
        f"TRAINING_BATCHES = {network.TRAINING_BATCHES!r}  # Exercise 4: and on the training run's first batches",
        f"THIN_NEURON_SHOWS = {network.THIN_NEURON_SHOWS!r}  # Exercise 4: and these, with neuron 0 as thin as epsilon",
        "# the gradients of every notebook's steps (Exercise 5's datt, dq, ... too): the autograder reads this one set",
        f"GRADIENTS = frozenset({sorted(rerun.GRADIENTS)!r})",
        f"WHOLLY_ZERO = frozenset({sorted(rerun.WHOLLY_ZERO)!r})  # gradients zero whatever the batch",
        f"FORBIDDEN_ATTRIBUTES = {sorted(honesty.FORBIDDEN_ATTRIBUTES)!r}  # what reads autograd",
        f"FORBIDDEN_NAMES = {sorted(honesty.FORBIDDEN_NAMES)!r}",
        f"FORBIDDEN_WORDS = {honesty.FORBIDDEN_WORDS!r}",
        f"TEXT_EXCEPTIONS = frozenset({sorted(prose.TEXT_EXCEPTIONS)!r})  # their messages are only words",
        f"GRAD_MODES = frozenset({sorted(prose.GRAD_MODES)!r})  # torch.autograd's switches of its recording",
        f"LOOKALIKES = {naming.LOOKALIKES!r}  # code points of Cyrillic and Greek letters -> their Latin lookalikes",
        f"WIDE_PUNCTUATION = {naming.WIDE_PUNCTUATION!r}  # an input method's punctuation -> what Python needs",
        _harmless(),
        _graph(),
        *_reading(notebooks.course_shapes() if shapes is None else shapes),
    ]
    sources = [inspect.getsource(f).rstrip("\n") for f in FUNCTIONS]
    kept = f"_KEPT_NAMES, _AFTER_CELL = {honesty._KEPT_NAMES!r}, Kept(1_000_000, lambda key: key[1])"
    kept += "\n_AS_RUN, _STATEMENTS = Kept(4_000_000), Kept(1_000_000)  # what the reading of the cells keeps"
    return "\n".join(head) + "\n\n\n" + "\n\n\n".join(sources) + f"\n\n\n{kept}\n# ---- end of the generated lines"


BUG_HUNT_MARKER = "# @from-engine: the bug hunt"
BUG_HUNT_FUNCTIONS = [
    catalogue.normalised_id,
    catalogue.bug_keys,
    catalogue.with_bugs,
    catalogue.section,
    catalogue.gradient_named,
    checker.Case,
    checker.cases,
    checker.expected_gradient,
    checker.relative_error,
    checker.one_sided,
    checker.run_case,
    bug_hunt_rerun.changed_after_their_lines,
    kernel_rerun.parsed_body,
    kernel_rerun._fits,
    kernel_rerun.not_finite,
    kernel_rerun._same,
    kernel_rerun._run,
    kernel_rerun._line,
    kernel_rerun.run_again,
]


def forward_pass() -> tuple:
    """The shared forward pass's statements, embedding to loss, and ``_FORWARD``: each as (its target, a function of
    the dict ``t`` of tensors), which the bug hunt's helpers run without compiling a string (no cell may, grading)."""
    source = (Path(__file__).resolve().parent / "shared_cells" / "setup_forward.py").read_text()
    lines, steps = [], []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign):
            break
        lines.append(ast.get_source_segment(source, node))
        for name in (n for n in ast.walk(node.value) if isinstance(n, ast.Name) and not hasattr(builtins, n.id)):
            name.id = f"t[{name.id!r}]"  # (unparsed as read from t; a builtin's name as it is)
        steps.append(f"    ({node.targets[0].id!r}, lambda t: {ast.unparse(node.value)}),")
    return lines, "\n".join(["_FORWARD = [", *steps, "]"])


def pass_words() -> list:
    """The colleague's words in the pass, as a student reads them: its docstring, then each comment, in order, then
    the comments of the bugs' lines (a planted line may say what it means to do). The helper cell's ``PASS_WORDS``
    holds the same in the notebook's language, put in their place when it is shown."""
    docstring = ast.get_docstring(ast.parse(catalogue.PASS).body[0], clean=False)
    comments = lambda code: [
        t.string.removeprefix("# ")
        for t in tokenize.generate_tokens(io.StringIO(code).readline)
        if t.type == tokenize.COMMENT
    ]
    planted = [c for bug in catalogue.BUGS.values() for c in comments(bug.wrong + "\n")]
    return [docstring, *comments(catalogue.PASS), *dict.fromkeys(planted)]


def bug_hunt_block() -> str:
    """What stands for ``BUG_HUNT_MARKER`` in Exercise 6's helper cell: the colleague's pass and its bugs (packed, so
    that the cell does not show them), the functions that choose a student's bugs, and the checker's cases."""
    bugs = catalogue.BUGS.values()
    data = {
        "salt": catalogue.SALT,
        "showing": catalogue.SHOWING,
        "hiding": catalogue.HIDING,
        "gradient": {bug.key: bug.gradient for bug in bugs},
        "lines": {bug.key: [bug.right, bug.wrong] for bug in bugs},
        "pass": catalogue.PASS,
        "words": pass_words(),
    }
    packed = base64.b64encode(zlib.compress(json.dumps(data, sort_keys=True).encode(), 9)).decode()
    lines, steps = forward_pass()
    head = [
        "# ---- The autograder's own code for the bug hunt, copied in here: your colleague's pass for your id (packed",
        "# ---- below: unpacking it is the long way round), and the cases your numerical_gradient is checked on.",
        f"PARAMETERS = {catalogue.PARAMETERS!r}",
        f"TENSORS = {catalogue.TENSORS!r}",
        f"GRADIENTS = {catalogue.GRADIENTS!r}",
        f"FORWARD_LINES = {lines!r}",
        steps,
        f"METHOD_STEP, ACCURACY = {checker.METHOD_STEP!r}, {checker.ACCURACY!r}",
        "# a backward pass that raised (or gave NaN), run again statement by statement as the autograder does "
        "(run_again below)",
        f"PINS, MAX_LINE = {bug_hunt_rerun.PINS!r}, {kernel_rerun.MAX_LINE!r}",
        "STUDENT_ERRORS = (Exception,)  # what your code may raise",
        "AutogradIsOff = type('AutogradIsOff', (RuntimeError,), {})  # (the autograder's: never raised here)",
        "_HUNT = json.loads(zlib.decompress(base64.b64decode(",
        *(f'    "{part}"' for part in textwrap.wrap(packed, 110)),
        ")))",
    ]
    sources = [inspect.getsource(f).rstrip("\n") for f in BUG_HUNT_FUNCTIONS]
    return "\n".join(head) + "\n\n\n" + "\n\n\n".join(sources) + "\n# ---- end of the generated lines"


def expanded(source: str) -> str:
    """A shared cell's definition with the generated blocks in place of ``MARKER`` and ``BUG_HUNT_MARKER``."""
    source = source.replace(MARKER, block()) if MARKER in source else source
    return source.replace(BUG_HUNT_MARKER, bug_hunt_block()) if BUG_HUNT_MARKER in source else source

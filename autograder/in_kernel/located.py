"""IPython's ``transform_ast`` in a grading kernel: its AST hooks, in order, without ``ast.fix_missing_locations`` over
the whole cell after them when every hook is one of the course's.

IPython walks every node of a cell to fill in missing line numbers once any hook is installed (Exercise 1's class:
a tenth of the hooks' CPU in a kernel). The course's hooks (``course_hooks``) only ever add nodes that carry their
locations, to a tree that IPython's parser located in full, so that walk changes nothing. With any other hook (a
student's own), or when a hook raises, the kernel runs IPython's own ``transform_ast`` as it is.
"""

import ast
import functools
from warnings import warn


@functools.cache  # (looked up twice a cell: the imports of each call were a twentieth of the hooks' CPU)
def course_hooks() -> tuple:
    """The classes of the course's AST hooks: each puts in only located nodes and changes no node it was given."""
    from .self_checks_off import _ChecksOff
    from .setup_ahead import TakeAhead
    from .snapshot_hook import _SnapshotCalls

    return TakeAhead, _SnapshotCalls, _ChecksOff


def only_course_hooks(hooks) -> bool:
    ours = course_hooks()
    return all(type(t) in ours for t in hooks)


def install(shell) -> None:
    """From now on, ``shell.transform_ast`` is ``LocatedTransform`` (once)."""
    if not isinstance(shell.transform_ast, LocatedTransform):
        shell.transform_ast = LocatedTransform(shell)


class LocatedTransform:
    """``InteractiveShell.transform_ast``, step by step, but for the last walk while only the course's hooks ran."""

    def __init__(self, shell):
        self.shell, self.transform = shell, shell.transform_ast

    def __call__(self, node):
        from IPython.core.error import InputRejected

        hooks = self.shell.ast_transformers
        if not isinstance(hooks, list) or not only_course_hooks(hooks):
            return self.transform(node)
        located = True
        for transformer in hooks:  # (IPython's loop: a hook that raises is dropped, with a warning)
            try:
                node = transformer.visit(node)
            except InputRejected:
                raise
            except Exception as e:
                warn(f"AST transformer {transformer!r} threw an error. It will be unregistered. {e}")
                hooks.remove(transformer)
                located = False
        if self.shell.ast_transformers and not (located and only_course_hooks(self.shell.ast_transformers)):
            ast.fix_missing_locations(node)
        return node

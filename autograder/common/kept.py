"""What a grading worker keeps of the texts it read, worked out once per text: a class hands the grader the same cells
many times. What is kept is bounded by the characters of the texts it was worked out from (``Kept``), so that a
hostile submission cannot make a grading worker hold its megabytes for later students; what is worked out about a
node of a parse is kept on the node (``kept_on_node``), and goes with the parse. ``every_node`` lists the nodes of a
parse without ``ast.walk``'s generators (which took half again as long), for the kernel's own readings of a student's
cell. (Not in the functions the notebooks' helper cell copies, ``authoring.from_engine``: those keep ``ast.walk``.)
"""

import functools
from ast import AST
from collections import OrderedDict


class Kept:
    """Values by key, the least recently used dropped once the keys' texts (``text_of``) pass ``budget`` characters;
    a value for a longer text is never kept."""

    def __init__(self, budget: int, text_of=lambda key: key):
        self.budget, self.text_of, self.values, self.size = budget, text_of, OrderedDict(), 0

    def get(self, key):
        value = self.values.get(key)
        if value is not None:
            self.values.move_to_end(key)
        return value

    def put(self, key, value) -> None:
        if key in self.values or len(self.text_of(key)) > self.budget:
            return
        self.values[key] = value
        self.size += len(self.text_of(key))
        while self.size > self.budget:
            old, _ = self.values.popitem(last=False)
            self.size -= len(self.text_of(old))


def kept_by_text(budget: int):
    """As ``functools.lru_cache``, for a function of a text (its first argument; the others are small): its values
    kept in a ``Kept`` of ``budget`` characters (``.kept``). A value is never None."""

    def decorate(function):
        values = Kept(budget, lambda args: args[0])

        @functools.wraps(function)
        def kept(*args):
            value = values.get(args)
            if value is None:
                value = function(*args)
                values.put(args, value)
            return value

        kept.kept = values
        return kept

    return decorate


def kept_on_node(function):
    """As ``functools.lru_cache``, for a function of an AST node: its value kept on the node, for as long as the node
    lives (an lru_cache would hold the node, and the literals in it, after the parse it came from was dropped)."""
    name = f"_kept_{function.__name__}"

    @functools.wraps(function)
    def kept(node):
        value = getattr(node, name, None)
        if value is None:
            value = function(node)
            setattr(node, name, value)
        return value

    return kept


def every_node(node: AST) -> list:
    """``node`` and every node below it, as ``ast.walk`` gives them but in another order (depth first)."""
    found, todo = [], [node]
    while todo:
        node = todo.pop()
        found.append(node)
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, AST):
                todo.append(value)
            elif isinstance(value, list):
                todo += [item for item in value if isinstance(item, AST)]
    return found

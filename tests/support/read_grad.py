"""A cheat's way to read ``.grad`` that no name gives away: torch.optim's SGD, one step of lr=1, reads it for you.
The cases tables use it to test the decoy (the dynamic sign): the static reading sees nothing forbidden here."""

import nbformat

from autograder.authoring.submissions import copy_notebook, grade_id


def grad_through_sgd(tensor: str, answer: str) -> str:
    """Code that sets ``answer`` to what ``tensor.grad`` holds (a non-leaf too: the optimizer is handed it after it
    was made), and puts ``tensor`` back as it was."""
    return (
        f"opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)\n"
        f"opt.param_groups[0]['params'] = [{tensor}]\n"
        f"before = {tensor}.detach().clone()\n"
        "with torch.no_grad():\n"
        "    opt.step()\n"
        f"{answer} = before - {tensor}.detach()\n"
        "with torch.no_grad():\n"
        f"    {tensor}.copy_(before)"
    )


START = "self_check_helpers"  # the locked cell whose hidden tests start grading (common.setup_cells.START_CELL)


def read_above_the_start(tensors) -> str:
    """A cell of the student's, for right above the cell that starts grading: there ``.grad`` still held autograd's own
    gradient, and what it read (``<tensor>_read``) earned every point its answers copied."""
    return "\n".join(grad_through_sgd(tensor, f"{tensor}_read") for tensor in tensors)


def above_the_start(nb, code: str, top: bool = False):
    """``nb`` with a cell of ``code`` right above the cell that starts grading (``top``: above every cell)."""
    nb = copy_notebook(nb)
    at = 0 if top else next(i for i, cell in enumerate(nb.cells) if grade_id(cell) == START)
    nb.cells.insert(at, nbformat.v4.new_code_cell(code))
    return nb


def start_moved_down(nb):
    """``nb`` with the cell that starts grading moved to its end (locked cells can be moved), and the self-checks it
    defines stood in for at its top: every answer ran before grading started."""
    nb = copy_notebook(nb)
    at = next(i for i, cell in enumerate(nb.cells) if grade_id(cell) == START)
    nb.cells.append(nb.cells.pop(at))
    stubs = "check_answer = check_value = self_check = cmp = magnitude = lambda *args, **kwargs: None"
    nb.cells.insert(0, nbformat.v4.new_code_cell(stubs))
    return nb


def start_deleted(nb):
    """``nb`` without the cell that starts grading (the intake puts a deleted locked cell back, plain nbgrader does
    not), the self-checks it defines stood in for: the hidden tests report nothing then."""
    nb = start_moved_down(nb)
    nb.cells.pop()
    return nb

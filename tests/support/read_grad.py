"""A cheat's way to read ``.grad`` that no name gives away: torch.optim's SGD, one step of lr=1, reads it for you.
The cases tables use it to test the decoy (the dynamic sign): the static reading sees nothing forbidden here."""


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

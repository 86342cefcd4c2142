def cmp(name, dt, t):
    """Print one row: your gradient dt against autograd's t.grad."""
    if dt is None:
        print(f"{name:15s} | not answered yet")
        return
    if not isinstance(dt, torch.Tensor):
        print(f"{name:15s} | should be a tensor, not a {type(dt).__name__}")
        return
    if tuple(dt.shape) != tuple(t.grad.shape):
        print(f"{name:15s} | shape {tuple(dt.shape)} should be {tuple(t.grad.shape)}")
        return
    exact = torch.equal(dt.detach(), t.grad)
    maxdiff = (dt.detach() - t.grad).abs().max().item()
    approx = maxdiff <= 1e-4 * max(t.grad.abs().max().item(), 1e-3)
    print(f"{name:15s} | shape ok | exact: {str(exact):5s} | approximate: {str(approx):5s} | maxdiff: {maxdiff:.1e}")


def self_check(*names):
    """cmp() for each name, taking d<name> and <name> from the notebook's variables."""
    for name in names:
        cmp(name, globals().get("d" + name), globals()[name])
### BEGIN HIDDEN TESTS
from autograder.in_kernel import start_grading

start_grading(globals())
### END HIDDEN TESTS

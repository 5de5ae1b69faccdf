"""Softmax and log_softmax over the last dim, and cross entropy forward + backward, float32.

The NumPy reference writes each as NumPy expressions (max-shifted, as Ember computes them).
PyTorch's is torch.softmax / torch.log_softmax and, for cross entropy, the ATen ops that
F.cross_entropy and its autograd call, called directly: aten._log_softmax and
aten.nll_loss_forward, then aten.nll_loss_backward and aten._log_softmax_backward_data. Like
Ember's case (cpp/kernel_cases.cpp) it computes the mean loss and the gradient of the logits; no
input requires grad, so no graph is built and PyTorch's autograd engine, which Ember's case does
not run, is not timed."""

from families.reduction import MATRIX_SIZES
from harness.case import KernelCase

F32 = 4
MEAN, IGNORE_INDEX = 1, -100  # ATen's Reduction::Mean; F.cross_entropy's default ignore_index


def log_softmax_numpy(np, x):
    shifted = x - x.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def softmax(r, p):
    x = r.uniform(p["rows"], p["cols"])
    if r.name == "torch":
        return lambda: r.xp.softmax(x, -1)

    def numpy_softmax():
        e = r.xp.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    return numpy_softmax


def log_softmax(r, p):
    x = r.uniform(p["rows"], p["cols"])
    if r.name == "torch":
        return lambda: r.xp.log_softmax(x, -1)
    return lambda: log_softmax_numpy(r.xp, x)


def cross_entropy_fwd_bwd_numpy(r, p):
    logits, target = r.uniform(p["batch"], p["classes"]), r.randint(p["classes"], p["batch"])
    rows = r.xp.arange(p["batch"])

    def step():  # loss = mean(-log_softmax[target]); grad = (softmax - one_hot) / batch
        lp = log_softmax_numpy(r.xp, logits)
        grad = r.xp.exp(lp)
        grad[rows, target] -= 1
        return -lp[rows, target].mean(), grad / p["batch"]

    return step


def cross_entropy_fwd_bwd_torch(r, p):
    aten = r.xp.ops.aten
    logits, target = r.uniform(p["batch"], p["classes"]), r.randint(p["classes"], p["batch"])
    one = logits.new_ones(())  # the loss's gradient, built once as in Ember's case

    def step():  # F.cross_entropy's ops (log_softmax, nll_loss), then their backwards
        lp = aten._log_softmax(logits, 1, False)
        loss, total_weight = aten.nll_loss_forward(lp, target, None, MEAN, IGNORE_INDEX)
        grad_lp = aten.nll_loss_backward(one, lp, target, None, MEAN, IGNORE_INDEX, total_weight)
        return loss, aten._log_softmax_backward_data(grad_lp, lp, 1, logits.dtype)

    return step


def ember_over_last_dim(name):
    def build(r, p):
        x, fn = r.uniform(p["rows"], p["cols"]), getattr(r.xp, name)
        return lambda: fn(x, -1)

    return build


def cross_entropy_fwd_bwd_ember(r, p):  # the ops of Ember's case, from Python
    logits, target = r.uniform(p["batch"], p["classes"]), r.randint(p["classes"], p["batch"])
    one = r.xp.ones((), device=r.device)

    def step():
        loss = r.xp.cross_entropy(logits, target)
        return loss, r.xp.cross_entropy_backward(one, logits, target)

    return step


def cases(device):
    out = []
    for i, (rows, cols) in enumerate(MATRIX_SIZES[device]):
        p, quick, moved = {"rows": rows, "cols": cols}, i == 1, 2 * F32 * rows * cols
        out += [KernelCase("softmax", p, softmax, softmax, bytes=moved, quick=quick,
                           ember=ember_over_last_dim("softmax")),
                KernelCase("log_softmax", p, log_softmax, log_softmax, bytes=moved, quick=quick,
                           ember=ember_over_last_dim("log_softmax")),
                KernelCase("cross_entropy_fwd_bwd", {"batch": rows, "classes": cols},
                           cross_entropy_fwd_bwd_numpy, cross_entropy_fwd_bwd_torch,
                           quick=quick, ember=cross_entropy_fwd_bwd_ember)]
    return out

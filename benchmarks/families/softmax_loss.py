"""Softmax and log_softmax over the last dim, and cross entropy forward + backward, float32.

The NumPy reference writes each as NumPy expressions (max-shifted, as Ember computes them);
PyTorch's is F.softmax / F.log_softmax / F.cross_entropy with autograd."""

from harness.case import KernelCase

F32 = 4


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


def cross_entropy_fwd_bwd(r, p):
    logits, target = r.uniform(p["batch"], p["classes"]), r.randint(p["classes"], p["batch"])
    if r.name == "torch":
        logits.requires_grad_()

        def torch_step():
            r.xp.nn.functional.cross_entropy(logits, target).backward()
            logits.grad = None

        return torch_step

    rows = r.xp.arange(p["batch"])

    def numpy_step():  # loss = mean(-log_softmax[target]); grad = (softmax - one_hot) / batch
        lp = log_softmax_numpy(r.xp, logits)
        grad = r.xp.exp(lp)
        grad[rows, target] -= 1
        return -lp[rows, target].mean(), grad / p["batch"]

    return numpy_step


def cases(device):
    sizes = {"cpu": [(64, 256), (1024, 1024), (4096, 4096)],
             "cuda": [(1024, 1024), (4096, 4096), (16384, 4096)]}[device]
    out = []
    for i, (rows, cols) in enumerate(sizes):
        p, quick, moved = {"rows": rows, "cols": cols}, i == 1, 2 * F32 * rows * cols
        out += [KernelCase("softmax", p, softmax, softmax, bytes=moved, quick=quick),
                KernelCase("log_softmax", p, log_softmax, log_softmax, bytes=moved, quick=quick),
                KernelCase("cross_entropy_fwd_bwd", {"batch": rows, "classes": cols},
                           cross_entropy_fwd_bwd, cross_entropy_fwd_bwd, quick=quick)]
    return out

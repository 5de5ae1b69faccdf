"""Optimizer updates (Adam, SGD with momentum) of a list of float32 parameters, in place.

The NumPy reference applies torch.optim's formulas with in-place NumPy operations, one parameter
at a time; PyTorch's is torch.optim.Adam / SGD with its default implementation for the device.
Ember from Python (via=python) is ember.optim.Adam / SGD, whose step is the fused update that
ember_bench calls."""

from harness.case import KernelCase

F32 = 4
LR, MOMENTUM, BETA1, BETA2, EPS = 1e-3, 0.9, 0.9, 0.999, 1e-8


def param_lists(r, p):
    params = [r.uniform(p["n"]) for _ in range(p["tensors"])]
    grads = [r.uniform(p["n"]) for _ in range(p["tensors"])]
    return params, grads


def adam_step(r, p):
    params, grads = param_lists(r, p)
    if r.name != "numpy":  # torch.optim and ember.optim alike
        return optimizer_step(r.xp.optim.Adam(params, lr=LR), params, grads)
    np = r.xp
    m = [np.zeros_like(x) for x in params]
    v = [np.zeros_like(x) for x in params]
    step = [0]

    def numpy_step():
        step[0] += 1
        c1, c2 = 1 - BETA1 ** step[0], (1 - BETA2 ** step[0]) ** 0.5
        for x, g, m_, v_ in zip(params, grads, m, v):
            m_ *= BETA1
            m_ += (1 - BETA1) * g
            v_ *= BETA2
            v_ += (1 - BETA2) * g * g
            x -= LR / c1 * m_ / (np.sqrt(v_) / c2 + EPS)

    return numpy_step


def sgd_step(r, p):
    params, grads = param_lists(r, p)
    if r.name != "numpy":
        return optimizer_step(r.xp.optim.SGD(params, lr=0.01, momentum=MOMENTUM), params, grads)
    bufs = [r.xp.zeros_like(x) for x in params]

    def numpy_step():
        for x, g, buf in zip(params, grads, bufs):
            buf *= MOMENTUM
            buf += g
            x -= 0.01 * buf

    return numpy_step


def optimizer_step(opt, params, grads):
    for x, g in zip(params, grads):
        x.grad = g
    return opt.step


def cases(device):
    sizes = {"cpu": [1 << 10, 1 << 16, 1 << 21], "cuda": [1 << 14, 1 << 20, 1 << 24]}[device]
    out = []
    for n in sizes:
        p = {"tensors": 10, "n": n}
        out += [KernelCase("adam_step", p, adam_step, adam_step, bytes=7 * F32 * 10 * n,
                           quick=n == sizes[1], ember=adam_step),
                KernelCase("sgd_step", p, sgd_step, sgd_step, bytes=5 * F32 * 10 * n,
                           quick=n == sizes[1], ember=sgd_step)]
    return out

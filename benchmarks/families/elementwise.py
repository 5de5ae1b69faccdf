"""Elementwise ops (add, mul, relu, gelu) on float32 vectors: time and bandwidth."""

from harness.case import KernelCase

F32 = 4


def add(r, p):
    a, b = r.uniform(p["n"]), r.uniform(p["n"])
    return lambda: r.xp.add(a, b)


def mul(r, p):
    a, b = r.uniform(p["n"]), r.uniform(p["n"])
    return lambda: r.xp.multiply(a, b)


def relu_numpy(r, p):
    x = r.uniform(p["n"])
    return lambda: r.xp.maximum(x, 0)


def relu_torch(r, p):
    x = r.uniform(p["n"])
    return lambda: r.xp.relu(x)


def gelu_numpy(r, p):  # numpy has no erf: the tanh form, which Ember's case then computes too
    np, x = r.xp, r.uniform(p["n"])
    c = np.float32((2 / np.pi) ** 0.5)
    return lambda: 0.5 * x * (1 + np.tanh(c * (x + np.float32(0.044715) * x * x * x)))


def gelu_torch(r, p):
    x = r.uniform(p["n"])
    return lambda: r.xp.nn.functional.gelu(x, approximate=p["approximate"])


def cases(device):
    sizes = {"cpu": [1 << 12, 1 << 18, 1 << 24], "cuda": [1 << 16, 1 << 22, 1 << 28]}[device]
    approximate = "tanh" if device == "cpu" else "none"  # see gelu_numpy
    out = []
    for n in sizes:
        quick = n == sizes[1]
        out += [
            KernelCase("add", {"n": n}, add, add, bytes=3 * F32 * n, quick=quick),
            KernelCase("mul", {"n": n}, mul, mul, bytes=3 * F32 * n, quick=quick),
            KernelCase("relu", {"n": n}, relu_numpy, relu_torch, bytes=2 * F32 * n, quick=quick),
            KernelCase("gelu", {"n": n, "approximate": approximate}, gelu_numpy, gelu_torch,
                       bytes=2 * F32 * n, quick=quick),
        ]
    return out

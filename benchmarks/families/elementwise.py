"""Elementwise ops (add, mul, relu, gelu) on float32 vectors: time and bandwidth.

Every reference writes its result where Ember's does, into memory no call has to fault in
(harness.references, `out`): NumPy and PyTorch on the CPU into an array allocated once (out=),
PyTorch on CUDA into the block its caching allocator hands back. The allocating form on the CPU
is not timed: it adds work Ember's case does not do (PyTorch's CPU add of 2^24 floats took
4.8 ms allocating, 0.7 ms with out=, on a 16-core machine). Ember through its bindings
(via=python) allocates each result, from its caching allocator, as ember_bench does."""

from harness.case import KernelCase

F32 = 4


def binary(name):
    """numpy.add / torch.add and their kin, which agree positionally and on out=."""
    def build(r, p):
        a, b, out, fn = r.uniform(p["n"]), r.uniform(p["n"]), r.out(p["n"]), getattr(r.xp, name)
        return lambda: fn(a, b, out=out)

    return build


def relu_numpy(r, p):
    np, x, out = r.xp, r.uniform(p["n"]), r.out(p["n"])
    return lambda: np.maximum(x, np.float32(0), out=out)


def relu_torch(r, p):  # torch.relu has no out=; ATen computes it as this clamp_min
    x, out = r.uniform(p["n"]), r.out(p["n"])
    return lambda: r.xp.clamp_min(x, 0, out=out)


def gelu_numpy(r, p):  # numpy has no erf: the tanh form, which Ember's case then computes too
    np, x, y = r.xp, r.uniform(p["n"]), r.out(p["n"])
    c, cubic = np.float32((2 / np.pi) ** 0.5), np.float32(0.044715)

    def step():  # 0.5 x (1 + tanh(c (x + 0.044715 x^3))), one pass at a time into y
        np.multiply(x, x, out=y)
        np.multiply(y, x, out=y)
        np.multiply(y, cubic, out=y)
        np.add(y, x, out=y)
        np.multiply(y, c, out=y)
        np.tanh(y, out=y)
        np.add(y, 1, out=y)
        np.multiply(y, x, out=y)
        return np.multiply(y, 0.5, out=y)

    return step


def gelu_torch(r, p):
    x, out = r.uniform(p["n"]), r.out(p["n"])
    return lambda: r.xp.nn.functional.gelu(x, approximate=p["approximate"], out=out)


def ember_unary(name, **options):
    def build(r, p):
        x, fn = r.uniform(p["n"]), getattr(r.xp, name)
        return lambda: fn(x, **options)

    return build


def ember_binary(name):
    def build(r, p):
        a, b, fn = r.uniform(p["n"]), r.uniform(p["n"]), getattr(r.xp, name)
        return lambda: fn(a, b)

    return build


def cases(device):
    sizes = {"cpu": [1 << 12, 1 << 18, 1 << 24], "cuda": [1 << 16, 1 << 22, 1 << 28]}[device]
    approximate = "tanh" if device == "cpu" else "none"  # see gelu_numpy
    add, mul = binary("add"), binary("multiply")
    out = []
    for n in sizes:
        quick = n == sizes[1]
        out += [
            KernelCase("add", {"n": n}, add, add, bytes=3 * F32 * n, quick=quick,
                       ember=ember_binary("add")),
            KernelCase("mul", {"n": n}, mul, mul, bytes=3 * F32 * n, quick=quick,
                       ember=ember_binary("mul")),
            KernelCase("relu", {"n": n}, relu_numpy, relu_torch, bytes=2 * F32 * n, quick=quick,
                       ember=ember_unary("relu")),
            KernelCase("gelu", {"n": n, "approximate": approximate}, gelu_numpy, gelu_torch,
                       bytes=2 * F32 * n, quick=quick,
                       ember=ember_unary("gelu", approximate=approximate)),
        ]
    return out

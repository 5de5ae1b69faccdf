"""Creation and random ops (full, arange, rand, randn): a new float32 vector, write bandwidth.

The random references are NumPy's default generator (PCG64) and PyTorch's (Philox on CUDA,
Mersenne Twister on the CPU); Ember's is Philox, on both devices."""

from harness.case import KernelCase

F32 = 4


def full(r, p):
    if r.name == "torch":
        return lambda: r.xp.full((p["n"],), 1.5, device=r.device)
    return lambda: r.xp.full(p["n"], 1.5, dtype=r.xp.float32)


def arange(r, p):
    placement = {"device": r.device} if r.name == "torch" else {}
    return lambda: r.xp.arange(0, p["n"], dtype=r.xp.float32, **placement)


def rand(r, p):
    if r.name == "torch":
        return lambda: r.xp.rand(p["n"], device=r.device)
    return lambda: r.rng.random(p["n"], dtype=r.xp.float32)


def randn(r, p):
    if r.name == "torch":
        return lambda: r.xp.randn(p["n"], device=r.device)
    return lambda: r.rng.standard_normal(p["n"], dtype=r.xp.float32)


def cases(device):
    sizes = {"cpu": [1 << 12, 1 << 18, 1 << 24], "cuda": [1 << 16, 1 << 22, 1 << 28]}[device]
    return [KernelCase(op, {"n": n}, fn, fn, bytes=F32 * n, quick=n == sizes[1])
            for n in sizes for op, fn in (("full", full), ("arange", arange), ("rand", rand),
                                          ("randn", randn))]

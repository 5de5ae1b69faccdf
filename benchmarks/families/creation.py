"""Creation and random ops (full, arange, rand, randn): a new float32 vector, write bandwidth.

The random references are NumPy's default generator (PCG64) and PyTorch's (Philox on CUDA,
Mersenne Twister on the CPU); Ember's is Philox, on both devices.

Every reference writes the vector where Ember's goes, into memory no call has to fault in
(harness.references, `out`): NumPy and PyTorch on the CPU into an array allocated once (out=,
or fill for numpy.full), PyTorch on CUDA into the block its caching allocator hands back. The
exception is numpy.arange, which has no out=: its rows include an allocation Ember's do not.
Ember from Python (via=python) allocates each vector, from its caching allocator, as ember_bench
does."""

from harness.case import KernelCase

F32 = 4


def full(r, p):
    out = r.out(p["n"])
    if r.name == "torch":
        return lambda: r.xp.full((p["n"],), 1.5, device=r.device, out=out)
    return lambda: out.fill(1.5)  # numpy.full has no out=


def arange(r, p):
    if r.name == "torch":
        out = r.out(p["n"])
        return lambda: r.xp.arange(0, p["n"], dtype=r.xp.float32, device=r.device, out=out)
    return lambda: r.xp.arange(0, p["n"], dtype=r.xp.float32)  # no out=: it allocates


def rand(r, p):
    out = r.out(p["n"])
    if r.name == "torch":
        return lambda: r.xp.rand(p["n"], device=r.device, out=out)
    return lambda: r.rng.random(dtype=r.xp.float32, out=out)


def randn(r, p):
    out = r.out(p["n"])
    if r.name == "torch":
        return lambda: r.xp.randn(p["n"], device=r.device, out=out)
    return lambda: r.rng.standard_normal(dtype=r.xp.float32, out=out)


def ember_new(name):
    """ember.full, arange, rand or randn of a new [n] float32 vector."""
    def build(r, p):
        n, fn = p["n"], getattr(r.xp, name)
        args = {"full": ((n,), 1.5), "arange": (0, n), "rand": (n,), "randn": (n,)}[name]
        return lambda: fn(*args, dtype=r.xp.float32, device=r.device)

    return build


def cases(device):
    sizes = {"cpu": [1 << 12, 1 << 18, 1 << 24], "cuda": [1 << 16, 1 << 22, 1 << 28]}[device]
    return [KernelCase(op, {"n": n}, fn, fn, bytes=F32 * n, quick=n == sizes[1],
                       ember=ember_new(op))
            for n in sizes for op, fn in (("full", full), ("arange", arange), ("rand", rand),
                                          ("randn", randn))]

"""Matrix multiply, float32 [m, k] @ [k, n]: the library GEMM and the hand-tiled kernel.

algo=default is BLAS on the CPU and cuBLAS on CUDA; algo=tiled is the readable hand-written
kernel, on CUDA in each of its versions (v1 naive ... v5 warp-tiled, src/cuda/gemm_tiled.cuh).
The reference is numpy.matmul, or torch.matmul with TF32 off. From Python (via=python) Ember's
matmul has no choice of kernel: only algo=default has a row through the bindings."""

from harness.case import KernelCase

TILED_VERSIONS = range(1, 6)


def matmul(r, p):  # numpy, torch and ember alike
    a, b = r.uniform(p["m"], p["k"]), r.uniform(p["k"], p["n"])
    return lambda: r.xp.matmul(a, b)


def cases(device):
    sizes = {"cpu": [64, 256, 1024], "cuda": [256, 1024, 4096]}[device]
    algos = [{"algo": "default"}, {"algo": "tiled"}]
    if device == "cuda":
        algos += [{"algo": "tiled", "version": v} for v in TILED_VERSIONS]
    # The quick (CI gate) subset times only the BLAS GEMM: the hand-tiled CPU kernel's time ratio
    # to NumPy swung 3.3x between runs of one binary on the 2-core VM (benchmarks/README.md,
    # "Comparing runs"), more than a timing gate can absorb; its instruction count stays gated.
    return [
        KernelCase("matmul", {"m": s, "n": s, "k": s, **algo}, matmul, matmul, flops=2 * s**3,
                   quick=s == sizes[1] and algo["algo"] == "default",
                   ember=matmul if algo["algo"] == "default" else None)
        for s in sizes for algo in algos
    ]

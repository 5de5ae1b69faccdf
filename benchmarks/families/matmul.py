"""Matrix multiply, float32 [m, k] @ [k, n]: the library GEMM and the hand-tiled kernel.

algo=default is BLAS on the CPU and cuBLAS on CUDA; algo=tiled is the readable hand-written
kernel, on CUDA in each of its versions (v1 naive ... v5 warp-tiled, src/cuda/gemm_tiled.cuh).
The reference is numpy.matmul, or torch.matmul with TF32 off."""

from harness.case import KernelCase

TILED_VERSIONS = range(1, 6)


def matmul(r, p):
    a, b = r.uniform(p["m"], p["k"]), r.uniform(p["k"], p["n"])
    return lambda: r.xp.matmul(a, b)


def cases(device):
    sizes = {"cpu": [64, 256, 1024], "cuda": [256, 1024, 4096]}[device]
    algos = [{"algo": "default"}, {"algo": "tiled"}]
    if device == "cuda":
        algos += [{"algo": "tiled", "version": v} for v in TILED_VERSIONS]
    return [
        KernelCase("matmul", {"m": s, "n": s, "k": s, **algo}, matmul, matmul, flops=2 * s**3,
                   quick=s == sizes[1] and "version" not in algo)
        for s in sizes for algo in algos
    ]

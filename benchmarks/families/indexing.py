"""Indexing ops (embedding, gather, index_select): reads at positions given by int64 indices."""

from harness.case import KernelCase

F32, I64 = 4, 8


def embedding(r, p):
    weight, indices = r.uniform(p["vocab"], p["dim"]), r.randint(p["vocab"], p["batch"])
    if r.name != "numpy":  # torch and ember alike
        return lambda: r.xp.nn.functional.embedding(indices, weight)
    return lambda: weight[indices]


def gather(r, p):
    x, index = r.uniform(p["rows"], p["cols"]), r.randint(p["cols"], p["rows"], p["k"])
    if r.name != "numpy":  # torch and ember alike
        return lambda: r.xp.gather(x, 1, index)
    return lambda: r.xp.take_along_axis(x, index, 1)


def index_select(r, p):
    x, index = r.uniform(p["rows"], p["cols"]), r.randint(p["rows"], p["k"])
    if r.name != "numpy":
        return lambda: r.xp.index_select(x, 0, index)
    return lambda: r.xp.take(x, index, 0)


def cases(device):
    scale = {"cpu": [1, 16, 256], "cuda": [16, 256, 4096]}[device]
    out = []
    for i, s in enumerate(scale):
        quick = i == 1
        emb = {"vocab": 50_000, "dim": 128, "batch": 64 * s}
        gat = {"rows": 64 * s, "cols": 1024, "k": 256}
        sel = {"rows": 64 * s, "cols": 1024, "k": 32 * s}
        out += [
            KernelCase("embedding", emb, embedding, embedding, quick=quick, ember=embedding,
                       bytes=2 * F32 * emb["batch"] * emb["dim"] + I64 * emb["batch"]),
            KernelCase("gather", gat, gather, gather, quick=quick, ember=gather,
                       bytes=(2 * F32 + I64) * gat["rows"] * gat["k"]),
            KernelCase("index_select", sel, index_select, index_select, quick=quick,
                       ember=index_select,
                       bytes=2 * F32 * sel["k"] * sel["cols"] + I64 * sel["k"]),
        ]
    return out

"""Reductions (sum, amax) of a float32 [rows, cols] matrix over its last or its first dim.

The last dim reduces contiguous rows; the first walks memory with a stride."""

from harness.case import KernelCase

F32 = 4


def reduce(name):
    def build(r, p):  # numpy.sum(x, axis), torch.sum(x, dim) and ember.sum agree positionally
        x, fn = r.uniform(p["rows"], p["cols"]), getattr(r.xp, name)
        return lambda: fn(x, p["dim"])

    return build


# The [rows, cols] matrices of the families that reduce along rows or columns (softmax_loss's too).
MATRIX_SIZES = {"cpu": [(64, 256), (1024, 1024), (4096, 4096)],
                "cuda": [(1024, 1024), (4096, 4096), (16384, 4096)]}


def cases(device):
    out = []
    for i, (rows, cols) in enumerate(MATRIX_SIZES[device]):
        for op in ("sum", "amax"):
            for dim in (-1, 0):
                p = {"rows": rows, "cols": cols, "dim": dim}
                out_elems = rows if dim == -1 else cols
                out.append(KernelCase(op, p, reduce(op), reduce(op), ember=reduce(op),
                                      bytes=F32 * (rows * cols + out_elems),
                                      quick=i == 1 and dim == -1))
    return out

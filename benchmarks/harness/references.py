"""The libraries Ember is measured against, behind one small interface so that a family can
write a reference once for both where their APIs agree: `r.xp` is the module (numpy or torch),
`r.uniform(*shape)` makes float32 inputs in [-1, 1) on the run's device, `r.randint(high, *shape)`
int64 indices in [0, high), `r.out(*shape)` is the out= argument for a float32 result (below),
`r.sync()` waits for queued work.

Why `out`: Ember's cases ask its caching allocator for each call's result and get back the block
the previous call's result freed, so no call pays for fresh memory. PyTorch on CUDA does the same
with its own caching allocator: `out` is None, the result is allocated per call. NumPy and
PyTorch on the CPU have no such cache: a large result would be fresh memory from malloc whose
pages fault in at every call, work Ember does not do, so `out` is an array allocated once that
every call writes into."""


class NumpyReference:
    name = "numpy"

    def __init__(self):
        import numpy

        self.xp = numpy
        self.rng = numpy.random.default_rng(0)

    def uniform(self, *shape):
        return self.rng.uniform(-1, 1, shape).astype(self.xp.float32)

    def randint(self, high, *shape):
        return self.rng.integers(0, high, shape)

    def out(self, *shape):
        return self.xp.empty(shape, dtype=self.xp.float32)

    def sync(self):
        pass


class TorchReference:
    """PyTorch on the CPU or CUDA. On CUDA it sets, for the whole run (harness.machine writes
    them in the settings column):
      TF32 off for matmul and cuDNN: Ember computes float32 exactly, so the reference must too;
      cudnn.benchmark off, PyTorch's default: cuDNN picks its algorithm by heuristics, the same
        one every run. Benchmark mode times the candidates at a shape's first call and may pick
        another one the next run, which would move the reference between the runs a ratio is
        compared across."""
    name = "torch"

    def __init__(self, torch, device: str):
        self.xp, self.device = torch, torch.device(device)
        if self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cudnn.benchmark = False
        self.generator = torch.Generator(self.device).manual_seed(0)

    def uniform(self, *shape):
        return self.xp.rand(shape, generator=self.generator, device=self.device) * 2 - 1

    def randint(self, high, *shape):
        return self.xp.randint(high, shape, generator=self.generator, device=self.device)

    def out(self, *shape):
        if self.device.type == "cuda":  # its caching allocator reuses the block, as Ember's does
            return None
        return self.xp.empty(shape, device=self.device)

    def sync(self):
        if self.device.type == "cuda":
            self.xp.cuda.synchronize()


def import_torch():
    """torch, or None when it is not installed (it is optional on the CPU)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def references_for(device: str, torch) -> list:
    """The references of a run on `device`: NumPy, and PyTorch when installed, on the CPU;
    PyTorch on CUDA."""
    if device == "cuda":
        return [TorchReference(torch, "cuda")] if torch is not None else []
    return [NumpyReference()] + ([TorchReference(torch, "cpu")] if torch is not None else [])

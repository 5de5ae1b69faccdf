"""The libraries Ember is measured against, behind one small interface so that a family can
write a reference once for both where their APIs agree: `r.xp` is the module (numpy or torch),
`r.uniform(*shape)` makes float32 inputs in [-1, 1) on the run's device, `r.randint(high, *shape)`
int64 indices in [0, high), `r.sync()` waits for queued work."""


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

    def sync(self):
        pass


class TorchReference:
    name = "torch"

    def __init__(self, torch, device: str):
        self.xp, self.device = torch, torch.device(device)
        if self.device.type == "cuda":  # Ember computes float32 exactly: no TF32 shortcuts
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        self.generator = torch.Generator(self.device).manual_seed(0)

    def uniform(self, *shape):
        return self.xp.rand(shape, generator=self.generator, device=self.device) * 2 - 1

    def randint(self, high, *shape):
        return self.xp.randint(high, shape, generator=self.generator, device=self.device)

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

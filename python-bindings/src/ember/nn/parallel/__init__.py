"""ember.nn.parallel: DistributedDataParallel, data parallelism across processes (PyTorch's
torch.nn.parallel)."""

from ember.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]

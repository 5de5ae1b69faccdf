"""ember.data (also importable as ember.utils.data, PyTorch's path): datasets, random_split, the
DataLoader (with worker processes) and readers of MNIST, Fashion-MNIST, CIFAR-10 and .npz
files (which return NumPy arrays), and the DistributedSampler of data parallelism."""

from ember.data.dataset import Dataset, Subset, TensorDataset, random_split
from ember.data.distributed import DistributedSampler
from ember.data.loader import DataLoader, default_collate
from ember.data.readers import (
    DataFormatError,
    DataNotFoundError,
    load_cifar10,
    load_mnist,
    load_npz,
    read_idx,
)
from ember.data.workers import WorkerInfo, get_worker_info

__all__ = [
    "DataFormatError", "DataLoader", "DataNotFoundError", "Dataset", "DistributedSampler",
    "Subset", "TensorDataset",
    "WorkerInfo", "default_collate", "get_worker_info", "load_cifar10", "load_mnist", "load_npz",
    "random_split", "read_idx",
]

"""ember.data: datasets, the DataLoader and readers of MNIST, Fashion-MNIST, CIFAR-10 and .npz
files (which return NumPy arrays)."""

from ember.data.dataset import Dataset, TensorDataset
from ember.data.loader import DataLoader, default_collate
from ember.data.readers import (
    DataFormatError,
    DataNotFoundError,
    load_cifar10,
    load_mnist,
    load_npz,
    read_idx,
)

__all__ = [
    "DataFormatError", "DataLoader", "DataNotFoundError", "Dataset", "TensorDataset",
    "default_collate", "load_cifar10", "load_mnist", "load_npz", "read_idx",
]

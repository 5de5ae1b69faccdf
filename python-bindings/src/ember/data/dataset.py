"""Datasets: anything with __len__ and __getitem__ (Dataset), TensorDataset, which pairs
tensors or arrays along their first dim, and Subset, the parts random_split makes."""

import math

import numpy as np

from ember import _core


class Dataset:
    """The base of map-style datasets: subclasses define __len__ and __getitem__(i) -> sample."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} defines no __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} defines no __len__")


class TensorDataset(Dataset):
    """Samples (t0[i], t1[i], ...) of tensors or NumPy arrays of the same first dim. get_batch
    indexes each tensor once per batch, which DataLoader uses in place of per-sample calls."""

    def __init__(self, *tensors):
        if not tensors:
            raise _core.ValueError("TensorDataset: pass at least one tensor or array")
        sizes = [len(t) for t in tensors]
        if len(set(sizes)) != 1:
            raise _core.ShapeError(
                f"TensorDataset: the tensors have first dims {sizes}; they must be equal (one "
                "row per sample)"
            )
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return len(self.tensors[0])

    def get_batch(self, indices):
        """The batch of samples at indices (a NumPy int64 array), each tensor indexed once."""
        return tuple(
            t[indices] if isinstance(t, _core.Tensor) else _core.tensor(t[indices])
            for t in self.tensors
        )


class Subset(Dataset):
    """The samples of dataset at indices, in that order (what random_split returns)."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, np.asarray(indices, dtype=np.int64)

    def __getitem__(self, index):
        if isinstance(index, (list, np.ndarray)):
            return [self.dataset[int(i)] for i in self.indices[np.asarray(index)]]
        return self.dataset[int(self.indices[index])]

    def __len__(self):
        return len(self.indices)

    def __getattr__(self, name):
        # get_batch only where the dataset has one, so DataLoader's fast path stays exact
        if name == "get_batch" and hasattr(self.dataset, "get_batch"):
            return lambda batch: self.dataset.get_batch(self.indices[batch])
        raise AttributeError(f"'Subset' object has no attribute '{name}'")


def _split_lengths(n, lengths):
    """Integer lengths summing to n, from lengths or from fractions summing to 1 (PyTorch's rule:
    each floor(fraction n), the remainder spread one by one from the first)."""
    lengths = list(lengths)
    if lengths and all(isinstance(x, float) for x in lengths) and math.isclose(sum(lengths), 1):
        if any(not 0 <= x <= 1 for x in lengths):
            raise _core.ValueError(f"random_split: fractions {lengths} must lie in [0, 1]")
        counts = [math.floor(n * x) for x in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        return counts
    if not all(isinstance(x, (int, np.integer)) and x >= 0 for x in lengths) or sum(lengths) != n:
        raise _core.ValueError(
            f"random_split: lengths {lengths} must be ints >= 0 summing to the dataset's length "
            f"{n}, or fractions summing to 1 (e.g. [0.8, 0.2])"
        )
    return [int(x) for x in lengths]


def random_split(dataset, lengths, generator=None):
    """The dataset split into non-overlapping Subsets of the given lengths (ints summing to
    len(dataset)) or fractions (summing to 1), at random: from ``generator`` (an int seed or a
    numpy.random.Generator) when given, else from ember's default generator (ember.manual_seed
    makes it reproducible)."""
    n = len(dataset)
    counts = _split_lengths(n, lengths)
    if generator is None:
        order = _core.randperm(n).numpy()
    else:
        rng = np.random.default_rng(generator) if isinstance(generator, int) else generator
        order = rng.permutation(n)
    ends = np.cumsum(counts)
    return [Subset(dataset, order[end - count:end]) for count, end in zip(counts, ends)]

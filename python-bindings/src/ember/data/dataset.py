"""Datasets: anything with __len__ and __getitem__ (Dataset), and TensorDataset, which pairs
tensors or arrays along their first dim."""

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

"""DataLoader: batches of a dataset, in order or shuffled by a seeded generator, collated into
tensors and optionally moved to a device."""

import numbers

import numpy as np

from ember import _core


def default_collate(samples):
    """Stacks a list of samples into a batch: Tensors with ember.stack, NumPy arrays and numbers
    into a new tensor (dim 0 the batch); tuples, lists and dicts position by position (key by
    key); anything else (strings) stays a list."""
    first = samples[0]
    if isinstance(first, _core.Tensor):
        return _core.stack(list(samples))
    if isinstance(first, np.ndarray):
        return _core.tensor(np.stack(samples))
    if isinstance(first, (numbers.Number, np.generic)) and not isinstance(first, str):
        return _core.tensor(np.asarray(samples) if isinstance(first, np.generic) else samples)
    if isinstance(first, dict):
        return {key: default_collate([s[key] for s in samples]) for key in first}
    if isinstance(first, (tuple, list)):
        columns = [default_collate(list(column)) for column in zip(*samples)]
        return type(first)(columns) if isinstance(first, tuple) else columns
    return list(samples)


def _to_device(batch, device):
    if isinstance(batch, _core.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(_to_device(v, device) for v in batch)
    return batch


class DataLoader:
    """Iterates over a dataset in batches.

    shuffle draws a new order every epoch: from ``generator`` (an int seed or a
    ``numpy.random.Generator``) when given, else from ember's default generator (ember.randperm),
    so ember.manual_seed makes it reproducible. drop_last drops a last, smaller batch.
    collate_fn turns a list of samples into a batch (default_collate). device moves each batch
    there. pin_memory is accepted for PyTorch compatibility; ember has no pinned host memory, so
    it changes nothing."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None,
                 generator=None, device=None, pin_memory=False):
        if not (isinstance(batch_size, int) and batch_size > 0):
            raise _core.ValueError(f"DataLoader: batch_size is {batch_size!r}; pass an int >= 1")
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle
        self.drop_last, self.collate_fn, self.device = drop_last, collate_fn, device
        self.pin_memory = pin_memory
        self.generator = (
            np.random.default_rng(generator) if isinstance(generator, int) else generator
        )

    def __len__(self):
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _order(self):
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n, dtype=np.int64)
        if self.generator is not None:
            return self.generator.permutation(n).astype(np.int64)
        return _core.randperm(n).numpy()

    def __iter__(self):
        order = self._order()
        fast = self.collate_fn is None and hasattr(self.dataset, "get_batch")
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            indices = order[start:start + self.batch_size]
            if fast:
                batch = self.dataset.get_batch(indices)
            else:
                collate = self.collate_fn or default_collate
                batch = collate([self.dataset[int(i)] for i in indices])
            yield batch if self.device is None else _to_device(batch, self.device)

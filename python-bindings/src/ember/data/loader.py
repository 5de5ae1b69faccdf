"""DataLoader: batches of a dataset, in order or shuffled by a seeded generator, collated into
tensors and optionally moved to a device."""

import numbers
import warnings

import numpy as np

from ember import _core

_warned_about_pinning = False  # pin_memory=True without CUDA warns once per process


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


def _map_tensors(batch, fn):
    """fn applied to every tensor of a batch (inside tuples, lists and dicts)."""
    if isinstance(batch, _core.Tensor):
        return fn(batch)
    if isinstance(batch, dict):
        return {k: _map_tensors(v, fn) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(_map_tensors(v, fn) for v in batch)
    return batch


def _can_pin():
    """Whether batches can be pinned here: pinned memory needs CUDA and a GPU. Without, warns
    (once per process) that they are not."""
    global _warned_about_pinning
    if _core.cuda_is_available():
        return True
    if not _warned_about_pinning:
        warnings.warn("DataLoader: pin_memory=True, but CUDA is not available here, so batches "
                      "are not pinned (pinned memory only speeds up copies to a GPU)",
                      stacklevel=3)
        _warned_about_pinning = True
    return False


class DataLoader:
    """Iterates over a dataset in batches.

    shuffle draws a new order every epoch: from ``generator`` (an ember.Generator, an int seed or
    a ``numpy.random.Generator``) when given, else from ember's default generator (ember.randperm),
    so ember.manual_seed makes it reproducible. drop_last drops a last, smaller batch.
    collate_fn turns a list of samples into a batch (default_collate). pin_memory copies each
    batch's tensors into pinned host memory (Tensor.pin_memory), from which the copy to a GPU
    (device) is queued without the host waiting; without CUDA it warns once and leaves batches
    as they are. device moves each batch there."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None,
                 generator=None, device=None, pin_memory=False):
        if not (isinstance(batch_size, int) and batch_size > 0):
            raise _core.ValueError(f"DataLoader: batch_size is {batch_size!r}; pass an int >= 1")
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle
        self.drop_last, self.collate_fn, self.device = drop_last, collate_fn, device
        self.pin_memory = bool(pin_memory) and _can_pin()
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
        if isinstance(self.generator, _core.Generator):
            return _core.randperm(n, generator=self.generator).numpy()
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
            if self.pin_memory:
                batch = _map_tensors(batch, _core.Tensor.pin_memory)
            if self.device is not None:
                batch = _map_tensors(
                    batch, lambda t: t.to(self.device, non_blocking=self.pin_memory))
            yield batch

"""DataLoader: batches of a dataset, in order or shuffled by a seeded generator, collated into
tensors and optionally moved to a device."""

import numbers
import warnings

import numpy as np

from ember import _core
from ember.data import workers

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
    as they are. device moves each batch there. sampler (an iterable of indices with a length,
    such as DistributedSampler) gives the order instead of shuffle.

    num_workers > 0 fetches and collates batches in that many worker processes, as PyTorch's
    (ember.data.workers: prefetch_factor batches per worker in flight, batches in order, worker
    i seeded with base_seed + i, get_worker_info() inside a worker, worker_init_fn(worker_id)
    called in each at its start, a worker's exception raised here naming it; timeout seconds
    to wait for a batch, 0 for ever). Workers end with the iterator, or with
    persistent_workers=True, stay for the next epoch and end with the loader."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None,
                 generator=None, device=None, pin_memory=False, num_workers=0,
                 persistent_workers=False, worker_init_fn=None, prefetch_factor=None, timeout=0,
                 multiprocessing_context=None, sampler=None):
        if sampler is not None and shuffle:
            raise _core.ValueError(
                "DataLoader: sampler and shuffle=True both choose the order; pass one (a "
                "DistributedSampler shuffles itself: DistributedSampler(dataset, shuffle=True))"
            )
        if not (isinstance(batch_size, int) and batch_size > 0):
            raise _core.ValueError(f"DataLoader: batch_size is {batch_size!r}; pass an int >= 1")
        if not (isinstance(num_workers, int) and num_workers >= 0):
            raise _core.ValueError(
                f"DataLoader: num_workers is {num_workers!r}; pass an int >= 0 (0: load in this "
                "process)"
            )
        if num_workers == 0 and (persistent_workers or prefetch_factor is not None):
            raise _core.ValueError(
                "DataLoader: persistent_workers and prefetch_factor need worker processes; pass "
                "num_workers > 0 with them"
            )
        if prefetch_factor is not None and not (
            isinstance(prefetch_factor, int) and prefetch_factor >= 1
        ):
            raise _core.ValueError(
                f"DataLoader: prefetch_factor is {prefetch_factor!r}; pass an int >= 1"
            )
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle
        self.drop_last, self.collate_fn, self.device = drop_last, collate_fn, device
        self.pin_memory = bool(pin_memory) and _can_pin()
        self.generator = (
            np.random.default_rng(generator) if isinstance(generator, int) else generator
        )
        self.num_workers, self.persistent_workers = num_workers, bool(persistent_workers)
        self.worker_init_fn, self.timeout = worker_init_fn, timeout
        self.prefetch_factor = 2 if prefetch_factor is None else prefetch_factor
        self.multiprocessing_context = multiprocessing_context
        self._pool = None  # the persistent workers, once started
        self.sampler = sampler

    def __len__(self):
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _order(self):
        if self.sampler is not None:
            return np.fromiter(iter(self.sampler), dtype=np.int64)
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n, dtype=np.int64)
        if isinstance(self.generator, _core.Generator):
            return _core.randperm(n, generator=self.generator).numpy()
        if self.generator is not None:
            return self.generator.permutation(n).astype(np.int64)
        return _core.randperm(n).numpy()

    def _base_seed(self):
        """The seed worker 0 gets (worker i: this + i), from the loader's generator."""
        if self.generator is not None:
            return int(self.generator.integers(0, 2**62))
        return int(_core.randint(0, 2**62, (1,)).item())

    def _fetch(self, indices):
        """The collated batch of the samples at indices (a NumPy int64 array)."""
        if self.collate_fn is None and hasattr(self.dataset, "get_batch"):
            return self.dataset.get_batch(indices)
        collate = self.collate_fn or default_collate
        return collate([self.dataset[int(i)] for i in indices])

    def _finish(self, batch):
        """The batch pinned and moved as asked."""
        if self.pin_memory:
            batch = _map_tensors(batch, _core.Tensor.pin_memory)
        if self.device is not None:
            batch = _map_tensors(batch, lambda t: t.to(self.device, non_blocking=self.pin_memory))
        return batch

    def _batches(self):
        order = self._order()
        return [order[start:start + self.batch_size]
                for start in range(0, len(self) * self.batch_size, self.batch_size)]

    def __iter__(self):
        if self.num_workers > 0:
            batches = self._batches()
            if not self.persistent_workers:
                pool = workers.WorkerPool(self, self._base_seed())
                return workers.WorkerIterator(self, batches, pool, owns_pool=True)
            if self._pool is not None and self._pool.busy():  # an unfinished epoch's workers
                self._pool.shutdown()
                self._pool = None
            if self._pool is None:
                self._pool = workers.WorkerPool(self, self._base_seed())
            return workers.WorkerIterator(self, batches, self._pool, owns_pool=False)
        return (self._finish(self._fetch(indices)) for indices in self._batches())

    def __del__(self):
        if getattr(self, "_pool", None) is not None:
            self._pool.shutdown()

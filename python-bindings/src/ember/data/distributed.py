"""DistributedSampler: each rank's share of a dataset's indices (PyTorch's, same arithmetic)."""

import math

import numpy as np

from ember import _core


class DistributedSampler:
    """Yields the indices of rank's share: every num_replicas-th index of one order, starting at
    rank. shuffle draws the order from seed + epoch (set_epoch before each epoch, so that all
    ranks draw the same order and it changes between epochs). Without drop_last the order is
    padded by repeating its start, so that every rank gets ceil(len / num_replicas) indices;
    with it, the tail is dropped and each gets floor(len / num_replicas). num_replicas and rank
    default to the default process group's world size and rank.

        sampler = DistributedSampler(dataset, shuffle=True, seed=0)
        loader = DataLoader(dataset, batch_size=16, sampler=sampler)
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            for x, y in loader: ...
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            from ember import distributed as dist

            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if not (isinstance(num_replicas, int) and num_replicas >= 1):
            raise _core.ValueError(
                f"DistributedSampler: num_replicas is {num_replicas!r}; pass an int >= 1"
            )
        if not (isinstance(rank, int) and 0 <= rank < num_replicas):
            raise _core.ValueError(
                f"DistributedSampler: rank is {rank!r}; with num_replicas={num_replicas} it "
                f"must be 0..{num_replicas - 1}"
            )
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last = bool(shuffle), int(seed), bool(drop_last)
        self.epoch = 0
        n = len(dataset)
        if drop_last:
            self.num_samples = n // num_replicas
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch):
        """The epoch whose order __iter__ draws (with shuffle)."""
        self.epoch = int(epoch)

    def indices(self):
        """This rank's indices as a NumPy int64 array."""
        n = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng(self.seed + self.epoch).permutation(n).astype(np.int64)
        else:
            order = np.arange(n, dtype=np.int64)
        if self.total_size > n:  # pad with the order's start, repeated as often as needed
            order = np.resize(order, self.total_size)
        else:
            order = order[: self.total_size]
        return order[self.rank : self.total_size : self.num_replicas]

    def __iter__(self):
        return iter(self.indices().tolist())

    def __len__(self):
        return self.num_samples

"""DataLoader(num_workers=N): worker processes that give the same batches, in order, as loading in
this process; seeding per worker, get_worker_info, worker_init_fn, persistent_workers,
prefetch_factor, a worker's exception raised here naming the worker, workers ending with their
iterator; ember.utils.data and random_split. Every loader has a timeout, so no test can hang."""

import gc
import os
import random

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, Dataset, TensorDataset, random_split

TIMEOUT = 30  # seconds a loader waits for a batch before failing the test


class Squares(Dataset):
    """Sample i: (i as float32 [2], i^2), computed on request."""

    def __len__(self):
        return 23

    def __getitem__(self, i):
        return np.array([i, -i], dtype=np.float32), i * i


class Seeds(Dataset):
    """Each sample says which worker made it, with that worker's seed and random draws."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = ember.data.get_worker_info()
        return {"worker": info.id, "seed": info.seed, "pid": os.getpid(),
                "py": random.random(), "np": float(np.random.rand()),
                "ember": float(ember.rand(1).item())}


class Failing(Squares):
    def __getitem__(self, i):
        if i == 13:
            raise KeyError(f"sample {i} is missing")
        return super().__getitem__(i)


def batches(loader):
    return [(x.numpy().copy(), y.numpy().copy()) for x, y in loader]


@pytest.mark.parametrize("num_workers, prefetch", [(1, None), (2, 1), (3, 4)])
def test_workers_give_the_batches_of_a_single_process_in_order(num_workers, prefetch):
    want = batches(DataLoader(Squares(), batch_size=4, shuffle=True, generator=7))
    loader = DataLoader(Squares(), batch_size=4, shuffle=True, generator=7,
                        num_workers=num_workers, prefetch_factor=prefetch, timeout=TIMEOUT)
    got = batches(loader)
    assert len(got) == len(want) == 6
    for (gx, gy), (wx, wy) in zip(got, want):
        np.testing.assert_array_equal(gx, wx)
        np.testing.assert_array_equal(gy, wy)


def test_tensor_dataset_batches_keep_their_dtypes_through_workers():
    x = ember.arange(10, dtype=ember.int32).reshape(5, 2)
    y = ember.tensor(np.linspace(0, 1, 5), dtype=ember.bfloat16)
    got = list(DataLoader(TensorDataset(x, y), batch_size=2, num_workers=2, timeout=TIMEOUT))
    assert [b[0].dtype for b in got] == [ember.int32] * 3
    assert [b[1].dtype for b in got] == [ember.bfloat16] * 3
    assert ember.cat([b[0] for b in got]).tolist() == x.tolist()


def test_each_worker_is_seeded_from_the_base_seed_and_knows_its_info():
    assert ember.data.get_worker_info() is None  # the main process
    calls = []
    loader = DataLoader(Seeds(), batch_size=2, num_workers=2, timeout=TIMEOUT,
                        worker_init_fn=calls.append, collate_fn=lambda samples: samples)
    samples = [s for batch in loader for s in batch]
    assert calls == []  # worker_init_fn ran in the workers, not here
    by_worker = {s["worker"]: s for s in samples}
    assert set(by_worker) == {0, 1}
    # batches go round robin: batch k to worker k % 2
    assert [s["worker"] for s in samples] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert by_worker[1]["seed"] == by_worker[0]["seed"] + 1
    assert by_worker[0]["pid"] != by_worker[1]["pid"] != os.getpid()
    for key in ("py", "np", "ember"):
        assert by_worker[0][key] != by_worker[1][key]
    # the same generator seed gives the same base seed, so the same draws
    again = [s for b in DataLoader(Seeds(), batch_size=2, num_workers=2, timeout=TIMEOUT,
                                   generator=3, collate_fn=lambda s: s) for s in b]
    again2 = [s for b in DataLoader(Seeds(), batch_size=2, num_workers=2, timeout=TIMEOUT,
                                    generator=3, collate_fn=lambda s: s) for s in b]
    assert [s["np"] for s in again] == [s["np"] for s in again2]


def test_worker_init_fn_runs_in_each_worker_before_loading(tmp_path):
    def init(worker_id):
        (tmp_path / f"worker{worker_id}").write_text(str(ember.data.get_worker_info().id))

    list(DataLoader(Squares(), batch_size=8, num_workers=3, worker_init_fn=init,
                    timeout=TIMEOUT))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["worker0", "worker1", "worker2"]


def test_an_exception_in_a_worker_is_raised_here_naming_the_worker():
    loader = DataLoader(Failing(), batch_size=4, num_workers=2, timeout=TIMEOUT)
    it = iter(loader)
    assert next(it)[1].tolist() == [0, 1, 4, 9]
    with pytest.raises(KeyError, match=r"worker 1(.|\n)*sample 13 is missing"):
        list(it)
    assert not any(p.is_alive() for p in it_processes(it))


def test_an_exception_in_worker_init_fn_is_raised_here():
    def init(worker_id):
        raise ValueError(f"cannot open shard {worker_id}")

    with pytest.raises(ValueError, match="worker 0(.|\n)*cannot open shard 0"):
        list(DataLoader(Squares(), batch_size=4, num_workers=1, worker_init_fn=init,
                        timeout=TIMEOUT))


def it_processes(it):
    return list(it._processes)


def test_workers_end_when_the_iterator_is_dropped_or_exhausted():
    loader = DataLoader(Squares(), batch_size=2, num_workers=2, timeout=TIMEOUT)
    it = iter(loader)
    next(it)
    processes = it_processes(it)
    assert all(p.is_alive() for p in processes)
    del it
    gc.collect()
    for p in processes:
        p.join(timeout=10)
    assert not any(p.is_alive() for p in processes)
    it = iter(loader)
    list(it)
    assert not any(p.is_alive() for p in it_processes(it))


def test_persistent_workers_stay_for_the_next_epoch_and_end_with_the_loader():
    loader = DataLoader(Seeds(), batch_size=4, num_workers=2, persistent_workers=True,
                        timeout=TIMEOUT, collate_fn=lambda s: s)
    first = {s["pid"] for b in loader for s in b}
    second = {s["pid"] for b in loader for s in b}
    assert first == second and len(first) == 2
    processes = list(loader._pool.processes)
    del loader
    gc.collect()
    for p in processes:
        p.join(timeout=10)
    assert not any(p.is_alive() for p in processes)


class Heavy(Dataset):
    """Samples big enough that an ember op would use the CPU kernels' OpenMP threads."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return ember.ones(600, 600).exp().sum() * i


def test_workers_run_big_ops_after_this_process_used_openmp_threads():
    # libgomp's thread pool does not survive fork: a worker that entered it would hang
    assert ember.ones(1200, 1200).exp().sum().item() > 0
    got = [b.tolist() for b in DataLoader(Heavy(), batch_size=2, num_workers=2,
                                          timeout=TIMEOUT)]
    np.testing.assert_allclose(got, [[0, np.e * 360000], [2 * np.e * 360000, 3 * np.e * 360000]],
                               rtol=1e-5)


def test_worker_options_are_checked():
    with pytest.raises(ember.ValueError, match="num_workers"):
        DataLoader(Squares(), num_workers=-1)
    with pytest.raises(ember.ValueError, match="num_workers > 0"):
        DataLoader(Squares(), persistent_workers=True)
    with pytest.raises(ember.ValueError, match="prefetch_factor"):
        DataLoader(Squares(), num_workers=1, prefetch_factor=0)


# ---- ember.utils.data, random_split ----

def test_utils_data_is_ember_data():
    from ember.utils import data

    assert data.DataLoader is ember.data.DataLoader and data.Subset is ember.data.Subset


@pytest.mark.parametrize("lengths, want", [
    ([7, 0, 3], [7, 0, 3]),
    ([0.5, 0.3, 0.2], [5, 3, 2]),
    ([1 / 3, 1 / 3, 1 / 3], [4, 3, 3]),  # the remainder goes to the first splits
])
def test_random_split_partitions_the_dataset(lengths, want):
    data = TensorDataset(ember.arange(10))
    parts = random_split(data, lengths, generator=1)
    assert [len(p) for p in parts] == want
    values = sorted(int(p[i][0].item()) for p in parts for i in range(len(p)))
    assert values == list(range(10))
    again = random_split(data, lengths, generator=np.random.default_rng(1))
    assert [list(p.indices) for p in parts] == [list(p.indices) for p in again]
    ember.manual_seed(5)
    a = random_split(data, lengths)
    ember.manual_seed(5)
    assert [list(p.indices) for p in a] == [list(p.indices) for p in random_split(data, lengths)]


def test_random_split_subsets_load_in_batches_and_bad_lengths_are_errors():
    data = TensorDataset(ember.arange(10), ember.arange(10) * 2)
    train, _ = random_split(data, [8, 2], generator=0)
    xs = ember.cat([x for x, _ in DataLoader(train, batch_size=3)])
    assert sorted(xs.tolist()) == sorted(int(i) for i in train.indices)
    with pytest.raises(ember.ValueError, match="summing"):
        random_split(data, [5, 4])
    with pytest.raises(ember.ValueError, match="summing"):
        random_split(data, [0.5, 0.4])

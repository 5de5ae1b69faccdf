"""ember.data: DataLoader batching, seeded shuffling, drop_last and collation; the readers on
small IDX, CIFAR-10 and .npz files written here, with their truncated, malformed and missing
cases."""

import gzip
import os
import pickle
import warnings

import numpy as np
import pytest

import ember
from ember.data import (
    DataFormatError,
    DataLoader,
    DataNotFoundError,
    Dataset,
    TensorDataset,
    default_collate,
    load_cifar10,
    load_mnist,
    load_npz,
    read_idx,
)


class Squares(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return {"x": np.full(2, i, np.float32), "y": i * i, "pair": (float(i), ember.tensor([i]))}


def test_batching_and_drop_last():
    x, y = ember.arange(10).reshape(10, 1), np.arange(10) * 2
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [len(b[0]) for b in batches] == [4, 4, 2]
    np.testing.assert_array_equal(batches[2][1].numpy(), [16, 18])
    loader = DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True)
    assert len(loader) == 2 and len(list(loader)) == 2


def test_seeded_shuffle_is_deterministic_and_a_permutation():
    ds = TensorDataset(ember.arange(20))

    def epochs(**kw):
        loader = DataLoader(ds, batch_size=5, shuffle=True, **kw)
        return [np.concatenate([b[0].numpy() for b in loader]) for _ in range(2)]

    a, b = epochs(generator=7), epochs(generator=7)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], a[1])
    assert sorted(a[0]) == list(range(20))
    ember.manual_seed(5)
    c = epochs()
    ember.manual_seed(5)
    np.testing.assert_array_equal(c[0], epochs()[0])


def test_default_collate_recurses():
    batch = next(iter(DataLoader(Squares(), batch_size=3)))
    assert batch["x"].shape == (3, 2) and batch["x"].dtype == ember.float32
    np.testing.assert_array_equal(batch["y"].numpy(), [0, 1, 4])
    assert isinstance(batch["pair"], tuple) and batch["pair"][1].shape == (3, 1)
    assert default_collate(["a", "b"]) == ["a", "b"]
    custom = DataLoader(Squares(), batch_size=2, collate_fn=lambda s: len(s))
    assert list(custom) == [2] * 5
    moved = next(iter(DataLoader(Squares(), batch_size=2, device="cpu")))
    assert moved["x"].device == ember.device("cpu")


cuda = pytest.mark.skipif(not ember.cuda_is_available(), reason="no CUDA GPU on this machine")


@pytest.mark.skipif(ember.cuda_is_available(), reason="a CUDA GPU is present: see the next test")
def test_pin_memory_without_cuda_warns_once_and_keeps_the_batches(monkeypatch):
    monkeypatch.setattr("ember.data.loader._warned_about_pinning", False)
    with pytest.warns(UserWarning, match="pin_memory=True, but CUDA is not available"):
        loader = DataLoader(Squares(), batch_size=4, pin_memory=True)
    plain = list(DataLoader(Squares(), batch_size=4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning, neither here nor while iterating
        again = DataLoader(Squares(), batch_size=4, pin_memory=True, device="cpu")
        for batch, ref, other in zip(loader, plain, again):
            np.testing.assert_array_equal(batch["x"].numpy(), ref["x"].numpy())
            np.testing.assert_array_equal(other["y"].numpy(), ref["y"].numpy())
            assert not batch["x"].is_pinned()


@cuda
def test_pin_memory_pins_every_batch_and_moves_it_without_waiting():
    for batch in DataLoader(Squares(), batch_size=4, pin_memory=True):
        assert batch["x"].is_pinned() and batch["pair"][1].is_pinned()
        assert batch["x"].device == ember.device("cpu")
    ref = list(DataLoader(Squares(), batch_size=4))
    moved = list(DataLoader(Squares(), batch_size=4, pin_memory=True, device="cuda"))
    ember.cuda.synchronize()
    for batch, want in zip(moved, ref):
        assert batch["x"].is_cuda
        np.testing.assert_array_equal(batch["x"].cpu().numpy(), want["x"].numpy())
        np.testing.assert_array_equal(batch["pair"][1].cpu().numpy(), want["pair"][1].numpy())


def test_tensor_dataset_checks_lengths():
    with pytest.raises(ember.ShapeError, match=r"\[3, 2\]"):
        TensorDataset(ember.zeros(3), ember.zeros(2))


def write_idx(path, array, type_byte=0x08, compress=False):
    header = bytes([0, 0, type_byte, array.ndim]) + b"".join(
        int(d).to_bytes(4, "big") for d in array.shape)
    data = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    with (gzip.open if compress else open)(path, "wb") as f:  # closed: gzip flushes on close
        f.write(data)


def test_read_idx(tmp_path):
    a = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    write_idx(tmp_path / "a", a)
    np.testing.assert_array_equal(read_idx(tmp_path / "a"), a)
    f = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
    write_idx(tmp_path / "f.gz", f, 0x0D, compress=True)
    np.testing.assert_array_equal(read_idx(tmp_path / "f.gz"), f)


def test_read_idx_errors(tmp_path):
    write_idx(tmp_path / "a", np.zeros((5, 4), np.uint8))
    data = (tmp_path / "a").read_bytes()
    (tmp_path / "short").write_bytes(data[:-3])
    with pytest.raises(DataFormatError, match=r"short: truncated: dims \[5, 4\]"):
        read_idx(tmp_path / "short")
    (tmp_path / "magic").write_bytes(b"\x12\x34" + data[2:])
    with pytest.raises(DataFormatError, match="magic: wrong magic number 1234"):
        read_idx(tmp_path / "magic")
    (tmp_path / "bad.gz").write_bytes(gzip.compress(data)[:20])
    with pytest.raises(DataFormatError, match="truncated gzip"):
        read_idx(tmp_path / "bad.gz")
    with pytest.raises(DataNotFoundError, match="nope"):
        read_idx(tmp_path / "nope")


def test_load_mnist(tmp_path):
    images = np.random.default_rng(0).integers(0, 256, (3, 28, 28), dtype=np.uint8)
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", images, compress=True)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.array([7, 2, 1], np.uint8))
    x, y = load_mnist(tmp_path, train=False, kind="fashion")
    np.testing.assert_array_equal(x, images)
    assert y.dtype == np.int64 and list(y) == [7, 2, 1]
    with pytest.raises(DataNotFoundError, match="train-images-idx3-ubyte.gz .*into"):
        load_mnist(tmp_path, train=True)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.array([7, 2], np.uint8))
    with pytest.raises(DataFormatError, match=r"holds uint8 \[2\]; expected \[3\], one label"):
        load_mnist(tmp_path, train=False)
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", np.zeros((2, 5, 5), np.uint8), compress=True)
    with pytest.raises(DataFormatError, match=r"expected uint8 \[N, 28, 28\]"):
        load_mnist(tmp_path, train=False)


def test_load_cifar10(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    data = np.random.default_rng(0).integers(0, 256, (4, 3072), dtype=np.uint8)
    with open(folder / "test_batch", "wb") as f:
        pickle.dump({b"data": data, b"labels": [0, 9, 3, 3]}, f)
    x, y = load_cifar10(tmp_path, train=False)
    assert x.shape == (4, 3, 32, 32) and list(y) == [0, 9, 3, 3]
    np.testing.assert_array_equal(x[1, 2].ravel(), data[1, 2048:])
    with pytest.raises(DataNotFoundError, match="data_batch_1: missing"):
        load_cifar10(tmp_path, train=True)
    with open(folder / "test_batch", "wb") as f:
        pickle.dump({b"data": data[:, :100], b"labels": [0, 9, 3, 3]}, f)
    with pytest.raises(DataFormatError, match=r"expected uint8 \[N, 3072\]"):
        load_cifar10(tmp_path, train=False)
    (folder / "test_batch").write_bytes(b"not a pickle")
    with pytest.raises(DataFormatError, match="not a CIFAR-10 batch"):
        load_cifar10(tmp_path, train=False)


def test_load_npz(tmp_path):
    np.savez(tmp_path / "d.npz", x=np.ones((2, 2)), y=np.arange(3))
    d = load_npz(tmp_path / "d.npz")
    assert sorted(d) == ["x", "y"] and list(d["y"]) == [0, 1, 2]
    os.truncate(tmp_path / "d.npz", 30)
    with pytest.raises(DataFormatError, match="d.npz: not a readable .npz"):
        load_npz(tmp_path / "d.npz")
    with pytest.raises(DataNotFoundError):
        load_npz(tmp_path / "missing.npz")

"""train_cifar10.py on a tiny CIFAR-10 written here in the real format (pickled dicts of uint8
rows), its exact resume, its messages for a missing or damaged file and for a memory cap that is
too small, the crop-and-flip augmentation against NumPy, and gradient accumulation against one
large batch."""

import pickle
import sys

import numpy as np
import pytest
from conftest import DEVICE, PYTHON, assert_outputs, metrics, run_script

sys.path.insert(0, str(PYTHON))
import cifar  # noqa: E402 (from python/)
import models  # noqa: E402
import train_cifar10  # noqa: E402
import training  # noqa: E402

import ember  # noqa: E402

# Small and quick: 96 of the 200 training images, a ResNet-8 four channels wide, 3 steps of
# 2 x 16 images per epoch.
FAST = ("--subset", 96, "--batch-size", 16, "--accumulate", 2, "--width", 4)


def write_batch(path, rng, n):
    """n random images in the layout of cifar-10-batches-py: a protocol-2 pickle of a dict
    with b'batch_label', b'labels' (ints), b'data' (uint8 [n, 3072], rows of R, G, B planes)
    and b'filenames'."""
    batch = {b"batch_label": path.name.encode(),
             b"labels": rng.integers(0, 10, n).tolist(),
             b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
             b"filenames": [f"{i}.png".encode() for i in range(n)]}
    with open(path, "wb") as f:
        pickle.dump(batch, f, protocol=2)


@pytest.fixture(scope="module")
def cifar_dir(tmp_path_factory):
    """data_batch_1 .. 5 (40 images each) and test_batch (60 images)."""
    directory = tmp_path_factory.mktemp("cifar")
    rng = np.random.default_rng(0)
    for i in range(1, 6):
        write_batch(directory / f"data_batch_{i}", rng, 40)
    write_batch(directory / "test_batch", rng, 60)
    return directory


def cli(data, *args):
    """The command line of train_cifar10.main: --data data, args, on conftest's DEVICE."""
    return ["--data", str(data), *map(str, args), "--device", DEVICE]


def copy_of(directory, tmp_path):
    """A copy of the data set in tmp_path, to damage."""
    for f in directory.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    return tmp_path


def test_trains_and_resumes_exactly(cifar_dir, tmp_path, capsys):
    whole, part = tmp_path / "whole", tmp_path / "part"
    run_script("train_cifar10.py", "--data", cifar_dir, *FAST, "--epochs", 2,
               "--memory-limit", "256MiB", "--out", whole)
    assert_outputs(whole)
    m = metrics(whole)
    assert m["memory_limit_bytes"] == 256 * 2**20 and 0 < m["peak_memory_bytes"] < 256 * 2**20
    assert all(np.isfinite(m["history"]["train_loss"])) and len(m["history"]["train_loss"]) == 2
    # stopped after epoch 1, then resumed (in this process, to save two starts of Python)
    train_cifar10.main(cli(cifar_dir, *FAST, "--epochs", 2, "--stop-after", 1, "--out", part))
    train_cifar10.main(cli(cifar_dir, *FAST, "--epochs", 2, "--out", part,
                           "--resume", part / "checkpoint.safetensors"))
    assert "resumed from" in capsys.readouterr().out
    assert metrics(part)["history"]["train_loss"] == m["history"]["train_loss"]
    assert metrics(part)["history"]["test_accuracy"] == m["history"]["test_accuracy"]
    a = ember.load(whole / "checkpoint.safetensors")["model"]
    b = ember.load(part / "checkpoint.safetensors")["model"]
    assert all(np.array_equal(a[k].cpu().numpy(), b[k].cpu().numpy()) for k in a)


def run_main(capsys, *args):
    """train_cifar10.main with --data args in this process, expecting it to exit; returns
    (exit status, stderr)."""
    with pytest.raises(SystemExit) as exit_info:
        train_cifar10.main(cli(*args))
    return exit_info.value.code, capsys.readouterr().err


def test_missing_file_says_what_to_put_where(cifar_dir, tmp_path, capsys):
    (copy_of(cifar_dir, tmp_path) / "data_batch_4").unlink()
    status, err = run_main(capsys, tmp_path, "--out", tmp_path / "out")
    assert status == 2
    assert str(tmp_path / "data_batch_4") in err and "cifar-10-python.tar.gz" in err


@pytest.mark.parametrize("damage, says", [
    (lambda b: b[:len(b) // 2], "not a CIFAR-10 batch"),  # cut short
    (lambda b: pickle.dumps({b"data": np.zeros((4, 1024), np.uint8), b"labels": [0] * 4}),
     "expected uint8 [N, 3072]"),  # one channel instead of three
])
def test_damaged_file_is_named(cifar_dir, tmp_path, capsys, damage, says):
    path = copy_of(cifar_dir, tmp_path) / "test_batch"
    path.write_bytes(damage(path.read_bytes()))
    status, err = run_main(capsys, tmp_path, "--out", tmp_path / "out")
    assert status == 2
    assert str(path) in err and says in err


def test_memory_cap_too_small_says_what_to_change(cifar_dir, tmp_path, capsys):
    try:
        status, err = run_main(capsys, cifar_dir, *FAST, "--memory-limit", "1MiB",
                               "--out", tmp_path)
    finally:
        ember.set_memory_limit(None, DEVICE)
    assert status == 3
    assert "ember.OutOfMemoryError" in err and "over the cap" in err
    assert "--batch-size (now 16)" in err and "--accumulate (now 2)" in err


def test_crop_flip_matches_numpy():
    ember.manual_seed(1)
    x = np.random.default_rng(1).standard_normal((16, 3, 32, 32)).astype(np.float32)
    y = cifar.random_crop_flip(ember.tensor(x), pad=4).numpy()
    padded = np.pad(x, ((0, 0), (0, 0), (4, 4), (4, 4)))
    flips = 0
    for image, out in zip(padded, y):
        crops = [image[:, i:i + 32, j:j + 32] for i in range(9) for j in range(9)]
        plain = any(np.array_equal(out, c) for c in crops)
        flipped = any(np.array_equal(out, c[:, :, ::-1]) for c in crops)
        assert plain or flipped
        flips += flipped
    assert 0 < flips < 16  # some images are flipped, some not
    ember.manual_seed(1)
    assert np.array_equal(cifar.random_crop_flip(ember.tensor(x), pad=4).numpy(), y)  # seeded


def one_step(micro_batches, norm):
    """A fresh ResNet (seed 0) after one SGD step over micro_batches; its parameters."""
    ember.manual_seed(0)
    model = models.resnet(width=4, norm=norm)
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    training.train_step(model, micro_batches, ember.nn.CrossEntropyLoss(), optimizer, "cpu")
    return [p.detach().numpy() for p in model.parameters()]


def test_accumulation_equals_one_large_batch():
    """Two micro-batches of 8, each loss halved, step like one batch of 16: the gradient of a
    mean is the mean of the halves' gradients. Only without batch norm: batch norm normalises
    each micro-batch by its own mean and variance, so the network computes a different function
    of the 16 images than it does on the whole batch, and the updates differ."""
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((16, 3, 32, 32)).astype(np.float32))
    y = ember.tensor(rng.integers(0, 10, 16))
    halves = [(x[:8], y[:8]), (x[8:], y[8:])]
    for a, b in zip(one_step(halves, norm=False), one_step([(x, y)], norm=False)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    with_bn = zip(one_step(halves, norm=True), one_step([(x, y)], norm=True))
    assert max(np.abs(a - b).max() for a, b in with_bn) > 1e-4


def test_unreadable_memory_limit_is_a_usage_error(cifar_dir, tmp_path, capsys):
    status, err = run_main(capsys, cifar_dir, "--memory-limit", "lots", "--out", tmp_path)
    assert status == 2 and "--memory-limit" in err and "'2GiB'" in err

"""train_mnist.py on tiny IDX files written here (digits resized to 28 x 28, some gzipped),
and its messages for a missing or damaged file."""

import gzip
import sys

import numpy as np
import pytest
from conftest import PYTHON, assert_outputs, metrics, run_script

sys.path.insert(0, str(PYTHON))
import digits  # noqa: E402 (from python/)


def write_idx(path, array, gz=False):
    """array (uint8) as an IDX file: 00 00 08 ndim, the dims as big-endian uint32, the bytes."""
    header = bytes([0, 0, 0x08, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
    data = header + np.ascontiguousarray(array, np.uint8).tobytes()
    with (gzip.open if gz else open)(path, "wb") as f:  # closed: gzip flushes on close
        f.write(data)


@pytest.fixture(scope="module")
def idx_dir(tmp_path_factory):
    """train (600 images, gzipped) and t10k (200 images, plain) IDX files of the digits."""
    directory = tmp_path_factory.mktemp("mnist")
    x_train, y_train, x_test, y_test = digits.load_digits_split(size=28)
    for split, x, y, n, gz in (("train", x_train, y_train, 600, True),
                               ("t10k", x_test, y_test, 200, False)):
        x = x[:n, 0]
        pixels = np.clip((x - x.min()) / (x.max() - x.min()) * 255, 0, 255).astype(np.uint8)
        suffix = ".gz" if gz else ""
        write_idx(directory / f"{split}-images-idx3-ubyte{suffix}", pixels, gz)
        write_idx(directory / f"{split}-labels-idx1-ubyte{suffix}", y[:n].astype(np.uint8), gz)
    return directory


def test_trains_on_idx_files(idx_dir, tmp_path):
    run_script("train_mnist.py", "--data", idx_dir, "--epochs", 2, "--batch-size", 32,
               "--out", tmp_path)
    assert_outputs(tmp_path)
    assert metrics(tmp_path)["test_accuracy"] >= 0.80  # 600 images, 2 epochs: about 90 %


def test_missing_file_says_what_to_put_where(tmp_path):
    done = run_script("train_mnist.py", "--data", tmp_path, "--out", tmp_path / "out",
                      check=False)
    assert done.returncode == 2
    assert "train-images-idx3-ubyte" in done.stderr and str(tmp_path) in done.stderr


def test_damaged_file_is_named(idx_dir, tmp_path):
    for f in idx_dir.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    images = tmp_path / "t10k-images-idx3-ubyte"
    images.write_bytes(images.read_bytes()[:1000])  # cut short in the middle of an image
    done = run_script("train_mnist.py", "--data", tmp_path, "--out", tmp_path / "out",
                      check=False)
    assert done.returncode == 2
    assert "t10k-images-idx3-ubyte" in done.stderr and "truncated" in done.stderr

"""Readers of the common small data sets, returning NumPy arrays (wrap them with
ember.from_numpy or TensorDataset): MNIST/Fashion-MNIST IDX files, the CIFAR-10 Python batches
and .npz archives. A missing file raises DataNotFoundError (a FileNotFoundError) saying which file
to put where; a malformed one DataFormatError (a ValueError) naming the file and the fault."""

import gzip
import os
import pickle
import zipfile

import numpy as np


class DataNotFoundError(FileNotFoundError):
    """A data file is missing; the message says which file to put where."""


class DataFormatError(ValueError):
    """A data file is truncated, has a wrong magic number or holds the wrong shape."""


# IDX type codes (the third byte of the magic number) and their big-endian NumPy dtypes.
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}

_SOURCES = {
    "mnist": "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "fashion": "https://github.com/zalandoresearch/fashion-mnist (data/fashion/)",
}


def _read_bytes(path):
    if not os.path.isfile(path):
        raise DataNotFoundError(f"{path}: no such file")
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zipfile.BadZipFile) as e:
            raise DataFormatError(f"{path}: a damaged or truncated gzip file ({e})") from None
    return data


def read_idx(path):
    """The array in an IDX file (gzipped or not), with the dtype and dims its header gives."""
    data = _read_bytes(path)
    if len(data) < 4 or data[:2] != b"\0\0" or data[2] not in _IDX_TYPES:
        raise DataFormatError(
            f"{path}: wrong magic number {data[:4].hex() or '(empty file)'}; an IDX file starts "
            "with 00 00, a type byte (08 uint8, 09 int8, 0b int16, 0c int32, 0d float32, 0e "
            "float64) and the number of dims"
        )
    dtype, ndim = np.dtype(_IDX_TYPES[data[2]]), data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DataFormatError(f"{path}: truncated in its header ({len(data)} bytes)")
    dims = [int(d) for d in np.frombuffer(data, ">u4", ndim, 4)]
    expected = header + int(np.prod(dims)) * dtype.itemsize
    if len(data) != expected:
        state = "truncated" if len(data) < expected else "longer than its header says"
        raise DataFormatError(
            f"{path}: {state}: dims {dims} of {dtype.name} need {expected} bytes, the file has "
            f"{len(data)}"
        )
    return np.frombuffer(data, dtype, offset=header).reshape(dims).astype(dtype.newbyteorder("="))


def _find(directory, name, what):
    for candidate in (name, name + ".gz"):
        path = os.path.join(directory, candidate)
        if os.path.isfile(path):
            return path
    raise DataNotFoundError(
        f"{os.path.join(directory, name)}[.gz]: missing; put the {what} file {name}.gz (or "
        f"unpacked, {name}) into {directory}"
    )


def load_mnist(directory, train=True, kind="mnist"):
    """(images uint8 [N, 28, 28], labels int64 [N]) of MNIST (kind 'mnist') or Fashion-MNIST
    ('fashion'): the train split (60000) or the test split (10000), from the four IDX files
    (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-..., gzipped or not) in directory."""
    if kind not in _SOURCES:
        raise ValueError(f"load_mnist: kind is {kind!r}; pass 'mnist' or 'fashion'")
    split = "train" if train else "t10k"
    what = f"{kind} (from {_SOURCES[kind]})"
    images_path = _find(directory, f"{split}-images-idx3-ubyte", what)
    labels_path = _find(directory, f"{split}-labels-idx1-ubyte", what)
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.ndim != 3 or images.shape[1:] != (28, 28) or images.dtype != np.uint8:
        raise DataFormatError(
            f"{images_path}: holds {images.dtype} {list(images.shape)}; expected uint8 [N, 28, 28]"
        )
    if labels.ndim != 1 or len(labels) != len(images):
        raise DataFormatError(
            f"{labels_path}: holds {labels.dtype} {list(labels.shape)}; expected "
            f"[{len(images)}], one label per image of {images_path}"
        )
    return images, labels.astype(np.int64)


def _cifar_batch(path):
    if not os.path.isfile(path):
        raise DataNotFoundError(
            f"{path}: missing; unpack cifar-10-python.tar.gz (from "
            f"https://www.cs.toronto.edu/~kriz/cifar.html) so that its batches lie in "
            f"{os.path.dirname(path)}"
        )
    try:
        with open(path, "rb") as f:
            batch = pickle.load(f, encoding="bytes")
        data, labels = batch[b"data"], batch[b"labels"]
    except (pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError) as e:
        raise DataFormatError(
            f"{path}: not a CIFAR-10 batch (a pickled dict with b'data' and b'labels'): "
            f"{type(e).__name__}: {e}"
        ) from None
    data = np.asarray(data)
    if data.ndim != 2 or data.shape[1] != 3072 or len(labels) != len(data):
        raise DataFormatError(
            f"{path}: b'data' is {data.dtype} {list(data.shape)} with {len(labels)} labels; "
            "expected uint8 [N, 3072] (3 x 32 x 32) and N labels"
        )
    return data.astype(np.uint8).reshape(-1, 3, 32, 32), np.asarray(labels, np.int64)


def load_cifar10(directory, train=True):
    """(images uint8 [N, 3, 32, 32], labels int64 [N]) of CIFAR-10: the train split
    (data_batch_1 .. 5, 50000) or the test split (test_batch, 10000), from the Python batches
    in directory or in its cifar-10-batches-py/ folder."""
    nested = os.path.join(directory, "cifar-10-batches-py")
    if os.path.isdir(nested):
        directory = nested
    names = [f"data_batch_{i}" for i in range(1, 6)] if train else ["test_batch"]
    parts = [_cifar_batch(os.path.join(directory, name)) for name in names]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def load_npz(path):
    """The arrays of a .npz archive (numpy.savez), as a dict of name -> array."""
    if not os.path.isfile(path):
        raise DataNotFoundError(f"{path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise DataFormatError(f"{path}: a .npy array, not a .npz archive (numpy.savez)")
            return {name: archive[name] for name in archive.files}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
        if isinstance(e, DataFormatError):
            raise
        raise DataFormatError(
            f"{path}: not a readable .npz archive (a zip of .npy files): {type(e).__name__}: {e}"
        ) from None

"""ember.save / ember.load: checkpoints (nested dicts, lists and tuples of Tensors, NumPy arrays
and numbers: model, optimizer and scheduler state dicts, RNG state, step counters) as one
safetensors file. The tensors are the file's tensors, named by their path in the object
('model.fc.weight'); the structure around them is JSON in the file's metadata (key 'ember').

Saving is atomic: the file is written to a temporary file in the same directory, synced to disk
and renamed over the target, so a crash leaves the old file or the new one, never a part."""

import json
import os
import tempfile

import numpy as np
import safetensors
import safetensors.numpy

from ember import _core

_FORMAT = "ember.checkpoint/1"


class CheckpointError(ValueError):
    """A checkpoint file is corrupt, truncated or not a safetensors file."""


class _Encoder:
    """Turns an object into JSON-able structure, collecting its arrays by path."""

    def __init__(self):
        self.arrays = {}

    def _name(self, path):
        name, n = path or "tensor", 1
        while name in self.arrays:
            name, n = f"{path}#{n}", n + 1
        return name

    def encode(self, obj, path=""):
        if isinstance(obj, _core.Tensor):
            t = obj.detach().cpu()
            dtype = str(t.dtype).replace("ember.", "")
            if dtype == "bfloat16":  # NumPy has no bfloat16; float32 holds it exactly
                t = t.float()
            name = self._name(path)
            self.arrays[name] = np.asarray(t.numpy(), order="C")
            return {"__tensor__": name, "dtype": dtype, "device": str(obj.device)}
        if isinstance(obj, np.ndarray):
            name = self._name(path)
            self.arrays[name] = np.asarray(obj, order="C")
            return {"__ndarray__": name}
        if isinstance(obj, np.generic):
            return obj.item()
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        if isinstance(obj, dict):
            items = [[k, self.encode(v, f"{path}.{k}" if path else str(k))] for k, v in obj.items()]
            for k, _ in items:
                if not isinstance(k, (str, int, float, bool)) and k is not None:
                    raise TypeError(f"ember.save: a dict key {k!r} at '{path}' is not a number or "
                                    "a string")
            return {"__dict__": items}
        if isinstance(obj, (list, tuple)):
            values = [self.encode(v, f"{path}.{i}" if path else str(i)) for i, v in enumerate(obj)]
            return values if isinstance(obj, list) else {"__tuple__": values}
        raise TypeError(
            f"ember.save: cannot save a {type(obj).__name__} at '{path or '(top)'}'; a checkpoint "
            "holds dicts, lists, tuples, Tensors, NumPy arrays, numbers, strings and None"
        )


def _decode(obj, arrays, device):
    if isinstance(obj, list):
        return [_decode(v, arrays, device) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tensor__" in obj:
        t = _core.tensor(arrays[obj["__tensor__"]], dtype=obj["dtype"])
        return t.to(device if device is not None else obj["device"])
    if "__ndarray__" in obj:
        return arrays[obj["__ndarray__"]]
    if "__tuple__" in obj:
        return tuple(_decode(v, arrays, device) for v in obj["__tuple__"])
    return {k: _decode(v, arrays, device) for k, v in obj["__dict__"]}


def save(obj, path):
    """Writes obj (nested dicts/lists/tuples of Tensors, arrays and numbers) to path, atomically,
    as a safetensors file."""
    encoder = _Encoder()
    structure = encoder.encode(obj)
    metadata = {"format": _FORMAT, "ember": json.dumps(structure)}
    data = safetensors.numpy.save(encoder.arrays, metadata=metadata)
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def load(path, map_location=None, weights_only=True):
    """Reads what save wrote: the same structure, tensors on their saved device or on
    map_location (a device or device string). A safetensors file that ember did not write loads
    as a flat dict of name -> Tensor. CheckpointError for a corrupt or truncated file.

    weights_only is accepted for PyTorch's habit, and True is what always happens: a checkpoint
    is tensors and JSON (dicts, lists, tuples, numbers, strings), never pickled Python objects,
    so loading one runs no code. weights_only=False would ask to unpickle arbitrary objects,
    which ember's format cannot hold: it is a NotSupportedError, not a silent True."""
    if weights_only is not True:
        raise _core.NotSupportedError(
            f"ember.load: weights_only={weights_only!r}; ember checkpoints are safetensors "
            "(tensors and JSON), never pickles, so loading is always weights_only=True. Fix: "
            "drop the argument (a pickle written by torch.save must be loaded with torch)"
        )
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"ember.load: {path}: no such file")
    try:
        with open(path, "rb") as f:
            data = f.read()
        arrays = safetensors.numpy.load(data)
        with safetensors.safe_open(path, framework="np") as f:
            metadata = f.metadata() or {}
        structure = json.loads(metadata["ember"]) if "ember" in metadata else None
    except (safetensors.SafetensorError, json.JSONDecodeError, OSError, ValueError) as e:
        raise CheckpointError(
            f"ember.load: {path} is not a readable safetensors checkpoint (corrupt or truncated): "
            f"{type(e).__name__}: {e}"
        ) from None
    if structure is None:
        return {name: _core.tensor(a).to(map_location or "cpu") for name, a in arrays.items()}
    return _decode(structure, arrays, map_location)

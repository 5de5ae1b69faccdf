"""PyTorch's names that are compositions of Ember's ops: isclose/allclose, meshgrid, ravel,
one-argument where, as_tensor, and the Tensor methods new_zeros/new_ones/new_full/new_empty/
new_tensor, ravel and the mT property. Each differentiates through the ops it calls."""

import builtins
import warnings

import numpy as np

from ember import _core
from ember._core import Tensor


def _check_tensor(op, name, value):
    if not isinstance(value, Tensor):
        raise _core.DTypeError(
            f"{op}: {name} is a {type(value).__name__}; expected an ember.Tensor. Fix: wrap it "
            f"with ember.tensor(...)")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise |input - other| <= atol + rtol |other| (bool, broadcast), as torch.isclose:
    equal values (infinities included) are close, NaN is close to NaN only with equal_nan."""
    _check_tensor("isclose", "input", input)
    _check_tensor("isclose", "other", other)
    if rtol < 0 or atol < 0:
        raise _core.ValueError(
            f"isclose: rtol={rtol} and atol={atol}; both must be >= 0. Fix: pass tolerances >= 0")
    a, b = input.detach(), other.detach()
    if not (a.is_floating_point() or b.is_floating_point()):
        a, b = a.to(_core.float64), b.to(_core.float64)  # |a - b| of integers without overflow
    close = a == b
    finite = ((a - a) == 0) & ((b - b) == 0)  # inf - inf and NaN - NaN are NaN
    close = close | (finite & ((a - b).abs() <= atol + rtol * b.abs()))
    if equal_nan:
        close = close | ((a != a) & (b != b))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> builtins.bool:
    """Whether isclose holds for every element (a Python bool)."""
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 1-D tensors, as torch.meshgrid: with indexing "ij" output k varies
    along dim k, shape [len(t0), len(t1), ...]; with "xy" the first two dims swap (NumPy's and
    MATLAB's convention). Without indexing it warns, as PyTorch does, and uses "ij". The outputs
    are broadcast views of the inputs."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("ember.meshgrid: in an upcoming release it will be required to pass the "
                      "indexing argument; using indexing='ij'", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise _core.ValueError(
            f"meshgrid: indexing is {indexing!r}; pass 'ij' (matrix) or 'xy' (Cartesian)")
    for k, t in enumerate(tensors):
        _check_tensor("meshgrid", f"tensor {k}", t)
        if t.ndim > 1:
            raise _core.ShapeError(
                f"meshgrid: tensor {k} has shape {list(t.shape)}; expected 0 or 1 dims. Fix: "
                "flatten it first")
    dims = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        dims[0], dims[1] = 1, 0  # tensor 0 varies along dim 1, tensor 1 along dim 0
    shape = [0] * len(tensors)
    for k, t in enumerate(tensors):
        shape[dims[k]] = t.numel()
    grids = []
    for k, t in enumerate(tensors):
        along = [1] * len(tensors)
        along[dims[k]] = t.numel()
        grids.append(t.reshape(along).broadcast_to(shape))
    return tuple(grids)


def ravel(input):
    """The elements as one dim: a view when the layout allows, else a copy (reshape(-1))."""
    return input.reshape(-1)


def where(condition, input=None, other=None):
    """where(condition, input, other): input where condition is true, other where false
    (ember._core.where). where(condition) alone: the indices of its non-zero elements, one int64
    tensor per dim (condition.nonzero(as_tuple=True))."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if input is None or other is None:
        raise _core.ValueError(
            "where: got one of input and other; pass both (where(condition, input, other)) or "
            "neither (where(condition) gives the indices where it is true)")
    return _core.where(condition, input, other)


def as_tensor(data, dtype=None, device=None):
    """data as a tensor, sharing memory where it can, as torch.as_tensor: a tensor is returned
    itself (or converted by .to when dtype/device differ); a NumPy array of a dtype Ember has, on
    the CPU without a cast, shares its memory (ember.from_numpy); anything else is copied."""
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device) if dtype or device else data
    if isinstance(data, np.ndarray) and (device is None or _core.device(device).type == "cpu"):
        same = dtype is None or _core.dtype(dtype) == _core.dtype(data.dtype)
        if same and data.dtype.isnative and data.dtype.kind in "biuf" and data.flags.writeable:
            try:
                return _core.from_numpy(data)
            except _core.EmberError:
                pass  # a dtype or layout from_numpy cannot share: copy below
    return _core.tensor(data, dtype=dtype, device=device)


# ---- Tensor methods ----

def _size_args(size):
    """new_zeros(2, 3) and new_zeros((2, 3)) alike."""
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (list, tuple)) else size


def _new(make):
    def method(self, *size, dtype=None, device=None, requires_grad=False):
        return make(*_size_args(size), dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)

    return method


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor of size filled with fill_value, of this tensor's dtype and device by default."""
    return _core.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                      requires_grad=requires_grad)


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """A copy of data (never sharing memory, no history), of this tensor's dtype and device by
    default."""
    if isinstance(data, Tensor):
        data = data.detach()
    out = _core.tensor(np.array(data, copy=True) if isinstance(data, np.ndarray) else data,
                       dtype=dtype or self.dtype, device=device or self.device)
    if isinstance(data, Tensor) and out.data_ptr() == data.data_ptr():
        out = out.clone()
    return out.requires_grad_(requires_grad)


def _ravel(self):
    """The elements as one dim: a view when the layout allows, else a copy (reshape(-1))."""
    return self.reshape(-1)


def _mT(self):  # noqa: N802 (named as in PyTorch)
    if self.ndim < 2:
        raise _core.ShapeError(
            f"mT: the tensor has shape {list(self.shape)}; it needs 2 or more dims (the last two "
            "are swapped). Fix: unsqueeze a vector first")
    return self.transpose(-2, -1)


Tensor.new_zeros = _new(_core.zeros)
Tensor.new_ones = _new(_core.ones)
Tensor.new_empty = _new(_core.empty)
Tensor.new_zeros.__doc__ = "Zeros of the given size, of this tensor's dtype and device by default."
Tensor.new_ones.__doc__ = "Ones of the given size, of this tensor's dtype and device by default."
Tensor.new_empty.__doc__ = "An uninitialised tensor, of this tensor's dtype and device by default."
Tensor.new_full = _new_full
Tensor.new_tensor = _new_tensor
Tensor.ravel = _ravel
Tensor.mT = property(_mT, doc="The last two dims swapped (a batch of matrices transposed).")

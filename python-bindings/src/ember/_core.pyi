"""
Ember's compiled core: tensors, ops, autograd, interop, errors and memory
"""

# Generated signatures and docstrings keep one line each, as pybind11 writes them.
# ruff: noqa: E501

from __future__ import annotations

import builtins
import collections.abc
import typing

import numpy
import typing_extensions

from ember.autograd import Graph

# The metaclass pybind11 gives every class it binds (pybind11_builtins.pybind11_type, which is not
# importable): declared so that stubtest sees the classes below as the runtime has them.
class _pybind11_type(builtins.type): ...

# What a dtype argument accepts (dtype_from_object in src/convert.cpp): an ember dtype, a name such
# as 'float32', a NumPy dtype or scalar type, or one of the Python types float, int and bool.
_DTypeLike: typing_extensions.TypeAlias = (
    dtype | builtins.str | numpy.dtype[typing.Any] | builtins.type[typing.Any]
)
# What a device argument accepts (device_from_object): an ember device, a name such as 'cpu' or
# 'cuda:0', or a GPU index.
_DeviceLike: typing_extensions.TypeAlias = device | builtins.str | builtins.int

class EmberError(RuntimeError):
    """
    The base of every Ember error.
    """
class DTypeError(EmberError, TypeError):
    """
    A wrong or unsupported dtype (a TypeError).
    """
class DeviceError(EmberError):
    """
    Mixed or unavailable devices, or a failed CUDA call.
    """
class OutOfMemoryError(EmberError, MemoryError):
    """
    The allocator's cap was reached or the device is full.
    """
class NotSupportedError(EmberError, NotImplementedError):
    """
    A valid request that is not implemented (for this device).
    """
class CaptureError(NotSupportedError):
    """
    Something a compiled step cannot capture (a NotSupportedError).
    """
class dtype(metaclass=_pybind11_type):
    """
    An element type: ember.float32, ember.int64, ...
    """
    def __eq__(self, arg0: typing.Any) -> builtins.bool:
        ...
    def __getstate__(self) -> str:
        ...
    def __hash__(self) -> builtins.int:
        ...
    def __init__(self, dtype: typing.Any) -> None:
        """
        The dtype a name ('float32'), NumPy dtype or ember.dtype names.
        """
    def __repr__(self) -> str:
        ...
    def __setstate__(self, arg0: str) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def is_floating_point(self) -> builtins.bool:
        ...
    @property
    def itemsize(self) -> builtins.int:
        """
        Bytes per element.
        """
    @property
    def name(self) -> str:
        ...
class device(metaclass=_pybind11_type):
    """
    Where a tensor lives: ember.device('cpu'), ('cuda:0').
    """
    def __eq__(self, arg0: typing.Any) -> builtins.bool:
        ...
    def __getstate__(self) -> str:
        ...
    def __hash__(self) -> builtins.int:
        ...
    @typing.overload
    def __init__(self, spec: typing.Any) -> None:
        ...
    @typing.overload
    def __init__(self, type: str, index: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, arg0: str) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def index(self) -> builtins.int:
        ...
    @property
    def type(self) -> str:
        ...
class Generator(metaclass=_pybind11_type):
    """
    A random stream of its own (a Philox seed and offset), for generator= of the random functions: the same seed gives the same numbers, and drawing from it leaves the default generator (ember.manual_seed's) untouched.
    """
    def __init__(self, device: _DeviceLike = 'cpu') -> None:
        ...
    def __repr__(self) -> str:
        ...
    def get_state(self) -> dict:
        """
        The state, {'seed': int, 'offset': int} (as ember.get_rng_state: a copy).
        """
    def initial_seed(self) -> builtins.int:
        """
        The seed the stream started from.
        """
    def manual_seed(self, seed: typing.Any) -> typing_extensions.Self:
        """
        Reseeds the stream (offset back to 0); returns self.
        """
    def seed(self) -> builtins.int:
        """
        Reseeds from the operating system's entropy; returns the new seed.
        """
    def set_state(self, new_state: typing.Any) -> typing_extensions.Self:
        """
        Restores a state from get_state(); returns self.
        """
    @property
    def device(self) -> device:
        """
        The device it was made for.
        """
class Tensor(metaclass=_pybind11_type):
    """
    An n-dimensional array on a device that can record its history for autograd (an eager autodiff Variable).
    """
    __array_priority__: typing.ClassVar[builtins.int] = 1000
    __array_ufunc__ = None
    def __abs__(self) -> Tensor:
        ...
    def __add__(self, other: typing.Any) -> Tensor:
        ...
    def __and__(self, other: typing.Any) -> Tensor:
        ...
    def __array__(self, dtype: typing.Any = None, copy: typing.Any = None) -> numpy.ndarray:
        ...
    def __bool__(self) -> builtins.bool:
        ...
    def __dlpack__(self, *, stream: typing.Any = None, max_version: typing.Any = None, dl_device: typing.Any = None, copy: typing.Any = None) -> typing_extensions.CapsuleType:
        """
        A DLPack capsule of this tensor (no copy).
        """
    def __dlpack_device__(self) -> tuple[builtins.int, builtins.int]:
        ...
    def __eq__(self, other: typing.Any) -> Tensor:  # type: ignore[override]
        ...
    def __float__(self) -> builtins.float:
        ...
    def __floordiv__(self, other: typing.Any) -> Tensor:
        ...
    def __ge__(self, other: typing.Any) -> Tensor:
        ...
    def __getitem__(self, arg0: typing.Any) -> Tensor:
        """
        NumPy indexing: ints, slices, None, ..., integer and bool tensors or lists.
        """
    def __gt__(self, other: typing.Any) -> Tensor:
        ...
    def __hash__(self) -> builtins.int:
        ...
    def __iadd__(self, other: typing.Any) -> Tensor:
        ...
    def __ifloordiv__(self, other: typing.Any) -> Tensor:
        ...
    def __imod__(self, other: typing.Any) -> Tensor:
        ...
    def __imul__(self, other: typing.Any) -> Tensor:
        ...
    def __index__(self) -> builtins.int:
        ...
    def __init__(self, data: typing.Any, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> None:
        """
        A new leaf tensor; data is a Tensor (whose storage it shares), a NumPy array, nested lists of numbers or a number (all copied).
        """
    def __int__(self) -> builtins.int:
        ...
    def __invert__(self) -> Tensor:
        ...
    def __ipow__(self, other: typing.Any) -> Tensor:
        ...
    def __isub__(self, other: typing.Any) -> Tensor:
        ...
    def __iter__(self) -> collections.abc.Iterator[Tensor]:
        """
        The slices along dim 0, as a list's items.
        """
    def __itruediv__(self, other: typing.Any) -> Tensor:
        ...
    def __le__(self, other: typing.Any) -> Tensor:
        ...
    def __len__(self) -> builtins.int:
        ...
    def __lt__(self, other: typing.Any) -> Tensor:
        ...
    def __matmul__(self, arg0: Tensor) -> Tensor:
        ...
    def __mod__(self, other: typing.Any) -> Tensor:
        ...
    def __mul__(self, other: typing.Any) -> Tensor:
        ...
    def __ne__(self, other: typing.Any) -> Tensor:  # type: ignore[override]
        ...
    def __neg__(self) -> Tensor:
        ...
    def __or__(self, other: typing.Any) -> Tensor:
        ...
    def __pos__(self) -> Tensor:
        ...
    def __pow__(self, other: typing.Any) -> Tensor:
        ...
    def __radd__(self, other: typing.Any) -> Tensor:
        ...
    def __rand__(self, other: typing.Any) -> Tensor:
        ...
    def __repr__(self) -> str:
        ...
    def __rfloordiv__(self, other: typing.Any) -> Tensor:
        ...
    def __rmatmul__(self, arg0: typing.Any) -> Tensor:
        ...
    def __rmod__(self, other: typing.Any) -> Tensor:
        ...
    def __rmul__(self, other: typing.Any) -> Tensor:
        ...
    def __ror__(self, other: typing.Any) -> Tensor:
        ...
    def __rpow__(self, other: typing.Any) -> Tensor:
        ...
    def __rsub__(self, other: typing.Any) -> Tensor:
        ...
    def __rtruediv__(self, other: typing.Any) -> Tensor:
        ...
    def __rxor__(self, other: typing.Any) -> Tensor:
        ...
    def __setitem__(self, arg0: typing.Any, arg1: typing.Any) -> None:
        """
        NumPy indexed assignment of a number or tensor (broadcast).
        """
    def __sub__(self, other: typing.Any) -> Tensor:
        ...
    def __truediv__(self, other: typing.Any) -> Tensor:
        ...
    def __xor__(self, other: typing.Any) -> Tensor:
        ...
    def _graph_dot(self) -> str:
        ...
    def _graph_str(self) -> str:
        ...
    @property
    def _name(self) -> str:
        ...
    def _set_name(self, name: str, buffer: builtins.bool = False) -> None:
        """
        The name the printed graph gives this leaf (nn.Module sets it for its parameters and buffers); buffer: printed as a buffer rather than an input.
        """
    def add_(self, other: typing.Any) -> Tensor:
        """
        In place: self = self op other; returns self.
        """
    def all(self, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
        """
        Whether every element over dim is non-zero.
        """
    def amax(self, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
        """
        The largest value over dim.
        """
    def amin(self, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
        """
        The smallest value over dim.
        """
    def any(self, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
        """
        Whether some element over dim is non-zero.
        """
    def argmax(self, dim: typing.SupportsInt | typing.SupportsIndex | None = None, keepdim: builtins.bool = False) -> Tensor:
        """
        int64 index of the maximum along dim (of the flattened x without dim).
        """
    def argmin(self, dim: typing.SupportsInt | typing.SupportsIndex | None = None, keepdim: builtins.bool = False) -> Tensor:
        """
        int64 index of the minimum along dim (of the flattened x without dim).
        """
    def argsort(self, dim: typing.SupportsInt | typing.SupportsIndex = -1, descending: builtins.bool = False, stable: builtins.bool = False) -> Tensor:
        """
        The int64 indices that sort x along dim.
        """
    def backward(self, gradient: Tensor | None = None, retain_graph: builtins.bool = False, create_graph: builtins.bool = False) -> None:
        """
        Accumulates d(self)/d(leaf) into the .grad of every leaf that requires grad; gradient weighs a self of more than one element.
        """
    def bfloat16(self) -> Tensor:
        ...
    def bincount(self, weights: Tensor | None = None, minlength: typing.SupportsInt | typing.SupportsIndex = 0) -> Tensor:
        """
        How often each value 0..max occurs in the 1-D int tensor (or the sum of its weights).
        """
    def bmm(self, other: Tensor) -> Tensor:
        """
        A batched matrix product (matmul).
        """
    def bool(self) -> Tensor:
        ...
    def broadcast_to(self, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> Tensor:
        """
        A broadcast view to shape.
        """
    def byte(self) -> Tensor:
        ...
    def chunk(self, chunks: typing.SupportsInt | typing.SupportsIndex, dim: typing.SupportsInt | typing.SupportsIndex = 0) -> list[Tensor]:
        """
        About equal pieces along dim.
        """
    def clamp(self, min: typing.SupportsFloat | typing.SupportsIndex | None = None, max: typing.SupportsFloat | typing.SupportsIndex | None = None) -> Tensor:
        """
        min(max(x, min), max); either bound may be None.
        """
    def clamp_(self, min: typing.SupportsFloat | typing.SupportsIndex | None = None, max: typing.SupportsFloat | typing.SupportsIndex | None = None) -> Tensor:
        """
        Clamps in place.
        """
    def clip(self, min: typing.SupportsFloat | typing.SupportsIndex | None = None, max: typing.SupportsFloat | typing.SupportsIndex | None = None) -> Tensor:
        """
        Another name of clamp.
        """
    def clone(self) -> Tensor:
        """
        A copy of the data in new memory; gradients flow back through it.
        """
    def contiguous(self) -> Tensor:
        """
        A contiguous copy, or x itself when it is contiguous.
        """
    def copy_(self, src: typing.Any) -> Tensor:
        """
        Copies src (broadcast, cast, from any device) into self; returns self.
        """
    def cpu(self) -> Tensor:
        ...
    def cuda(self, device: typing.SupportsInt | typing.SupportsIndex = 0, non_blocking: builtins.bool = False) -> Tensor:
        ...
    def cumprod(self, dim: typing.SupportsInt | typing.SupportsIndex, *, dtype: _DTypeLike | None = None) -> Tensor:
        """
        Running products along dim (integers and bool give int64).
        """
    def cumsum(self, dim: typing.SupportsInt | typing.SupportsIndex, *, dtype: _DTypeLike | None = None) -> Tensor:
        """
        Running sums along dim (integers and bool give int64).
        """
    def data_ptr(self) -> builtins.int:
        ...
    def detach(self) -> Tensor:
        """
        The same data without history (requires_grad False).
        """
    def dim(self) -> builtins.int:
        """
        The number of dims.
        """
    def div_(self, other: typing.Any) -> Tensor:
        """
        In place: self = self op other; returns self.
        """
    def double(self) -> Tensor:
        ...
    def element_size(self) -> builtins.int:
        ...
    def elu(self, alpha: typing.SupportsFloat | typing.SupportsIndex = 1.0) -> Tensor:
        """
        x > 0 ? x : alpha (e^x - 1).
        """
    def expand(self, *args) -> Tensor:
        """
        A broadcast view to sizes (-1 keeps a size): x.expand(4, -1).
        """
    def expand_as(self, other: Tensor) -> Tensor:
        ...
    def fill_(self, value: typing.SupportsFloat | typing.SupportsIndex) -> Tensor:
        """
        Sets every element to value; returns self.
        """
    def flatten(self, start_dim: typing.SupportsInt | typing.SupportsIndex = 0, end_dim: typing.SupportsInt | typing.SupportsIndex = -1) -> Tensor:
        """
        Merges dims start_dim .. end_dim into one.
        """
    def flip(self, dims: typing.Any) -> Tensor:
        """
        The order of the elements along dims reversed.
        """
    def float(self) -> Tensor:
        ...
    def gather(self, dim: typing.SupportsInt | typing.SupportsIndex, index: Tensor) -> Tensor:
        """
        out[i][j] = x[index[i][j]][j] (dim 0), x[i][index[i][j]] (dim 1), ...
        """
    def gelu(self, approximate: str = 'none') -> Tensor:
        """
        x Phi(x); approximate 'none' (erf) or 'tanh'.
        """
    def graph(self) -> Graph:
        """
        The recorded forward graph that made this tensor and its backward graph (a Graph).
        """
    def new_empty(self, *size: typing.Any, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
        """
        An uninitialised tensor, of this tensor's dtype and device by default.
        """
    def new_full(self, size: typing.Any, fill_value: typing.Any, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
        """
        A tensor of size filled with fill_value, of this tensor's dtype and device by default.
        """
    def new_ones(self, *size: typing.Any, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
        """
        Ones of the given size, of this tensor's dtype and device by default.
        """
    def new_tensor(self, data: typing.Any, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
        """
        A copy of data (never sharing memory, no history), of this tensor's dtype and device by default.
        """
    def new_zeros(self, *size: typing.Any, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
        """
        Zeros of the given size, of this tensor's dtype and device by default.
        """
    def ravel(self) -> Tensor:
        """
        The elements as one dim: a view when the layout allows, else a copy (reshape(-1)).
        """
    def half(self) -> Tensor:
        ...
    def index_add(self, dim: typing.SupportsInt | typing.SupportsIndex, index: Tensor, source: Tensor) -> Tensor:
        """
        A copy of x with source's slice j added to slice index[j] along dim.
        """
    def index_put(self, indices: typing.Any, values: typing.Any, accumulate: builtins.bool = False) -> Tensor:
        """
        A copy of x with x[indices] = values, or += with accumulate (repeated positions then add up); indices: a tuple of integer or bool tensors for the leading dims.
        """
    def index_put_(self, indices: typing.Any, values: typing.Any, accumulate: builtins.bool = False) -> Tensor:
        """
        In place: self[indices] = values (or += with accumulate); returns self.
        """
    def index_select(self, dim: typing.SupportsInt | typing.SupportsIndex, index: Tensor) -> Tensor:
        """
        The slices index[0], index[1], ... along dim.
        """
    def int(self) -> Tensor:
        ...
    def is_contiguous(self) -> builtins.bool:
        ...
    def is_floating_point(self) -> builtins.bool:
        ...
    def is_pinned(self) -> builtins.bool:
        """
        Whether the tensor is in pinned host memory (pin_memory).
        """
    def isfinite(self) -> Tensor:
        """
        Whether x is neither NaN nor infinite, as bool.
        """
    def isinf(self) -> Tensor:
        """
        Whether x is +inf or -inf, as bool.
        """
    def isnan(self) -> Tensor:
        """
        Whether x is NaN, as bool.
        """
    def item(self) -> typing.Any:
        """
        The value of a one-element tensor as a Python number.
        """
    def leaky_relu(self, negative_slope: typing.SupportsFloat | typing.SupportsIndex = 0.01) -> Tensor:
        """
        x > 0 ? x : negative_slope x.
        """
    def log_softmax(self, dim: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
        """
        log(softmax(x)) along dim, without its underflow.
        """
    def logical_not(self) -> Tensor:
        """
        not x, as bool.
        """
    def masked_fill_(self, mask: Tensor, value: typing.SupportsFloat | typing.SupportsIndex) -> Tensor:
        """
        masked_fill in place; returns self.
        """
    def masked_select(self, mask: Tensor) -> Tensor:
        """
        The elements of x where mask (broadcast with x) is true, as a 1-D tensor.
        """
    def nan_to_num(self, nan: typing.SupportsFloat | typing.SupportsIndex = 0.0, posinf: typing.SupportsFloat | typing.SupportsIndex | None = None, neginf: typing.SupportsFloat | typing.SupportsIndex | None = None) -> Tensor:
        """
        NaN, +inf and -inf replaced (None: the dtype's largest / lowest finite value).
        """
    def logsumexp(self, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
        """
        log(sum(exp(x))) over dim.
        """
    def long(self) -> Tensor:
        ...
    def masked_fill(self, mask: Tensor, value: typing.SupportsFloat | typing.SupportsIndex) -> Tensor:
        """
        x with value where mask (bool, broadcast to x) is true.
        """
    def matmul(self, other: Tensor) -> Tensor:
        """
        NumPy's matmul: dot, matrix, batched (batch dims broadcast).
        """
    def max(self, dim: typing.Any = None, keepdim: builtins.bool = False) -> typing.Any:
        """
        max(x): the largest value; max(x, dim): (values, indices); max(x, other): maximum.
        """
    def mean(self, dim: typing.Any = None, keepdim: builtins.bool = False, *, dtype: _DTypeLike | None = None, axis: typing.Any = None) -> Tensor:
        """
        The mean over dim (or axis), of x cast to dtype when given.
        """
    def min(self, dim: typing.Any = None, keepdim: builtins.bool = False) -> typing.Any:
        """
        min(x): the smallest value; min(x, dim): (values, indices); min(x, other): minimum.
        """
    def mm(self, other: Tensor) -> Tensor:
        """
        A matrix product (matmul).
        """
    def mul_(self, other: typing.Any) -> Tensor:
        """
        In place: self = self op other; returns self.
        """
    def narrow(self, dim: typing.SupportsInt | typing.SupportsIndex, start: typing.SupportsInt | typing.SupportsIndex, length: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
        """
        length elements from start along dim (a view).
        """
    def negative(self) -> Tensor:
        """
        -x.
        """
    def nonzero(self, as_tuple: builtins.bool = False) -> typing.Any:
        """
        The indices of the non-zero elements: [count, ndim], or one tensor per dim (reads the tensor on the host).
        """
    def norm(self, p: typing.SupportsFloat | typing.SupportsIndex = 2.0, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
        """
        The vector p-norm over dim.
        """
    def normal_(self, mean: typing.SupportsFloat | typing.SupportsIndex = 0.0, std: typing.SupportsFloat | typing.SupportsIndex = 1.0, *, generator: Generator | None = None) -> Tensor:
        """
        Fills with normal values (from generator when given); returns self.
        """
    def numel(self) -> builtins.int:
        """
        The number of elements.
        """
    def numpy(self) -> numpy.ndarray:
        """
        A NumPy array viewing this CPU tensor's memory (the tensor stays alive as its base).
        """
    def permute(self, *args) -> Tensor:
        """
        The dims reordered: x.permute(2, 0, 1) (a view).
        """
    def pin_memory(self) -> Tensor:
        """
        A copy in pinned (page-locked) host memory, which copies to a GPU read directly, with non_blocking=True without the host waiting (itself when pinned already). Needs CUDA and a GPU: NotSupportedError in a build without CUDA, DeviceError without a GPU.
        """
    def pow_(self, other: typing.Any) -> Tensor:
        """
        In place: self = self op other; returns self.
        """
    def prod(self, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
        """
        The product over dim.
        """
    def register_hook(self, hook: collections.abc.Callable) -> RemovableHandle:
        """
        hook(grad) runs when backward computes this tensor's gradient; it may return a replacement tensor (None keeps the gradient). Returns a handle whose remove() unregisters the hook.
        """
    def repeat(self, *args) -> Tensor:
        """
        x repeated sizes[i] times along each dim (more sizes than x has dims: new leading dims).
        """
    def requires_grad_(self, requires_grad: builtins.bool = True) -> Tensor:
        """
        Sets requires_grad; returns self.
        """
    def reshape(self, *args) -> Tensor:
        """
        The same elements in another shape (one size may be -1); a view when strides allow.
        """
    def reshape_as(self, other: Tensor) -> Tensor:
        ...
    def retain_grad(self) -> None:
        """
        Keeps .grad on a non-leaf after backward.
        """
    def roll(self, shifts: typing.Any, dims: typing.Any = None) -> Tensor:
        """
        Elements shifted along dims, wrapping around (dims None: x rolled flat).
        """
    def round(self, *, decimals: typing.SupportsInt | typing.SupportsIndex = 0) -> Tensor:
        """
        Rounded half to even, to `decimals` places (zero gradient).
        """
    def scatter(self, dim: typing.SupportsInt | typing.SupportsIndex, index: Tensor, src: typing.Any = None, *, value: typing.Any = None, reduce: builtins.str | None = None) -> Tensor:
        """
        A copy of x with src (a tensor, or a number) written at index along dim; reduce='add' adds instead.
        """
    def scatter_(self, dim: typing.SupportsInt | typing.SupportsIndex, index: Tensor, src: typing.Any = None, *, value: typing.Any = None, reduce: builtins.str | None = None) -> Tensor:
        """
        scatter in place; returns self.
        """
    def scatter_add(self, dim: typing.SupportsInt | typing.SupportsIndex, index: Tensor, src: Tensor) -> Tensor:
        """
        A copy of x with src added at the positions index names along dim (gather's adjoint).
        """
    def select(self, dim: typing.SupportsInt | typing.SupportsIndex, index: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
        """
        x[..., index, ...] along dim, dropping it.
        """
    def short(self) -> Tensor:
        ...
    def size(self, dim: typing.SupportsInt | typing.SupportsIndex | None = None) -> typing.Any:
        """
        The shape, or the size of one dim.
        """
    def softmax(self, dim: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
        """
        exp(x) / sum(exp(x)) along dim.
        """
    def softplus(self, beta: typing.SupportsFloat | typing.SupportsIndex = 1.0, threshold: typing.SupportsFloat | typing.SupportsIndex = 20.0) -> Tensor:
        """
        log(1 + e^(beta x)) / beta.
        """
    def sort(self, dim: typing.SupportsInt | typing.SupportsIndex = -1, descending: builtins.bool = False, *, stable: builtins.bool = False) -> typing.Any:
        """
        (values, indices) sorted along dim (stable; NaN sorts as the largest value).
        """
    def split(self, split_size_or_sections: typing.Any, dim: typing.SupportsInt | typing.SupportsIndex = 0) -> list[Tensor]:
        """
        Pieces of split_size along dim (the last may be smaller), or of the given sizes.
        """
    def square(self) -> Tensor:
        """
        x * x.
        """
    def squeeze(self, dim: typing.Any = None) -> Tensor:
        """
        Drops dims of size 1 (every one, or those given).
        """
    def std(self, dim: typing.Any = None, unbiased: builtins.bool | None = None, keepdim: builtins.bool = False, *, correction: typing.SupportsInt | typing.SupportsIndex | None = None) -> Tensor:
        """
        The standard deviation over dim.
        """
    def storage_offset(self) -> builtins.int:
        ...
    def stride(self, dim: typing.SupportsInt | typing.SupportsIndex | None = None) -> typing.Any:
        """
        The strides (in elements), or the stride of one dim.
        """
    def sub_(self, other: typing.Any) -> Tensor:
        """
        In place: self = self op other; returns self.
        """
    def sum(self, dim: typing.Any = None, keepdim: builtins.bool = False, *, dtype: _DTypeLike | None = None, axis: typing.Any = None) -> Tensor:
        """
        The sum over dim (or axis), of x cast to dtype when given.
        """
    def swapaxes(self, axis0: typing.SupportsInt | typing.SupportsIndex, axis1: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
        """
        Another name of transpose.
        """
    def t(self) -> Tensor:
        """
        The transpose of a matrix (a 0-d or 1-d tensor is itself).
        """
    def tile(self, *args) -> Tensor:
        """
        x repeated dims[i] times along each dim (fewer dims than x has: leading 1s).
        """
    def to(self, *args, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, non_blocking: builtins.bool = False) -> Tensor:
        """
        This tensor on another device and/or with another dtype (itself when both match); differentiable. non_blocking: from pinned memory to a GPU, queued without waiting.
        """
    def tolist(self) -> typing.Any:
        """
        The values as nested Python lists (a number for a 0-d tensor).
        """
    def topk(self, k: typing.SupportsInt | typing.SupportsIndex, dim: typing.SupportsInt | typing.SupportsIndex = -1, largest: builtins.bool = True, sorted: builtins.bool = True) -> typing.Any:
        """
        (values, indices) of the k largest (smallest) elements along dim, in sorted order.
        """
    def transpose(self, dim0: typing.SupportsInt | typing.SupportsIndex, dim1: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
        """
        Swaps two dims (a view).
        """
    def tril(self, diagonal: typing.SupportsInt | typing.SupportsIndex = 0) -> Tensor:
        """
        Zero above diagonal k of the last two dims.
        """
    def triu(self, diagonal: typing.SupportsInt | typing.SupportsIndex = 0) -> Tensor:
        """
        Zero below diagonal k of the last two dims.
        """
    def type(self, dtype: _DTypeLike) -> Tensor:
        ...
    def unbind(self, dim: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple:
        """
        The slices along dim, each without it.
        """
    def uniform_(self, a: typing.SupportsFloat | typing.SupportsIndex = 0.0, b: typing.SupportsFloat | typing.SupportsIndex = 1.0, *, generator: Generator | None = None) -> Tensor:
        """
        Fills with uniform values on [a, b) (from generator when given); returns self.
        """
    def unique(self, sorted: builtins.bool = True, return_inverse: builtins.bool = False, return_counts: builtins.bool = False, dim: typing.Any = None) -> typing.Any:
        """
        The sorted distinct elements; with return_inverse/return_counts also where each element went and how often each value occurs. Only dim=None.
        """
    def unsqueeze(self, dim: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
        """
        Inserts a dim of size 1 at dim.
        """
    def var(self, dim: typing.Any = None, unbiased: builtins.bool | None = None, keepdim: builtins.bool = False, *, correction: typing.SupportsInt | typing.SupportsIndex | None = None) -> Tensor:
        """
        The variance over dim with Bessel's correction (1 unless given).
        """
    def view(self, *args) -> Tensor:
        """
        A view in another shape (one size may be -1); ShapeError when the strides forbid it.
        """
    def view_as(self, other: Tensor) -> Tensor:
        ...
    def zero_(self) -> Tensor:
        """
        Sets every element to 0; returns self.
        """
    @property
    def T(self) -> Tensor:
        """
        The tensor with its dims reversed.
        """
    @property
    def mT(self) -> Tensor:
        """
        The last two dims swapped (a batch of matrices transposed).
        """
    @property
    def data(self) -> Tensor:
        """
        The same storage as a tensor without history (as detach()).
        """
    @property
    def device(self) -> device:
        ...
    @property
    def dtype(self) -> dtype:
        ...
    @property
    def grad(self) -> Tensor | None:
        """
        The accumulated gradient, or None.
        """
    @grad.setter
    def grad(self, arg1: Tensor | None) -> None:
        ...
    @property
    def is_cuda(self) -> builtins.bool:
        ...
    @property
    def is_leaf(self) -> builtins.bool:
        """
        Made by no recorded op.
        """
    @property
    def itemsize(self) -> builtins.int:
        ...
    @property
    def nbytes(self) -> builtins.int:
        ...
    @property
    def ndim(self) -> builtins.int:
        ...
    @property
    def op(self) -> typing.Any:
        """
        The name of the recorded op that made this tensor, None for a leaf.
        """
    @property
    def requires_grad(self) -> builtins.bool:
        """
        Whether backward computes a gradient for this tensor (settable on leaves).
        """
    @requires_grad.setter
    def requires_grad(self, arg1: builtins.bool) -> None:
        ...
    @property
    def shape(self) -> tuple:
        """
        The sizes of the dims, a tuple.
        """
    # BEGIN generated from unary.def by `nox -s stubs`: edit that file, not this block
    def abs(self) -> Tensor:
        """
        |x|.
        """
    def ceil(self) -> Tensor:
        """
        Rounded up (zero gradient).
        """
    def cos(self) -> Tensor:
        """
        The cosine.
        """
    def erf(self) -> Tensor:
        """
        The error function.
        """
    def exp(self) -> Tensor:
        """
        e^x.
        """
    def expm1(self) -> Tensor:
        """
        e^x - 1, accurate for small x.
        """
    def floor(self) -> Tensor:
        """
        Rounded down (zero gradient).
        """
    def log(self) -> Tensor:
        """
        The natural logarithm.
        """
    def log1p(self) -> Tensor:
        """
        log(1 + x), accurate for small x.
        """
    def neg(self) -> Tensor:
        """
        -x.
        """
    def reciprocal(self) -> Tensor:
        """
        1 / x.
        """
    def relu(self) -> Tensor:
        """
        max(x, 0).
        """
    def rsqrt(self) -> Tensor:
        """
        1 / sqrt(x).
        """
    def sigmoid(self) -> Tensor:
        """
        1 / (1 + e^-x).
        """
    def sign(self) -> Tensor:
        """
        -1, 0 or 1 (no gradient).
        """
    def silu(self) -> Tensor:
        """
        x sigmoid(x).
        """
    def sin(self) -> Tensor:
        """
        The sine.
        """
    def sqrt(self) -> Tensor:
        """
        The square root.
        """
    def tanh(self) -> Tensor:
        """
        The hyperbolic tangent.
        """
    def trunc(self) -> Tensor:
        """
        Rounded toward zero (zero gradient).
        """
    # END generated from unary.def
    # BEGIN generated from binary.def by `nox -s stubs`: edit that file, not this block
    def add(self, other: typing.Any) -> Tensor:
        """
        a + b, with NumPy broadcasting.
        """
    def atan2(self, other: typing.Any) -> Tensor:
        """
        The angle of the point (b, a) in radians, in [-pi, pi] (integers give float32).
        """
    def bitwise_and(self, other: typing.Any) -> Tensor:
        """
        a & b on integers and bools.
        """
    def bitwise_or(self, other: typing.Any) -> Tensor:
        """
        a | b on integers and bools.
        """
    def bitwise_xor(self, other: typing.Any) -> Tensor:
        """
        a ^ b on integers and bools.
        """
    def div(self, other: typing.Any) -> Tensor:
        """
        True division a / b (integers give float32).
        """
    def eq(self, other: typing.Any) -> Tensor:
        """
        a == b, as bool.
        """
    def floor_divide(self, other: typing.Any) -> Tensor:
        """
        Python's a // b, rounded toward -inf (no gradient).
        """
    def fmod(self, other: typing.Any) -> Tensor:
        """
        C's fmod(a, b): a - b trunc(a / b), with the dividend's sign.
        """
    def ge(self, other: typing.Any) -> Tensor:
        """
        a >= b, as bool.
        """
    def gt(self, other: typing.Any) -> Tensor:
        """
        a > b, as bool.
        """
    def hypot(self, other: typing.Any) -> Tensor:
        """
        sqrt(a^2 + b^2) without overflow or underflow (integers give float32).
        """
    def le(self, other: typing.Any) -> Tensor:
        """
        a <= b, as bool.
        """
    def logical_and(self, other: typing.Any) -> Tensor:
        """
        a and b, as bool.
        """
    def logical_or(self, other: typing.Any) -> Tensor:
        """
        a or b, as bool.
        """
    def logical_xor(self, other: typing.Any) -> Tensor:
        """
        a xor b, as bool.
        """
    def lt(self, other: typing.Any) -> Tensor:
        """
        a < b, as bool.
        """
    def maximum(self, other: typing.Any) -> Tensor:
        """
        The larger of a and b; NaN in either gives NaN.
        """
    def minimum(self, other: typing.Any) -> Tensor:
        """
        The smaller of a and b; NaN in either gives NaN.
        """
    def mul(self, other: typing.Any) -> Tensor:
        """
        a * b, with NumPy broadcasting.
        """
    def ne(self, other: typing.Any) -> Tensor:
        """
        a != b, as bool.
        """
    def pow(self, other: typing.Any) -> Tensor:
        """
        a ** b; exact on integers.
        """
    def remainder(self, other: typing.Any) -> Tensor:
        """
        Python's a % b, with the divisor's sign.
        """
    def sub(self, other: typing.Any) -> Tensor:
        """
        a - b (two bools: use logical_xor).
        """
    # END generated from binary.def
class RemovableHandle(metaclass=_pybind11_type):
    """
    What register_hook returns: remove() unregisters the hook; as a context manager it removes the hook on leaving the block.
    """
    def __enter__(self) -> Tensor:
        ...
    def __exit__(self, *args) -> None:
        ...
    def remove(self) -> None:
        """
        Unregisters the hook (again: nothing happens).
        """
class _Optimizer(metaclass=_pybind11_type):
    """
    An autodiff-engine optimizer (ember.optim wraps it).
    """
    def add_param_group(self, params: collections.abc.Sequence[Tensor], options: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex] = {}) -> None:
        ...
    def group_count(self) -> builtins.int:
        ...
    def group_options(self, group: typing.SupportsInt | typing.SupportsIndex) -> dict[str, builtins.float]:
        """
        A copy of one group's options.
        """
    def load_state_dict(self, state_dict: dict) -> None:
        ...
    def set_option(self, group: typing.SupportsInt | typing.SupportsIndex, name: str, value: typing.SupportsFloat | typing.SupportsIndex) -> None:
        """
        Sets one option of one group (checked).
        """
    def state_dict(self) -> dict:
        ...
    def step(self) -> None:
        """
        Updates every parameter that has a grad.
        """
    def zero_grad(self) -> None:
        """
        Drops every parameter's grad.
        """
    @property
    def defaults(self) -> dict[str, builtins.float]:
        ...
    @property
    def name(self) -> str:
        ...
class _SGD(_Optimizer):
    def __init__(self, params: collections.abc.Sequence[Tensor], options: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex]) -> None:
        ...
class _Adam(_Optimizer):
    def __init__(self, params: collections.abc.Sequence[Tensor], options: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex]) -> None:
        ...
class _AdamW(_Adam):
    def __init__(self, params: collections.abc.Sequence[Tensor], options: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex]) -> None:
        ...
class _RMSprop(_Optimizer):
    def __init__(self, params: collections.abc.Sequence[Tensor], options: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex]) -> None:
        ...
class _Adadelta(_Optimizer):
    def __init__(self, params: collections.abc.Sequence[Tensor], options: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex]) -> None:
        ...
class _Adagrad(_Optimizer):
    def __init__(self, params: collections.abc.Sequence[Tensor], options: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex]) -> None:
        ...
class _Adamax(_Optimizer):
    def __init__(self, params: collections.abc.Sequence[Tensor], options: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex]) -> None:
        ...
class _NAdam(_Optimizer):
    def __init__(self, params: collections.abc.Sequence[Tensor], options: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex]) -> None:
        ...
class _RAdam(_Optimizer):
    def __init__(self, params: collections.abc.Sequence[Tensor], options: collections.abc.Mapping[str, typing.SupportsFloat | typing.SupportsIndex]) -> None:
        ...
class _LRScheduler(metaclass=_pybind11_type):
    """
    An autodiff-engine schedule.
    """
    def get_last_lr(self) -> list[builtins.float]:
        ...
    def load_state_dict(self, state_dict: dict) -> None:
        ...
    def state_dict(self) -> dict:
        ...
    def step(self) -> None:
        """
        To the next epoch: sets every group's lr.
        """
    @property
    def base_lrs(self) -> list[builtins.float]:
        ...
    @property
    def last_epoch(self) -> builtins.int:
        ...
class _StepLR(_LRScheduler):
    def __init__(self, optimizer: _Optimizer, step_size: typing.SupportsInt | typing.SupportsIndex, gamma: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class _MultiStepLR(_LRScheduler):
    def __init__(self, optimizer: _Optimizer, milestones: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], gamma: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class _ExponentialLR(_LRScheduler):
    def __init__(self, optimizer: _Optimizer, gamma: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class _CosineAnnealingLR(_LRScheduler):
    def __init__(self, optimizer: _Optimizer, t_max: typing.SupportsInt | typing.SupportsIndex, eta_min: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class _LinearLR(_LRScheduler):
    def __init__(self, optimizer: _Optimizer, start_factor: typing.SupportsFloat | typing.SupportsIndex, end_factor: typing.SupportsFloat | typing.SupportsIndex, total_iters: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class _SequentialLR(_LRScheduler):
    def __init__(self, optimizer: _Optimizer, schedulers: collections.abc.Sequence[_LRScheduler], milestones: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
class _ChainedScheduler(_LRScheduler):
    def __init__(self, optimizer: _Optimizer, schedulers: collections.abc.Sequence[_LRScheduler]) -> None:
        ...
class _OneCycleLR(_LRScheduler):
    def __init__(self, optimizer: _Optimizer, max_lrs: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], total_steps: typing.SupportsInt | typing.SupportsIndex, pct_start: typing.SupportsFloat | typing.SupportsIndex, anneal_strategy: str, cycle_momentum: builtins.bool, base_momenta: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], max_momenta: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], div_factor: typing.SupportsFloat | typing.SupportsIndex, final_div_factor: typing.SupportsFloat | typing.SupportsIndex, three_phase: builtins.bool) -> None:
        ...
    @property
    def total_steps(self) -> builtins.int:
        ...
class _ReduceLROnPlateau(metaclass=_pybind11_type):
    """
    An autodiff-engine schedule.
    """
    def __init__(self, optimizer: _Optimizer, mode: str, factor: typing.SupportsFloat | typing.SupportsIndex, patience: typing.SupportsInt | typing.SupportsIndex, threshold: typing.SupportsFloat | typing.SupportsIndex, threshold_mode: str, cooldown: typing.SupportsInt | typing.SupportsIndex, min_lrs: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], eps: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def get_last_lr(self) -> list[builtins.float]:
        ...
    def load_state_dict(self, state_dict: dict) -> None:
        ...
    def state_dict(self) -> dict:
        ...
    def step(self, metric: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def best(self) -> builtins.float:
        ...
    @property
    def in_cooldown(self) -> builtins.bool:
        ...
    @property
    def last_epoch(self) -> builtins.int:
        ...
    @property
    def num_bad_epochs(self) -> builtins.int:
        ...
class ShapeError(EmberError, builtins.ValueError):
    """
    Incompatible shapes (a ValueError).
    """
class IndexError(EmberError, builtins.IndexError):
    """
    An index or dim out of range (an IndexError).
    """
class ValueError(EmberError, builtins.ValueError):
    """
    A bad argument value (a ValueError).
    """
class _CompiledStep(metaclass=_pybind11_type):
    """
    A traced and replayed step (ember.compile wraps it).
    """
    def __call__(self, inputs: collections.abc.Sequence[Tensor]) -> list[Tensor]:
        ...
    def __init__(self, fn: collections.abc.Callable, name: str, memory_budget: typing.SupportsInt | typing.SupportsIndex, input_names: collections.abc.Sequence[str], state_names: collections.abc.Sequence[tuple[Tensor, str]], guards: typing.Any, warn: typing.Any, optimize: builtins.bool = True, fuse: builtins.bool = True) -> None:
        ...
    def explain(self) -> str:
        ...
    def graph(self) -> str:
        ...
    def source(self, group: typing.SupportsInt | typing.SupportsIndex) -> str:
        """
        The generated source of the newest plan's fused group `group`.
        """
    @property
    def fused_groups(self) -> builtins.int:
        ...
    @property
    def last_call_replayed(self) -> builtins.bool:
        ...
    @property
    def plan_id(self) -> builtins.int:
        ...
    @property
    def plans(self) -> builtins.int:
        ...
    @property
    def replays(self) -> builtins.int:
        ...
    @property
    def traces(self) -> builtins.int:
        ...
def _allow_tf32() -> builtins.bool:
    """
    Whether float32 GEMMs on CUDA may use TF32.
    """
def _autocast_policy(op: str) -> str:
    """
    What autocast does to the op's floating inputs: 'lower', 'float32', 'float32_math', 'widest' or 'keep'.
    """
def _autocast_state(device_type: _DeviceLike) -> tuple[builtins.bool, dtype]:
    """
    (enabled, dtype) of autocast for a device type on this thread.
    """
def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[builtins.int, builtins.int]:
    """
    (fan_in, fan_out) of a weight [out, in, k...].
    """
def _calculate_gain(nonlinearity: str, param: typing.SupportsFloat | typing.SupportsIndex | None = None) -> builtins.float:
    ...
def _clip_grad_norm_(parameters: collections.abc.Sequence[Tensor], max_norm: typing.SupportsFloat | typing.SupportsIndex, norm_type: typing.SupportsFloat | typing.SupportsIndex, error_if_nonfinite: builtins.bool) -> Tensor:
    ...
def _clip_grad_value_(parameters: collections.abc.Sequence[Tensor], clip_value: typing.SupportsFloat | typing.SupportsIndex) -> None:
    ...
def _constant_(tensor: Tensor, val: typing.SupportsFloat | typing.SupportsIndex) -> Tensor:
    ...
def _fused_elementwise(nodes: list, inputs: collections.abc.Sequence[Tensor], reduction: str = 'none', dims: typing.SupportsInt | typing.SupportsIndex = 0, keepdim: builtins.bool = False, fused: builtins.bool = True) -> tuple:
    """
    Runs a fusion group given as nodes over inputs: (out, fused, reason). fused=False runs it op by op with the library's kernels instead.
    """
def _fused_forget_loaded() -> None:
    """
    Forgets the fused kernels this process has loaded, so that the next call reads the disk cache (or compiles) again: for measuring compile times.
    """
def _fused_source(nodes: list, inputs: collections.abc.Sequence[Tensor], reduction: str = 'none', dims: typing.SupportsInt | typing.SupportsIndex = 0, keepdim: builtins.bool = False, target: str = 'cpu') -> str:
    """
    The source of the kernel _fused_elementwise runs for these nodes and inputs.
    """
def _kaiming_normal_(tensor: Tensor, a: typing.SupportsFloat | typing.SupportsIndex, mode: str, nonlinearity: str, generator: Generator | None = None) -> Tensor:
    ...
def _kaiming_uniform_(tensor: Tensor, a: typing.SupportsFloat | typing.SupportsIndex, mode: str, nonlinearity: str, generator: Generator | None = None) -> Tensor:
    ...
def _normal_(tensor: Tensor, mean: typing.SupportsFloat | typing.SupportsIndex, std: typing.SupportsFloat | typing.SupportsIndex, generator: Generator | None = None) -> Tensor:
    ...
def _orthogonal_(tensor: Tensor, gain: typing.SupportsFloat | typing.SupportsIndex, generator: Generator | None = None) -> Tensor:
    ...
def _plan_intervals(sizes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], starts: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], ends: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], alignment: typing.SupportsInt | typing.SupportsIndex = 64) -> dict:
    """
    Places buffers (sizes[k] bytes, live from step starts[k] to ends[k] inclusive) in one arena, best fit, as compiled mode's memory plan does. Returns {'offsets': [...], 'planned_peak', 'naive_peak' (no reuse), 'lower_bound' (most bytes live at once)}; sizes are rounded up to alignment.
    """
def _record_function(name: str, backward: collections.abc.Callable, inputs: collections.abc.Sequence[Tensor], outputs: collections.abc.Sequence[Tensor], saved_inputs: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], saved_outputs: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], non_differentiable: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> list[Tensor]:
    """
    Records outputs computed from inputs as one node whose gradient calls backward (ember.autograd.Function.apply uses it).
    """
def _tracing() -> builtins.bool:
    """
    Whether a compiled step is being traced on this thread.
    """
def _set_allow_tf32(on: builtins.bool) -> None:
    """
    Lets float32 GEMMs on CUDA use TF32 tensor cores (off by default).
    """
def _set_autocast_state(device_type: _DeviceLike, enabled: builtins.bool, dtype: _DTypeLike) -> None:
    """
    Sets autocast for a device type on this thread (ember.autocast restores it on exit).
    """
def _uniform_(tensor: Tensor, a: typing.SupportsFloat | typing.SupportsIndex, b: typing.SupportsFloat | typing.SupportsIndex, generator: Generator | None = None) -> Tensor:
    ...
def _xavier_normal_(tensor: Tensor, gain: typing.SupportsFloat | typing.SupportsIndex, generator: Generator | None = None) -> Tensor:
    ...
def _xavier_uniform_(tensor: Tensor, gain: typing.SupportsFloat | typing.SupportsIndex, generator: Generator | None = None) -> Tensor:
    ...
def adaptive_avg_pool2d(input: Tensor, output_size: typing.Any) -> Tensor:
    """
    Means over windows giving [Ho, Wo].
    """
def adaptive_avg_pool2d_backward(grad: Tensor, input_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> Tensor:
    ...
def all(input: Tensor, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
    """
    Whether every element over dim is non-zero.
    """
def amax(input: Tensor, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
    """
    The largest value over dim.
    """
def amin(input: Tensor, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
    """
    The smallest value over dim.
    """
def any(input: Tensor, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
    """
    Whether some element over dim is non-zero.
    """
def arange(start: typing.Any, end: typing.Any = None, step: typing.Any = 1, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    start, start + step, ... up to but excluding end (arange(n): 0 .. n-1); int64 when every argument is an int, float32 otherwise.
    """
def argmax(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex | None = None, keepdim: builtins.bool = False) -> Tensor:
    """
    int64 index of the maximum along dim (of the flattened x without dim).
    """
def argmin(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex | None = None, keepdim: builtins.bool = False) -> Tensor:
    """
    int64 index of the minimum along dim (of the flattened x without dim).
    """
def argsort(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex = -1, descending: builtins.bool = False, stable: builtins.bool = False) -> Tensor:
    """
    The int64 indices that sort x along dim.
    """
def avg_pool2d(input: Tensor, kernel_size: typing.Any, stride: typing.Any = None, padding: typing.Any = 0, ceil_mode: builtins.bool = False, count_include_pad: builtins.bool = True) -> Tensor:
    """
    Window means; stride defaults to kernel_size.
    """
def avg_pool2d_backward(grad: Tensor, input_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], kernel_size: typing.Any, stride: typing.Any = None, padding: typing.Any = 0, ceil_mode: builtins.bool = False, count_include_pad: builtins.bool = True) -> Tensor:
    ...
def backward_cache_stats() -> dict:
    """
    How many backward graphs were built and how many reused from the cache.
    """
def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None, bias: Tensor | None = None, training: builtins.bool = False, momentum: typing.SupportsFloat | typing.SupportsIndex = 0.1, eps: typing.SupportsFloat | typing.SupportsIndex = 1e-05) -> Tensor:
    """
    Batch norm over dim 1 of x [N, C, *]; in training the running stats are updated in place.
    """
def batch_norm_backward(grad: Tensor, input: Tensor, weight: Tensor | None, save_mean: Tensor, save_invstd: Tensor, training: builtins.bool) -> list[Tensor]:
    ...
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = 'mean', pos_weight: Tensor | None = None) -> Tensor:
    """
    Binary cross entropy of logits against target probabilities of their shape.
    """
def binary_cross_entropy_with_logits_backward(grad: Tensor, input: Tensor, target: Tensor, pos_weight: Tensor | None = None, reduction: str = 'mean') -> Tensor:
    ...
def bincount(input: Tensor, weights: Tensor | None = None, minlength: typing.SupportsInt | typing.SupportsIndex = 0) -> Tensor:
    """
    How often each value 0..max occurs in the 1-D int tensor (or the sum of its weights).
    """
def bmm(input: Tensor, other: Tensor) -> Tensor:
    """
    A batched matrix product (matmul).
    """
def broadcast_to(input: Tensor, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> Tensor:
    """
    A broadcast view to shape.
    """
def cat(tensors: typing.Any, dim: typing.SupportsInt | typing.SupportsIndex = 0) -> Tensor:
    """
    Joins tensors along an existing dim.
    """
def chunk(input: Tensor, chunks: typing.SupportsInt | typing.SupportsIndex, dim: typing.SupportsInt | typing.SupportsIndex = 0) -> list[Tensor]:
    """
    About equal pieces along dim.
    """
def clamp(input: Tensor, min: typing.SupportsFloat | typing.SupportsIndex | None = None, max: typing.SupportsFloat | typing.SupportsIndex | None = None) -> Tensor:
    """
    min(max(x, min), max); either bound may be None.
    """
def clip(input: Tensor, min: typing.SupportsFloat | typing.SupportsIndex | None = None, max: typing.SupportsFloat | typing.SupportsIndex | None = None) -> Tensor:
    """
    Another name of clamp.
    """
def concat(tensors: typing.Any, dim: typing.SupportsInt | typing.SupportsIndex = 0) -> Tensor:
    """
    Joins tensors along an existing dim.
    """
def concatenate(tensors: typing.Any, dim: typing.SupportsInt | typing.SupportsIndex = 0) -> Tensor:
    """
    Joins tensors along an existing dim.
    """
def contiguous(input: Tensor) -> Tensor:
    """
    A contiguous copy, or x itself when it is contiguous.
    """
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: typing.Any = 1, padding: typing.Any = 0, dilation: typing.Any = 1, groups: typing.SupportsInt | typing.SupportsIndex = 1) -> Tensor:
    """
    2-D cross-correlation: x [N, C, H, W], weight [O, C/groups, kh, kw], bias [O] -> [N, O, Ho, Wo]. padding: int, (h, w), 'same' or 'valid'.
    """
def conv2d_backward_input(grad: Tensor, weight: Tensor, input_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], stride: typing.Any = 1, padding: typing.Any = 0, dilation: typing.Any = 1, groups: typing.SupportsInt | typing.SupportsIndex = 1) -> Tensor:
    ...
def conv2d_backward_weight(grad: Tensor, input: Tensor, weight_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], stride: typing.Any = 1, padding: typing.Any = 0, dilation: typing.Any = 1, groups: typing.SupportsInt | typing.SupportsIndex = 1) -> Tensor:
    ...
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: typing.SupportsInt | typing.SupportsIndex = -100, reduction: str = 'mean', label_smoothing: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> Tensor:
    """
    Cross entropy of logits [N, C] (or [N, C, d...]) against int64 class indices [N].
    """
def cross_entropy_backward(grad: Tensor, input: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: typing.SupportsInt | typing.SupportsIndex = -100, reduction: str = 'mean', label_smoothing: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> Tensor:
    ...
def cuda_compiled() -> builtins.bool:
    """
    Whether core-runtime was built with CUDA.
    """
def cuda_device_count() -> builtins.int:
    """
    How many GPUs the driver reports.
    """
def cuda_is_available() -> builtins.bool:
    """
    Whether tensors can go on a GPU here.
    """
def cumprod(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex, *, dtype: _DTypeLike | None = None) -> Tensor:
    """
    Running products along dim (integers and bool give int64).
    """
def cumsum(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex, *, dtype: _DTypeLike | None = None) -> Tensor:
    """
    Running sums along dim (integers and bool give int64).
    """
def dropout(input: Tensor, p: typing.SupportsFloat | typing.SupportsIndex = 0.5, training: builtins.bool = True) -> Tensor:
    """
    Zeroes elements with probability p and scales the rest by 1 / (1 - p) when training.
    """
def dropout_backward(grad: Tensor, mask: Tensor, p: typing.SupportsFloat | typing.SupportsIndex) -> Tensor:
    ...
def elu(input: Tensor, alpha: typing.SupportsFloat | typing.SupportsIndex = 1.0) -> Tensor:
    """
    x > 0 ? x : alpha (e^x - 1).
    """
def embedding(input: Tensor, weight: Tensor) -> Tensor:
    """
    Rows of weight [V, D] at input's indices -> [*, D].
    """
def embedding_backward(grad: Tensor, indices: Tensor, num_weights: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
    ...
def empty(*args, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    An uninitialised tensor.
    """
def empty_cache(device: _DeviceLike = 'cpu') -> None:
    """
    Returns the cached, unused blocks to the system.
    """
def empty_like(input: Tensor, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    Uninitialised, like input.
    """
def eye(n: typing.SupportsInt | typing.SupportsIndex, m: typing.SupportsInt | typing.SupportsIndex | None = None, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    An [n, m] matrix (m = n by default) with ones on the diagonal.
    """
def flatten(input: Tensor, start_dim: typing.SupportsInt | typing.SupportsIndex = 0, end_dim: typing.SupportsInt | typing.SupportsIndex = -1) -> Tensor:
    """
    Merges dims start_dim .. end_dim into one.
    """
def flip(input: Tensor, dims: typing.Any) -> Tensor:
    """
    The order of the elements along dims reversed.
    """
def from_dlpack(obj: typing.Any) -> Tensor:
    """
    A tensor sharing the memory of an object with __dlpack__ (NumPy, PyTorch, CuPy, JAX) or of a DLPack capsule; the producer's memory stays alive while Ember holds it.
    """
def from_numpy(array: typing_extensions.Buffer) -> Tensor:
    """
    A CPU tensor sharing the array's memory (writes through one show in the other); the array stays alive while the tensor does.
    """
def full(size: typing.Any, fill_value: typing.Any, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    A tensor of the given size filled with fill_value (dtype inferred from it).
    """
def full_like(input: Tensor, fill_value: typing.Any, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    A tensor shaped like input filled with fill_value.
    """
def gather(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex, index: Tensor) -> Tensor:
    """
    out[i][j] = x[index[i][j]][j] (dim 0), x[i][index[i][j]] (dim 1), ...
    """
def gelu(input: Tensor, approximate: str = 'none') -> Tensor:
    """
    x Phi(x); approximate 'none' (erf) or 'tanh'.
    """
def get_num_threads() -> builtins.int:
    """
    The threads the CPU ops run on: set_num_threads's, else EMBER_NUM_THREADS, else OMP_NUM_THREADS, else the cores this process may run on.
    """
def get_rng_state() -> dict:
    """
    The default random generator's state, {'seed': int, 'offset': int} (a plain copy).
    """
def grad(outputs: typing.Any, inputs: typing.Any, grad_outputs: typing.Any = None, retain_graph: builtins.bool | None = None, create_graph: builtins.bool = False, allow_unused: builtins.bool = False) -> tuple:
    """
    The gradients of outputs with respect to inputs, returned (a tuple) rather than accumulated; None for an unused input when allow_unused.
    """
def index_add(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex, index: Tensor, source: Tensor) -> Tensor:
    """
    A copy of x with source's slice j added to slice index[j] along dim.
    """
def index_put(input: Tensor, indices: typing.Any, values: typing.Any, accumulate: builtins.bool = False) -> Tensor:
    """
    A copy of x with x[indices] = values, or += with accumulate (repeated positions then add up); indices: a tuple of integer or bool tensors for the leading dims.
    """
def index_select(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex, index: Tensor) -> Tensor:
    """
    The slices index[0], index[1], ... along dim.
    """
def interpolate(input: Tensor, size: typing.Any = None, scale_factor: typing.Any = None, mode: builtins.str = 'nearest', align_corners: builtins.bool | None = None) -> Tensor:
    """
    Resizes [N, C, H, W] to size or by scale_factor; mode 'nearest' or 'bilinear'.
    """
def is_grad_enabled() -> builtins.bool:
    """
    Whether ops on tensors are recorded.
    """
def isfinite(input: Tensor) -> Tensor:
    """
    Whether x is neither NaN nor infinite, as bool.
    """
def isinf(input: Tensor) -> Tensor:
    """
    Whether x is +inf or -inf, as bool.
    """
def isnan(input: Tensor) -> Tensor:
    """
    Whether x is NaN, as bool.
    """
def l1_loss(input: Tensor, target: Tensor, reduction: str = 'mean') -> Tensor:
    """
    |input - target|, reduced.
    """
def l1_loss_backward(grad: Tensor, input: Tensor, target: Tensor, reduction: str = 'mean') -> Tensor:
    ...
def layer_norm(input: Tensor, normalized_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], weight: Tensor | None = None, bias: Tensor | None = None, eps: typing.SupportsFloat | typing.SupportsIndex = 1e-05) -> Tensor:
    """
    Normalises over the last dims (normalized_shape), then weight and bias.
    """
def layer_norm_backward(grad: Tensor, input: Tensor, normalized_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], mean: Tensor, rstd: Tensor, weight: Tensor | None = None) -> list[Tensor]:
    ...
def leaky_relu(input: Tensor, negative_slope: typing.SupportsFloat | typing.SupportsIndex = 0.01) -> Tensor:
    """
    x > 0 ? x : negative_slope x.
    """
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """
    x [*, in] @ weight [out, in]^T + bias [out].
    """
def linspace(start: typing.SupportsFloat | typing.SupportsIndex, end: typing.SupportsFloat | typing.SupportsIndex, steps: typing.SupportsInt | typing.SupportsIndex, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    steps values evenly spaced from start to end, both in.
    """
def log_softmax(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
    """
    log(softmax(x)) along dim, without its underflow.
    """
def log_softmax_backward(grad: Tensor, output: Tensor, dim: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
    ...
def logical_not(input: Tensor) -> Tensor:
    """
    not x, as bool.
    """
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """
    The elements of x where mask (broadcast with x) is true, as a 1-D tensor.
    """
def nan_to_num(input: Tensor, nan: typing.SupportsFloat | typing.SupportsIndex = 0.0, posinf: typing.SupportsFloat | typing.SupportsIndex | None = None, neginf: typing.SupportsFloat | typing.SupportsIndex | None = None) -> Tensor:
    """
    NaN, +inf and -inf replaced (None: the dtype's largest / lowest finite value).
    """
def logsumexp(input: Tensor, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
    """
    log(sum(exp(x))) over dim.
    """
def manual_seed(seed: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Reseeds the default random generator: the same seed gives the same random tensors.
    """
def masked_fill(input: Tensor, mask: Tensor, value: typing.SupportsFloat | typing.SupportsIndex) -> Tensor:
    """
    x with value where mask (bool, broadcast to x) is true.
    """
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """
    NumPy's matmul: dot, matrix, batched (batch dims broadcast).
    """
def max(input: Tensor, dim: typing.Any = None, keepdim: builtins.bool = False) -> typing.Any:
    """
    max(x): the largest value; max(x, dim): (values, indices); max(x, other): maximum.
    """
def max_memory_allocated(device: _DeviceLike = 'cpu') -> builtins.int:
    """
    The highest memory_allocated since the last reset_peak_memory_stats.
    """
def max_pool2d(input: Tensor, kernel_size: typing.Any, stride: typing.Any = None, padding: typing.Any = 0, dilation: typing.Any = 1, ceil_mode: builtins.bool = False, return_indices: builtins.bool = False) -> typing.Any:
    """
    Window maxima; stride defaults to kernel_size; with return_indices (values, indices).
    """
def max_pool2d_backward(grad: Tensor, indices: Tensor, input_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> Tensor:
    ...
def mean(input: Tensor, dim: typing.Any = None, keepdim: builtins.bool = False, *, dtype: _DTypeLike | None = None, axis: typing.Any = None) -> Tensor:
    """
    The mean over dim (or axis), of x cast to dtype when given.
    """
def memory_allocated(device: _DeviceLike = 'cpu') -> builtins.int:
    """
    Bytes held by tensors on the device now.
    """
def memory_reserved(device: _DeviceLike = 'cpu') -> builtins.int:
    """
    Bytes obtained from the system (in use + cached).
    """
def memory_snapshot(device: _DeviceLike = 'cpu') -> list:
    """
    Every segment of the device's caching allocator, in address order: a dict with device, address, size, pool ('small': requests up to 1 MiB, or 'large') and blocks, each a dict with address, size, requested, state ('allocated' or 'free') and op (the op that allocated it; '' when free).
    """
def memory_stats(device: _DeviceLike = 'cpu') -> dict:
    """
    The caching allocator's statistics for a device, in bytes: in_use (held by tensors), peak, reserved (segments obtained from the system), peak_reserved, allocations, system_allocations, limit (0: none), segments, free_blocks (cached pieces of reserved - in_use) and largest_free_block.
    """
def memory_summary(device: _DeviceLike = 'cpu') -> str:
    """
    A short table of the device's memory: allocated, reserved, their peaks, what is cached, the largest free block, the segments, and the ops whose tensors hold the most bytes.
    """
def min(input: Tensor, dim: typing.Any = None, keepdim: builtins.bool = False) -> typing.Any:
    """
    min(x): the smallest value; min(x, dim): (values, indices); min(x, other): minimum.
    """
def mm(input: Tensor, other: Tensor) -> Tensor:
    """
    A matrix product (matmul).
    """
def mse_loss(input: Tensor, target: Tensor, reduction: str = 'mean') -> Tensor:
    """
    (input - target)^2, reduced.
    """
def mse_loss_backward(grad: Tensor, input: Tensor, target: Tensor, reduction: str = 'mean') -> Tensor:
    ...
def narrow(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex, start: typing.SupportsInt | typing.SupportsIndex, length: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
    """
    length elements from start along dim (a view).
    """
def negative(input: Tensor) -> Tensor:
    """
    -x.
    """
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: typing.SupportsInt | typing.SupportsIndex = -100, reduction: str = 'mean') -> Tensor:
    """
    Negative log likelihood of log-probabilities against int64 class indices.
    """
def nll_loss_backward(grad: Tensor, input: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: typing.SupportsInt | typing.SupportsIndex = -100, reduction: str = 'mean') -> Tensor:
    ...
def norm(input: Tensor, p: typing.SupportsFloat | typing.SupportsIndex = 2.0, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
    """
    The vector p-norm over dim.
    """
def one_hot(input: Tensor, num_classes: typing.SupportsInt | typing.SupportsIndex = -1) -> Tensor:
    """
    int64 [*, num_classes] with a 1 at each index.
    """
def ones(*args, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    A tensor of ones of the given size.
    """
def ones_like(input: Tensor, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    Ones shaped like input.
    """
def pad(input: Tensor, pad: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], mode: str = 'constant', value: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> Tensor:
    """
    Pads (left, right) pairs from the last dim backwards, as torch.nn.functional.pad.
    """
def pad_backward(grad: Tensor, input_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pad: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], mode: str = 'constant') -> Tensor:
    ...
def permute(input: Tensor, dims: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> Tensor:
    """
    The dims reordered (a view).
    """
def prod(input: Tensor, dim: typing.Any = None, keepdim: builtins.bool = False) -> Tensor:
    """
    The product over dim.
    """
def rand(*args, generator: Generator | None = None, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    Uniform random values on [0, 1) (from generator, else the default generator that ember.manual_seed seeds).
    """
def rand_like(input: Tensor, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    Uniform random values on [0, 1), shaped like input.
    """
def randint(low: typing.SupportsInt | typing.SupportsIndex, high: typing.Any, size: typing.Any = None, *, generator: Generator | None = None, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None) -> Tensor:
    """
    Random integers on [low, high): randint(low, high, size) or randint(high, size).
    """
def randn(*args, generator: Generator | None = None, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    Standard normal random values (from generator, else the default generator).
    """
def randn_like(input: Tensor, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    Standard normal random values, shaped like input.
    """
def randperm(n: typing.SupportsInt | typing.SupportsIndex, *, generator: Generator | None = None, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None) -> Tensor:
    """
    A random permutation of 0 .. n-1.
    """
def relu_backward(grad: Tensor, x: Tensor) -> Tensor:
    ...
def reset_peak_memory_stats(device: _DeviceLike = 'cpu') -> None:
    """
    Restarts the peak at the current in-use bytes.
    """
def reshape(input: Tensor, *args) -> Tensor:
    """
    The same elements in another shape (one size may be -1); a view when strides allow.
    """
def roll(input: Tensor, shifts: typing.Any, dims: typing.Any = None) -> Tensor:
    """
    Elements shifted along dims, wrapping around (dims None: x rolled flat).
    """
def round(input: Tensor, *, decimals: typing.SupportsInt | typing.SupportsIndex = 0) -> Tensor:
    """
    Rounded half to even, to `decimals` places (zero gradient).
    """
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None, dropout_p: typing.SupportsFloat | typing.SupportsIndex = 0.0, is_causal: builtins.bool = False, scale: typing.SupportsFloat | typing.SupportsIndex | None = None) -> Tensor:
    """
    softmax(query @ key^T * scale + mask) @ value in one fused op that never holds the [L, S] scores: query [*, L, E], key [*, S, E], value [*, S, Ev] -> [*, L, Ev]. attn_mask: bool (True takes part) or added to the scores, broadcast to [*, L, S]; is_causal: query i sees keys j <= i; scale: 1 / sqrt(E) by default; dropout_p: drops attention weights, drawn from ember's seeded generator.
    """
def scatter(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex, index: Tensor, src: typing.Any = None, *, value: typing.Any = None, reduce: builtins.str | None = None) -> Tensor:
    """
    A copy of x with src (a tensor, or a number) written at index along dim; reduce='add' adds instead.
    """
def scatter_add(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex, index: Tensor, src: Tensor) -> Tensor:
    """
    A copy of x with src added at the positions index names along dim (gather's adjoint).
    """
def select(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex, index: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
    """
    x[..., index, ...] along dim, dropping it.
    """
def set_cuda_sync_mode(on: builtins.bool) -> None:
    """
    Waits for every kernel after launch, so a fault names the op that launched it (slow).
    """
def set_grad_enabled(mode: builtins.bool) -> None:
    """
    Turns recording on or off.
    """
def set_memory_limit(limit: typing.Any, device: _DeviceLike = 'cpu') -> None:
    """
    Caps the device's memory in use: bytes, or text such as '2GiB'; None or 0 removes it. An allocation past it raises ember.OutOfMemoryError.
    """
def set_num_threads(n: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Runs the CPU ops (and their matrix products) on n threads from the next op on; 1 runs them on the calling thread. Raises ValueError for n < 1.
    """
def set_rng_state(state: dict) -> None:
    """
    Restores a state from get_rng_state(): the same random tensors follow.
    """
def sigmoid_backward(grad: Tensor, x: Tensor) -> Tensor:
    ...
def silu_backward(grad: Tensor, x: Tensor) -> Tensor:
    ...
def softmax(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
    """
    exp(x) / sum(exp(x)) along dim.
    """
def softmax_backward(grad: Tensor, output: Tensor, dim: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
    ...
def softplus(input: Tensor, beta: typing.SupportsFloat | typing.SupportsIndex = 1.0, threshold: typing.SupportsFloat | typing.SupportsIndex = 20.0) -> Tensor:
    """
    log(1 + e^(beta x)) / beta.
    """
def sort(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex = -1, descending: builtins.bool = False, *, stable: builtins.bool = False) -> typing.Any:
    """
    (values, indices) sorted along dim (stable; NaN sorts as the largest value).
    """
def split(input: Tensor, split_size_or_sections: typing.Any, dim: typing.SupportsInt | typing.SupportsIndex = 0) -> list[Tensor]:
    """
    Pieces of split_size along dim (the last may be smaller), or of the given sizes.
    """
def square(input: Tensor) -> Tensor:
    """
    x * x.
    """
def squeeze(input: Tensor, dim: typing.Any = None) -> Tensor:
    """
    Drops dims of size 1 (every one, or those given).
    """
def stack(tensors: typing.Any, dim: typing.SupportsInt | typing.SupportsIndex = 0) -> Tensor:
    """
    Joins tensors of one shape along a new dim.
    """
def std(input: Tensor, dim: typing.Any = None, unbiased: builtins.bool | None = None, keepdim: builtins.bool = False, *, correction: typing.SupportsInt | typing.SupportsIndex | None = None) -> Tensor:
    """
    The standard deviation over dim.
    """
def sum(input: Tensor, dim: typing.Any = None, keepdim: builtins.bool = False, *, dtype: _DTypeLike | None = None, axis: typing.Any = None) -> Tensor:
    """
    The sum over dim (or axis), of x cast to dtype when given.
    """
def sum_to(input: Tensor, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> Tensor:
    """
    x summed over the dims that broadcast shape to x's shape.
    """
def swapaxes(input: Tensor, axis0: typing.SupportsInt | typing.SupportsIndex, axis1: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
    """
    Another name of transpose.
    """
def synchronize(device: _DeviceLike = 'cuda:0') -> None:
    """
    Waits for the work queued on the device (nothing to wait for on the CPU).
    """
def t(input: Tensor) -> Tensor:
    """
    The transpose of a matrix (a 0-d or 1-d tensor is itself).
    """
def tanh_backward(grad: Tensor, x: Tensor) -> Tensor:
    ...
def tensor(data: typing.Any, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    A new tensor holding a copy of data: a number, nested lists/tuples of numbers, a NumPy array or a Tensor. Without dtype, Python floats give float32, ints int64, bools bool, and a NumPy array keeps its dtype.
    """
def tile(input: Tensor, dims: typing.Any) -> Tensor:
    """
    x repeated dims[i] times along each dim (fewer dims than x has: leading 1s).
    """
def topk(input: Tensor, k: typing.SupportsInt | typing.SupportsIndex, dim: typing.SupportsInt | typing.SupportsIndex = -1, largest: builtins.bool = True, sorted: builtins.bool = True) -> typing.Any:
    """
    (values, indices) of the k largest (smallest) elements along dim, in sorted order.
    """
def transpose(input: Tensor, dim0: typing.SupportsInt | typing.SupportsIndex, dim1: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
    """
    Swaps two dims (a view).
    """
def tril(input: Tensor, diagonal: typing.SupportsInt | typing.SupportsIndex = 0) -> Tensor:
    """
    Zero above diagonal k of the last two dims.
    """
def triu(input: Tensor, diagonal: typing.SupportsInt | typing.SupportsIndex = 0) -> Tensor:
    """
    Zero below diagonal k of the last two dims.
    """
def unbind(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex = 0) -> tuple:
    """
    The slices along dim, each without it.
    """
def unique(input: Tensor, sorted: builtins.bool = True, return_inverse: builtins.bool = False, return_counts: builtins.bool = False, dim: typing.Any = None) -> typing.Any:
    """
    The sorted distinct elements; with return_inverse/return_counts also where each element went and how often each value occurs. Only dim=None.
    """
def unsqueeze(input: Tensor, dim: typing.SupportsInt | typing.SupportsIndex) -> Tensor:
    """
    Inserts a dim of size 1 at dim.
    """
def var(input: Tensor, dim: typing.Any = None, unbiased: builtins.bool | None = None, keepdim: builtins.bool = False, *, correction: typing.SupportsInt | typing.SupportsIndex | None = None) -> Tensor:
    """
    The variance over dim with Bessel's correction (1 unless given).
    """
def versions() -> dict[str, str]:
    """
    The versions of the three packages in use: {'bindings', 'autodiff', 'core'}.
    """
def where(condition: Tensor, input: typing.Any, other: typing.Any) -> Tensor:
    """
    input where condition (bool) is true, other where false; broadcast; either may be a number.
    """
def zeros(*args, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    A tensor of zeros of the given size.
    """
def zeros_like(input: Tensor, *, dtype: _DTypeLike | None = None, device: _DeviceLike | None = None, requires_grad: builtins.bool = False) -> Tensor:
    """
    Zeros shaped like input.
    """
# BEGIN generated from unary.def by `nox -s stubs`: edit that file, not this block
def abs(input: Tensor) -> Tensor:
    """
    |x|.
    """
def ceil(input: Tensor) -> Tensor:
    """
    Rounded up (zero gradient).
    """
def cos(input: Tensor) -> Tensor:
    """
    The cosine.
    """
def erf(input: Tensor) -> Tensor:
    """
    The error function.
    """
def exp(input: Tensor) -> Tensor:
    """
    e^x.
    """
def expm1(input: Tensor) -> Tensor:
    """
    e^x - 1, accurate for small x.
    """
def floor(input: Tensor) -> Tensor:
    """
    Rounded down (zero gradient).
    """
def log(input: Tensor) -> Tensor:
    """
    The natural logarithm.
    """
def log1p(input: Tensor) -> Tensor:
    """
    log(1 + x), accurate for small x.
    """
def neg(input: Tensor) -> Tensor:
    """
    -x.
    """
def reciprocal(input: Tensor) -> Tensor:
    """
    1 / x.
    """
def relu(input: Tensor) -> Tensor:
    """
    max(x, 0).
    """
def rsqrt(input: Tensor) -> Tensor:
    """
    1 / sqrt(x).
    """
def sigmoid(input: Tensor) -> Tensor:
    """
    1 / (1 + e^-x).
    """
def sign(input: Tensor) -> Tensor:
    """
    -1, 0 or 1 (no gradient).
    """
def silu(input: Tensor) -> Tensor:
    """
    x sigmoid(x).
    """
def sin(input: Tensor) -> Tensor:
    """
    The sine.
    """
def sqrt(input: Tensor) -> Tensor:
    """
    The square root.
    """
def tanh(input: Tensor) -> Tensor:
    """
    The hyperbolic tangent.
    """
def trunc(input: Tensor) -> Tensor:
    """
    Rounded toward zero (zero gradient).
    """
_unary_ops: tuple[str, ...]
# END generated from unary.def
# BEGIN generated from binary.def by `nox -s stubs`: edit that file, not this block
def add(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a + b, with NumPy broadcasting.
    """
def atan2(input: typing.Any, other: typing.Any) -> Tensor:
    """
    The angle of the point (b, a) in radians, in [-pi, pi] (integers give float32).
    """
def bitwise_and(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a & b on integers and bools.
    """
def bitwise_or(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a | b on integers and bools.
    """
def bitwise_xor(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a ^ b on integers and bools.
    """
def div(input: typing.Any, other: typing.Any) -> Tensor:
    """
    True division a / b (integers give float32).
    """
def eq(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a == b, as bool.
    """
def floor_divide(input: typing.Any, other: typing.Any) -> Tensor:
    """
    Python's a // b, rounded toward -inf (no gradient).
    """
def fmod(input: typing.Any, other: typing.Any) -> Tensor:
    """
    C's fmod(a, b): a - b trunc(a / b), with the dividend's sign.
    """
def ge(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a >= b, as bool.
    """
def gt(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a > b, as bool.
    """
def hypot(input: typing.Any, other: typing.Any) -> Tensor:
    """
    sqrt(a^2 + b^2) without overflow or underflow (integers give float32).
    """
def le(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a <= b, as bool.
    """
def logical_and(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a and b, as bool.
    """
def logical_or(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a or b, as bool.
    """
def logical_xor(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a xor b, as bool.
    """
def lt(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a < b, as bool.
    """
def maximum(input: typing.Any, other: typing.Any) -> Tensor:
    """
    The larger of a and b; NaN in either gives NaN.
    """
def minimum(input: typing.Any, other: typing.Any) -> Tensor:
    """
    The smaller of a and b; NaN in either gives NaN.
    """
def mul(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a * b, with NumPy broadcasting.
    """
def ne(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a != b, as bool.
    """
def pow(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a ** b; exact on integers.
    """
def remainder(input: typing.Any, other: typing.Any) -> Tensor:
    """
    Python's a % b, with the divisor's sign.
    """
def sub(input: typing.Any, other: typing.Any) -> Tensor:
    """
    a - b (two bools: use logical_xor).
    """
_binary_ops: tuple[str, ...]
# END generated from binary.def
__version__: builtins.str
bfloat16: dtype
bool: dtype
double: dtype
float: dtype
float16: dtype
float32: dtype
float64: dtype
half: dtype
int: dtype
int16: dtype
int32: dtype
int64: dtype
int8: dtype
long: dtype
short: dtype
uint8: dtype

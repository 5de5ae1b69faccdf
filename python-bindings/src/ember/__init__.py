"""Ember: a small, readable deep-learning library.

Tensors (``ember.tensor``, ``ember.zeros``, ...) live on the CPU or a GPU, record their history
for autograd (``requires_grad``, ``backward``, ``ember.no_grad``) and share memory with NumPy
and, through DLPack, with any other array library. Every op runs in C++ (``ember._core``); this
package adds the Python idioms around it.
"""

from ember import (
    _core,
    _tensor,  # noqa: F401  (adds the Python sugar to Tensor)
    accelerator,
    amp,
    autograd,
    backends,
    cuda,
    data,
    debug,
    nn,
    optim,
    utils,
)
from ember._arguments import ArgumentTypeError
from ember._compile import compile  # noqa: A004 (as torch)
from ember._composites import allclose, as_tensor, isclose, meshgrid, ravel, where
from ember._core import (  # noqa: A004 (as torch)
    CaptureError,
    DeviceError,
    DTypeError,
    EmberError,
    Generator,
    IndexError,
    NotSupportedError,
    OutOfMemoryError,
    ShapeError,
    Tensor,
    ValueError,
    __version__,
    bfloat16,
    bool,
    cuda_compiled,
    cuda_device_count,
    cuda_is_available,
    device,
    double,
    dtype,
    empty_cache,
    float,
    float16,
    float32,
    float64,
    from_dlpack,
    from_numpy,
    get_num_threads,
    get_rng_state,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    manual_seed,
    max_memory_allocated,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_summary,
    reset_peak_memory_stats,
    set_memory_limit,
    set_num_threads,
    set_rng_state,
    short,
    uint8,
    versions,
)
from ember._dtype_info import finfo, iinfo
from ember._einsum import einsum
from ember._ops import *  # noqa: F403  (every op as ember.<name>)
from ember._ops import __all__ as _op_names
from ember.amp import autocast
from ember.amp.autocast_mode import get_autocast_dtype, is_autocast_enabled
from ember.autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from ember.serialization import CheckpointError, load, save

__all__ = [
    "DTypeError", "DeviceError", "EmberError", "IndexError", "NotSupportedError",
    "OutOfMemoryError", "ShapeError", "Tensor", "ValueError", "__version__", "autograd",
    "bfloat16", "bool", "cuda", "cuda_compiled", "cuda_device_count", "cuda_is_available",
    "device", "double", "dtype", "empty_cache", "enable_grad", "float", "float16", "float32",
    "float64", "from_dlpack", "from_numpy", "half", "int", "int8", "int16", "int32", "int64",
    "is_grad_enabled", "long", "manual_seed", "max_memory_allocated", "memory_allocated",
    "memory_reserved", "memory_snapshot", "memory_stats", "memory_summary", "no_grad",
    "reset_peak_memory_stats", "set_grad_enabled", "set_memory_limit", "short", "uint8",
    "versions", *_op_names,
    "CheckpointError", "data", "debug", "get_rng_state", "load", "nn", "optim", "save",
    "set_rng_state", "get_num_threads", "set_num_threads",
    "Generator", "accelerator", "allclose", "as_tensor", "einsum", "finfo", "iinfo",
    "inference_mode", "isclose", "meshgrid", "ravel", "where",
    "ArgumentTypeError", "utils",
    "CaptureError", "compile",
    "amp", "autocast", "backends", "get_autocast_dtype", "is_autocast_enabled",
]
del _core

"""Ember: a small, readable deep-learning library.

Tensors (``ember.tensor``, ``ember.zeros``, ...) live on the CPU or a GPU, record their history
for autograd (``requires_grad``, ``backward``, ``ember.no_grad``) and share memory with NumPy
and, through DLPack, with any other array library. Every op runs in C++ (``ember._core``); this
package adds the Python idioms around it.
"""

from ember import (
    _core,
    _tensor,  # noqa: F401  (adds the Python sugar to Tensor)
    autograd,
    cuda,
    data,
    debug,
    nn,
    optim,
    utils,
)
from ember._arguments import ArgumentTypeError
from ember._core import (  # noqa: A004 (as torch)
    DeviceError,
    DTypeError,
    EmberError,
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
    memory_stats,
    reset_peak_memory_stats,
    set_memory_limit,
    set_rng_state,
    short,
    uint8,
    versions,
)
from ember._ops import *  # noqa: F403  (every op as ember.<name>)
from ember._ops import __all__ as _op_names
from ember.autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ember.serialization import CheckpointError, load, save

__all__ = [
    "DTypeError", "DeviceError", "EmberError", "IndexError", "NotSupportedError",
    "OutOfMemoryError", "ShapeError", "Tensor", "ValueError", "__version__", "autograd",
    "bfloat16", "bool", "cuda", "cuda_compiled", "cuda_device_count", "cuda_is_available",
    "device", "double", "dtype", "empty_cache", "enable_grad", "float", "float16", "float32",
    "float64", "from_dlpack", "from_numpy", "half", "int", "int8", "int16", "int32", "int64",
    "is_grad_enabled", "long", "manual_seed", "max_memory_allocated", "memory_allocated",
    "memory_reserved", "memory_stats", "no_grad", "reset_peak_memory_stats", "set_grad_enabled",
    "set_memory_limit", "short", "uint8", "versions", *_op_names,
    "CheckpointError", "data", "debug", "get_rng_state", "load", "nn", "optim", "save",
    "set_rng_state", "ArgumentTypeError", "utils",
]
del _core

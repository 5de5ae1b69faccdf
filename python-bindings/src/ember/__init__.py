"""Ember: a small, readable deep-learning library.

For now this package reports versions and CUDA availability; tensors, autodiff and training
arrive here as the C++ packages below it grow.
"""

from ember._core import (
    __version__,
    cuda_compiled,
    cuda_device_count,
    cuda_is_available,
    versions,
)

__all__ = ["__version__", "cuda_compiled", "cuda_device_count", "cuda_is_available", "versions"]

"""ember.cuda: whether GPUs are there, and their memory statistics (per device, default cuda:0).

The same statistics exist for the CPU: ``ember.memory_stats("cpu")``.
"""

from ember import _core


def is_available() -> bool:
    """Whether tensors can be placed on a GPU here."""
    return _core.cuda_is_available()


def device_count() -> int:
    """How many GPUs the CUDA driver reports (0 without a driver or GPU)."""
    return _core.cuda_device_count()


def _device(device):
    return f"cuda:{device}" if isinstance(device, int) else device


def synchronize(device="cuda:0") -> None:
    """Waits until the work queued on the GPU has finished."""
    _core.synchronize(_device(device))


def memory_stats(device="cuda:0") -> dict:
    """The GPU's caching-allocator statistics in bytes (see ember.memory_stats)."""
    return _core.memory_stats(_device(device))


def memory_summary(device="cuda:0") -> str:
    """A short table of the GPU's memory (see ember.memory_summary)."""
    return _core.memory_summary(_device(device))


def memory_snapshot(device="cuda:0") -> list:
    """Every segment of the GPU's allocator and its blocks (see ember.memory_snapshot)."""
    return _core.memory_snapshot(_device(device))


def memory_allocated(device="cuda:0") -> int:
    """Bytes held by tensors on the GPU now."""
    return _core.memory_allocated(_device(device))


def max_memory_allocated(device="cuda:0") -> int:
    """The peak of memory_allocated since the last reset_peak_memory_stats."""
    return _core.max_memory_allocated(_device(device))


def reset_peak_memory_stats(device="cuda:0") -> None:
    """Restarts the peak at the bytes in use now."""
    _core.reset_peak_memory_stats(_device(device))


def set_memory_limit(limit, device="cuda:0") -> None:
    """Caps the GPU memory in use (bytes or text such as "2GiB"; None removes the cap)."""
    _core.set_memory_limit(limit, _device(device))


def empty_cache(device="cuda:0") -> None:
    """Returns the GPU's cached, unused blocks to the driver."""
    _core.empty_cache(_device(device))

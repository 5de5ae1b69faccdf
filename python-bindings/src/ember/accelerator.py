"""ember.accelerator: the device that speeds computation up, if any, as torch.accelerator. Ember's
one accelerator is CUDA."""

from ember import _core


def is_available() -> bool:
    """Whether an accelerator (a CUDA GPU) can run tensors here."""
    return _core.cuda_is_available()


def current_accelerator() -> "_core.device | None":
    """ember.device("cuda") where CUDA is usable, else None."""
    return _core.device("cuda") if _core.cuda_is_available() else None


def device_count() -> int:
    """How many accelerators there are (0 where none is usable)."""
    return _core.cuda_device_count() if _core.cuda_is_available() else 0

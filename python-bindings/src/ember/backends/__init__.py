"""ember.backends: switches of the backends, named as PyTorch's torch.backends."""

from ember.backends import cuda

__all__ = ["cuda"]

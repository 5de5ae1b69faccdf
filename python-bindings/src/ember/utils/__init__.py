"""ember.utils: PyTorch's import paths (torch.utils.data) for what ember keeps elsewhere."""

from ember.utils import data

__all__ = ["data"]

"""ember.utils: PyTorch's import paths (torch.utils.data, torch.utils.checkpoint) for what ember
keeps elsewhere, and checkpoint() itself."""

from ember.utils import data
from ember.utils.checkpoint import checkpoint

# ember.utils.checkpoint is the function (the name shadows its module), and, as in PyTorch,
# ember.utils.checkpoint.checkpoint is it too.
checkpoint.checkpoint = checkpoint

__all__ = ["checkpoint", "data"]

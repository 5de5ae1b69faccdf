"""ember.amp: mixed precision. ``autocast`` runs matrix products in bfloat16 or float16 and the
ops that need the range or accuracy in float32, as PyTorch's autocast does; ``GradScaler``
scales a float16 loss so that small gradients do not flush to zero, and skips the steps whose
gradients overflowed."""

from ember.amp.autocast_mode import autocast, autocast_policy
from ember.amp.grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "autocast_policy"]

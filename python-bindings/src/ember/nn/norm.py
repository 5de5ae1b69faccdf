"""Normalization layers: BatchNorm1d/2d (with running statistics), LayerNorm and GroupNorm."""

from ember import _core
from ember.nn import functional, init
from ember.nn.module import Module, describe
from ember.nn.parameter import Parameter


class _BatchNorm(Module):
    """Batch norm over dim 1. In training (or without running stats) it normalises with the
    batch's statistics and updates running_mean/running_var in place by momentum; in eval mode
    it uses the running statistics."""

    _dims = ()  # the input ranks this layer takes

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        kw = {"dtype": dtype, "device": device}
        self.weight = Parameter(_core.ones(num_features, **kw)) if affine else None
        self.bias = Parameter(_core.zeros(num_features, **kw)) if affine else None
        if track_running_stats:
            self.register_buffer("running_mean", _core.zeros(num_features, **kw))
            self.register_buffer("running_var", _core.ones(num_features, **kw))
            self.register_buffer(
                "num_batches_tracked", _core.zeros((), dtype=_core.int64, device=device)
            )
        else:
            self.running_mean = self.running_var = None

    def reset_running_stats(self):
        """Running mean 0, variance 1, no batches tracked."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            self.num_batches_tracked[...] = 0

    def forward(self, x):
        if x.ndim not in self._dims or x.shape[1] != self.num_features:
            ranks = " or ".join(f"{d} dims" for d in self._dims)
            raise _core.ShapeError(
                f"input is {describe(x)}; expected {ranks} with {self.num_features} channels in "
                f"dim 1 (running_mean is [{self.num_features}]). Fix: pass "
                f"[N, {self.num_features}, ...], or build {type(self).__name__}"
                f"({x.shape[1] if x.ndim > 1 else '?'})"
            )
        batch_stats = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            self.num_batches_tracked[...] = self.num_batches_tracked + 1
        return _core.batch_norm(x, self.running_mean if self.track_running_stats else None,
                                self.running_var if self.track_running_stats else None,
                                self.weight, self.bias, batch_stats, self.momentum, self.eps)

    def extra_repr(self):
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}"


class BatchNorm1d(_BatchNorm):
    """Batch norm of [N, C] or [N, C, L] over C."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm of [N, C, H, W] over C."""

    _dims = (4,)


class LayerNorm(Module):
    """Normalises over the last dims (normalized_shape), then weight and bias."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape, self.eps = tuple(normalized_shape), eps
        kw = {"dtype": dtype, "device": device}
        affine = elementwise_affine
        self.weight = Parameter(_core.ones(self.normalized_shape, **kw)) if affine else None
        self.bias = Parameter(_core.zeros(self.normalized_shape, **kw)) if affine else None

    def forward(self, x):
        return _core.layer_norm(x, list(self.normalized_shape), self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"


class GroupNorm(Module):
    """Normalises [N, C, *] over groups of C / num_groups channels, then a per-channel weight and
    bias (affine; bias=False leaves the bias out), as torch.nn.GroupNorm (F.group_norm)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None,
                 *, bias=True):
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise _core.ValueError(
                f"GroupNorm: num_channels={num_channels} is not divisible by "
                f"num_groups={num_groups}. Fix: pick num_groups dividing num_channels")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        kw = {"dtype": dtype, "device": device}
        self.weight = Parameter(_core.ones(num_channels, **kw)) if affine else None
        self.bias = Parameter(_core.zeros(num_channels, **kw)) if affine and bias else None

    def forward(self, x):
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise _core.ShapeError(
                f"input is {describe(x)}; expected [N, {self.num_channels}, *]. Fix: pass "
                f"{self.num_channels} channels in dim 1, or build GroupNorm({self.num_groups}, "
                f"{x.shape[1] if x.ndim > 1 else '?'})")
        return functional.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")

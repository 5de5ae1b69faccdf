"""Layers with parameters: Linear, Conv2d, Embedding. Each checks the input it is most often
given wrongly and says what it expected; the op itself checks the rest."""

from ember import _core
from ember.autograd import no_grad
from ember.nn import functional, init
from ember.nn.module import Module, describe
from ember.nn.parameter import Parameter


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


class Linear(Module):
    """y = x @ weight.T + bias: x [*, in_features] -> [*, out_features]; weight
    [out_features, in_features], initialised as PyTorch does."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(_core.empty(out_features, in_features, dtype=dtype, device=device))
        self.bias = (
            Parameter(_core.empty(out_features, dtype=dtype, device=device)) if bias else None
        )
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default initialisation (nn.init.default_init_)."""
        init.default_init_(self.weight, self.bias)

    def forward(self, x):
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise _core.ShapeError(
                f"input is {describe(x)}; expected [*, {self.in_features}] (the last dim is the "
                f"in_features; weight is {list(self.weight.shape)}). Fix: flatten or reshape the "
                f"input, or build Linear({x.shape[-1] if x.ndim else 1}, {self.out_features})"
            )
        return _core.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Conv2d(Module):
    """2-D convolution (cross-correlation): x [N, in_channels, H, W] -> [N, out_channels, Ho, Wo]
    (or unbatched, [in_channels, H, W] -> [out_channels, Ho, Wo], as PyTorch takes it); weight
    [out_channels, in_channels / groups, kh, kw], initialised as PyTorch does."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding = padding if isinstance(padding, str) else _pair(padding)
        self.dilation, self.groups = _pair(dilation), groups
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(_core.empty(shape, dtype=dtype, device=device))
        self.bias = (
            Parameter(_core.empty(out_channels, dtype=dtype, device=device)) if bias else None
        )
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default initialisation (nn.init.default_init_)."""
        init.default_init_(self.weight, self.bias)

    def forward(self, x):
        w = list(self.weight.shape)
        if x.ndim not in (3, 4):
            raise _core.ShapeError(
                f"input is {describe(x)}; expected [N, C, H, W] or, unbatched, [C, H, W] (weight "
                f"is {w}). Fix: reshape the input"
            )
        if x.shape[-3] != self.in_channels:
            s = "" if self.in_channels == 1 else "s"
            raise _core.ShapeError(
                f"input is {describe(x)}; expected {self.in_channels} input channel{s} "
                f"(weight is {w}). Fix: pass [N, {self.in_channels}, H, W], or build "
                f"Conv2d({x.shape[-3]}, {self.out_channels}, ...)"
            )
        return functional.conv2d(x, self.weight, self.bias, self.stride, self.padding,
                                 self.dilation, self.groups)

    def extra_repr(self):
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, padding={self.padding}"
            + (f", groups={self.groups}" if self.groups != 1 else "")
            + (", bias=False" if self.bias is None else "")
        )


class Embedding(Module):
    """Rows of weight [num_embeddings, embedding_dim] at int64 indices: [*] -> [*, dim]. The
    weight starts standard normal, as PyTorch's. With padding_idx (negative counts from the
    end), that row starts at zero and gets no gradient: a padding token stays where it is."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise _core.IndexError(
                    f"Embedding({num_embeddings}, {embedding_dim}): padding_idx is {padding_idx}; "
                    f"expected -{num_embeddings} <= padding_idx < {num_embeddings} (a row of the "
                    "weight)"
                )
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        self.weight = Parameter(
            _core.empty(num_embeddings, embedding_dim, dtype=dtype, device=device)
        )
        self.reset_parameters()

    def reset_parameters(self):
        """Standard normal, with the padding row zeroed."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, indices):
        return functional.embedding(indices, self.weight, self.padding_idx)

    def extra_repr(self):
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"

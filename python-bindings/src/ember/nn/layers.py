"""Layers with parameters: Linear, Conv1d, Conv2d, Embedding. Each checks the input it is most often
given wrongly and says what it expected; the op itself checks the rest."""

from ember import _core
from ember.nn import functional, init
from ember.nn.module import Module, describe
from ember.nn.parameter import Parameter


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _single(v):
    return (v,) if isinstance(v, int) else tuple(v)


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
    """2-D convolution (cross-correlation): x [N, in_channels, H, W] -> [N, out_channels, Ho, Wo];
    weight [out_channels, in_channels / groups, kh, kw], initialised as PyTorch does."""

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
        if x.ndim != 4:
            raise _core.ShapeError(
                f"input is {describe(x)}; expected 4 dims [N, C, H, W] (weight is {w}). Fix: "
                + ("add a batch dim with x.unsqueeze(0)" if x.ndim == 3 else "reshape the input")
            )
        if x.shape[1] != self.in_channels:
            s = "" if self.in_channels == 1 else "s"
            raise _core.ShapeError(
                f"input is {describe(x)}; expected {self.in_channels} input channel{s} "
                f"(weight is {w}). Fix: pass [N, {self.in_channels}, H, W], or build "
                f"Conv2d({x.shape[1]}, {self.out_channels}, ...)"
            )
        return _core.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                            self.groups)

    def extra_repr(self):
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, padding={self.padding}"
            + (f", groups={self.groups}" if self.groups != 1 else "")
            + (", bias=False" if self.bias is None else "")
        )


class Conv1d(Module):
    """1-D convolution (cross-correlation): x [N, in_channels, L] (or [in_channels, L]) ->
    [N, out_channels, Lo]; weight [out_channels, in_channels / groups, k], initialised as PyTorch
    does. padding: an int, 'same' or 'valid'; padding_mode 'zeros', 'reflect', 'replicate' or
    'circular' (the input is padded by that mode first)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise _core.ValueError(
                f"Conv1d: padding_mode is {padding_mode!r}; pass 'zeros', 'reflect', "
                "'replicate' or 'circular'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _single(kernel_size), _single(stride)
        self.padding = padding if isinstance(padding, str) else _single(padding)
        self.dilation, self.groups, self.padding_mode = _single(dilation), groups, padding_mode
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
        if x.ndim not in (2, 3) or x.shape[-2] != self.in_channels:
            raise _core.ShapeError(
                f"input is {describe(x)}; expected [N, {self.in_channels}, L] or "
                f"[{self.in_channels}, L] (weight is {list(self.weight.shape)}). Fix: pass "
                f"{self.in_channels} channels in dim -2"
                + (f", or build Conv1d({x.shape[-2]}, {self.out_channels}, ...)" if x.ndim > 1
                   else "")
            )
        padding = self.padding
        if self.padding_mode != "zeros":
            # Pad by the mode first, then convolve without padding (as PyTorch does); 'same' puts
            # the odd element of the total on the right.
            total = 0 if padding == "valid" else (
                self.dilation[0] * (self.kernel_size[0] - 1) if padding == "same"
                else 2 * padding[0])
            x = _core.pad(x, [total // 2, total - total // 2], self.padding_mode)
            padding = 0
        return functional.conv1d(x, self.weight, self.bias, self.stride, padding, self.dilation,
                                 self.groups)

    def extra_repr(self):  # PyTorch's: only the arguments that differ from their defaults
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
            + (f", padding={self.padding}" if self.padding != (0,) else "")
            + (f", dilation={self.dilation}" if self.dilation != (1,) else "")
            + (f", groups={self.groups}" if self.groups != 1 else "")
            + (", bias=False" if self.bias is None else "")
            + (f", padding_mode={self.padding_mode}" if self.padding_mode != "zeros" else "")
        )


class Embedding(Module):
    """Rows of weight [num_embeddings, embedding_dim] at int64 indices: [*] -> [*, dim]. The
    weight starts standard normal, as PyTorch's."""

    def __init__(self, num_embeddings, embedding_dim, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = Parameter(
            _core.empty(num_embeddings, embedding_dim, dtype=dtype, device=device)
        )
        init.normal_(self.weight)

    def forward(self, indices):
        return _core.embedding(indices, self.weight)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"

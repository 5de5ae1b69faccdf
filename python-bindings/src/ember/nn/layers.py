"""Layers with parameters: Linear, Conv1d, Conv2d, Embedding. Each checks the input it is most often
given wrongly and says what it expected; the op itself checks the rest."""

from ember import _core
from ember.autograd import no_grad
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
        if not x.dtype.is_floating_point and self.weight.dtype.is_floating_point:
            wanted = str(self.weight.dtype).replace("ember.", "")
            raise _core.DTypeError(
                f"input is {describe(x)} but weight is {wanted}; Linear computes in floating "
                f"point. Fix: cast the input with x.float() or x.to(ember.{wanted})"
            )
        return _core.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


def _add_conv_parameters(conv, bias, device, dtype):
    """Gives a convolution module (in_channels, out_channels, groups and kernel_size set) its
    weight [out_channels, in_channels / groups, *kernel_size] and bias [out_channels] (None
    without bias), initialised by its reset_parameters."""
    shape = (conv.out_channels, conv.in_channels // conv.groups, *conv.kernel_size)
    conv.weight = Parameter(_core.empty(shape, dtype=dtype, device=device))
    conv.bias = (
        Parameter(_core.empty(conv.out_channels, dtype=dtype, device=device)) if bias else None
    )
    conv.reset_parameters()


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
        _add_conv_parameters(self, bias, device, dtype)

    def reset_parameters(self):
        """PyTorch's default initialisation (nn.init.default_init_)."""
        init.default_init_(self.weight, self.bias)

    def _layout_fix(self, x):
        """What turns x into [N, in_channels, H, W], reasoned from which dim is missing or
        misplaced; or None when x matches no likely mistake."""
        c, shape = self.in_channels, list(x.shape)
        if x.ndim == 3 and c == 1:
            return (f"it looks like a batch of {shape[0]} single-channel images [N, H, W]; add "
                    "the channel dim with x.unsqueeze(1)")
        if x.ndim == 3 and shape[2] == c:
            return ("it looks like one channels-last image [H, W, C]; use "
                    "x.permute(2, 0, 1).unsqueeze(0)")
        if x.ndim == 2 and c == 1:
            return "it looks like one single-channel image [H, W]; use x.unsqueeze(0).unsqueeze(0)"
        if x.ndim == 4 and shape[1] != c and shape[3] == c:
            return (f"it looks channels-last [N, H, W, C] (its last dim is {c}); move the "
                    "channels with x.permute(0, 3, 1, 2)")
        return None

    def forward(self, x):
        w = list(self.weight.shape)
        if x.ndim not in (3, 4) or x.shape[-3] != self.in_channels:
            s = "" if self.in_channels == 1 else "s"
            expected = (f"expected [N, {self.in_channels}, H, W] or, unbatched, "
                        f"[{self.in_channels}, H, W]" if x.ndim not in (3, 4) else
                        f"expected {self.in_channels} input channel{s}")
            expected += f" (weight is {w})"
            fix = self._layout_fix(x)
            if fix is None and x.ndim in (3, 4):
                fix = (f"pass [N, {self.in_channels}, H, W], or build "
                       f"Conv2d({x.shape[-3]}, {self.out_channels}, ...)")
            raise _core.ShapeError(
                f"input is {describe(x)}; {expected}. Fix: {fix or 'reshape the input'}"
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
        _add_conv_parameters(self, bias, device, dtype)

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

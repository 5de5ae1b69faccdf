"""nn.functional: the layers as functions, with torch.nn.functional's names and argument orders.
Each is the bound op of the same name (ember.conv2d, ember.cross_entropy, ...; a call with
arguments of the wrong kind is an ember.ArgumentTypeError that names them); the few that
differ from the op's signature adapt the arguments and nothing else: unbatched [C, H, W] input
to the 2-D layers, class-probability targets of cross_entropy, Embedding's padding_idx."""

import math

from ember import _core, _ops
from ember._arguments import ArgumentTypeError, kind
from ember._core import interpolate
from ember._ops import (
    batch_norm,
    binary_cross_entropy_with_logits,
    elu,
    gelu,
    l1_loss,
    layer_norm,
    leaky_relu,
    linear,
    log_softmax,
    mse_loss,
    nll_loss,
    one_hot,
    pad,
    relu,
    scaled_dot_product_attention,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)

__all__ = [
    "adaptive_avg_pool2d", "avg_pool2d", "batch_norm", "binary_cross_entropy_with_logits",
    "conv1d", "conv2d", "cross_entropy", "dropout", "elu", "embedding", "flatten", "gelu",
    "group_norm", "interpolate", "l1_loss", "layer_norm", "leaky_relu", "linear", "log_softmax",
    "max_pool2d", "mse_loss", "nll_loss", "normalize", "one_hot", "pad", "relu",
    "scaled_dot_product_attention", "sigmoid", "silu", "softmax", "softplus", "tanh",
]


def _tensor(op, name, value):
    """value, or an ArgumentTypeError when it is not a Tensor (a NumPy array, a list, ...)."""
    if not isinstance(value, _core.Tensor):
        raise ArgumentTypeError(
            f"{op}(): {name} is a {kind(value)}, not an ember.Tensor. Fix: convert it with "
            "ember.from_numpy(array) or ember.tensor(data)"
        )
    return value


def _unbatched(op, fn, input, *args):
    """fn on [N, C, H, W], or on [C, H, W] as a batch of one (PyTorch's unbatched input)."""
    _tensor(f"nn.functional.{op}", "input", input)
    if input.ndim != 3:
        return fn(input, *args)
    out = fn(input.unsqueeze(0), *args)
    return tuple(t.squeeze(0) for t in out) if isinstance(out, tuple) else out.squeeze(0)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of [N, C, H, W] or unbatched [C, H, W] (ember.conv2d)."""
    return _unbatched("conv2d", _ops.conv2d, input, weight, bias, stride, padding, dilation,
                      groups)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Window maxima of [N, C, H, W] or unbatched [C, H, W] (ember.max_pool2d)."""
    return _unbatched("max_pool2d", _ops.max_pool2d, input, kernel_size, stride, padding,
                      dilation, ceil_mode, return_indices)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """Window means of [N, C, H, W] or unbatched [C, H, W] (ember.avg_pool2d)."""
    return _unbatched("avg_pool2d", _ops.avg_pool2d, input, kernel_size, stride, padding,
                      ceil_mode, count_include_pad)


def adaptive_avg_pool2d(input, output_size):
    """Means over windows giving [N, C, *output_size], or unbatched [C, *output_size]."""
    return _unbatched("adaptive_avg_pool2d", _ops.adaptive_avg_pool2d, input, output_size)


def embedding(input, weight, padding_idx=None):
    """Rows of weight [V, D] at input's int64 indices -> [*, D] (ember.embedding). With
    padding_idx (negative counts from the end), the rows looked up at that index pass no
    gradient back to weight: its row's gradient is exactly zero."""
    out = _ops.embedding(input, weight)
    if padding_idx is None:
        return out
    rows = weight.shape[0]
    if not -rows <= padding_idx < rows:
        raise _core.IndexError(
            f"nn.functional.embedding: padding_idx is {padding_idx}, weight is {kind(weight)}; "
            f"expected -{rows} <= padding_idx < {rows} (a row of the weight)"
        )
    padding_idx %= rows
    # the padding positions take their values from a detached copy: same forward, no gradient
    return _core.where(_core.eq(input, padding_idx).unsqueeze(-1), out.detach(), out)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0):
    """Cross entropy of logits [N, C] (or [N, C, d...], or unbatched [C]) against either int64
    class indices [N] (ember.cross_entropy) or class probabilities of the input's shape, as
    PyTorch: per sample -sum_c weight_c target_c log_softmax(input)_c, with target first smoothed
    to target (1 - label_smoothing) + label_smoothing / C; 'mean' divides by N (times the d...),
    not by the weights. ignore_index applies to class indices only."""
    _tensor("nn.functional.cross_entropy", "input", input)
    _tensor("nn.functional.cross_entropy", "target", target)
    if not target.is_floating_point():
        return _ops.cross_entropy(input, target, weight, ignore_index, reduction,
                                      label_smoothing)
    if tuple(target.shape) != tuple(input.shape):
        raise _core.ShapeError(
            f"nn.functional.cross_entropy: input is {kind(input)}, target is {kind(target)}; "
            "floating targets are class probabilities of the input's shape. Fix: pass "
            "probabilities shaped like input, or int64 class indices"
        )
    if reduction not in ("none", "mean", "sum"):
        raise _core.ValueError(
            f"nn.functional.cross_entropy: reduction is {reduction!r}; expected 'none', "
            "'mean' or 'sum'"
        )
    class_dim = 0 if input.ndim == 1 else 1
    classes = input.shape[class_dim]
    if label_smoothing > 0:
        target = target * (1.0 - label_smoothing) + label_smoothing / classes
    terms = _core.log_softmax(input, class_dim) * target
    if weight is not None:
        shape = [1] * input.ndim
        shape[class_dim] = classes
        terms = terms * weight.reshape(shape)
    loss = -terms.sum(class_dim)
    if reduction == "sum":
        return loss.sum()
    return loss.mean() if reduction == "mean" else loss


def dropout(input, p=0.5, training=True):
    """Zeroes elements with probability p and scales the rest by 1 / (1 - p) when training;
    the identity otherwise (ember.dropout)."""
    return _ops.dropout(input, p, training)


def flatten(input, start_dim=0, end_dim=-1):
    """Merges dims start_dim .. end_dim (ember.flatten)."""
    return _ops.flatten(input, start_dim, end_dim)



def _single(v):
    return v if isinstance(v, int) else v[0]


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution: input [N, C, L] (or [C, L]), weight [O, C / groups, k], bias [O] ->
    [N, O, Lo]. padding: an int, 'same' or 'valid'. Runs as conv2d over a height of 1."""
    if input.ndim not in (2, 3) or weight.ndim != 3:
        raise _core.ShapeError(
            f"conv1d: input is {list(input.shape)} and weight {list(weight.shape)}; expected "
            "input [N, C, L] or [C, L] and weight [out_channels, C / groups, kernel_size]")
    x = input.unsqueeze(0) if input.ndim == 2 else input
    pad = padding if isinstance(padding, str) else (0, _single(padding))
    out = _core.conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, _single(stride)), pad,
                       (1, _single(dilation)), groups).squeeze(2)
    return out.squeeze(0) if input.ndim == 2 else out


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Normalises input [N, C, *] over each group of C / num_groups channels (and every other
    dim), then scales by weight [C] and shifts by bias [C]: layer_norm of [N, num_groups, rest]."""
    if input.ndim < 2 or num_groups <= 0 or input.shape[1] % num_groups:
        raise _core.ShapeError(
            f"group_norm: input is {list(input.shape)} and num_groups {num_groups}; expected "
            "[N, C, *] with C divisible by num_groups. Fix: pick num_groups dividing the channels")
    n, c = input.shape[0], input.shape[1]
    rest = math.prod(input.shape[1:]) // num_groups
    x = _core.layer_norm(input.reshape(n, num_groups, rest), [rest], None, None, eps)
    x = x.reshape(input.shape)
    per_channel = [1, c] + [1] * (input.ndim - 2)
    if weight is not None:
        x = x * weight.reshape(per_channel)
    if bias is not None:
        x = x + bias.reshape(per_channel)
    return x


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(||input||_p over dim, eps): unit p-norm vectors along dim."""
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps)

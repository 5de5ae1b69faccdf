"""nn.functional: the layers as functions, with torch.nn.functional's names and argument orders.
Each is the bound op of the same name (ember.conv2d, ember.cross_entropy, ...); the few that
differ from the op's signature adapt the arguments and nothing else."""

import math

from ember import _core
from ember._core import (
    adaptive_avg_pool2d,
    avg_pool2d,
    batch_norm,
    binary_cross_entropy_with_logits,
    conv2d,
    cross_entropy,
    elu,
    embedding,
    gelu,
    interpolate,
    l1_loss,
    layer_norm,
    leaky_relu,
    linear,
    log_softmax,
    max_pool2d,
    mse_loss,
    nll_loss,
    one_hot,
    pad,
    relu,
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
    "max_pool2d", "mse_loss", "nll_loss", "normalize", "one_hot", "pad", "relu", "sigmoid", "silu",
    "softmax", "softplus", "tanh",
]


def dropout(input, p=0.5, training=True):
    """Zeroes elements with probability p and scales the rest by 1 / (1 - p) when training;
    the identity otherwise (ember.dropout)."""
    return _core.dropout(input, p, training)


def flatten(input, start_dim=0, end_dim=-1):
    """Merges dims start_dim .. end_dim (ember.flatten)."""
    return _core.flatten(input, start_dim, end_dim)


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

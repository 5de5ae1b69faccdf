"""nn.functional: the layers as functions, with torch.nn.functional's names and argument orders.
Each is the bound op of the same name (ember.conv2d, ember.cross_entropy, ...); the few that
differ from the op's signature adapt the arguments and nothing else."""

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
    "conv2d", "cross_entropy", "dropout", "elu", "embedding", "flatten", "gelu", "l1_loss",
    "interpolate", "layer_norm", "leaky_relu", "linear", "log_softmax", "max_pool2d", "mse_loss",
    "nll_loss", "one_hot", "pad", "relu", "sigmoid", "silu", "softmax", "softplus", "tanh",
]


def dropout(input, p=0.5, training=True):
    """Zeroes elements with probability p and scales the rest by 1 / (1 - p) when training;
    the identity otherwise (ember.dropout)."""
    return _core.dropout(input, p, training)


def flatten(input, start_dim=0, end_dim=-1):
    """Merges dims start_dim .. end_dim (ember.flatten)."""
    return _core.flatten(input, start_dim, end_dim)

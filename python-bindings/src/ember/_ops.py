"""The ops of ember._core as ember.<name>: creation, elementwise, reduction, movement, matmul,
convolution, pooling, normalization, softmax and losses, some with their backward ops (relu's,
silu's, sigmoid's and tanh's, convolution's, pooling's, normalization's, the losses'), then
sorting, running sums and products, rearranging and counting; after them the plain unary ops
(exp, expm1, floor, ...) and the plain binary ops (add, eq, bitwise_and, ...), listed once in
core-runtime's ember/ops/unary.def and binary.def and bound from them (_core._unary_ops,
_core._binary_ops). ember.nn's functional layer re-exports from here. (ember.where comes from
ember._composites, which adds PyTorch's one-argument form.)"""

from ember import _core

_NAMES = """
tensor zeros ones empty full arange linspace eye rand randn randint randperm
zeros_like ones_like empty_like full_like rand_like randn_like
negative logical_not
leaky_relu elu gelu softplus relu_backward silu_backward sigmoid_backward tanh_backward
clamp clip masked_fill
sum mean prod amax amin logsumexp all any var std norm max min argmax argmin sum_to
matmul mm bmm linear
reshape transpose swapaxes t permute select narrow squeeze unsqueeze flatten contiguous flip
broadcast_to cat concat concatenate stack split chunk unbind pad pad_backward
index_select index_add index_put gather scatter_add embedding embedding_backward one_hot
conv2d conv2d_backward_input conv2d_backward_weight max_pool2d max_pool2d_backward
avg_pool2d avg_pool2d_backward adaptive_avg_pool2d adaptive_avg_pool2d_backward
batch_norm batch_norm_backward layer_norm layer_norm_backward dropout dropout_backward
scaled_dot_product_attention
softmax log_softmax softmax_backward log_softmax_backward cross_entropy cross_entropy_backward
nll_loss nll_loss_backward mse_loss mse_loss_backward l1_loss l1_loss_backward
binary_cross_entropy_with_logits binary_cross_entropy_with_logits_backward
synchronize
square isnan isinf isfinite nan_to_num
sort argsort topk cumsum cumprod tril triu roll tile masked_select scatter bincount unique
""".split() + list(_core._unary_ops) + list(_core._binary_ops)

globals().update({name: getattr(_core, name) for name in _NAMES})
__all__ = list(_NAMES)

// attention.h — scaled dot-product attention as one fused op, with the backward its gradient
// rule calls. PyTorch's semantics (torch.nn.functional.scaled_dot_product_attention):
//
//   q: [*, L, E], k: [*, S, E], v: [*, S, Ev]   (the batch dims * broadcast against each other)
//   scores = q @ k^T * scale + bias              [*, L, S]
//   out    = dropout(softmax(scores)) @ v        [*, L, Ev]
//
// bias comes from attn_mask (bool: true = the key takes part, false = -inf; or a float mask of
// q's dtype, added) or from is_causal (query i sees keys j <= i, the mask aligned top-left when
// L != S), never from both. scale defaults to 1 / sqrt(E). A query row whose every key is masked
// gives 0 (as PyTorch's safe softmax), not NaN.
//
// The kernels never hold the [L, S] scores: they run flash attention's online softmax over tiles
// of keys and keep, per query row, the log-sum-exp of its scores (logsumexp [*, L]), from which
// the backward recomputes the probabilities tile by tile. Extra memory is O(L + S) per thread.
#pragma once
#include <cstdint>
#include <optional>

#include "ember/ops/random.h"
#include "ember/tensor.h"

namespace ember {

// Dropout of the attention probabilities: each is zeroed with probability p and the rest scaled
// by 1 / (1 - p) (p = 1 zeroes them all). Which ones are dropped is a pure function of the
// Philox stream (seed, offset), so the backward, given the same values, drops the same ones.
struct AttentionDropout {
  double p = 0;
  uint64_t seed = 0;
  uint64_t offset = 0;
};

// A dropout of probability p with a fresh stream drawn from gen (or the default generator),
// advancing it as one random op call does. p must be in [0, 1] (ValueError otherwise).
AttentionDropout attention_dropout(double p, Generator* gen = nullptr);

struct AttentionResult {
  Tensor output;     // [*, L, Ev], q's dtype
  Tensor logsumexp;  // [*, L]: log(sum_j exp(scores[i, j])); float32 for half inputs, float64
                     // for float64; -inf for a row whose every key is masked
};

// q, k, v of one floating dtype and one device; attn_mask optional (undefined), bool or of q's
// dtype, broadcastable to [*, L, S]; scale: 1 / sqrt(E) when not given.
AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& attn_mask = Tensor(),
                                             const AttentionDropout& dropout = {},
                                             bool is_causal = false,
                                             std::optional<double> scale = std::nullopt);

struct AttentionGrads {
  Tensor grad_q;  // [*, L, E] with the broadcast batch dims *; q's dtype
  Tensor grad_k;  // [*, S, E]
  Tensor grad_v;  // [*, S, Ev]
};

// The gradients of sum(grad_out * output) given the forward's inputs, its output and logsumexp,
// and the same mask, dropout, is_causal and scale. grad_out: [*, L, Ev] of q's dtype. The
// gradients have the broadcast batch shape; a caller reduces them to each input's own.
AttentionGrads scaled_dot_product_attention_backward(const Tensor& grad_out, const Tensor& q,
                                                     const Tensor& k, const Tensor& v,
                                                     const Tensor& attn_mask, const Tensor& output,
                                                     const Tensor& logsumexp,
                                                     const AttentionDropout& dropout = {},
                                                     bool is_causal = false,
                                                     std::optional<double> scale = std::nullopt);

// The dropout's keep factors as a tensor [*, L, S] of `dtype`: 1 / (1 - p) where a probability is
// kept, 0 where it is dropped (all 1 when p = 0): what the fused kernels apply, for formulas
// written with primitive ops (the second derivative). O(L * S) memory.
Tensor attention_dropout_scale(const Shape& batch, int64_t L, int64_t S,
                               const AttentionDropout& dropout, DType dtype, Device device);

}  // namespace ember

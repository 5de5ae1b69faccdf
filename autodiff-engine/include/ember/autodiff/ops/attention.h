// ops/attention.h — builder functions of scaled dot-product attention (src/rules/attention.cpp),
// with core-runtime's semantics (ember/ops/attention.h).
//
// Op "scaled_dot_product_attention" over (q, k, v, attn_mask?), outputs (out [*, L, Ev],
// logsumexp [*, L]); op "scaled_dot_product_attention_backward" over
// (grad, q, k, v, attn_mask?, out, logsumexp), outputs (grad_q, grad_k, grad_v) in the broadcast
// batch shape. Both carry the attributes scale, is_causal, has_mask, dropout_p, dropout_seed and
// dropout_offset: the dropout's stream is drawn once, when the forward node is made, so its
// backward drops the same weights.
#pragma once
#include <cmath>
#include <optional>
#include <vector>

#include "ember/autodiff/ops/apply.h"
#include "ember/ops/attention.h"

namespace ember::autodiff {

// The attributes both ops carry.
inline Attrs attention_attrs(const Shape& q_shape, bool has_mask, const AttentionDropout& dropout,
                             bool is_causal, std::optional<double> scale) {
  const double e = q_shape.empty() ? 1.0 : double(q_shape.back());
  return {{"scale", scale ? *scale : 1 / std::sqrt(e)},
          {"is_causal", int64_t(is_causal)},
          {"has_mask", int64_t(has_mask)},
          {"dropout_p", dropout.p},
          {"dropout_seed", int64_t(dropout.seed)},  // the bits of a uint64
          {"dropout_offset", int64_t(dropout.offset)}};
}

// dropout(softmax(q @ k^T * scale + mask)) @ v: q [*, L, E], k [*, S, E], v [*, S, Ev] ->
// [*, L, Ev]. attn_mask (optional): bool (true = takes part) or additive, broadcast to
// [*, L, S]. dropout_p > 0 draws a stream from gen (or the default generator).
template <class V>
if_handle<V> scaled_dot_product_attention(const V& q, const V& k, const V& v,
                                          const V& attn_mask = V(), double dropout_p = 0.0,
                                          bool is_causal = false,
                                          std::optional<double> scale = std::nullopt,
                                          Generator* gen = nullptr) {
  const AttentionDropout dropout = attention_dropout(dropout_p, gen);
  return apply(EMBER_OP("scaled_dot_product_attention"), std::vector<V>{q, k, v, attn_mask},
               attention_attrs(q.shape(), attn_mask.defined(), dropout, is_causal, scale))[0];
}

// (grad_q, grad_k, grad_v) of the forward node made with `attrs`, given its output and
// logsumexp.
template <class V>
std::vector<V> scaled_dot_product_attention_backward(const V& grad, const V& q, const V& k,
                                                     const V& v, const V& attn_mask, const V& out,
                                                     const V& logsumexp, Attrs attrs) {
  return apply(EMBER_OP("scaled_dot_product_attention_backward"),
               std::vector<V>{grad, q, k, v, attn_mask, out, logsumexp}, std::move(attrs));
}

}  // namespace ember::autodiff

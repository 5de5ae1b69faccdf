// ops/softmax_loss.h — builder functions of softmax, log_softmax and the losses
// (src/rules/softmax_loss.cpp), with core-runtime's arguments (ember/ops/softmax_loss.h).
// reduction is "mean", "sum" or "none"; optional weights are left undefined (attributes
// has_weight / has_pos_weight say which were given).
#pragma once
#include <string>

#include "ember/autodiff/ops/apply.h"

namespace ember::autodiff {

template <class V> if_handle<V> softmax(const V& x, int64_t dim) {
  return apply1<V>(EMBER_OP("softmax"), {x}, {{"dim", dim}});
}
template <class V> if_handle<V> log_softmax(const V& x, int64_t dim) {
  return apply1<V>(EMBER_OP("log_softmax"), {x}, {{"dim", dim}});
}
template <class V> if_handle<V> softmax_backward(const V& grad, const V& y, int64_t dim) {
  return apply1<V>(EMBER_OP("softmax_backward"), {grad, y}, {{"dim", dim}});
}
template <class V> if_handle<V> log_softmax_backward(const V& grad, const V& y, int64_t dim) {
  return apply1<V>(EMBER_OP("log_softmax_backward"), {grad, y}, {{"dim", dim}});
}

inline Attrs class_loss_attrs(bool has_weight, int64_t ignore_index, const std::string& reduction) {
  return {{"has_weight", int64_t(has_weight)},
          {"ignore_index", ignore_index},
          {"reduction", reduction}};
}

// logits [N, C] (or [N, C, d...]), int64 target [N] (or [N, d...]), weight [C] -> [] or [N].
template <class V>
if_handle<V> cross_entropy(const V& logits, const V& target, const V& weight = V(),
                           int64_t ignore_index = -100, const std::string& reduction = "mean",
                           double label_smoothing = 0.0) {
  Attrs attrs = class_loss_attrs(weight.defined(), ignore_index, reduction);
  attrs.set("label_smoothing", label_smoothing);
  return apply1<V>(EMBER_OP("cross_entropy"), {logits, target, weight}, std::move(attrs));
}
template <class V>
if_handle<V> cross_entropy_backward(const V& grad_loss, const V& logits, const V& target,
                                    const V& weight = V(), int64_t ignore_index = -100,
                                    const std::string& reduction = "mean",
                                    double label_smoothing = 0.0) {
  Attrs attrs = class_loss_attrs(weight.defined(), ignore_index, reduction);
  attrs.set("label_smoothing", label_smoothing);
  return apply1<V>(EMBER_OP("cross_entropy_backward"), {grad_loss, logits, target, weight},
                   std::move(attrs));
}
template <class V>
if_handle<V> nll_loss(const V& log_probs, const V& target, const V& weight = V(),
                      int64_t ignore_index = -100, const std::string& reduction = "mean") {
  return apply1<V>(EMBER_OP("nll_loss"), {log_probs, target, weight},
                   class_loss_attrs(weight.defined(), ignore_index, reduction));
}
template <class V>
if_handle<V> nll_loss_backward(const V& grad_loss, const V& log_probs, const V& target,
                               const V& weight = V(), int64_t ignore_index = -100,
                               const std::string& reduction = "mean") {
  return apply1<V>(EMBER_OP("nll_loss_backward"), {grad_loss, log_probs, target, weight},
                   class_loss_attrs(weight.defined(), ignore_index, reduction));
}

// input, target of one shape -> [] (or the shape, reduction "none").
#define EMBER_AD_PAIR_LOSS(name)                                                              \
  template <class V>                                                                          \
  if_handle<V> name(const V& input, const V& target, const std::string& reduction = "mean") { \
    return apply1<V>(EMBER_OP(#name), {input, target}, {{"reduction", reduction}});           \
  }                                                                                           \
  template <class V>                                                                          \
  if_handle<V> name##_backward(const V& grad_loss, const V& input, const V& target,           \
                               const std::string& reduction = "mean") {                       \
    return apply1<V>(EMBER_OP(#name "_backward"), {grad_loss, input, target},                 \
                     {{"reduction", reduction}});                                             \
  }
EMBER_AD_PAIR_LOSS(mse_loss)
EMBER_AD_PAIR_LOSS(l1_loss)
#undef EMBER_AD_PAIR_LOSS

// logits, target probabilities [*], pos_weight (optional, broadcasts) -> [] or [*].
template <class V>
if_handle<V> binary_cross_entropy_with_logits(const V& logits, const V& target,
                                              const V& pos_weight = V(),
                                              const std::string& reduction = "mean") {
  return apply1<V>(EMBER_OP("binary_cross_entropy_with_logits"), {logits, target, pos_weight},
                   {{"has_pos_weight", int64_t(pos_weight.defined())}, {"reduction", reduction}});
}
template <class V>
if_handle<V> binary_cross_entropy_with_logits_backward(const V& grad_loss, const V& logits,
                                                       const V& target, const V& pos_weight = V(),
                                                       const std::string& reduction = "mean") {
  return apply1<V>(EMBER_OP("binary_cross_entropy_with_logits_backward"),
                   {grad_loss, logits, target, pos_weight},
                   {{"has_pos_weight", int64_t(pos_weight.defined())}, {"reduction", reduction}});
}

}  // namespace ember::autodiff

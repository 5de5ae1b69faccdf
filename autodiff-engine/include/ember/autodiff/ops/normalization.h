// ops/normalization.h — builder functions of batch norm, layer norm and dropout
// (src/rules/normalization.cpp), with core-runtime's arguments (ember/ops/normalization.h).
// Optional operands are left undefined; attributes has_weight, has_bias, has_running_stats say
// which were given, so each operand keeps its place among the node's inputs.
#pragma once
#include <sstream>
#include <vector>

#include "ember/autodiff/ops/apply.h"

namespace ember::autodiff {

// x [N, C, *], weight/bias/running_mean/running_var [C] (each optional) -> [N, C, *].
// Op "batch_norm" (attributes training, eps, has_*), outputs (y, save_mean [C],
// save_invstd [C]) and, in training, the batch's biased variance batch_var [C]. In training with
// running stats, the builder also adds the in-place, non-differentiable "batch_norm_update_stats"
// node (attributes momentum, count) after it.
template <class V>
if_handle<V> batch_norm(const V& x, const V& weight, const V& bias, const V& running_mean,
                        const V& running_var, bool training, double momentum = 0.1,
                        double eps = 1e-5);
// The fused backward: (grad_x, grad_weight, grad_bias). Op "batch_norm_backward" over
// (grad, x, weight?, save_mean, save_invstd), attributes training, has_weight.
template <class V>
std::vector<V> batch_norm_backward(const V& grad, const V& x, const V& weight, const V& save_mean,
                                   const V& save_invstd, bool training) {
  return apply(EMBER_OP("batch_norm_backward"),
               std::vector<V>{grad, x, weight, save_mean, save_invstd},
               {{"training", int64_t(training)}, {"has_weight", int64_t(weight.defined())}});
}

// x [*, normalized_shape], weight/bias [normalized_shape] (optional) -> x's shape. Op
// "layer_norm", outputs (y, mean, rstd), attributes normalized_shape, eps, has_weight, has_bias.
template <class V>
if_handle<V> layer_norm(const V& x, const std::vector<int64_t>& normalized_shape,
                        const V& weight = V(), const V& bias = V(), double eps = 1e-5) {
  return apply(EMBER_OP("layer_norm"), std::vector<V>{x, weight, bias},
               {{"normalized_shape", normalized_shape},
                {"eps", eps},
                {"has_weight", int64_t(weight.defined())},
                {"has_bias", int64_t(bias.defined())}})[0];
}
// (grad_x, grad_weight, grad_bias) over (grad, x, mean, rstd, weight?).
template <class V>
std::vector<V> layer_norm_backward(const V& grad, const V& x,
                                   const std::vector<int64_t>& normalized_shape, const V& mean,
                                   const V& rstd, const V& weight = V()) {
  return apply(EMBER_OP("layer_norm_backward"), std::vector<V>{grad, x, mean, rstd, weight},
               {{"normalized_shape", normalized_shape}, {"has_weight", int64_t(weight.defined())}});
}

// Zeroes each element with probability p and scales the rest by 1 / (1 - p); x itself when not
// training or p == 0. Op "dropout" (random), outputs (y, bool mask), attribute p.
template <class V> if_handle<V> dropout(const V& x, double p, bool training = true);
template <class V> if_handle<V> dropout_backward(const V& grad, const V& mask, double p) {
  return apply1<V>(EMBER_OP("dropout_backward"), {grad, mask}, {{"p", p}});
}

// ---- definitions of the builders above that do more than one apply ----

template <class V>
if_handle<V> batch_norm(const V& x, const V& weight, const V& bias, const V& running_mean,
                        const V& running_var, bool training, double momentum, double eps) {
  const bool has_running = running_mean.defined() && running_var.defined();
  std::vector<V> out =
      apply(EMBER_OP("batch_norm"), std::vector<V>{x, weight, bias, running_mean, running_var},
            {{"training", int64_t(training)},
             {"eps", eps},
             {"has_weight", int64_t(weight.defined())},
             {"has_bias", int64_t(bias.defined())},
             {"has_running_stats", int64_t(has_running)}});
  if (training && has_running) {
    // count: the elements per channel, for the unbiased running variance.
    int64_t count = 1;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (d != 1) count *= x.shape()[size_t(d)];
    apply(EMBER_OP("batch_norm_update_stats"),
          std::vector<V>{running_mean, running_var, out[1], out[3]},
          {{"momentum", momentum}, {"count", count}});
  }
  return out[0];
}

// ValueError unless p is a probability, in eval mode too (as PyTorch): a p of 1.5 is a bug
// whether or not this call drops anything.
inline void check_dropout_probability(double p, const Shape& x_shape) {
  if (p >= 0 && p <= 1) return;
  std::ostringstream os;
  os << "p is " << p << " for an input of shape " << shape_str(x_shape)
     << "; p is the probability of zeroing an element and must be in [0, 1], e.g. 0.5";
  throw ValueError("dropout", os.str());
}

template <class V> if_handle<V> dropout(const V& x, double p, bool training) {
  check_dropout_probability(p, x.shape());
  if (!training || p == 0.0) return x;
  return apply(EMBER_OP("dropout"), std::vector<V>{x}, {{"p", p}})[0];
}

}  // namespace ember::autodiff

// softmax_loss_kernels.h — kernel tables of the softmax and loss family, and the per-element
// formulas of the pointwise losses, written once for the CPU and CUDA kernels (internal header).
//
// Row-wise kernels (softmax, cross entropy, nll) take their tensors with the softmax / class dim
// moved last, [rows..., C] (a permuted view, any strides): row r is the r-th index of the leading
// dims in row-major order. Per-sample tensors (targets, losses, gradient multipliers) are
// [rows...]. Losses, class weights, sample weights and multipliers g are in the compute dtype,
// float32 for float16/bfloat16/float32 logits and float64 for float64 (see compute_t), so that
// summing many float16 losses neither overflows nor loses precision.
#pragma once
#include <cmath>
#include <cstdint>

#include "dispatch.h"
#include "ember/tensor.h"
#include "ops/deferred_error.h"

namespace ember {

// y = softmax(x) or log_softmax(x) along the last dim; x, y: [rows..., C].
EMBER_KERNEL(softmax_kernel, void(const Tensor& x, bool log, Tensor& y));
// grad_x from grad_y and the forward's output y, all [rows..., C]:
//   softmax:     grad_x = y * (grad_y - sum(grad_y * y))
//   log_softmax: grad_x = grad_y - exp(y) * sum(grad_y)
EMBER_KERNEL(softmax_backward_kernel,
             void(const Tensor& grad_y, const Tensor& y, bool log, Tensor& grad_x));

// sample_weight[r] = weight[target[r]] (1 when weight is undefined), 0 where target[r] equals
// ignore_index. A target outside [0, num_classes) raises error with its value: at once on the
// CPU, at the next synchronising point on CUDA (its sample weight is 0, and the loss kernels skip
// its row meanwhile). target: [rows...] int64; sample_weight: [rows...] contiguous.
EMBER_KERNEL(target_weight_kernel,
             void(const Tensor& target, const Tensor& weight, int64_t ignore_index,
                  int64_t num_classes, Tensor& sample_weight, const DeferredError& error));

// Per-sample cross entropy of logits [rows..., C] against class indices target [rows...]:
//   loss[r] = (1 - eps) * w[t] * (lse - x[t]) + eps / C * sum_c w[c] * (lse - x[c])
// with lse = log(sum_c exp(x[c])), t = target[r], eps = label_smoothing; 0 where t is ignored.
EMBER_KERNEL(cross_entropy_kernel,
             void(const Tensor& logits, const Tensor& target, const Tensor& weight,
                  int64_t ignore_index, double label_smoothing, Tensor& loss));
// Its gradient, one fused pass per row, p = softmax(x):
//   grad[r, k] = g[r] * ((1 - eps) * w[t] * (p[k] - [k == t]) + eps / C * (p[k] * sum(w) - w[k]))
// g: [rows...] the multiplier of each sample's loss (a broadcast view for "sum" and "mean").
EMBER_KERNEL(cross_entropy_backward_kernel,
             void(const Tensor& g, const Tensor& logits, const Tensor& target, const Tensor& weight,
                  int64_t ignore_index, double label_smoothing, Tensor& grad_logits));

// loss[r] = -w[t] * log_probs[r, t] (0 where t is ignored); log_probs: [rows..., C].
EMBER_KERNEL(nll_loss_kernel, void(const Tensor& log_probs, const Tensor& target,
                                   const Tensor& weight, int64_t ignore_index, Tensor& loss));
// grad[r, k] = -g[r] * w[t] where k == t, 0 elsewhere.
EMBER_KERNEL(nll_loss_backward_kernel,
             void(const Tensor& g, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                  Tensor& grad_log_probs));

// Losses computed element by element, then reduced by the front function.
enum class PointwiseLoss { Mse, L1, BceWithLogits };
// loss[i] = f(x[i], y[i], pos_weight[i]); all of x's shape (pos_weight a broadcast view, or
// undefined: 1), x's dtype.
EMBER_KERNEL(pointwise_loss_kernel, void(PointwiseLoss kind, const Tensor& x, const Tensor& y,
                                         const Tensor& pos_weight, Tensor& loss));
// grad_x[i] = scale * g[i] * df/dx(x[i], y[i], pos_weight[i]); g broadcast to x's shape.
EMBER_KERNEL(pointwise_loss_backward_kernel,
             void(PointwiseLoss kind, const Tensor& g, double scale, const Tensor& x,
                  const Tensor& y, const Tensor& pos_weight, Tensor& grad_x));

namespace losses {

// Each pointwise loss: value(x, y, w) and its derivative in x, in the compute type C. w is the
// positive-class weight (only binary cross entropy uses it).
template <class C> struct Mse {
  EMBER_HOST_DEVICE C value(C x, C y, C) const { return (x - y) * (x - y); }
  EMBER_HOST_DEVICE C grad(C x, C y, C) const { return C(2) * (x - y); }
};

template <class C> struct L1 {
  EMBER_HOST_DEVICE C value(C x, C y, C) const { return std::abs(x - y); }
  // sign(x - y): 0 at x == y, as PyTorch.
  EMBER_HOST_DEVICE C grad(C x, C y, C) const { return C((x > y) - (x < y)); }
};

// -[w y log(sigmoid(x)) + (1 - y) log(1 - sigmoid(x))] in the form that never overflows:
//   (1 - y) x + (1 + (w - 1) y) * log(1 + exp(-x)),   log(1 + exp(-x)) = log1p(exp(-|x|)) + max(-x,
//   0)
// and its derivative (1 - y) - (1 + (w - 1) y) * sigmoid(-x).
template <class C> struct BceWithLogits {
  EMBER_HOST_DEVICE C value(C x, C y, C w) const {
    C softplus_neg = std::log1p(std::exp(-std::abs(x))) + (x < C(0) ? -x : C(0));
    return (C(1) - y) * x + (C(1) + (w - C(1)) * y) * softplus_neg;
  }
  EMBER_HOST_DEVICE C grad(C x, C y, C w) const {
    C e = std::exp(-std::abs(x));  // sigmoid(-x) without overflow on either side
    C sigmoid_neg = x >= C(0) ? e / (C(1) + e) : C(1) / (C(1) + e);
    return (C(1) - y) - (C(1) + (w - C(1)) * y) * sigmoid_neg;
  }
};

// Calls fn(formula) with the formula struct of `kind`.
template <class C, class F> decltype(auto) visit(PointwiseLoss kind, F&& fn) {
  if (kind == PointwiseLoss::Mse) return fn(Mse<C>{});
  if (kind == PointwiseLoss::L1) return fn(L1<C>{});
  return fn(BceWithLogits<C>{});
}

}  // namespace losses
}  // namespace ember

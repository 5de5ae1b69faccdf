// softmax_loss_kernels.h — the per-element formulas of the pointwise losses, written once for the
// CPU and CUDA kernels; the softmax and loss family's slots are in kernels/softmax_loss.def
// (internal header).
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

// Losses computed element by element, then reduced by the front function.
enum class PointwiseLoss { Mse, L1, BceWithLogits };

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

// softmax_loss.h — softmax and log_softmax, the classification and regression losses, and the
// backward of each (the functions the autodiff gradient rules call). Definitions match PyTorch's.
#pragma once
#include <cstdint>
#include <string>

#include "ember/tensor.h"

namespace ember {

// ---- softmax ----

// y = exp(x - max) / sum(exp(x - max)) along dim; x: any shape, floating; y: x's shape and dtype.
Tensor softmax(const Tensor& x, int64_t dim);
// y = x - max - log(sum(exp(x - max))) along dim: the log of softmax without its underflow.
Tensor log_softmax(const Tensor& x, int64_t dim);
// Gradients given grad_y and the forward's output y (both x's shape):
//   softmax:     grad_x = y * (grad_y - sum(grad_y * y, dim))
//   log_softmax: grad_x = grad_y - exp(y) * sum(grad_y, dim)
Tensor softmax_backward(const Tensor& grad_y, const Tensor& y, int64_t dim);
Tensor log_softmax_backward(const Tensor& grad_y, const Tensor& y, int64_t dim);

// ---- losses ----

// How per-sample losses become the result: kept ([N, ...]), summed, or averaged (a scalar).
enum class LossReduction { None, Mean, Sum };
// "none" | "mean" | "sum" (PyTorch's names); ValueError otherwise.
LossReduction loss_reduction(const std::string& name);

// Cross entropy of logits against class indices, as torch.nn.functional.cross_entropy:
//   logits [N, C] or [N, C, d1, ...] (or [C] for one sample), floating;
//   target int64 [N] or [N, d1, ...] (or []), each in [0, C) or equal to ignore_index;
//   weight: optional [C] rescaling each class.
// Per sample, with lp = log_softmax(logits) over C, t its target and eps = label_smoothing:
//   loss = (1 - eps) * w[t] * -lp[t] + eps / C * sum_c w[c] * -lp[c],  0 if t == ignore_index.
// Mean divides the sum by the sum of w[t] over the samples not ignored (NaN when all are).
// A target out of range throws IndexError naming the value and the valid range.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight = Tensor(),
                     int64_t ignore_index = -100, LossReduction reduction = LossReduction::Mean,
                     double label_smoothing = 0.0);
// grad_logits (logits' shape and dtype) given grad_loss: a scalar for Mean/Sum, target's shape for
// None. One fused pass: softmax, the target's one-hot and the smoothing term together.
Tensor cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& target,
                              const Tensor& weight = Tensor(), int64_t ignore_index = -100,
                              LossReduction reduction = LossReduction::Mean,
                              double label_smoothing = 0.0);

// Negative log likelihood of log-probabilities (e.g. log_softmax's output), shapes as in
// cross_entropy: loss = -w[t] * log_probs[t] per sample, reduced as in cross_entropy.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight = Tensor(),
                int64_t ignore_index = -100, LossReduction reduction = LossReduction::Mean);
Tensor nll_loss_backward(const Tensor& grad_loss, const Tensor& log_probs, const Tensor& target,
                         const Tensor& weight = Tensor(), int64_t ignore_index = -100,
                         LossReduction reduction = LossReduction::Mean);

// Elementwise losses: input and target of one shape and floating dtype; Mean averages over every
// element. The backward returns the gradient for input.
Tensor mse_loss(const Tensor& input, const Tensor& target,  // (input - target)^2
                LossReduction reduction = LossReduction::Mean);
Tensor mse_loss_backward(const Tensor& grad_loss, const Tensor& input, const Tensor& target,
                         LossReduction reduction = LossReduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target,  // |input - target|
               LossReduction reduction = LossReduction::Mean);
Tensor l1_loss_backward(const Tensor& grad_loss, const Tensor& input, const Tensor& target,
                        LossReduction reduction = LossReduction::Mean);

// Binary cross entropy on logits, target probabilities in [0, 1] of the logits' shape:
//   loss = -[pos_weight * y * log(sigmoid(x)) + (1 - y) * log(1 - sigmoid(x))]
// computed in a form that never overflows; pos_weight (optional) broadcasts against the logits,
// typically [C] for the last dim.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        const Tensor& pos_weight = Tensor(),
                                        LossReduction reduction = LossReduction::Mean);
Tensor binary_cross_entropy_with_logits_backward(const Tensor& grad_loss, const Tensor& logits,
                                                 const Tensor& target,
                                                 const Tensor& pos_weight = Tensor(),
                                                 LossReduction reduction = LossReduction::Mean);

// ---- outputs the caller provides ----
// Each op above has a form that writes its result into `out` and returns it, with the same
// arguments: out must have exactly the result's shape (a scalar for Mean and Sum), dtype and
// device (ShapeError, DTypeError, DeviceError; never resized or cast), may be any strided view and
// must not overlap an input (ValueError). One exception: cross_entropy_out of float16/bfloat16
// logits also takes a float32 out, which gets the loss as computed, in float32, unrounded.
const Tensor& softmax_out(const Tensor& out, const Tensor& x, int64_t dim);
const Tensor& log_softmax_out(const Tensor& out, const Tensor& x, int64_t dim);
const Tensor& softmax_backward_out(const Tensor& out, const Tensor& grad_y, const Tensor& y,
                                   int64_t dim);
const Tensor& log_softmax_backward_out(const Tensor& out, const Tensor& grad_y, const Tensor& y,
                                       int64_t dim);
const Tensor& cross_entropy_out(const Tensor& out, const Tensor& logits, const Tensor& target,
                                const Tensor& weight = Tensor(), int64_t ignore_index = -100,
                                LossReduction reduction = LossReduction::Mean,
                                double label_smoothing = 0.0);
const Tensor& cross_entropy_backward_out(const Tensor& out, const Tensor& grad_loss,
                                         const Tensor& logits, const Tensor& target,
                                         const Tensor& weight = Tensor(),
                                         int64_t ignore_index = -100,
                                         LossReduction reduction = LossReduction::Mean,
                                         double label_smoothing = 0.0);
const Tensor& nll_loss_out(const Tensor& out, const Tensor& log_probs, const Tensor& target,
                           const Tensor& weight = Tensor(), int64_t ignore_index = -100,
                           LossReduction reduction = LossReduction::Mean);
const Tensor& nll_loss_backward_out(const Tensor& out, const Tensor& grad_loss,
                                    const Tensor& log_probs, const Tensor& target,
                                    const Tensor& weight = Tensor(), int64_t ignore_index = -100,
                                    LossReduction reduction = LossReduction::Mean);
const Tensor& mse_loss_out(const Tensor& out, const Tensor& input, const Tensor& target,
                           LossReduction reduction = LossReduction::Mean);
const Tensor& mse_loss_backward_out(const Tensor& out, const Tensor& grad_loss, const Tensor& input,
                                    const Tensor& target,
                                    LossReduction reduction = LossReduction::Mean);
const Tensor& l1_loss_out(const Tensor& out, const Tensor& input, const Tensor& target,
                          LossReduction reduction = LossReduction::Mean);
const Tensor& l1_loss_backward_out(const Tensor& out, const Tensor& grad_loss, const Tensor& input,
                                   const Tensor& target,
                                   LossReduction reduction = LossReduction::Mean);
const Tensor& binary_cross_entropy_with_logits_out(const Tensor& out, const Tensor& logits,
                                                   const Tensor& target,
                                                   const Tensor& pos_weight = Tensor(),
                                                   LossReduction reduction = LossReduction::Mean);
const Tensor& binary_cross_entropy_with_logits_backward_out(
    const Tensor& out, const Tensor& grad_loss, const Tensor& logits, const Tensor& target,
    const Tensor& pos_weight = Tensor(), LossReduction reduction = LossReduction::Mean);

}  // namespace ember

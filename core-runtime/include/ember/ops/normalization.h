// normalization.h — batch norm, layer norm and dropout, each with the backward its gradient rule
// calls. Statistics (mean, invstd/rstd) are kept in the compute dtype: float32 for float16 and
// bfloat16 inputs, the input's dtype otherwise.
#pragma once
#include <cstdint>
#include <vector>

#include "ember/ops/random.h"
#include "ember/tensor.h"

namespace ember {

struct BatchNormResult {
  Tensor output;       // x's shape and dtype
  Tensor save_mean;    // [C] the mean used to normalise
  Tensor save_invstd;  // [C] 1 / sqrt(var + eps) used to normalise
  Tensor batch_var;    // [C] training: the batch's biased variance (for batch_norm_update_stats);
                       // undefined in eval
};

// x: [N, C, *] normalised per channel c over N and every trailing dim (M = N * prod(*) values);
// weight, bias, running_mean, running_var: [C] of x's dtype, each optional (undefined Tensor).
//   training: mean/var from the batch (biased var normalises). Needs M > 1. The running
//             statistics are neither read nor written: the forward is a pure function of its
//             inputs, so recomputing it (checkpointing) changes nothing. Update them with
//             batch_norm_update_stats(running_mean, running_var, r.save_mean, r.batch_var, ...).
//   eval:     normalises with running_mean/running_var (both required); save_mean/save_invstd are
//             then running_mean and 1 / sqrt(running_var + eps), so backward works in both modes.
// y = (x - mean) * invstd * weight + bias.
BatchNormResult batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const Tensor& running_mean, const Tensor& running_var, bool training,
                           double eps = 1e-5);

// The running statistics' update of a training step, in place, as PyTorch's BatchNorm does it:
//   running_mean = (1 - momentum) * running_mean + momentum * batch_mean
//   running_var  = (1 - momentum) * running_var  + momentum * batch_var * count / (count - 1)
// i.e. with the unbiased variance. batch_mean, batch_var: [C] floating, as batch_norm returns
// them (save_mean, batch_var); count: the values per channel the batch had (M, > 1);
// running_mean, running_var: [C] of one floating dtype, any strides, on the batch's device.
void batch_norm_update_stats(const Tensor& running_mean, const Tensor& running_var,
                             const Tensor& batch_mean, const Tensor& batch_var, double momentum,
                             int64_t count);

struct NormGrads {
  Tensor grad_input;   // x's shape and dtype
  Tensor grad_weight;  // weight's shape, x's dtype (computed even when weight was undefined)
  Tensor grad_bias;    // as grad_weight
};

// Gradients of batch_norm given grad_out [N, C, *] and the forward's save_mean/save_invstd [C].
// training selects whether the batch statistics depended on x (true) or were constants (false).
NormGrads batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                              const Tensor& save_mean, const Tensor& save_invstd, bool training);

struct LayerNormResult {
  Tensor output;  // x's shape and dtype
  Tensor mean;    // [*outer, 1, ..., 1]: x's shape with the normalised dims set to 1
  Tensor rstd;    // as mean: 1 / sqrt(var + eps)
};

// x: [*outer, *normalized_shape], normalised over the trailing normalized_shape dims;
// weight, bias: normalized_shape, optional. y = (x - mean) * rstd * weight + bias.
LayerNormResult layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape,
                           const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                           double eps = 1e-5);

// Gradients of layer_norm given grad_out (x's shape) and the forward's mean/rstd.
NormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& x,
                              const std::vector<int64_t>& normalized_shape, const Tensor& mean,
                              const Tensor& rstd, const Tensor& weight = Tensor());

struct DropoutResult {
  Tensor output;  // x's shape and dtype
  Tensor mask;    // bool, x's shape: true where x was kept; undefined when nothing was dropped
};

// Training: zeroes each element with probability p and scales the others by 1 / (1 - p), so
// the expected value is unchanged (p = 1 zeroes everything). The mask is bernoulli(x.shape(),
// 1 - p, DType::Bool, x.device(), gen): the same seed gives the same mask on every device.
// Eval (training = false) or p = 0: output is x itself and mask undefined. x floating, p in [0, 1].
DropoutResult dropout(const Tensor& x, double p, bool training = true, Generator* gen = nullptr);

// grad * mask / (1 - p) (0 where dropped); grad itself when mask is undefined.
Tensor dropout_backward(const Tensor& grad, const Tensor& mask, double p);

// ---- outputs the caller provides ----
// Each op above has a form that writes its results into outputs given in its result struct's
// order and returns them, with the same arguments. Each output must have exactly the result's
// shape, dtype and device (ShapeError, DTypeError, DeviceError; never resized or cast) and may be
// any strided view; none may overlap an input or another output (ValueError). batch_norm_out in
// eval takes an undefined batch_var (eval has none); dropout_out in eval or with p = 0 copies x
// into output and leaves mask alone (the result's mask is undefined); dropout_backward_out with an
// undefined mask copies grad.
BatchNormResult batch_norm_out(const Tensor& output, const Tensor& save_mean,
                               const Tensor& save_invstd, const Tensor& batch_var, const Tensor& x,
                               const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                               const Tensor& running_var, bool training, double eps = 1e-5);
NormGrads batch_norm_backward_out(const Tensor& grad_input, const Tensor& grad_weight,
                                  const Tensor& grad_bias, const Tensor& grad_out, const Tensor& x,
                                  const Tensor& weight, const Tensor& save_mean,
                                  const Tensor& save_invstd, bool training);
LayerNormResult layer_norm_out(const Tensor& output, const Tensor& mean, const Tensor& rstd,
                               const Tensor& x, const std::vector<int64_t>& normalized_shape,
                               const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                               double eps = 1e-5);
NormGrads layer_norm_backward_out(const Tensor& grad_input, const Tensor& grad_weight,
                                  const Tensor& grad_bias, const Tensor& grad_out, const Tensor& x,
                                  const std::vector<int64_t>& normalized_shape, const Tensor& mean,
                                  const Tensor& rstd, const Tensor& weight = Tensor());
DropoutResult dropout_out(const Tensor& output, const Tensor& mask, const Tensor& x, double p,
                          bool training = true, Generator* gen = nullptr);
const Tensor& dropout_backward_out(const Tensor& out, const Tensor& grad, const Tensor& mask,
                                   double p);

}  // namespace ember

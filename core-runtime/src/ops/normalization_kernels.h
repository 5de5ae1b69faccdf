// normalization_kernels.h — kernel tables of the normalization family, and the mean/variance
// accumulator every backend builds its statistics with (internal header).
//
// Layouts the front functions hand to kernels (all contiguous unless said otherwise):
//   batch norm: x, y, dy, dx viewed as [N, C, S] (S = product of the trailing dims); per-channel
//               tensors [C]; statistics in the compute dtype (float32 for half types).
//   layer norm: x, y, dy, dx viewed as [M, D] (M rows of D normalised values); weight, bias [D];
//               mean, rstd [M] in the compute dtype.
#pragma once
#include <cstdint>

#include "dispatch.h"
#include "ember/half.h"
#include "ember/tensor.h"

namespace ember {

// Count, mean and M2 (sum of squared deviations from the mean) of a set of values. combine()
// merges the statistics of two disjoint sets (Chan, Golub & LeVeque), so a backend may build them
// from pieces in any order — chunks on a CPU thread, threads of a warp, warps of a block — and
// still read the data once. var = m2 / n (biased) or m2 / (n - 1) (unbiased).
template <class Acc> struct MeanM2 {
  Acc n = 0;  // a float count: exact up to 2^24 for float, and only ever used in ratios
  Acc mean = 0;
  Acc m2 = 0;

  EMBER_HOST_DEVICE void combine(const MeanM2& o) {
    if (o.n == 0) return;
    if (n == 0) {
      *this = o;
      return;
    }
    Acc total = n + o.n;
    Acc delta = o.mean - mean;
    mean += delta * (o.n / total);
    m2 += o.m2 + delta * delta * (n * (o.n / total));
    n = total;
  }
  // Welford's update: combine() with a set of one value.
  EMBER_HOST_DEVICE void add(Acc x) {
    n += 1;
    Acc delta = x - mean;
    mean += delta / n;
    m2 += delta * (x - mean);
  }
};

// ---- batch norm ----
// Training statistics per channel of x [N, C, S]: save_mean, save_invstd and batch_var (the
// biased variance), all [C].
EMBER_KERNEL(batch_norm_stats_kernel, void(const Tensor& x, double eps, Tensor& save_mean,
                                           Tensor& save_invstd, Tensor& batch_var));
// In place, per channel: running_mean = (1 - momentum) * running_mean + momentum * batch_mean,
// running_var = (1 - momentum) * running_var + momentum * batch_var * unbias. running_mean,
// running_var: [C] of one dtype, any stride; batch_mean, batch_var: [C] in its compute dtype.
EMBER_KERNEL(batch_norm_update_stats_kernel,
             void(const Tensor& batch_mean, const Tensor& batch_var, double momentum, double unbias,
                  const Tensor& running_mean, const Tensor& running_var));
// Eval statistics: save_mean = running_mean, save_invstd = 1 / sqrt(running_var + eps), all [C].
EMBER_KERNEL(batch_norm_eval_stats_kernel,
             void(const Tensor& running_mean, const Tensor& running_var, double eps,
                  Tensor& save_mean, Tensor& save_invstd));
// y[n, c, s] = (x[n, c, s] - mean[c]) * invstd[c] * weight[c] + bias[c]; weight/bias optional.
EMBER_KERNEL(batch_norm_apply_kernel,
             void(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                  const Tensor& bias, Tensor& y));
// Per channel: sum_dy[c] = sum dy, sum_dy_xhat[c] = sum dy * (x - mean) * invstd, both [C] in
// the compute dtype (they are grad_bias and grad_weight, and feed the grad_input kernel).
EMBER_KERNEL(batch_norm_backward_reduce_kernel,
             void(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                  Tensor& sum_dy, Tensor& sum_dy_xhat));
// dx = weight * invstd * (dy - sum_dy / M - xhat * sum_dy_xhat / M) when training (M = N * S),
// dx = weight * invstd * dy in eval, where the statistics did not depend on x.
EMBER_KERNEL(batch_norm_backward_input_kernel,
             void(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& invstd,
                  const Tensor& weight, const Tensor& sum_dy, const Tensor& sum_dy_xhat,
                  bool training, Tensor& dx));

// ---- layer norm ----
// Per row i of x [M, D]: mean[i], rstd[i] = 1 / sqrt(var + eps) (biased var), and
// y[i, j] = (x[i, j] - mean[i]) * rstd[i] * weight[j] + bias[j]; weight/bias optional.
EMBER_KERNEL(layer_norm_kernel, void(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                     double eps, Tensor& y, Tensor& mean, Tensor& rstd));
// Per row, with g = dy * weight and xhat = (x - mean) * rstd:
// dx = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat)).
EMBER_KERNEL(layer_norm_backward_input_kernel,
             void(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                  const Tensor& weight, Tensor& dx));
// Column sums over the M rows: grad_weight[j] = sum_i dy * xhat, grad_bias[j] = sum_i dy, both
// [D] in x's dtype.
EMBER_KERNEL(layer_norm_backward_params_kernel,
             void(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                  Tensor& grad_weight, Tensor& grad_bias));

// ---- dropout ----
// out = mask ? x * scale : 0, with mask (bool) and out of x's shape; any strides.
EMBER_KERNEL(dropout_apply_kernel,
             void(const Tensor& x, const Tensor& mask, double scale, Tensor& out));

}  // namespace ember

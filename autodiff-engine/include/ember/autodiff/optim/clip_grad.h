// clip_grad.h — gradient clipping over a model's parameters (torch.nn.utils.clip_grad_norm_ and
// clip_grad_value_). Parameters without a grad are skipped.
#pragma once
#include <vector>

#include "ember/autodiff/variable.h"

namespace ember::autodiff::optim {

// The norm of all grads together, as if concatenated into one vector: the norm_type-norm of the
// per-parameter norms (norm_type 2, any p > 0, or INFINITY for the largest |g|). When it
// exceeds max_norm every grad is scaled by max_norm / (total + 1e-6), as in PyTorch; the scale
// is a tensor (min(1, ...)), so nothing waits for the device. Returns the total norm before
// clipping: a 0-d tensor, float32 (float64 when some grad is float64) on the first grad's
// device; 0 when no parameter has a grad. error_if_nonfinite: ValueError for a NaN or infinite
// total (this reads the total on the host).
Tensor clip_grad_norm_(const std::vector<Variable>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every grad element into [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Variable>& params, double clip_value);

}  // namespace ember::autodiff::optim

// optimizer.h — fused optimizer updates: one call updates every parameter of a model in place,
// with the formulas of torch.optim (non-foreach and foreach give the same numbers). Lists are
// indexed by parameter: params[i], grads[i] and each state list's [i] must share shape, dtype and
// device; state lists a configuration does not use may be empty. Parameters may be of several
// dtypes and devices: each (device, dtype) group is updated by one kernel (on CUDA, one launch for
// the whole group). Arithmetic is in float32 for half types, the dtype itself otherwise.
#pragma once
#include <cstdint>

#include "ember/tensor.h"

namespace ember {

// SGD (torch.optim.SGD), per element, with g = grad (or -grad when maximize):
//   g += weight_decay * p
//   if momentum != 0:  buf = first_step ? g : momentum * buf + (1 - dampening) * g
//                      g = nesterov ? g + momentum * buf : buf
//   p -= lr * g
// momentum_buffers may be empty when momentum == 0; first_step initialises them (their old
// values are ignored). nesterov needs momentum > 0 and dampening == 0.
void sgd_step(const TensorList& params, const TensorList& grads, const TensorList& momentum_buffers,
              double lr, double momentum = 0.0, double dampening = 0.0, bool nesterov = false,
              double weight_decay = 0.0, bool first_step = false, bool maximize = false);

// Adam (torch.optim.Adam) and, with decoupled = true, AdamW (torch.optim.AdamW). step is the
// number of this update, 1 on the first. Per element, with g = grad (or -grad when maximize):
//   decoupled: p *= 1 - lr * weight_decay        otherwise: g += weight_decay * p
//   m = beta1 * m + (1 - beta1) * g              (exp_avgs)
//   v = beta2 * v + (1 - beta2) * g * g          (exp_avg_sqs)
//   p -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
void adam_step(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
               const TensorList& exp_avg_sqs, int64_t step, double lr = 1e-3, double beta1 = 0.9,
               double beta2 = 0.999, double eps = 1e-8, double weight_decay = 0.0,
               bool decoupled = false, bool maximize = false);

// RMSprop (torch.optim.RMSprop). Per element, with g = grad (or -grad when maximize):
//   g += weight_decay * p
//   sq = alpha * sq + (1 - alpha) * g * g                       (square_avgs)
//   centered: ga = alpha * ga + (1 - alpha) * g                 (grad_avgs)
//             avg = sqrt(sq - ga * ga) + eps        otherwise: avg = sqrt(sq) + eps
//   momentum > 0: buf = momentum * buf + g / avg, p -= lr * buf  (momentum_buffers)
//   otherwise:    p -= lr * g / avg
// momentum_buffers may be empty when momentum == 0, grad_avgs when not centered. New state
// starts at zero, as in PyTorch.
void rmsprop_step(const TensorList& params, const TensorList& grads, const TensorList& square_avgs,
                  const TensorList& momentum_buffers, const TensorList& grad_avgs, double lr = 1e-2,
                  double alpha = 0.99, double eps = 1e-8, double weight_decay = 0.0,
                  double momentum = 0.0, bool centered = false, bool maximize = false);

}  // namespace ember

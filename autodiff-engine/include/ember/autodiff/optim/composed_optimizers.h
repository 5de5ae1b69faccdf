// composed_optimizers.h — the optimizers composed of core-runtime's elementwise ops: Adadelta,
// Adagrad, Adamax, NAdam and RAdam (src/optim/composed.h says why they have no fused kernel). Each
// is its options and its update (an OptimizerRule); it declares nothing but its constructor.
#pragma once
#include "ember/autodiff/optim/optimizer.h"

namespace ember::autodiff::optim {

// Adadelta (torch.optim.Adadelta; Zeiler 2012). Per element, with g = grad (or
// -grad when maximize) + weight_decay * p:
//   sq = rho * sq + (1 - rho) * g^2                       (square_avg)
//   delta = sqrt(acc + eps) / sqrt(sq + eps) * g
//   acc = rho * acc + (1 - rho) * delta^2                 (acc_delta)
//   p -= lr * delta
//
// Options (defaults): lr (1), rho (0.9), eps (1e-6), weight_decay (0), maximize (0). State per
// parameter: "square_avg" and "acc_delta", from zero.
class Adadelta : public Optimizer {
 public:
  explicit Adadelta(std::vector<Variable> params, const Options& options = {});
};

// Adagrad (torch.optim.Adagrad; Duchi et al. 2011). At step t (1 on the first), per
// element, with g = grad (or -grad when maximize) + weight_decay * p:
//   sum += g^2                                            (sum)
//   p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)
//
// Options (defaults): lr (1e-2), lr_decay (0), weight_decay (0), initial_accumulator_value (0), eps
// (1e-10), maximize (0). State per parameter: "sum", from initial_accumulator_value.
class Adagrad : public Optimizer {
 public:
  explicit Adagrad(std::vector<Variable> params, const Options& options = {});
};

// Adamax, Adam with the infinity norm (torch.optim.Adamax; Kingma and Ba 2015, section
// 7). At step t, per element, with g = grad (or -grad when maximize) + weight_decay * p:
//   m = beta1 * m + (1 - beta1) * g                       (exp_avg)
//   u = max(beta2 * u, |g| + eps)                         (exp_inf)
//   p -= lr / (1 - beta1^t) * m / u
//
// Options (defaults): lr (2e-3), beta1 (0.9), beta2 (0.999), eps (1e-8), weight_decay (0), maximize
// (0). State per parameter: "exp_avg" and "exp_inf", from zero.
class Adamax : public Optimizer {
 public:
  explicit Adamax(std::vector<Variable> params, const Options& options = {});
};

// NAdam, Adam with Nesterov momentum (torch.optim.NAdam; Dozat 2016). At step t, with
// the momentum schedule mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay)) and its running
// product P_t = mu_1 ... mu_t, per element, with g = grad (or -grad when maximize):
//   decoupled_weight_decay: p *= 1 - lr * weight_decay    otherwise: g += weight_decay * p
//   m = beta1 * m + (1 - beta1) * g                       (exp_avg)
//   v = beta2 * v + (1 - beta2) * g^2                     (exp_avg_sq)
//   d = sqrt(v / (1 - beta2^t)) + eps
//   p -= lr * (1 - mu_t) / (1 - P_t) * g / d + lr * mu_{t+1} / (1 - P_t * mu_{t+1}) * m / d
//
// Options (defaults): lr (2e-3), beta1 (0.9), beta2 (0.999), eps (1e-8), weight_decay (0),
// momentum_decay (4e-3), decoupled_weight_decay (0), maximize (0). State per parameter: "exp_avg"
// and "exp_avg_sq" (from zero) and the number "mu_product" (P_t, from 1).
class NAdam : public Optimizer {
 public:
  explicit NAdam(std::vector<Variable> params, const Options& options = {});
};

// RAdam, Adam with a rectified adaptive learning rate (torch.optim.RAdam; Liu et al.
// 2020). At step t, with rho_inf = 2 / (1 - beta2) - 1 and
// rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t), per element, with g = grad (or -grad when
// maximize):
//   decoupled_weight_decay: p *= 1 - lr * weight_decay    otherwise: g += weight_decay * p
//   m = beta1 * m + (1 - beta1) * g                       (exp_avg)
//   v = beta2 * v + (1 - beta2) * g^2                     (exp_avg_sq)
//   m_hat = m / (1 - beta1^t)
//   rho_t > 5:  r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
//               p -= lr * r * m_hat * sqrt(1 - beta2^t) / (sqrt(v) + eps)
//   otherwise:  p -= lr * m_hat          (the variance is not yet tractable: SGD with momentum)
//
// Options (defaults): lr (1e-3), beta1 (0.9), beta2 (0.999), eps (1e-8), weight_decay (0),
// decoupled_weight_decay (0), maximize (0). State per parameter: "exp_avg" and "exp_avg_sq", from
// zero.
class RAdam : public Optimizer {
 public:
  explicit RAdam(std::vector<Variable> params, const Options& options = {});
};

}  // namespace ember::autodiff::optim

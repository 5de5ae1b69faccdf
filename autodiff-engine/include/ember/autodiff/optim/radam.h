// radam.h — RAdam, Adam with a rectified adaptive learning rate (torch.optim.RAdam; Liu et al.
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
// decoupled_weight_decay (0), maximize (0). State per parameter: "exp_avg" and "exp_avg_sq",
// from zero. Composed of core-runtime's elementwise ops (src/optim/composed.h says why).
#pragma once
#include "ember/autodiff/optim/optimizer.h"

namespace ember::autodiff::optim {

class RAdam : public Optimizer {
 public:
  explicit RAdam(std::vector<Variable> params, const Options& options = {});

 protected:
  void check_options(const Options& options) const override;
  std::vector<std::string> buffer_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void update(const Options& options, const TensorList& params, const TensorList& grads,
              const std::vector<ParamState*>& states) override;
};

}  // namespace ember::autodiff::optim

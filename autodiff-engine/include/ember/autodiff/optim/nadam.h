// nadam.h — NAdam, Adam with Nesterov momentum (torch.optim.NAdam; Dozat 2016). At step t, with
// the momentum schedule mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay)) and its running
// product P_t = mu_1 ... mu_t, per element, with g = grad (or -grad when maximize):
//   decoupled_weight_decay: p *= 1 - lr * weight_decay    otherwise: g += weight_decay * p
//   m = beta1 * m + (1 - beta1) * g                       (exp_avg)
//   v = beta2 * v + (1 - beta2) * g^2                     (exp_avg_sq)
//   d = sqrt(v / (1 - beta2^t)) + eps
//   p -= lr * (1 - mu_t) / (1 - P_t) * g / d + lr * mu_{t+1} / (1 - P_t * mu_{t+1}) * m / d
//
// Options (defaults): lr (2e-3), beta1 (0.9), beta2 (0.999), eps (1e-8), weight_decay (0),
// momentum_decay (4e-3), decoupled_weight_decay (0), maximize (0). State per parameter:
// "exp_avg" and "exp_avg_sq" (from zero) and the number "mu_product" (P_t, from 1). Composed of
// core-runtime's elementwise ops (src/optim/composed.h says why).
#pragma once
#include "ember/autodiff/optim/optimizer.h"

namespace ember::autodiff::optim {

class NAdam : public Optimizer {
 public:
  explicit NAdam(std::vector<Variable> params, const Options& options = {});

 protected:
  void check_options(const Options& options) const override;
  std::vector<std::string> buffer_names() const override {
    return {"exp_avg", "exp_avg_sq", "mu_product"};
  }
  void update(const Options& options, const TensorList& params, const TensorList& grads,
              const std::vector<ParamState*>& states) override;
};

}  // namespace ember::autodiff::optim

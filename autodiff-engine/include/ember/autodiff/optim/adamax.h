// adamax.h — Adamax, Adam with the infinity norm (torch.optim.Adamax; Kingma and Ba 2015, section
// 7). At step t, per element, with g = grad (or -grad when maximize) + weight_decay * p:
//   m = beta1 * m + (1 - beta1) * g                       (exp_avg)
//   u = max(beta2 * u, |g| + eps)                         (exp_inf)
//   p -= lr / (1 - beta1^t) * m / u
//
// Options (defaults): lr (2e-3), beta1 (0.9), beta2 (0.999), eps (1e-8), weight_decay (0),
// maximize (0). State per parameter: "exp_avg" and "exp_inf", from zero. Composed of
// core-runtime's elementwise ops (src/optim/composed.h says why).
#pragma once
#include "ember/autodiff/optim/optimizer.h"

namespace ember::autodiff::optim {

class Adamax : public Optimizer {
 public:
  explicit Adamax(std::vector<Variable> params, const Options& options = {});

 protected:
  void check_options(const Options& options) const override;
  std::vector<std::string> buffer_names() const override { return {"exp_avg", "exp_inf"}; }
  void update(const Options& options, const TensorList& params, const TensorList& grads,
              const std::vector<ParamState*>& states) override;
};

}  // namespace ember::autodiff::optim

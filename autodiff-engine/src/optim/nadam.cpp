// nadam.cpp — NAdam: its options and update, composed of elementwise ops.
#include <cmath>

#include "adam_family.h"
#include "composed.h"
#include "ember/autodiff/optim/composed_optimizers.h"

namespace ember::autodiff::optim {

namespace {

void nadam_update(const Options& o, const TensorList& params, const TensorList& grads,
                  const std::vector<ParamState*>& states) {
  const double lr = o.at("lr"), beta1 = o.at("beta1"), beta2 = o.at("beta2");
  // The momentum schedule: mu(t) rises from about beta1 / 2 towards beta1.
  auto mu = [&](double t) {
    return beta1 * (1.0 - 0.5 * std::pow(0.96, t * o.at("momentum_decay")));
  };
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    const double t = double(states[i]->step);
    const Tensor g = decayed_grad(p, grads[i], o);
    const Moments m = update_moments(*states[i], p, g, beta1, beta2);
    double& mu_product = states[i]->scalars.emplace("mu_product", 1.0).first->second;
    const double mu_t = mu(t), mu_next = mu(t + 1);
    mu_product *= mu_t;
    const Tensor denom = add(sqrt(div(m.exp_avg_sq, 1.0 - std::pow(beta2, t))), o.at("eps"));
    sub_(p, mul(div(g, denom), lr * (1.0 - mu_t) / (1.0 - mu_product)));
    sub_(p, mul(div(m.exp_avg, denom), lr * mu_next / (1.0 - mu_product * mu_next)));
  }
}

}  // namespace

NAdam::NAdam(std::vector<Variable> params, const Options& options)
    : Optimizer("NAdam",
                adam_family_defaults(2e-3, 0.0,
                                     {{"momentum_decay", 4e-3}, {"decoupled_weight_decay", 0.0}}),
                options,
                adam_family_rule({"exp_avg", "exp_avg_sq", "mu_product"}, nadam_update,
                                 {"decoupled_weight_decay"})) {
  add_param_group(std::move(params));
}

}  // namespace ember::autodiff::optim

// radam.cpp — RAdam: its options and update, composed of elementwise ops.
#include <cmath>

#include "adam_family.h"
#include "composed.h"
#include "ember/autodiff/optim/composed_optimizers.h"

namespace ember::autodiff::optim {

namespace {

void radam_update(const Options& o, const TensorList& params, const TensorList& grads,
                  const std::vector<ParamState*>& states) {
  const double lr = o.at("lr"), beta1 = o.at("beta1"), beta2 = o.at("beta2");
  const double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    const double t = double(states[i]->step);
    const Tensor g = decayed_grad(p, grads[i], o);
    const Moments m = update_moments(*states[i], p, g, beta1, beta2);
    const double bias_correction1 = 1.0 - std::pow(beta1, t);
    const double bias_correction2 = 1.0 - std::pow(beta2, t);
    const Tensor m_hat = div(m.exp_avg, bias_correction1);
    const double rho_t = rho_inf - 2.0 * t * std::pow(beta2, t) / bias_correction2;
    if (rho_t > 5.0) {
      const double rect =
          std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
      const Tensor adaptive =
          div(std::sqrt(bias_correction2), add(sqrt(m.exp_avg_sq), o.at("eps")));
      sub_(p, mul(mul(m_hat, adaptive), lr * rect));
    } else {
      sub_(p, mul(m_hat, lr));
    }
  }
}

}  // namespace

RAdam::RAdam(std::vector<Variable> params, const Options& options)
    : Optimizer("RAdam", adam_family_defaults(1e-3, 0.0, {{"decoupled_weight_decay", 0.0}}),
                options,
                adam_family_rule({"exp_avg", "exp_avg_sq"}, radam_update,
                                 {"decoupled_weight_decay"})) {
  add_param_group(std::move(params));
}

}  // namespace ember::autodiff::optim

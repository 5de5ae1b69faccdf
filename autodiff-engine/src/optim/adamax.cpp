// adamax.cpp — Adamax: its options and update, composed of elementwise ops.
#include <cmath>

#include "adam_family.h"
#include "composed.h"
#include "ember/autodiff/optim/composed_optimizers.h"

namespace ember::autodiff::optim {

namespace {

void adamax_update(const Options& o, const TensorList& params, const TensorList& grads,
                   const std::vector<ParamState*>& states) {
  const double beta1 = o.at("beta1"), beta2 = o.at("beta2");
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    const Tensor g = effective_grad(p, grads[i], o.at("weight_decay"), o.at("maximize") != 0.0);
    const Tensor& exp_avg = state_buffer(*states[i], "exp_avg", p);
    const Tensor& exp_inf = state_buffer(*states[i], "exp_inf", p);
    lerp_(exp_avg, g, beta1);
    maximum_out(exp_inf, mul_(exp_inf, beta2), add(abs(g), o.at("eps")));
    const double clr = o.at("lr") / (1.0 - std::pow(beta1, double(states[i]->step)));
    sub_(p, mul(div(exp_avg, exp_inf), clr));
  }
}

}  // namespace

Adamax::Adamax(std::vector<Variable> params, const Options& options)
    : Optimizer("Adamax", adam_family_defaults(2e-3, 0.0), options,
                adam_family_rule({"exp_avg", "exp_inf"}, adamax_update)) {
  add_param_group(std::move(params));
}

}  // namespace ember::autodiff::optim

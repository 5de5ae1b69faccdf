// adadelta.cpp — Adadelta: its options and update, composed of elementwise ops.
#include "composed.h"
#include "ember/autodiff/optim/composed_optimizers.h"

namespace ember::autodiff::optim {

namespace {

void adadelta_update(const Options& o, const TensorList& params, const TensorList& grads,
                     const std::vector<ParamState*>& states) {
  const double lr = o.at("lr"), rho = o.at("rho"), eps = o.at("eps");
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    const Tensor g = effective_grad(p, grads[i], o.at("weight_decay"), o.at("maximize") != 0.0);
    const Tensor& square_avg = state_buffer(*states[i], "square_avg", p);
    const Tensor& acc_delta = state_buffer(*states[i], "acc_delta", p);
    lerp_(square_avg, mul(g, g), rho);
    const Tensor delta = mul(div(sqrt(add(acc_delta, eps)), sqrt(add(square_avg, eps))), g);
    lerp_(acc_delta, mul(delta, delta), rho);
    sub_(p, mul(delta, lr));
  }
}

}  // namespace

Adadelta::Adadelta(std::vector<Variable> params, const Options& options)
    : Optimizer(
          "Adadelta",
          {{"lr", 1.0}, {"rho", 0.9}, {"eps", 1e-6}, {"weight_decay", 0.0}, {"maximize", 0.0}},
          options, {{"maximize"}, {"rho"}, {"square_avg", "acc_delta"}, adadelta_update}) {
  add_param_group(std::move(params));
}

}  // namespace ember::autodiff::optim

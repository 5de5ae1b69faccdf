// adagrad.cpp — Adagrad: its options and update, composed of elementwise ops.
#include "composed.h"
#include "ember/autodiff/optim/composed_optimizers.h"

namespace ember::autodiff::optim {

namespace {

void adagrad_update(const Options& o, const TensorList& params, const TensorList& grads,
                    const std::vector<ParamState*>& states) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    const Tensor g = effective_grad(p, grads[i], o.at("weight_decay"), o.at("maximize") != 0.0);
    const Tensor& sum = state_buffer(*states[i], "sum", p, o.at("initial_accumulator_value"));
    const double clr = o.at("lr") / (1.0 + double(states[i]->step - 1) * o.at("lr_decay"));
    add_(sum, mul(g, g));
    sub_(p, mul(div(g, add(sqrt(sum), o.at("eps"))), clr));
  }
}

}  // namespace

Adagrad::Adagrad(std::vector<Variable> params, const Options& options)
    : Optimizer("Adagrad",
                {{"lr", 1e-2},
                 {"lr_decay", 0.0},
                 {"weight_decay", 0.0},
                 {"initial_accumulator_value", 0.0},
                 {"eps", 1e-10},
                 {"maximize", 0.0}},
                options, {{"maximize"}, {}, {"sum"}, adagrad_update}) {
  add_param_group(std::move(params));
}

}  // namespace ember::autodiff::optim

// sgd.cpp — SGD: options, their checks and the fused update.
#include "ember/autodiff/optim/sgd.h"

#include "ember/autodiff/compile/trace.h"
#include "ember/autodiff/op.h"
#include "ember/ops/creation.h"
#include "ember/ops/optimizer.h"

namespace ember::autodiff::optim {

SGD::SGD(std::vector<Variable> params, const Options& options)
    : Optimizer("SGD",
                {{"lr", 1e-3},
                 {"momentum", 0.0},
                 {"dampening", 0.0},
                 {"weight_decay", 0.0},
                 {"nesterov", 0.0},
                 {"maximize", 0.0}},
                options, {{}, {}, {"momentum_buffer"}, nullptr}) {
  add_param_group(std::move(params));
}

void SGD::check_options(const Options& options) const {
  check_at_least(options, "lr", 0.0);
  check_at_least(options, "momentum", 0.0);
  check_at_least(options, "weight_decay", 0.0);
  check_flag(options, "nesterov");
  check_flag(options, "maximize");
  if (options.at("nesterov") == 1.0 &&
      (options.at("momentum") <= 0.0 || options.at("dampening") != 0.0))
    throw ValueError(name(),
                     "option 'nesterov' needs momentum > 0 and dampening == 0; set 'momentum' "
                     "(e.g. 0.9) and 'dampening' to 0, or turn 'nesterov' off");
}

void SGD::update(const Options& o, const TensorList& params, const TensorList& grads,
                 const std::vector<ParamState*>& states) {
  const double lr = o.at("lr"), momentum = o.at("momentum"), dampening = o.at("dampening"),
               weight_decay = o.at("weight_decay");
  const bool nesterov = o.at("nesterov") != 0.0, maximize = o.at("maximize") != 0.0;
  if (momentum == 0.0) {
    sgd_step(params, grads, {}, lr, 0.0, dampening, false, weight_decay, false, maximize);
    return;
  }
  // A buffer starts as the gradient itself (first_step) and continues after that. A group whose
  // parameters got their first gradients at different steps takes two calls, one per kind.
  for (const bool first : {false, true}) {
    TensorList p, g, buffers;
    for (size_t i = 0; i < params.size(); ++i) {
      auto& b = states[i]->buffers;
      if (b.count("momentum_buffer") != size_t(!first)) continue;
      if (first) b["momentum_buffer"] = empty_like(params[i]);
      p.push_back(params[i]);
      g.push_back(grads[i]);
      buffers.push_back(b["momentum_buffer"]);
    }
    if (!p.empty())
      sgd_step(p, g, buffers, lr, momentum, dampening, nesterov, weight_decay, first, maximize);
  }
}

// One sgd_update node per parameter (src/rules/update.cpp): the same arithmetic, element for
// element, as the fused call over the group.
void SGD::traced_update(size_t group, const std::vector<Variable>& params, const TensorList& grads,
                        const std::vector<ParamState*>& states) {
  const Options& o = param_groups()[group].options;
  const bool momentum = o.at("momentum") != 0.0;
  for (size_t i = 0; i < params.size(); ++i) {
    const Variable& p = params[i];
    compile::see_variable(p);
    compile::see_grad(p.impl_ptr());
    std::vector<Tensor> inputs{p.data()};
    bool first = false;
    if (momentum) {
      auto& b = states[i]->buffers;
      first = !b.count("momentum_buffer");
      if (first) b["momentum_buffer"] = traced_zeros_like(p.data());
      else declare_buffer(p, "momentum_buffer", b["momentum_buffer"]);
      inputs.push_back(b["momentum_buffer"]);
    }
    inputs.push_back(grads[i]);
    inputs.push_back(hyper(p, 4, [this, group](double* h) {
      const Options& live = param_groups()[group].options;
      h[0] = live.at("lr");
      h[1] = live.at("momentum");
      h[2] = live.at("dampening");
      h[3] = live.at("weight_decay");
    }));
    run_op(EMBER_OP("sgd_update"), inputs,
           {{"has_buffer", int64_t(momentum)},
            {"first_step", int64_t(first)},
            {"nesterov", int64_t(o.at("nesterov") != 0.0)},
            {"maximize", int64_t(o.at("maximize") != 0.0)}});
  }
}

}  // namespace ember::autodiff::optim

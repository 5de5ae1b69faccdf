// rmsprop.cpp — RMSprop: its options and the fused update.
#include "ember/autodiff/optim/rmsprop.h"

#include "ember/ops/creation.h"
#include "ember/ops/optimizer.h"

namespace ember::autodiff::optim {

namespace {

void rmsprop_update(const Options& o, const TensorList& params, const TensorList& grads,
                    const std::vector<ParamState*>& states) {
  const double momentum = o.at("momentum");
  const bool centered = o.at("centered") != 0.0;
  // Every buffer starts at zero; the lists the configuration does not use stay empty.
  TensorList square_avgs, momentum_buffers, grad_avgs;
  for (size_t i = 0; i < params.size(); ++i) {
    auto& b = states[i]->buffers;
    auto buffer = [&](const char* name) -> Tensor& {
      if (!b.count(name)) b[name] = zeros_like(params[i]);
      return b[name];
    };
    square_avgs.push_back(buffer("square_avg"));
    if (momentum > 0.0) momentum_buffers.push_back(buffer("momentum_buffer"));
    if (centered) grad_avgs.push_back(buffer("grad_avg"));
  }
  rmsprop_step(params, grads, square_avgs, momentum_buffers, grad_avgs, o.at("lr"), o.at("alpha"),
               o.at("eps"), o.at("weight_decay"), momentum, centered, o.at("maximize") != 0.0);
}

}  // namespace

RMSprop::RMSprop(std::vector<Variable> params, const Options& options)
    : Optimizer("RMSprop",
                {{"lr", 1e-2},
                 {"alpha", 0.99},
                 {"eps", 1e-8},
                 {"weight_decay", 0.0},
                 {"momentum", 0.0},
                 {"centered", 0.0},
                 {"maximize", 0.0}},
                options,
                {{"centered", "maximize"},
                 {},
                 {"square_avg", "momentum_buffer", "grad_avg"},
                 rmsprop_update}) {
  add_param_group(std::move(params));
}

}  // namespace ember::autodiff::optim

// adam.cpp — Adam and AdamW: options, their checks and the fused update.
#include "ember/autodiff/optim/adam.h"

#include "ember/ops/creation.h"
#include "ember/ops/optimizer.h"

namespace ember::autodiff::optim {

Adam::Adam(std::vector<Variable> params, const Options& options)
    : Adam("Adam", std::move(params), options, 0.0, false) {}

Adam::Adam(std::string name, std::vector<Variable> params, const Options& options,
           double weight_decay, bool decoupled)
    : Optimizer(std::move(name),
                {{"lr", 1e-3},
                 {"beta1", 0.9},
                 {"beta2", 0.999},
                 {"eps", 1e-8},
                 {"weight_decay", weight_decay},
                 {"maximize", 0.0}},
                options),
      decoupled_(decoupled) {
  add_param_group(std::move(params));
}

AdamW::AdamW(std::vector<Variable> params, const Options& options)
    : Adam("AdamW", std::move(params), options, 1e-2, true) {}

void Adam::check_options(const Options& options) const { check_adam_options(options); }

void Adam::update(const Options& o, const TensorList& params, const TensorList& grads,
                  const std::vector<ParamState*>& states) {
  // The bias corrections depend on the step, so parameters are updated together per step count:
  // one call, unless some parameters of the group started later than others.
  struct Batch {
    TensorList params, grads, exp_avgs, exp_avg_sqs;
  };
  std::map<int64_t, Batch> by_step;
  for (size_t i = 0; i < params.size(); ++i) {
    auto& b = states[i]->buffers;
    if (!b.count("exp_avg")) b["exp_avg"] = zeros_like(params[i]);
    if (!b.count("exp_avg_sq")) b["exp_avg_sq"] = zeros_like(params[i]);
    Batch& batch = by_step[states[i]->step];
    batch.params.push_back(params[i]);
    batch.grads.push_back(grads[i]);
    batch.exp_avgs.push_back(b["exp_avg"]);
    batch.exp_avg_sqs.push_back(b["exp_avg_sq"]);
  }
  for (const auto& [step, b] : by_step)
    adam_step(b.params, b.grads, b.exp_avgs, b.exp_avg_sqs, step, o.at("lr"), o.at("beta1"),
              o.at("beta2"), o.at("eps"), o.at("weight_decay"), decoupled_,
              o.at("maximize") != 0.0);
}

}  // namespace ember::autodiff::optim

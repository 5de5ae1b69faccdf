// adam.cpp — Adam and AdamW: their options and the fused update.
#include "ember/autodiff/optim/adam.h"

#include "adam_family.h"
#include "ember/autodiff/compile/trace.h"
#include "ember/autodiff/op.h"
#include "ember/ops/creation.h"
#include "ember/ops/optimizer.h"

namespace ember::autodiff::optim {

Adam::Adam(std::vector<Variable> params, const Options& options)
    : Adam("Adam", std::move(params), options, 0.0, false) {}

Adam::Adam(std::string name, std::vector<Variable> params, const Options& options,
           double weight_decay, bool decoupled)
    : Optimizer(std::move(name), adam_family_defaults(1e-3, weight_decay), options,
                adam_family_rule({"exp_avg", "exp_avg_sq"}, nullptr)),
      decoupled_(decoupled) {
  add_param_group(std::move(params));
}

AdamW::AdamW(std::vector<Variable> params, const Options& options)
    : Adam("AdamW", std::move(params), options, 1e-2, true) {}

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

// One adam_update node per parameter (src/rules/update.cpp), its step count read live.
void Adam::traced_update(size_t group, const std::vector<Variable>& params, const TensorList& grads,
                         const std::vector<ParamState*>& states) {
  const Options& o = param_groups()[group].options;
  for (size_t i = 0; i < params.size(); ++i) {
    const Variable& p = params[i];
    compile::see_variable(p);
    compile::see_grad(p.impl_ptr());
    auto& b = states[i]->buffers;
    for (const char* name : {"exp_avg", "exp_avg_sq"}) {
      if (!b.count(name)) b[name] = traced_zeros_like(p.data());
      else declare_buffer(p, name, b[name]);
    }
    const VariableImpl* impl = p.impl();
    // A replay advances the step counts of all its updates before any kernel runs, so an update
    // followed by others of the same parameter in one step reads the count less theirs.
    auto& [trace, earlier] = steps_before_last_[impl];
    if (trace != compile::current_trace_id()) {
      trace = compile::current_trace_id();
      earlier.clear();
    }
    for (const std::shared_ptr<int64_t>& lag : earlier) ++*lag;
    auto lag = std::make_shared<int64_t>(0);
    earlier.push_back(lag);
    Tensor h = hyper(p, 6, [this, group, impl, lag](double* h) {
      const Options& live = param_groups()[group].options;
      h[0] = live.at("lr");
      h[1] = live.at("beta1");
      h[2] = live.at("beta2");
      h[3] = live.at("eps");
      h[4] = live.at("weight_decay");
      const ParamState* live_state = state_of(impl);
      h[5] = live_state ? double(live_state->step - *lag) : 0.0;
    });
    run_op(EMBER_OP("adam_update"), {p.data(), b["exp_avg"], b["exp_avg_sq"], grads[i], h},
           {{"decoupled", int64_t(decoupled_)}, {"maximize", int64_t(o.at("maximize") != 0.0)}});
  }
}

}  // namespace ember::autodiff::optim

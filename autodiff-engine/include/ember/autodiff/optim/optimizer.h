// optimizer.h — the base of every optimizer: parameter groups, per-parameter state, step() and
// a state that saves and restores bit for bit. As in torch.optim:
//
//   optim::SGD opt(model_params, {{"lr", 0.1}, {"momentum", 0.9}});
//   opt.add_param_group(head_params, {{"lr", 0.01}});  // other options from the defaults
//   for (...) { opt.zero_grad(); loss.backward(); opt.step(); }
//
// A group's options are named numbers (PyTorch's group dict; flags such as "nesterov" are 0 or 1).
// The options given to the constructor become the defaults that later groups start from. step()
// runs without recording (NoGradGuard), skips parameters that have no grad and updates each
// group with one fused core-runtime call (ops/optimizer.h) over all its parameters.
//
// Every optimizer also takes the option "master_weights" (0 or 1, default 0): with it, each
// float16/bfloat16 parameter of the group is updated through a float32 copy of itself kept in
// its state (buffer "master"), with float32 gradients and float32 optimizer buffers, and is
// then set to the copy rounded to its dtype. Small updates that a half-precision parameter
// would round away (bfloat16 keeps 8 bits: 1 + 1e-3 == 1) so still add up. Parameters of other
// dtypes are updated as without it. A write to the parameter between steps (loading weights
// into the model) is noticed through its version counter and starts the copy again from it.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/autodiff/variable.h"

namespace ember::autodiff::optim {

using Options = std::map<std::string, double>;

struct ParamGroup {
  std::vector<Variable> params;
  Options options;  // every option of the optimizer, filled in from its defaults

  double lr() const { return options.at("lr"); }
  void set_lr(double lr) { options["lr"] = lr; }
};

// What an optimizer keeps for one parameter: how many updates it has had, its named buffers
// ("momentum_buffer", "exp_avg", ...), each of the parameter's shape, and named numbers kept on
// the host (NAdam's "mu_product").
struct ParamState {
  int64_t step = 0;
  std::map<std::string, Tensor> buffers;
  std::map<std::string, double> scalars;
};

// A plain copy of an optimizer's state (PyTorch's state_dict). Parameters are numbered in group
// order, 0 up; a parameter that was never updated has no entry in `state`.
struct OptimizerState {
  struct Group {
    Options options;
    std::vector<int64_t> params;  // the numbers of this group's parameters
  };
  std::vector<Group> param_groups;
  std::map<int64_t, ParamState> state;
};

// What the optimizers share that is data, not code: given to Optimizer's constructor, it
// supplies the defaults of check_options, buffer_names and update, so that an optimizer whose
// update is a plain function (most of them) declares nothing but its constructor.
struct OptimizerRule {
  // check_options: every option of the defaults is a number >= 0, but the flags (0 or 1) and
  // the fractions (within [0, 1)).
  std::vector<std::string> flags;
  std::vector<std::string> fractions;
  std::vector<std::string> buffers;  // buffer_names
  // update: a group's update (Optimizer::update's contract); empty where the optimizer
  // overrides update.
  std::function<void(const Options& options, const TensorList& params, const TensorList& grads,
                     const std::vector<ParamState*>& states)>
      update;
};

class Optimizer {
 public:
  static constexpr const char* kMasterWeights = "master_weights";  // the option
  static constexpr const char* kMaster = "master";                 // the state buffer

  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  const std::string& name() const { return name_; }
  const Options& defaults() const { return defaults_; }
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }

  // Learning rate of one group, read and set (schedules do this between steps).
  double lr(size_t group = 0) const;
  void set_lr(double lr, size_t group = 0);

  // A new group: `options` override the defaults. ValueError for an unknown or invalid option,
  // an empty list, a parameter that is not a leaf or is already in a group.
  void add_param_group(std::vector<Variable> params, const Options& options = {});

  void zero_grad();  // drops every parameter's grad (PyTorch's set_to_none)
  void step();

  // The state of a parameter (nullptr before its first update).
  const ParamState* state(const Variable& param) const;

  // Deep copies: later steps do not change a saved state, nor does the saved state alias the
  // optimizer's. load_state_dict takes the options (lr included) and the state of a state_dict
  // from an optimizer of the same kind over parameters of the same shapes, in the same groups;
  // buffers are copied to each parameter's device and dtype.
  OptimizerState state_dict() const;
  void load_state_dict(const OptimizerState& saved);

 protected:
  // `defaults` name every option with its default value; `options` override them. `rule`
  // gives the defaults of the three functions below; an optimizer without one overrides them.
  Optimizer(std::string name, Options defaults, const Options& options, OptimizerRule rule = {});

  // ValueError (naming the optimizer, the option and the fix) unless `options` are valid. The
  // default checks the defaults' options as the rule says.
  virtual void check_options(const Options& options) const;
  // The buffer (and scalar) names a parameter's state may hold: the rule's buffers.
  virtual std::vector<std::string> buffer_names() const { return rule_.buffers; }
  // Updates `params` in place from `grads`. states[i] is params[i]'s state, its step already
  // counting this update; missing buffers are the implementation's to create. The default
  // calls the rule's update.
  virtual void update(const Options& options, const TensorList& params, const TensorList& grads,
                      const std::vector<ParamState*>& states);
  // The same while a compiled step is traced (compile/compile.h): one in-place update node per
  // parameter over its state, with the numbers that change between steps (lr, the step count)
  // in a hyper tensor the replay refills. The default is a CaptureError: only the optimizers
  // that override it can be compiled.
  virtual void traced_update(size_t group, const std::vector<Variable>& params,
                             const TensorList& grads, const std::vector<ParamState*>& states);

  // Helpers for traced_update. A state buffer `name` of p that existed before the step: bound
  // to the live buffer at every replay.
  void declare_buffer(const Variable& p, const std::string& name, const Tensor& buffer);
  // A new buffer of p's type, as a node of the step's graph (its first step creates it).
  static Tensor traced_zeros_like(const Tensor& like);
  // A float64 CPU tensor of `count` numbers that `fill` writes, from the live options and
  // state, now and before every replay.
  Tensor hyper(const Variable& p, int64_t count, std::function<void(double*)> fill);
  // The state of the parameter whose Variable is `p` (nullptr before its first update).
  const ParamState* state_of(const VariableImpl* p) const {
    auto it = state_.find(p);
    return it == state_.end() ? nullptr : &it->second;
  }

  // Helpers for check_options: each throws a ValueError naming this optimizer and the option.
  void check_at_least(const Options& options, const char* option, double low) const;
  void check_in_range(const Options& options, const char* option, double low, double high) const;
  void check_flag(const Options& options, const char* option) const;
  // lr, eps, weight_decay >= 0, beta1 and beta2 in [0, 1), maximize a flag: the options of
  // Adam's family, for an optimizer that overrides check_options (this library's own give the
  // same checks as an OptimizerRule).
  void check_adam_options(const Options& options) const;

 private:
  Options merged(const Options& options) const;  // defaults_ overridden by options
  // master_weights is a flag, then the optimizer's own checks.
  void check_group_options(const Options& options) const;
  Tensor master_copy(const Variable& param, ParamState& state);

  std::string name_;
  Options defaults_;
  std::vector<std::string> option_names_;  // the options the constructor's defaults name
  OptimizerRule rule_;
  std::vector<ParamGroup> groups_;
  // While tracing: what the replay depends on (which state exists, the options that are not
  // read live) and the step counts it advances.
  std::string traced_structure() const;
  void trace_host_state(const std::vector<const VariableImpl*>& updated);

  std::map<const VariableImpl*, ParamState> state_;  // by parameter identity
  // Expires with the optimizer: what a compiled step's replay holds of it.
  std::shared_ptr<char> alive_ = std::make_shared<char>(0);
  // The version of each master-weight parameter after its last step's write.
  std::map<const VariableImpl*, int64_t> master_versions_;
};

}  // namespace ember::autodiff::optim

// optimizer.cpp — groups, state and the step loop shared by every optimizer.
#include "ember/autodiff/optim/optimizer.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "ember/autodiff/compile/trace.h"
#include "ember/autodiff/op.h"
#include "ember/ops/creation.h"

namespace ember::autodiff::optim {

namespace {
std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string option_names(const Options& options) {
  std::string names;
  for (const auto& [name, value] : options) names += (names.empty() ? "" : ", ") + name;
  return names;
}

// A fresh copy of `src` with the device and dtype of `like`, or float32 when `master`.
Tensor copy_like(const Tensor& src, const Tensor& like, bool master) {
  Tensor dst = empty(like.shape(), master ? DType::Float32 : like.dtype(), like.device());
  dst.copy_(src);
  return dst;
}

bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
}  // namespace

Optimizer::Optimizer(std::string name, Options defaults, const Options& options, OptimizerRule rule)
    : name_(std::move(name)), defaults_(std::move(defaults)), rule_(std::move(rule)) {
  for (const auto& [option, value] : defaults_) option_names_.push_back(option);
  defaults_.emplace(kMasterWeights, 0.0);
  defaults_ = merged(options);
}

void Optimizer::check_group_options(const Options& options) const {
  check_flag(options, kMasterWeights);
  check_options(options);
}

Options Optimizer::merged(const Options& options) const {
  Options result = defaults_;
  for (const auto& [name, value] : options) {
    // initial_lr belongs to learning-rate schedules (lr_scheduler.h), as in PyTorch.
    if (!defaults_.count(name) && name != "initial_lr")
      throw ValueError(name_,
                       "unknown option '" + name + "'; the options are " + option_names(defaults_));
    result[name] = value;
  }
  return result;
}

double Optimizer::lr(size_t group) const {
  if (group >= groups_.size())
    throw IndexError(name_ + ".lr",
                     "group " + std::to_string(group) + " of " + std::to_string(groups_.size()));
  return groups_[group].lr();
}

void Optimizer::set_lr(double lr, size_t group) {
  if (group >= groups_.size())
    throw IndexError(name_ + ".set_lr",
                     "group " + std::to_string(group) + " of " + std::to_string(groups_.size()));
  Options options = groups_[group].options;
  options["lr"] = lr;
  check_group_options(options);
  groups_[group].set_lr(lr);
}

void Optimizer::add_param_group(std::vector<Variable> params, const Options& options) {
  const std::string op = name_ + ".add_param_group";
  if (params.empty())
    throw ValueError(op, "the parameter list is empty; pass at least one parameter");
  std::set<const VariableImpl*> seen;
  for (const ParamGroup& g : groups_)
    for (const Variable& p : g.params) seen.insert(p.impl());
  for (const Variable& p : params) {
    if (!p.defined()) throw ValueError(op, "a parameter is undefined");
    if (!p.is_leaf())
      throw ValueError(op, "a parameter (" + p.str() + ") was made by op '" + p.op_name() +
                               "'; only leaves can be optimized (detach() it, or pass the leaf)");
    if (!seen.insert(p.impl()).second)
      throw ValueError(op, "a parameter (" + p.str() +
                               ") appears twice (in this group or an earlier one); "
                               "give each parameter to one group only");
  }
  Options all = merged(options);
  check_group_options(all);
  groups_.push_back(ParamGroup{std::move(params), std::move(all)});
}

void Optimizer::zero_grad() {
  for (const ParamGroup& g : groups_)
    for (const Variable& p : g.params) p.zero_grad();
}

void Optimizer::step() {
  NoGradGuard no_grad;
  const bool traced = compile::tracing();
  std::vector<const VariableImpl*> updated;
  if (traced) {
    std::weak_ptr<char> alive = alive_;
    bool first = false;
    for (const ParamGroup& g : groups_)
      for (const Variable& p : g.params) first = first || (p.grad().defined() && !state(p));
    compile::add_guard(
        name_ + " state",
        [this, alive] { return alive.expired() ? std::string("gone") : traced_structure(); },
        first);
  }
  for (size_t i = 0; i < groups_.size(); ++i) {
    const ParamGroup& g = groups_[i];
    const bool master_weights = g.options.at(kMasterWeights) != 0.0;
    TensorList params, grads;
    std::vector<ParamState*> states;
    std::vector<Variable> vars;
    std::vector<std::pair<Variable, Tensor>> write_back;  // (half parameter, its master copy)
    for (const Variable& p : g.params) {
      if (!p.grad().defined()) continue;
      ParamState& s = state_[p.impl()];
      ++s.step;
      states.push_back(&s);
      vars.push_back(p);
      updated.push_back(p.impl());
      if (master_weights && is_half(p.dtype())) {
        compile::check_capturable(name_ + ".step", "the float32 master weights of a half parameter",
                                  "step this optimizer outside the compiled step, or turn "
                                  "master_weights off");
        const Tensor master = master_copy(p, s);
        params.push_back(master);
        grads.push_back(p.grad().data().to(DType::Float32));
        write_back.emplace_back(p, master);
      } else {
        params.push_back(p.data());
        grads.push_back(p.grad().data());
      }
    }
    if (params.empty()) continue;
    if (traced) traced_update(i, vars, grads, states);
    else update(g.options, params, grads, states);
    for (const auto& [param, master] : write_back) {
      param.data().copy_(master);  // rounded to the parameter's dtype
      master_versions_[param.impl()] = param.data().version();
    }
  }
  if (traced) trace_host_state(updated);
}

void Optimizer::check_options(const Options& options) const {
  auto among = [](const std::vector<std::string>& names, const std::string& option) {
    return std::find(names.begin(), names.end(), option) != names.end();
  };
  for (const std::string& option : option_names_) {
    if (among(rule_.flags, option)) check_flag(options, option.c_str());
    else if (among(rule_.fractions, option)) check_in_range(options, option.c_str(), 0.0, 1.0);
    else check_at_least(options, option.c_str(), 0.0);
  }
}

void Optimizer::update(const Options& options, const TensorList& params, const TensorList& grads,
                       const std::vector<ParamState*>& states) {
  if (!rule_.update)
    throw NotSupportedError(name_ + ".step", "no update: the optimizer must override update()");
  rule_.update(options, params, grads, states);
}

void Optimizer::traced_update(size_t, const std::vector<Variable>&, const TensorList&,
                              const std::vector<ParamState*>&) {
  compile::check_capturable(name_ + ".step", name_ + "'s update",
                            "use SGD, Adam or AdamW inside a compiled step (their updates are "
                            "ops), or call step() outside it");
}

void Optimizer::trace_host_state(const std::vector<const VariableImpl*>& updated) {
  // A replay runs no step(): it advances the step counts itself, before its kernels read them.
  std::weak_ptr<char> alive = alive_;
  compile::on_replay([this, alive, updated] {
    if (alive.expired()) return;
    for (const VariableImpl* p : updated) ++state_[p].step;
  });
}

std::string Optimizer::traced_structure() const {
  std::ostringstream os;
  for (const ParamGroup& g : groups_) {
    os << "{";
    for (const auto& [name, value] : g.options)
      if (name != "lr" && name != "initial_lr") os << name << "=" << value << " ";
    for (const Variable& p : g.params) {
      const ParamState* s = state(p);
      os << "[";
      if (s)
        for (const auto& [name, buffer] : s->buffers) os << name << " ";
      os << (s ? "" : "no state") << "]";
    }
    os << "}";
  }
  return os.str();
}

void Optimizer::declare_buffer(const Variable& p, const std::string& name, const Tensor& buffer) {
  std::weak_ptr<char> alive = alive_;
  const VariableImpl* impl = p.impl();
  compile::declare_state(buffer, compile::DeclaredKind::OptimizerState, name, impl,
                         [this, alive, impl, name]() -> Tensor {
                           if (alive.expired()) return Tensor();
                           auto it = state_.find(impl);
                           if (it == state_.end() || !it->second.buffers.count(name))
                             return Tensor();
                           return it->second.buffers.at(name);
                         });
}

Tensor Optimizer::traced_zeros_like(const Tensor& like) {
  return run_op(op_def("zeros_like"), {like}, {})[0];
}

Tensor Optimizer::hyper(const Variable& p, int64_t count, std::function<void(double*)> fill) {
  Tensor h = Tensor::empty({count}, DType::Float64, Device());
  fill(h.data<double>());
  std::weak_ptr<char> alive = alive_;
  compile::declare_state(h, compile::DeclaredKind::Hyper, "hyper", p.impl(),
                         [h, alive, fill]() -> Tensor {
                           if (alive.expired()) return Tensor();
                           fill(h.data<double>());
                           return h;
                         });
  return h;
}

// The float32 copy that a half-precision parameter's updates accumulate in: made at its first
// step, and made again from the parameter when something else wrote to the parameter since the
// last step (a checkpoint loaded into the model, say).
Tensor Optimizer::master_copy(const Variable& p, ParamState& s) {
  Tensor& master = s.buffers[kMaster];
  const auto seen = master_versions_.find(p.impl());
  const bool stale = seen != master_versions_.end() && seen->second != p.data().version();
  if (!master.defined() || stale) master = p.data().to(DType::Float32);
  return master;
}

const ParamState* Optimizer::state(const Variable& param) const {
  auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : &it->second;
}

OptimizerState Optimizer::state_dict() const {
  OptimizerState saved;
  int64_t index = 0;
  for (const ParamGroup& g : groups_) {
    OptimizerState::Group group{g.options, {}};
    for (const Variable& p : g.params) {
      group.params.push_back(index);
      if (const ParamState* s = state(p)) {
        ParamState copy{s->step, {}, s->scalars};
        for (const auto& [name, buffer] : s->buffers) copy.buffers[name] = buffer.clone();
        saved.state[index] = std::move(copy);
      }
      ++index;
    }
    saved.param_groups.push_back(std::move(group));
  }
  return saved;
}

void Optimizer::load_state_dict(const OptimizerState& saved) {
  const std::string op = name_ + ".load_state_dict";
  if (saved.param_groups.size() != groups_.size())
    throw ValueError(op, "the saved state has " + std::to_string(saved.param_groups.size()) +
                             " parameter groups but this optimizer has " +
                             std::to_string(groups_.size()) +
                             "; load a state saved from an optimizer built the same way");
  std::vector<const Variable*> params;  // by number, in group order
  for (size_t i = 0; i < groups_.size(); ++i) {
    const size_t have = groups_[i].params.size(), want = saved.param_groups[i].params.size();
    if (have != want)
      throw ValueError(op, "group " + std::to_string(i) + " has " + std::to_string(have) +
                               " parameters but the saved group has " + std::to_string(want) +
                               "; load a state saved from an optimizer built the same way");
    check_group_options(merged(saved.param_groups[i].options));
    for (const Variable& p : groups_[i].params) params.push_back(&p);
  }
  const std::vector<std::string> names = buffer_names();
  std::map<const VariableImpl*, ParamState> state;
  for (const auto& [index, s] : saved.state) {
    if (index < 0 || index >= int64_t(params.size()))
      throw ValueError(op, "the saved state has parameter " + std::to_string(index) +
                               " but this optimizer has " + std::to_string(params.size()));
    const Tensor& p = params[index]->data();
    auto check_name = [&](const std::string& name) {
      if (std::find(names.begin(), names.end(), name) == names.end())
        throw ValueError(op, "parameter " + std::to_string(index) + " has state '" + name +
                                 "', which " + name_ + " does not keep; load a state saved by " +
                                 name_);
    };
    ParamState copy{s.step, {}, s.scalars};
    // A master-weight parameter's buffers are all float32, like its master copy.
    const bool master = s.buffers.count(kMaster) != 0;
    for (const auto& [name, value] : s.scalars) check_name(name);
    for (const auto& [name, buffer] : s.buffers) {
      if (name != kMaster) check_name(name);
      if (!buffer.defined() || buffer.shape() != p.shape())
        throw ShapeError(op, "state '" + name + "' of parameter " + std::to_string(index) + " is " +
                                 describe(buffer) + " but the parameter is " + p.str() +
                                 "; the parameters must have the shapes they had when saved");
      copy.buffers[name] = copy_like(buffer, p, master);
    }
    state[params[index]->impl()] = std::move(copy);
  }
  // Nothing changes before every check has passed.
  for (size_t i = 0; i < groups_.size(); ++i)
    groups_[i].options = merged(saved.param_groups[i].options);
  state_ = std::move(state);
  master_versions_.clear();  // the loaded master copies are the truth
}

void Optimizer::check_at_least(const Options& options, const char* option, double low) const {
  const double v = options.at(option);
  if (!(v >= low))
    throw ValueError(name_, std::string("option '") + option + "' is " + number(v) +
                                "; it must be >= " + number(low) + " (pass a value in range)");
}

void Optimizer::check_in_range(const Options& options, const char* option, double low,
                               double high) const {
  const double v = options.at(option);
  if (!(v >= low && v < high))
    throw ValueError(name_, std::string("option '") + option + "' is " + number(v) +
                                "; it must lie in [" + number(low) + ", " + number(high) +
                                ") (pass a value in range)");
}

void Optimizer::check_flag(const Options& options, const char* option) const {
  const double v = options.at(option);
  if (v != 0.0 && v != 1.0)
    throw ValueError(name_, std::string("option '") + option + "' is " + number(v) +
                                "; it is a flag: pass 0 (off) or 1 (on)");
}

void Optimizer::check_adam_options(const Options& options) const {
  check_at_least(options, "lr", 0.0);
  check_at_least(options, "eps", 0.0);
  check_in_range(options, "beta1", 0.0, 1.0);
  check_in_range(options, "beta2", 0.0, 1.0);
  check_at_least(options, "weight_decay", 0.0);
  check_flag(options, "maximize");
}

}  // namespace ember::autodiff::optim

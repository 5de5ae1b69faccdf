// variable.cpp — Variables, grad mode and recording each op as it runs.
#include "ember/autodiff/variable.h"

#include <algorithm>

#include "../debug_log.h"
#include "ember/autodiff/autocast.h"
#include "ember/autodiff/compile/trace.h"
#include "record.h"

namespace ember::autodiff {

namespace {
thread_local bool grad_mode = true;

const Variable& undefined_variable() {
  static const Variable v;
  return v;
}

VariableImpl& checked(const std::shared_ptr<VariableImpl>& impl, const char* what) {
  if (!impl) throw ValueError(what, "the Variable is undefined");
  return *impl;
}
}  // namespace

bool grad_enabled() { return grad_mode; }
void set_grad_enabled(bool enabled) { grad_mode = enabled; }

Variable::Variable(Tensor data, bool requires_grad) : impl_(std::make_shared<VariableImpl>()) {
  if (!data.defined()) throw ValueError("Variable", "the tensor is undefined");
  impl_->data = std::move(data);
  impl_->made_in_trace = compile::current_trace_id();
  set_requires_grad(requires_grad);
}

const std::string& Variable::name() const {
  static const std::string none;
  return impl_ ? impl_->name : none;
}
const Variable& Variable::set_name(std::string name, bool is_buffer) const {
  VariableImpl& impl = checked(impl_, "set_name");
  impl.name = std::move(name);
  impl.is_buffer = is_buffer;
  return *this;
}

const Tensor& Variable::data() const { return checked(impl_, "Variable.data").data; }
bool Variable::requires_grad() const { return impl_ && impl_->requires_grad; }
bool Variable::is_leaf() const { return !impl_ || impl_->record == nullptr; }
const char* Variable::op_name() const { return is_leaf() ? "" : impl_->record->op->name.c_str(); }

Variable& Variable::set_requires_grad(bool requires_grad) {
  VariableImpl& impl = checked(impl_, "requires_grad");
  if (impl.record)
    throw ValueError("requires_grad",
                     std::string("this Variable was made by ") + op_name() +
                         ", and requires grad because its inputs do; only leaves can be "
                         "changed. Fix: use detach() for a leaf of the same data");
  if (requires_grad && !is_floating(impl.data.dtype()))
    throw DTypeError("requires_grad", "only floating tensors can require grad, not " +
                                          describe(impl.data) +
                                          ". Fix: convert it first, e.g. "
                                          "to float32");
  impl.requires_grad = requires_grad;
  return *this;
}

const Variable& Variable::grad() const { return impl_ ? impl_->grad : undefined_variable(); }
void Variable::set_grad(Variable grad) const {
  VariableImpl& impl = checked(impl_, "grad");
  if (grad.defined() && grad.shape() != impl.data.shape())
    throw ShapeError("grad", "a gradient of " + grad.str() + " for a Variable of " +
                                 impl.data.str() + "; the shapes must match");
  impl.grad = std::move(grad);
  if (!compile::tracing()) return;
  if (impl.grad.defined()) compile::grad_written(impl_, impl.grad.data());
  else compile::grad_dropped(impl_);
}
void Variable::zero_grad() const {
  if (!impl_) return;
  impl_->grad = Variable();
  if (compile::tracing()) compile::grad_dropped(impl_);
}
void Variable::retain_grad() const {
  VariableImpl& impl = checked(impl_, "retain_grad");
  if (!impl.requires_grad)
    throw ValueError("retain_grad", "this Variable (" + impl.data.str() +
                                        ") does not require grad, so it never gets one");
  impl.retains_grad = true;
}
HookHandle Variable::register_hook(GradHook hook) const {
  VariableImpl& impl = checked(impl_, "register_hook");
  if (!impl.requires_grad)
    throw ValueError("register_hook", "this Variable (" + impl.data.str() +
                                          ") does not require grad, so a hook would never run");
  const int64_t id = impl.next_hook_id++;
  impl.hooks.emplace_back(id, std::move(hook));
  return HookHandle(impl_, id);
}

void HookHandle::remove() {
  std::shared_ptr<VariableImpl> impl = impl_.lock();
  if (!impl) return;
  auto& hooks = impl->hooks;
  hooks.erase(std::remove_if(hooks.begin(), hooks.end(),
                             [&](const auto& entry) { return entry.first == id_; }),
              hooks.end());
  impl_.reset();
}

Variable Variable::detach() const { return Variable(data(), false); }

const Variable& Variable::copy_(const Variable& src) const {
  VariableImpl& impl = checked(impl_, "copy_");
  if (grad_mode && impl.requires_grad)
    throw ValueError("copy_", "an in-place write to a Variable that requires grad (" +
                                  impl.data.str() +
                                  ") would lose its history. Fix: write under "
                                  "NoGradGuard (as an optimizer step does), or make a new "
                                  "Variable");
  if (compile::tracing()) {  // as an op, so that the write is a node of the step's graph
    compile::see_variable(*this);
    compile::see_variable(src);
    run_op(EMBER_OP("copy_"), {impl.data, src.data()}, {});
    return *this;
  }
  impl.data.copy_(src.data());
  return *this;
}

// ---- apply for eager handles (ops/apply.h) ----

std::vector<Variable> apply(const OpDef& op, const std::vector<Variable>& given, Attrs attrs) {
  // Under autocast the op runs on its inputs cast by its policy, each cast recorded (autocast.h).
  std::vector<Variable> cast;
  if (autocast_any_enabled()) cast = autocast_inputs(op, given, attrs);
  const std::vector<Variable>& inputs = cast.empty() ? given : cast;
  std::vector<Tensor> tensors;
  tensors.reserve(inputs.size());
  bool any_requires_grad = false;
  for (const Variable& v : inputs) {
    if (!v.defined()) continue;
    tensors.push_back(v.data());
    any_requires_grad = any_requires_grad || v.requires_grad();
    if (compile::tracing()) compile::see_variable(v);
  }
  const bool log = debug_enabled();
  const auto start =
      log ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  std::vector<Tensor> outs = run_op(op, tensors, attrs);
  if (log) log_op(op.name, tensors, outs, start);
  const bool record = grad_mode && any_requires_grad && op.grad != nullptr;

  std::shared_ptr<Record> rec;
  if (record) {
    rec = std::make_shared<Record>();
    rec->op = &op;
    std::vector<char> requires_grad;
    for (const Variable& v : inputs)
      if (v.defined()) requires_grad.push_back(v.requires_grad());
    const SavedValues saved = saved_values(op, attrs, tensors, requires_grad);
    rec->attrs = std::move(attrs);
    size_t i = 0;
    for (const Variable& v : inputs) {
      if (!v.defined()) continue;
      rec->input_versions.push_back(v.data().version());
      const std::shared_ptr<VariableImpl>& in = v.impl_ptr();
      if (!in->record) {
        rec->inputs.push_back(in);
      } else {  // a recorded value: saved in its producer's record when read, held nowhere else
        if (saved.inputs[i]) in->record->outputs[size_t(in->output)] = in->data;
        auto stand_in = std::make_shared<VariableImpl>();
        stand_in->requires_grad = true;
        stand_in->record = in->record;
        stand_in->output = in->output;
        rec->inputs.push_back(std::move(stand_in));
      }
      ++i;
    }
    rec->outputs.resize(outs.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      rec->output_versions.push_back(outs[k].version());
      rec->output_types.push_back(type_of(outs[k]));
      if (saved.outputs[k]) rec->outputs[k] = outs[k];
    }
  }
  std::vector<Variable> result;
  result.reserve(outs.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    auto impl = std::make_shared<VariableImpl>();
    impl->data = std::move(outs[k]);
    if (record && is_floating(impl->data.dtype())) {
      impl->requires_grad = true;
      impl->record = rec;
      impl->output = int32_t(k);
    }
    if (rec) rec->output_vars.push_back(impl);
    result.emplace_back(std::move(impl));
  }
  return result;
}

}  // namespace ember::autodiff

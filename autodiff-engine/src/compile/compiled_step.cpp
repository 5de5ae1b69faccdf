// compiled_step.cpp — the cache of plans: replay the one whose guards hold, or trace again.
#include <algorithm>
#include <iostream>
#include <unordered_map>

#include "fused_kernels.h"
#include "plan.h"
#include "shared_arena.h"

namespace ember::autodiff::compile {

CompiledStep::CompiledStep(StepFn fn, CompileOptions options)
    : fn_(std::move(fn)), options_(std::move(options)), arena_(std::make_shared<SharedArena>()) {
  if (!fn_) throw ValueError("compile", "the step function is empty; pass a callable");
  if (options_.memory_budget < 0)
    throw ValueError("compile", "memory_budget is " + std::to_string(options_.memory_budget) +
                                    "; pass a number of bytes, or 0 for no budget");
}
CompiledStep::~CompiledStep() = default;
CompiledStep::CompiledStep(CompiledStep&&) noexcept = default;
CompiledStep& CompiledStep::operator=(CompiledStep&&) noexcept = default;

std::vector<Variable> CompiledStep::operator()(const std::vector<Variable>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined())
      throw ValueError(options_.name, "argument " + std::to_string(i) + " is undefined");
  const CallGuards call = read_call_guards(inputs, options_);
  std::optional<GuardFailure> failure;
  for (size_t i = 0; i < plans_.size(); ++i) {
    std::optional<GuardFailure> f = plans_[i]->check(call);
    if (!f) {
      std::rotate(plans_.begin(), plans_.begin() + long(i), plans_.begin() + long(i) + 1);
      ++replays_;
      last_replayed_ = true;
      plan_id_ = plans_.front()->id;
      return plans_.front()->replay(inputs);
    }
    if (i == 0) failure = f;
  }
  if (failure) {
    retraces_.push_back(failure->str());
    const bool seen = std::find(warned_.begin(), warned_.end(), failure->name) != warned_.end();
    if (!failure->quiet && !seen) {
      warned_.push_back(failure->name);
      const std::string message = "ember.compile: " + options_.name + " is traced again: guard " +
                                  failure->str() + " (warned once per guard)";
      if (options_.warn) options_.warn(message);
      else std::cerr << message << "\n";
    }
  }

  std::vector<std::string> names = options_.input_names;
  for (size_t i = names.size(); i < inputs.size(); ++i)
    names.push_back("input" + std::to_string(i));
  names.resize(inputs.size());
  std::unordered_map<const VariableImpl*, std::string> state_names;
  for (const auto& [v, name] : options_.state_names)
    if (v.defined()) state_names[v.impl()] = name;

  std::vector<Variable> out;
  TracedStep traced;
  arena_->release();  // the trace runs eagerly: no plan's buffers are needed meanwhile
  {
    Tracer tracer(inputs, names, state_names);
    out = fn_(inputs);
    traced = tracer.finish(out);
  }
  ++traces_;
  last_replayed_ = false;
  plans_.insert(plans_.begin(),
                std::make_unique<Plan>(std::move(traced), call, options_, names, arena_));
  plans_.front()->id = plan_id_ = traces_;
  if (plans_.size() > kMaxPlans) plans_.pop_back();
  for (Variable& v : out) v = v.detach();
  return out;
}

std::string CompiledStep::explain() const {
  if (plans_.empty()) return options_.name + ": not traced yet (the first call traces)\n";
  Explain e = plans_.front()->explain();
  const std::string calls = "calls";
  e.add(calls, std::to_string(traces_) + " traces, " + std::to_string(replays_) + " replays, " +
                   std::to_string(plans_.size()) + " plans kept (at most " +
                   std::to_string(kMaxPlans) + ")");
  e.add(calls, "one arena shared by all plans (they never replay at once): " +
                   std::to_string(arena_->bytes()) + " bytes, the largest plan's");
  for (const std::string& why : retraces_) e.add(calls, "traced again: guard " + why);
  return e.str();
}

std::string CompiledStep::graph() const { return program().graph->str(); }

const Program& CompiledStep::program() const {
  if (plans_.empty())
    throw ValueError(options_.name, "not traced yet: call the compiled step once first");
  return plans_.front()->program();
}

namespace {
// The kernel numbers of a program's fused nodes, in program order (explain()'s group numbers).
std::vector<int64_t> fused_kernel_ids(const Program& p) {
  std::vector<int64_t> ids;
  for (int32_t k = 0; k < p.graph->num_nodes(); ++k)
    if (p.graph->node(k).op == &fused_op()) ids.push_back(p.graph->node(k).attrs.i("kernel"));
  return ids;
}
}  // namespace

int CompiledStep::fused_groups() const { return int(fused_kernel_ids(program()).size()); }

std::string CompiledStep::source(int group) const {
  const std::vector<int64_t> ids = fused_kernel_ids(program());
  if (group < 0 || group >= int(ids.size()))
    throw ValueError(options_.name, "no fused group " + std::to_string(group) + ": the step has " +
                                        std::to_string(ids.size()) +
                                        " (explain() lists them in its fusion section)");
  return fused_kernel(ids[size_t(group)]).rendered.source;
}

CompiledStep compile(StepFn fn, CompileOptions options) {
  return CompiledStep(std::move(fn), std::move(options));
}

}  // namespace ember::autodiff::compile

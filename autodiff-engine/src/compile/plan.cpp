// plan.cpp — guards, the passes and the replay of one traced step (plan.h).
#include "plan.h"

#include <sstream>

#include "../eager/record.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/ops/creation.h"

namespace ember::autodiff::compile {

TensorIdentity identity_of(const Tensor& t) {
  if (!t.defined()) return {};
  return TensorIdentity{t.storage().get(), t.offset(), t.shape(),
                        t.strides(),       t.dtype(),  t.device()};
}

std::string describe_identity(const TensorIdentity& id) {
  if (!id.storage) return "none";
  std::ostringstream os;
  os << short_dtype_name(id.dtype) << shape_str(id.shape) << " strides " << shape_str(id.strides)
     << " offset " << id.offset << " on " << id.device.str() << " in memory " << id.storage;
  return os.str();
}

CallGuards read_call_guards(const std::vector<Variable>& inputs, const CompileOptions& options) {
  CallGuards g;
  for (const Variable& v : inputs) g.inputs.emplace_back(type_of(v.data()), v.requires_grad());
  g.grad_mode = grad_enabled();
  if (options.guards) g.extra = options.guards();
  return g;
}

namespace {

std::string input_text(const std::pair<TensorType, bool>& in) {
  return in.first.str() + (in.second ? " requires_grad" : "");
}

// The passes, in order, then the memory plan of what the nodes allocated while traced.
// Fusion runs after rematerialisation (which recomputes single nodes of the unfused graph, and
// plans with the traced allocations) and before in-place reuse and the memory plan, which then
// see the fused nodes: fewer values, fewer buffers. The GEMM epilogues go first, so that an
// activation after a linear joins the GEMM rather than an elementwise group. Dead-code
// elimination after it drops the views (expands) whose readers the kernels now broadcast
// themselves. Values are computed into their state tensors before in-place reuse, which would
// otherwise write some of them over an input of their node.
Program optimize(Program program, const NodeAllocations& traced, int64_t budget, bool fuse,
                 MemoryPlan& plan, Explain& explain) {
  program = dead_code_elimination(program, explain);
  program = common_subexpressions(program, explain);
  program = fold_constants(program, explain);
  program = dead_code_elimination(program, explain);
  program = hoist_in_place_writes(program, explain);
  program = mask_before_scatter(program, explain);
  if (budget > 0) program = rematerialize(program, budget, traced, explain);
  if (fuse) {
    program = fuse_gemm_epilogue(program, explain);
    program = fuse_elementwise(program, explain);
    program = dead_code_elimination(program, explain);
  } else {
    explain.add("gemm epilogue",
                "off (CompileOptions::fuse): linears stay apart from their "
                "activations");
    explain.add("fusion", "off (CompileOptions::fuse): the step runs the library's kernels");
  }
  program = return_without_copy(program, explain);
  program = group_updates(program, explain);
  program = compute_into_state(program, carry_allocations(program, traced), explain);
  program = reuse_in_place(program, explain);
  plan = plan_memory(program, carry_allocations(program, traced), explain);
  return program;
}

}  // namespace

Plan::Plan(TracedStep traced, CallGuards guards, const CompileOptions& options,
           std::vector<std::string> input_names, std::shared_ptr<SharedArena> arena)
    : bindings_(std::move(traced.bindings)),
      host_effects_(std::move(traced.host_effects)),
      guards_(std::move(traced.guards)),
      drop_grads_(std::move(traced.drop_grads)),
      call_guards_(std::move(guards)),
      input_names_(std::move(input_names)) {
  Program& p = traced.program;
  // Trace section: what was recorded and how each tensor was classified.
  const std::string trace = "trace";
  explain_.add(trace, std::to_string(p.graph->num_nodes()) + " nodes recorded, " +
                          std::to_string(input_names_.size()) + " inputs, " +
                          std::to_string(p.state.size()) + " state tensors, " +
                          std::to_string(p.returned.size()) + " returned values");
  for (const StateSlot& s : p.state)
    explain_.add(trace,
                 std::string(state_kind_name(s.kind)) + " '" + s.name + "' " +
                     p.graph->value(s.value).type.str() +
                     (s.final_value >= 0 ? ": updated in place by the step" : ": read only"));
  for (const std::string& note : traced.notes) explain_.add(trace, note);
  if (!host_effects_.empty())
    explain_.add(trace, std::to_string(host_effects_.size()) +
                            " host updates replayed before the kernels (optimizer step counts)");
  if (!drop_grads_.empty())
    explain_.add(trace, std::to_string(drop_grads_.size()) +
                            " gradients left as none by the step (zero_grad, no backward)");

  const std::string g = "guards";
  for (size_t i = 0; i < call_guards_.inputs.size(); ++i)
    explain_.add(g, "input " + input_names_[i] + ": " + input_text(call_guards_.inputs[i]));
  explain_.add(g, std::string("grad mode: ") + (call_guards_.grad_mode ? "on" : "off"));
  for (const auto& [name, value] : call_guards_.extra) explain_.add(g, name + ": " + value);
  for (size_t i = 0; i < bindings_.size(); ++i) {
    const bool guarded = bindings_[i].guard_identity;
    state_identity_.push_back(guarded ? identity_of(bindings_[i].get()) : TensorIdentity{});
  }
  int64_t identities = 0;
  for (const auto& b : bindings_) identities += b.guard_identity;
  explain_.add(g, "identity and layout of " + std::to_string(identities) + " state tensors");
  for (const Guard& guard : guards_) explain_.add(g, guard.name + ": " + guard.expected);

  MemoryPlan plan;
  if (options.optimize) {
    program_ = optimize(std::move(p), traced.allocations, options.memory_budget, options.fuse, plan,
                        explain_);
  } else {
    program_ = std::move(p);
    explain_.add("passes", "off (CompileOptions::optimize): the traced graph replays as it is");
  }
  explain_collectives(program_, explain_);
  replay_ = std::make_unique<Replay>(program_, options.optimize ? &plan : nullptr, std::move(arena),
                                     explain_);
  const bool on_gpu = replay_->arena_bytes() > 0 && replay_->device().is_cuda();
  if (on_gpu && options.cuda_graph && has_collectives(program_)) {
    // The all-reduces run on the process group's own stream and threads, outside any capture.
    explain_.add("replay", "on " + replay_->device().str() +
                               ": not captured as a CUDA graph (the step all-reduces over a "
                               "process group): the flat list");
  } else if (on_gpu && options.cuda_graph) {
    std::vector<ValueId> hyper;
    for (size_t i = 0; i < bindings_.size(); ++i)
      if (bindings_[i].hyper) hyper.push_back(program_.state[i].value);
    cuda_graph_ = std::make_unique<CudaGraphStep>(program_, *replay_, std::move(hyper));
    explain_.add("replay", "on " + replay_->device().str() +
                               ": captured once as one CUDA graph over the arena and replayed "
                               "with one launch (inputs copied into fixed buffers)");
  }
}

std::optional<GuardFailure> Plan::check(const CallGuards& call) const {
  const auto& want = call_guards_;
  if (call.inputs.size() != want.inputs.size())
    return GuardFailure{"number of inputs", std::to_string(want.inputs.size()),
                        std::to_string(call.inputs.size())};
  for (size_t i = 0; i < want.inputs.size(); ++i)
    if (call.inputs[i] != want.inputs[i])
      return GuardFailure{"input " + input_names_[i], input_text(want.inputs[i]),
                          input_text(call.inputs[i])};
  if (call.grad_mode != want.grad_mode)
    return GuardFailure{"grad mode", want.grad_mode ? "on" : "off", call.grad_mode ? "on" : "off"};
  for (size_t i = 0; i < want.extra.size() && i < call.extra.size(); ++i)
    if (call.extra[i] != want.extra[i])
      return GuardFailure{want.extra[i].first, want.extra[i].second, call.extra[i].second};
  if (call.extra.size() != want.extra.size())
    return GuardFailure{"caller's guards", std::to_string(want.extra.size()),
                        std::to_string(call.extra.size())};
  for (const Guard& guard : guards_) {
    std::string now = guard.read();
    if (now != guard.expected) return GuardFailure{guard.name, guard.expected, now, guard.quiet};
  }
  for (size_t i = 0; i < bindings_.size(); ++i) {
    if (!bindings_[i].guard_identity) continue;
    TensorIdentity now = identity_of(bindings_[i].get());
    if (!(now == state_identity_[i]))
      return GuardFailure{"state " + program_.state[i].name, describe_identity(state_identity_[i]),
                          describe_identity(now)};
  }
  return std::nullopt;
}

std::vector<Variable> Plan::replay(const std::vector<Variable>& inputs) {
  for (const auto& effect : host_effects_) effect();
  const Graph& g = *program_.graph;
  std::vector<Tensor> env(size_t(g.num_values()));
  size_t next = 0;
  for (ValueId id = 0; id < g.num_values() && next < inputs.size(); ++id)
    if (g.value(id).kind == ValueKind::Input) env[size_t(id)] = inputs[next++].data();
  std::vector<Tensor> bound(program_.state.size());
  for (size_t i = 0; i < program_.state.size(); ++i) {
    const StateSlot& s = program_.state[i];
    const TensorType& type = g.value(s.value).type;
    Tensor t = bindings_[i].get();
    if (bindings_[i].grad_of && !bindings_[i].read && (!t.defined() || type_of(t) != type)) {
      // A gradient the step creates, with no buffer of its type yet: one, kept by the .grad.
      t = zeros(type.shape, type.dtype, type.device);
      bindings_[i].grad_of->grad = Variable(t);
    }
    if (!t.defined())
      throw ValueError("compiled step", "state '" + s.name + "' is none now; trace again");
    bound[i] = t;
    env[size_t(s.value)] = t;
  }
  if (cuda_graph_) {
    if (!cuda_graph_->run(env) && !said_why_) {
      explain_.add("replay", cuda_graph_->why());
      said_why_ = true;
    }
  } else {
    replay_->run(env);
  }
  for (size_t i = 0; i < program_.state.size(); ++i) {
    const StateSlot& s = program_.state[i];
    if (s.final_value < 0) continue;
    const Tensor& final_value = env[size_t(s.final_value)];
    // A value computed into its state tensor (compute_into_state) is there already, through a
    // storage object of its own (a placed block): same address and layout, nothing to copy,
    // but the state tensor's version moves as a copy would move it.
    const bool there = final_value.data_ptr() == bound[i].data_ptr() &&
                       final_value.strides() == bound[i].strides();
    if (!there) bound[i].copy_(final_value);
    else if (!final_value.shares_storage(bound[i])) bound[i].bump_version();
    if (bindings_[i].grad_of) {
      auto& grad = bindings_[i].grad_of->grad;
      if (!grad.defined() || !grad.data().shares_storage(bound[i])) grad = Variable(bound[i]);
    }
  }
  for (const auto& p : drop_grads_) p->grad = Variable();
  std::vector<Variable> out;
  for (ValueId id : program_.returned) out.emplace_back(env[size_t(id)]);
  return out;
}

}  // namespace ember::autodiff::compile

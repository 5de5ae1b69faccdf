// replay.cpp — the flat list of kernel calls (replay.h).
#include "replay.h"

#include <climits>

#include "ember/autodiff/compile/trace.h"
#include "ember/autodiff/op.h"
#include "rewrite.h"

namespace ember::autodiff::compile {

namespace {

// The device the step runs on: that of its first input or state value (CPU when none).
Device step_device(const Graph& g) {
  for (ValueId id = 0; id < g.num_values(); ++id) {
    const ValueKind kind = g.value(id).kind;
    if (kind == ValueKind::Input || kind == ValueKind::Parameter || kind == ValueKind::Buffer)
      return g.value(id).type.device;
  }
  return Device();
}

}  // namespace

Replay::Replay(const Program& program, const MemoryPlan* plan, std::shared_ptr<SharedArena> arena,
               Explain& explain)
    : program_(program), arena_(std::move(arena)), device_(step_device(*program.graph)) {
  const Graph& g = *program.graph;
  // Values that must outlive the list: what state holds after the step and what is returned.
  std::vector<int32_t> last_use(size_t(g.num_values()), -1);
  for (int32_t k = 0; k < g.num_nodes(); ++k)
    for (ValueId in : g.node(k).inputs) last_use[size_t(in)] = k;
  for (const StateSlot& s : program.state) {
    last_use[size_t(s.value)] = INT32_MAX;
    if (s.final_value >= 0) last_use[size_t(s.final_value)] = INT32_MAX;
  }
  for (ValueId id : program.returned) last_use[size_t(id)] = INT32_MAX;
  // The values the returned copies read: kept, so that a CUDA graph's replay copies them after.
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    if (is_returned_copy(program, node)) last_use[size_t(node.inputs[0])] = INT32_MAX;
  }

  for (ValueId id = 0; id < g.num_values(); ++id)
    if (g.value(id).kind == ValueKind::Constant) constants_.emplace_back(id, g.value(id).constant);

  int64_t placed_nodes = 0;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    Call call{node.op, &node.attrs, k, node.inputs, node.outputs, {}, {}, {}};
    for (ValueId out : node.outputs) call.types.push_back(g.value(out).type);
    call.returns = is_returned_copy(program, node);
    for (ValueId in : node.inputs)
      if (last_use[size_t(in)] == k && g.value(in).kind == ValueKind::Computed)
        call.drop.push_back(in);
    for (ValueId out : node.outputs)
      if (last_use[size_t(out)] < k) call.drop.push_back(out);
    if (plan) {
      // Every request in order: arena slots, and kServeNormally (-1) for those outside it.
      bool in_arena = false;
      for (const auto& [offset, nbytes] : plan->slots(k)) {
        call.slots.push_back(PlacementSlot{offset, size_t(nbytes)});
        in_arena = in_arena || offset != kServeNormally;
      }
      if (!in_arena) call.slots.clear();
      placed_nodes += in_arena;
    }
    calls_.push_back(std::move(call));
  }
  if (plan && plan->planned_peak > 0) {
    arena_bytes_ = plan->planned_peak;
    arena_->at_least(arena_bytes_, device_);
  }
  const std::string section = "replay";
  explain.add(section, std::to_string(calls_.size()) + " kernel calls in one flat list, " +
                           std::to_string(constants_.size()) + " constants");
  if (plan) {
    explain.add(section, "arena of " + std::to_string(arena_bytes()) + " bytes; " +
                             std::to_string(placed_nodes) +
                             " nodes allocate in it, the others only what outlives the step");
  } else {
    explain.add(section, "no memory plan: every node allocates its outputs as in eager mode");
  }
}

void Replay::check_outputs(const Call& call, const std::vector<Tensor>& outputs) const {
  if (outputs.size() != call.types.size())
    throw Error(call.op->name, "a replay got " + std::to_string(outputs.size()) +
                                   " outputs where the trace saw " +
                                   std::to_string(call.types.size()));
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (!outputs[o].defined() || type_of(outputs[o]) == call.types[o]) continue;
    throw CaptureError(call.op->name,
                       "node " + std::to_string(call.node) + " produced " +
                           type_of(outputs[o]).str() + " where the trace saw " +
                           call.types[o].str() +
                           ": its output's shape depends on the values, which a compiled step "
                           "cannot capture. Fix: keep the op outside the compiled step, or use "
                           "a form of fixed shape (a mask and where() instead of indexing by it)");
  }
}

void Replay::copy_returned(std::vector<Tensor>& env) const {
  for (const Call& call : calls_)
    if (call.returns) env[size_t(call.outputs[0])] = env[size_t(call.inputs[0])].clone();
}

const void* Replay::arena_address() const {
  return arena_bytes_ > 0 ? arena_->at_least(arena_bytes_, device_).data_ptr() : nullptr;
}

void Replay::run(std::vector<Tensor>& env, bool returned_outside) const {
  for (const auto& [id, t] : constants_) env[size_t(id)] = t;
  const Tensor* arena = arena_bytes_ > 0 ? &arena_->at_least(arena_bytes_, device_) : nullptr;
  std::vector<Tensor> inputs;
  for (const Call& call : calls_) {
    if (returned_outside && call.returns) continue;
    inputs.clear();
    for (ValueId in : call.inputs) inputs.push_back(env[size_t(in)]);
    std::vector<Tensor> outputs;
    if (arena && !call.slots.empty()) {
      PlacedAllocations placed(arena->storage(), call.slots);
      outputs = call.op->run(inputs, *call.attrs);
    } else {
      outputs = call.op->run(inputs, *call.attrs);
    }
    check_outputs(call, outputs);
    for (size_t o = 0; o < outputs.size(); ++o)
      env[size_t(call.outputs[o])] = std::move(outputs[o]);
    for (ValueId id : call.drop) env[size_t(id)] = Tensor();
  }
}

}  // namespace ember::autodiff::compile

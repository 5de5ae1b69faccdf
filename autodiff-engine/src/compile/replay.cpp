// replay.cpp — the flat list of kernel calls (replay.h).
#include "replay.h"

#include <climits>
#include <optional>

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

// The call's planned slots with the state tensors bound now. A value computed into its state
// tensor is served inside that tensor when it is laid out as the value (contiguous, of its bytes,
// Ember's own memory); otherwise normally, and the step's end copies it in (Plan::replay).
std::vector<PlacementSlot> bind_slots(const std::vector<PlannedSlot>& planned,
                                      const std::vector<Tensor>& env, bool& in_state) {
  std::vector<PlacementSlot> out;
  in_state = false;
  for (const PlannedSlot& s : planned) {
    if (s.in_state < 0) {
      out.push_back({s.offset, size_t(s.nbytes), Storage()});
      continue;
    }
    const Tensor& t = env[size_t(s.in_state)];
    const bool fits = t.defined() && t.is_contiguous() && t.nbytes() == s.nbytes && t.storage() &&
                      !t.storage()->is_external();
    if (fits) out.push_back({t.offset() * int64_t(t.itemsize()), size_t(s.nbytes), t.storage()});
    else out.push_back({kServeNormally, size_t(s.nbytes), Storage()});
    in_state = in_state || fits;
  }
  return out;
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
      // Every request in order: arena slots, state tensors, and kServeNormally (-1) for the
      // others.
      bool in_arena = false, in_state = false;
      for (const PlannedSlot& slot : plan->slots(k)) {
        call.slots.push_back(slot);
        in_arena = in_arena || slot.offset != kServeNormally;
        in_state = in_state || slot.in_state >= 0;
      }
      if (!in_arena && !in_state) call.slots.clear();
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
    std::optional<PlacedAllocations> placed;  // for the call's requests only
    if (!call.slots.empty()) {
      bool in_state = false;
      std::vector<PlacementSlot> slots = bind_slots(call.slots, env, in_state);
      if (arena || in_state) placed.emplace(arena ? arena->storage() : Storage(), std::move(slots));
    }
    std::vector<Tensor> outputs = call.op->run(inputs, *call.attrs);
    placed.reset();
    check_outputs(call, outputs);
    for (size_t o = 0; o < outputs.size(); ++o)
      env[size_t(call.outputs[o])] = std::move(outputs[o]);
    for (ValueId id : call.drop) env[size_t(id)] = Tensor();
  }
}

}  // namespace ember::autodiff::compile

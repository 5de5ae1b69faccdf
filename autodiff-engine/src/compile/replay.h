// replay.h — a program as a flat list of kernel calls over a table of tensors (private to
// src/compile). Built once per plan; run at every call with the inputs and state bound.
//
// With a memory plan, each node's allocation requests are served from one arena
// (PlacedAllocations, placement.h) at the offsets the plan gave them, or inside the state tensor
// a value is computed into, so a replay asks the caching allocator for nothing but the values it
// returns. The arena is the compiled step's,
// shared by its plans (shared_arena.h). On CUDA the whole list can be captured once as a CUDA
// graph over the arena (cuda_graph.h) and launched as one.
#pragma once
#include <memory>
#include <vector>

#include "ember/autodiff/compile/memory_plan.h"
#include "ember/autodiff/compile/program.h"
#include "ember/placement.h"
#include "shared_arena.h"

namespace ember::autodiff::compile {

class Replay {
 public:
  // plan: null to let every node allocate as in eager mode. arena: the step's, grown to the
  // plan's peak here (so that an arena too large for memory fails while compiling).
  Replay(const Program& program, const MemoryPlan* plan, std::shared_ptr<SharedArena> arena,
         Explain& explain);

  // env: indexed by value id, with the inputs and state bound; filled with what the nodes
  // compute (values no later node reads are dropped, finals and returned values are kept).
  // returned_outside: leave out the copies that make the returned values (a CUDA graph's
  // capture, which may not allocate); copy_returned makes them after.
  void run(std::vector<Tensor>& env, bool returned_outside = false) const;
  void copy_returned(std::vector<Tensor>& env) const;

  // The bytes of the arena this plan places its buffers in (0: no memory plan), and its device.
  int64_t arena_bytes() const { return arena_bytes_; }
  const Device& device() const { return device_; }
  // The arena's memory now: a CUDA graph captured over another is stale.
  const void* arena_address() const;

 private:
  struct Call {
    const OpDef* op;
    const Attrs* attrs;
    int32_t node;
    std::vector<ValueId> inputs, outputs;
    std::vector<TensorType> types;   // what the trace saw each output as
    std::vector<ValueId> drop;       // values read for the last time here
    std::vector<PlannedSlot> slots;  // the node's requests as planned, in order
    bool returns = false;            // a clone making a returned value
  };
  void check_outputs(const Call& call, const std::vector<Tensor>& outputs) const;

  const Program& program_;
  std::vector<Call> calls_;
  std::vector<std::pair<ValueId, Tensor>> constants_;
  std::shared_ptr<SharedArena> arena_;
  int64_t arena_bytes_ = 0;
  Device device_;
};

}  // namespace ember::autodiff::compile

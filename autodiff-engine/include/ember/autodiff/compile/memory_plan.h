// memory_plan.h — the memory plan: every buffer a step allocates, placed at an offset of one arena
// so that no two buffers alive at the same time overlap.
//
// Each node, when it runs, asks the allocator for some buffers in a fixed order (its outputs and
// its scratch); NodeAllocations records them (compile-time tracing runs each node under an
// AllocationRecorder, placement.h). A buffer is live from the node that allocates it to the last
// node reading it or any alias of it (views, in-place outputs, in-place reuse share their base's
// buffer); scratch lives within its node. State tensors, inputs, constants, the values a state
// tensor holds after the step and the returned values are not in the arena: they outlive a step.
// A value computed into its state tensor (compute_into_state, passes.h) is served inside it.
//
// Placement is offline best fit, tried in three orders (decreasing size, decreasing bytes x
// steps, increasing start; the lowest peak is kept): each buffer takes the smallest gap, between
// the buffers already placed whose intervals meet its own, that holds it (else the top of them).
// Every offset and size is a multiple of kAlignment. The plan reports
//   planned peak  the arena's size;
//   naive peak    the sum of every buffer (no reuse at all);
//   lower bound   the most bytes live at one time: no placement can need less.
// and lower bound <= planned peak <= naive peak always holds.
#pragma once
#include <cstdint>
#include <vector>

#include "ember/autodiff/compile/program.h"

namespace ember::autodiff::compile {

// Offsets and sizes in the arena are multiples of this (a cache line, and AVX-512's width; the
// caching allocator's blocks, which the arena is one of, are aligned more strictly still).
constexpr int64_t kAlignment = 64;

// One allocation request a node made when it ran.
struct AllocationRequest {
  int64_t nbytes = 0;
  int32_t output = -1;  // the node's output it became (index into node.outputs); -1: scratch
};
using NodeAllocations = std::vector<std::vector<AllocationRequest>>;  // per node, in order

// What a program's nodes allocate when their kernels allocate just their outputs: one request
// per output of every node that is neither a view nor in place, of the output's bytes.
NodeAllocations output_allocations(const Program& program);
// The requests recorded while tracing (indexed by traced node), for the nodes of `program` after
// passes: each node takes its source node's requests (program.source_node), less those of outputs
// that no longer allocate (views, in-place nodes). A node with no source takes its outputs'.
NodeAllocations carry_allocations(const Program& program, const NodeAllocations& traced);

// The core of the planner, over bare intervals: buffer k of sizes[k] bytes is live during steps
// [starts[k], ends[k]] (inclusive). Returns each buffer's offset.
struct IntervalPlan {
  std::vector<int64_t> offsets;
  int64_t planned_peak = 0;  // max(offset + aligned size)
  int64_t naive_peak = 0;    // sum of aligned sizes
  int64_t lower_bound = 0;   // max over steps of the aligned sizes live then
  int32_t fullest_step = 0;  // the first step at which lower_bound bytes are live
};
IntervalPlan plan_intervals(const std::vector<int64_t>& sizes, const std::vector<int32_t>& starts,
                            const std::vector<int32_t>& ends, int64_t alignment = kAlignment);

struct PlannedBuffer {
  int64_t nbytes = 0;  // the request's bytes (placed with the size rounded up to kAlignment)
  int64_t offset = 0;
  int32_t first = 0;   // the node that allocates it
  int32_t last = 0;    // the last node that reads it (or an alias of it)
  ValueId value = -1;  // the value it holds; -1: scratch
};

// One request of NodeAllocations, as planned: the buffer it is served from, or -1 when it is not
// in the arena: then served inside the tensor bound to a state value (a value computed into its
// state tensor, program.reuse) or normally (what a state tensor holds afterwards, returned
// values).
struct PlannedRequest {
  int64_t nbytes = 0;
  int32_t buffer = -1;    // index into MemoryPlan::buffers
  ValueId in_state = -1;  // the state value whose tensor serves it, or -1
};

// Where a request is served: at `offset` of the arena, inside the tensor bound to state value
// `in_state` (offset -1), or normally (offset -1, in_state -1; placement.h's kServeNormally).
struct PlannedSlot {
  int64_t offset = -1;
  int64_t nbytes = 0;
  ValueId in_state = -1;
};

struct MemoryPlan {
  std::vector<PlannedBuffer> buffers;
  std::vector<std::vector<PlannedRequest>> requests;  // per node, in the order it makes them
  int64_t planned_peak = 0;                           // the arena's bytes
  int64_t naive_peak = 0;
  int64_t lower_bound = 0;
  int32_t fullest_step = 0;  // the first node at which lower_bound bytes are live

  // Each of `node`'s requests in order, as PlacedAllocations takes them once the state tensors
  // are bound.
  std::vector<PlannedSlot> slots(int32_t node) const;
};

// Plans `allocations` (per node of program, see above); adds its figures to explain.
MemoryPlan plan_memory(const Program& program, const NodeAllocations& allocations,
                       Explain& explain);

}  // namespace ember::autodiff::compile

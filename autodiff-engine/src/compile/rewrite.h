// rewrite.h — what every pass shares: building the program a pass returns (Rewriter), and which
// buffer each value lives in (buffers()).
#pragma once
#include <string>
#include <vector>

#include "ember/autodiff/compile/program.h"

namespace ember::autodiff::compile {

// Builds a new program from an old one, node by node in order. Values that no node computes
// (inputs, parameters, constants) are all kept, in their order, so the step's arguments and
// state bind as before; while no node is dropped or added, every value keeps its id.
class Rewriter {
 public:
  explicit Rewriter(const Program& from);

  // Node k of the old program, its inputs read through the map; maps its outputs to the new ones.
  void copy(int32_t k);
  // The same node once more (a recomputation) over the same mapped inputs, with the new outputs;
  // the map is not changed (the caller decides which later reads take them).
  std::vector<ValueId> copy_again(int32_t k);
  // A node the old program does not have: `op` over `inputs` (ids of the NEW graph) with
  // `attrs`, standing where old node `like` stands (its provenance); its memory requests are
  // those old node `source` recorded while tracing (-1: its outputs'). Returns the new outputs.
  std::vector<ValueId> add_new(const OpDef& op, const std::vector<ValueId>& inputs,
                               const Attrs& attrs, int32_t like, int32_t source);
  // Old node k, not copied, is stood in for by new values `now` (made by add_new): reads of its
  // outputs read those, which keep the printer's notes of what they are the gradient of.
  void stand_in(int32_t k, const std::vector<ValueId>& now);
  // Node k replaced by a node of `op` over `inputs` (old ids) that no traced node stands behind
  // (its source_node is -1, so the memory plan gives it its outputs' allocations); k's outputs
  // read as the new node's outputs.
  void replace(int32_t k, const OpDef& op, const std::vector<ValueId>& inputs, Attrs attrs);
  // The same, with the new node's output o standing in for old value stands_for[o] (a fused
  // group's node writes values of several old nodes; those nodes are dropped before it).
  void replace(int32_t k, const OpDef& op, const std::vector<ValueId>& inputs, Attrs attrs,
               const std::vector<ValueId>& stands_for);
  // Drops node k: its outputs read as `replacement` (old ids; -1: must never be read again).
  void drop(int32_t k, const std::vector<ValueId>& replacement);
  // Old value `old_value` (whose node was dropped) reads as a new constant holding `tensor`.
  void constant_for(ValueId old_value, const Tensor& tensor);
  // From now on, reads of old value `old_value` read new value `now`.
  void redirect(ValueId old_value, ValueId now) { map_[size_t(old_value)] = now; }
  ValueId map(ValueId old_value) const { return map_[size_t(old_value)]; }
  Graph& graph() { return *to_.graph; }

  // The new program: state, returned values and reuse read through the map.
  Program finish();

 private:
  void catch_up(ValueId before);  // copies the uncomputed values with ids below `before`
  std::vector<ValueId> add(int32_t k);
  void copy_gradient_marks(ValueId from, ValueId to);
  const Program& from_;
  Program to_;
  std::vector<ValueId> map_;       // old value -> new value (-1: none)
  std::vector<int32_t> node_map_;  // old node -> new node (-1: none)
  ValueId next_uncomputed_ = 0;
};

// "1.50 MiB (1572864 B)": bytes as explain() writes them.
std::string bytes_text(int64_t bytes);

// Which buffer each value lives in: the value that allocated the memory it is in. A view's output
// and an in-place node's outputs live in their input's buffer; a value of program.reuse in the
// buffer of the input it is written over; any other value in its own.
std::vector<ValueId> buffers(const Program& program);

// Whether `node` is one of the copies (`clone`) the trace ends with, whose output the caller gets.
bool is_returned_copy(const Program& program, const Node& node);

// Per buffer (indexed by its value): the last node reading it through any of its values; -1 none.
std::vector<int32_t> last_reads(const Program& program, const std::vector<ValueId>& buffer);

// Whether `buffer` outlives the step: memory the step does not own (inputs, state, constants),
// or what state holds or the caller gets afterwards.
std::vector<bool> outlives_step(const Program& program, const std::vector<ValueId>& buffer);

}  // namespace ember::autodiff::compile

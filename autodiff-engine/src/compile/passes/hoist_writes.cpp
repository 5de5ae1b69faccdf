// hoist_writes.cpp — in-place writes moved up to right after their inputs are ready (passes.h).
//
// A traced step writes each gradient into its .grad tensor (copy_) where the step's code did it:
// after the whole backward pass. Until then every gradient waits in a buffer of its own, so the
// step's peak holds all of them at once. Moved up to just after the last of its inputs is
// computed, the write lets that buffer go at once, as eager mode does. A write moves only past
// nodes that neither read nor write the buffer it writes (so every read sees the same contents)
// and that are not random (the order of draws stays).
#include <algorithm>

#include "../rewrite.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff::compile {

Program hoist_in_place_writes(const Program& program, Explain& explain) {
  const char* pass = "in-place writes moved up";
  const Graph& g = *program.graph;
  const std::vector<ValueId> buffer = buffers(program);
  // order: the nodes in their new order; each write is moved up while the node before it may be
  // passed.
  std::vector<int32_t> order;
  int moved = 0;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    size_t at = order.size();
    if (node.op->in_place && !node.op->random && !node.op->collective && !node.outputs.empty()) {
      std::vector<ValueId> written;
      for (ValueId out : node.outputs) written.push_back(buffer[size_t(out)]);
      auto touches = [&](const Node& other) {
        if (other.op->random) return true;
        for (ValueId v : other.inputs)
          if (std::count(written.begin(), written.end(), buffer[size_t(v)])) return true;
        for (ValueId v : other.outputs)
          if (std::count(written.begin(), written.end(), buffer[size_t(v)])) return true;
        for (ValueId in : node.inputs) {     // it must come after whatever computes its inputs
          for (ValueId v : other.outputs) {  // or writes their buffers
            if (v == in) return true;
            const bool writes = other.op->in_place || program.reuse.count(v) > 0;
            if (writes && buffer[size_t(v)] == buffer[size_t(in)]) return true;
          }
        }
        return false;
      };
      while (at > 0 && !touches(g.node(order[at - 1]))) --at;
    }
    if (at < order.size()) {
      explain.add(pass, g.value_name(node.outputs[0]) + " = " + node.op->name + " moved up " +
                            std::to_string(order.size() - at) + " nodes");
      ++moved;
    }
    order.insert(order.begin() + std::ptrdiff_t(at), k);
  }
  Rewriter r(program);
  for (int32_t k : order) r.copy(k);
  explain.add(pass, std::to_string(moved) + " in-place writes moved up");
  Program out = r.finish();
  explain.after(pass, out);
  return out;
}

}  // namespace ember::autodiff::compile

// mask_before_scatter.cpp — relu's mask applied before max-pool's backward scatter, on the pooled
// values, instead of after it on the full-size activation (passes.h).
//
// In a CNN block `y = relu(...); (pooled, at) = max_pool2d(y)` (at: each max's offset in its
// window) the backward pass computes
//   dy = relu_backward(max_pool2d_offsets_backward(g, at), y)      g, pooled: [N, C, H/2, W/2]
// which keeps the full-size y alive from the forward pass into the backward only to read its
// signs. Max-pool's backward adds g[j] into the position at[j] names (zeros elsewhere), and
// pooled[j] is y at that position itself, so masking g with the pooled values first gives the
// same numbers, bit for bit: where y > 0 every sum is kept as it was, elsewhere it is +0 either
// way:
//   dy = max_pool2d_offsets_backward(relu_backward(g, pooled), at)
// y is then dead after the forward max-pool (a full-size activation fewer in the step's peak)
// and the mask reads a quarter of the elements (a 2x2 pool).
#include <unordered_map>

#include "../rewrite.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff::compile {

namespace {

struct Swap {
  int32_t scatter;  // max_pool2d_offsets_backward(g, at)
  int32_t mask;     // relu_backward(scatter's output, y)
  ValueId pooled;   // max_pool2d(y)'s values
};

// The node computing each value (-1: none).
std::vector<int32_t> producers(const Graph& g) {
  std::vector<int32_t> by(size_t(g.num_values()), -1);
  for (int32_t k = 0; k < g.num_nodes(); ++k)
    for (ValueId out : g.node(k).outputs) by[size_t(out)] = k;
  return by;
}

}  // namespace

Program mask_before_scatter(const Program& program, Explain& explain) {
  const char* pass = "mask before scatter";
  const Graph& g = *program.graph;
  const std::vector<int32_t> producer = producers(g);
  const std::vector<ValueId> buffer = buffers(program);
  const std::vector<bool> outlives = outlives_step(program, buffer);
  std::vector<int32_t> readers(size_t(g.num_values()), 0);
  for (int32_t k = 0; k < g.num_nodes(); ++k)
    for (ValueId in : g.node(k).inputs) ++readers[size_t(in)];

  // Whether a node between `from` and `to` writes `value`'s buffer in place.
  auto overwritten = [&](ValueId value, int32_t from, int32_t to) {
    for (int32_t k = from + 1; k < to; ++k) {
      const Node& node = g.node(k);
      for (ValueId out : node.outputs)
        if ((node.op->in_place || program.reuse.count(out)) &&
            buffer[size_t(out)] == buffer[size_t(value)])
          return true;
    }
    return false;
  };

  std::unordered_map<int32_t, Swap> at_scatter, at_mask;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& mask = g.node(k);
    if (mask.op->name != "relu_backward" || mask.inputs.size() != 2) continue;
    const ValueId scattered = mask.inputs[0], y = mask.inputs[1];
    const int32_t s = producer[size_t(scattered)];
    if (s < 0 || g.node(s).op->name != "max_pool2d_offsets_backward") continue;
    if (readers[size_t(scattered)] != 1 || outlives[size_t(buffer[size_t(scattered)])]) continue;
    const ValueId idx = g.node(s).inputs[1];
    const int32_t pool = producer[size_t(idx)];
    if (pool < 0 || g.node(pool).op->name != "max_pool2d") continue;
    const Node& forward = g.node(pool);
    if (forward.inputs[0] != y || forward.outputs.size() != 2 || forward.outputs[1] != idx)
      continue;
    const ValueId pooled = forward.outputs[0];
    if (overwritten(pooled, pool, s) || overwritten(idx, pool, s)) continue;
    const Swap swap{s, k, pooled};
    at_scatter[s] = swap;
    at_mask[k] = swap;
    explain.add(pass, g.value_name(mask.outputs[0]) +
                          " = relu_backward(max_pool2d_offsets_backward(" +
                          g.value_name(g.node(s).inputs[0]) + ", " + g.value_name(idx) + "), " +
                          g.value_name(y) + ") masks " + g.value_name(g.node(s).inputs[0]) +
                          " with the pooled " + g.value_name(pooled) + " before the scatter: " +
                          g.value_name(y) + " is no longer read by the backward pass");
  }

  Rewriter r(program);
  std::unordered_map<int32_t, ValueId> masked;  // scatter node -> the masked g in the new graph
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    if (auto it = at_scatter.find(k); it != at_scatter.end()) {
      const Node& mask = g.node(it->second.mask);
      const ValueId grad = r.map(g.node(k).inputs[0]), pooled = r.map(it->second.pooled);
      masked[k] = r.add_new(*mask.op, {grad, pooled}, mask.attrs, it->second.mask, -1)[0];
      r.drop(k, {-1});
    } else if (auto m = at_mask.find(k); m != at_mask.end()) {
      const Node& scatter = g.node(m->second.scatter);
      const ValueId idx = r.map(scatter.inputs[1]);
      r.stand_in(k, r.add_new(*scatter.op, {masked.at(m->second.scatter), idx}, scatter.attrs,
                              m->second.scatter, m->second.scatter));
    } else {
      r.copy(k);
    }
  }
  explain.add(pass, std::to_string(at_mask.size()) + " relu masks moved before a max-pool scatter");
  Program out = r.finish();
  explain.after(pass, out);
  return out;
}

}  // namespace ember::autodiff::compile

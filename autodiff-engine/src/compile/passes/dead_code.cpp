// dead_code.cpp — dead-code elimination (passes.h): walking back from the roots, a node is kept
// when something kept reads what it computes.
#include <unordered_set>

#include "../rewrite.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff::compile {

Program dead_code_elimination(const Program& program, Explain& explain) {
  const char* pass = "dead-code elimination";
  const Graph& g = *program.graph;
  const std::vector<ValueId> buffer = buffers(program);
  std::vector<bool> needed(size_t(g.num_values()), false);
  // Buffers read by a kept node later in the step: an in-place write into one is kept.
  std::vector<bool> read_later(size_t(g.num_values()), false);
  auto need = [&](ValueId v) {
    needed[size_t(v)] = true;
    read_later[size_t(buffer[size_t(v)])] = true;
  };
  for (const StateSlot& s : program.state)
    if (s.final_value >= 0) need(s.final_value);
  for (ValueId v : program.returned) need(v);
  for (ValueId v : g.outputs()) need(v);

  std::vector<bool> keep(size_t(g.num_nodes()), false);
  for (int32_t k = g.num_nodes() - 1; k >= 0; --k) {
    const Node& node = g.node(k);
    // A random node advances the generator for every later draw; a collective one must run on
    // every rank alike, or the others wait for it.
    bool live = node.op->random || node.op->collective;
    for (ValueId out : node.outputs) live = live || needed[size_t(out)];
    if (node.op->in_place) {
      for (ValueId out : node.outputs) {
        const ValueId b = buffer[size_t(out)];
        // A write into memory the step does not own, or into a buffer read after it.
        live = live || g.value(b).kind != ValueKind::Computed || read_later[size_t(b)];
      }
    }
    if (!live) continue;
    keep[size_t(k)] = true;
    for (ValueId in : node.inputs) need(in);
  }

  Rewriter r(program);
  int removed = 0;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    if (keep[size_t(k)]) {
      r.copy(k);
      continue;
    }
    const Node& node = g.node(k);
    std::string outs;
    for (ValueId out : node.outputs) outs += (outs.empty() ? "" : ", ") + g.value_name(out);
    explain.add(pass, "removed " + outs + " = " + node.op->name + ": never read by what the " +
                          "step updates or returns");
    r.drop(k, {});
    ++removed;
  }
  explain.add(pass,
              std::to_string(removed) + " of " + std::to_string(g.num_nodes()) + " nodes removed");
  Program out = r.finish();
  explain.after(pass, out);
  return out;
}

}  // namespace ember::autodiff::compile

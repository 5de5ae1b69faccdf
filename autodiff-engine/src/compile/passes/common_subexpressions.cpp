// common_subexpressions.cpp — common-subexpression elimination (passes.h): a node of the same op,
// attributes and inputs as an earlier one reads the earlier one's outputs instead.
//
// A value id names a buffer whose contents an in-place node may change, so "the same inputs" means
// the same values *with the same contents*: each buffer has a write count, bumped by every
// in-place node writing it, and a node matches only when its inputs' counts are those the earlier
// node saw, and the earlier node's outputs have not been written since either. Nodes whose outputs
// are ever written in place are not merged at all: the write would then reach both.
#include <map>
#include <tuple>

#include "../rewrite.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff::compile {

namespace {

// What makes two nodes compute the same: the op, its attributes' text, and each input with the
// write count of its buffer.
using Key = std::tuple<const OpDef*, std::string, std::vector<std::pair<ValueId, int64_t>>>;

struct Seen {
  int32_t node;
  std::vector<int64_t> output_writes;  // the write counts of its outputs' buffers then
};

}  // namespace

Program common_subexpressions(const Program& program, Explain& explain) {
  const char* pass = "common-subexpression elimination";
  const Graph& g = *program.graph;
  const std::vector<ValueId> buffer = buffers(program);
  std::vector<int64_t> writes(size_t(g.num_values()), 0);
  std::vector<bool> ever_written(size_t(g.num_values()), false);
  for (int32_t k = 0; k < g.num_nodes(); ++k)
    if (g.node(k).op->in_place)
      for (ValueId out : g.node(k).outputs) ever_written[size_t(buffer[size_t(out)])] = true;
  auto written = [&](const Node& n) {
    for (ValueId out : n.outputs)
      if (ever_written[size_t(buffer[size_t(out)])]) return true;
    return false;
  };
  std::map<Key, Seen> seen;
  // Each value's representative: itself, or the earlier value it was merged into (so that nodes
  // over merged values match in turn).
  std::vector<ValueId> rep(size_t(g.num_values()));
  for (ValueId v = 0; v < g.num_values(); ++v) rep[size_t(v)] = v;

  Rewriter r(program);
  int merged = 0;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    if (node.op->random || node.op->collective || node.op->in_place || node.outputs.empty() ||
        written(node)) {
      r.copy(k);
      if (node.op->in_place)
        for (ValueId out : node.outputs) ++writes[size_t(buffer[size_t(out)])];
      continue;
    }
    Key key{node.op, node.attrs.str(), {}};
    for (ValueId in : node.inputs)
      std::get<2>(key).emplace_back(rep[size_t(in)], writes[size_t(buffer[size_t(in)])]);
    auto it = seen.find(key);
    if (it != seen.end()) {
      const Node& first = g.node(it->second.node);
      bool unchanged = true;
      for (size_t o = 0; o < first.outputs.size(); ++o)
        unchanged = unchanged &&
                    writes[size_t(buffer[size_t(first.outputs[o])])] == it->second.output_writes[o];
      if (unchanged) {
        r.drop(k, first.outputs);
        for (size_t o = 0; o < node.outputs.size(); ++o)
          rep[size_t(node.outputs[o])] = first.outputs[o];
        std::string outs;
        for (size_t o = 0; o < node.outputs.size(); ++o)
          outs += (o ? ", " : "") + g.value_name(node.outputs[o]) + " -> " +
                  g.value_name(first.outputs[o]);
        explain.add(pass, "merged " + node.op->name + ": " + outs);
        ++merged;
        continue;
      }
    }
    Seen s{k, {}};
    for (ValueId out : node.outputs) s.output_writes.push_back(writes[size_t(buffer[size_t(out)])]);
    seen[key] = s;
    r.copy(k);
  }
  explain.add(pass, std::to_string(merged) + " nodes merged into an earlier equal one");
  Program out = r.finish();
  explain.after(pass, out);
  return out;
}

}  // namespace ember::autodiff::compile

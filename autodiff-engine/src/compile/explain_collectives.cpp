// explain_collectives.cpp — explain()'s "data parallel" section: each bucket's all-reduce, where
// the replay starts it and waits for it, and how much of the step runs in between (the overlap
// of communication with backward).
#include "ember/autodiff/collective.h"
#include "plan.h"
#include "rewrite.h"

namespace ember::autodiff::compile {

bool has_collectives(const Program& program) {
  for (int32_t k = 0; k < program.graph->num_nodes(); ++k)
    if (program.graph->node(k).op->collective) return true;
  return false;
}

void explain_collectives(const Program& program, Explain& explain) {
  const Graph& g = *program.graph;
  const std::string section = "data parallel";
  int64_t buckets = 0;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& start = g.node(k);
    if (start.op->name != "all_reduce_start") continue;
    ++buckets;
    const ValueId flat = start.outputs[0];
    int32_t wait = -1;
    for (int32_t j = k + 1; j < g.num_nodes() && wait < 0; ++j)
      if (g.node(j).op->name == "all_reduce_wait" && g.node(j).inputs[0] == flat) wait = j;
    const auto& parts = start.attrs.ints("parts");
    int64_t with_grad = 0;
    for (int64_t p : parts) with_grad += p != collective::kNone;
    const TensorType& type = g.value(flat).type;
    const std::string after =
        k > 0 ? "after node " + std::to_string(k - 1) + " (" + g.node(k - 1).op->name + ")"
              : "first";
    explain.add(section, "bucket " + std::to_string(start.attrs.i("bucket")) + ": " +
                             std::to_string(parts.size()) + " parameter(s) (" +
                             std::to_string(with_grad) + " with a gradient here), " +
                             bytes_text(type.numel() * int64_t(itemsize(type.dtype))) +
                             "; all_reduce_start at node " + std::to_string(k) + ", " + after +
                             "; all_reduce_wait at node " + std::to_string(wait) + ", " +
                             std::to_string(wait - k - 1) + " nodes overlap the all-reduce");
  }
  if (buckets > 0)
    explain.add(section, std::to_string(buckets) +
                             " buckets all-reduced (average) over the process group, started "
                             "in the same order on every rank");
}

}  // namespace ember::autodiff::compile

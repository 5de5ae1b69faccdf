// return_without_copy.cpp — the returned values handed over as computed, without the copy the
// trace adds (passes.h).
//
// The tracer ends the step with `clone` of each returned value, so that the caller never holds
// a buffer of the arena that the next call overwrites. When the value has memory of its own that
// no arena buffer shares (a node's own output, not a view, not written over an input, not state)
// and nothing writes into it, that memory can simply be allocated outside the arena: the memory
// plan serves what the caller gets afterwards normally, so the copy is dropped and the caller
// gets a fresh tensor every call all the same. On CUDA the copy stays: a CUDA graph's replay
// writes into the fixed addresses it captured and can allocate nothing, so the returned values
// are copied out after it.
#include "../rewrite.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff::compile {

namespace {

// Why the copy of `v` must stay; empty when it may go.
std::string why_copied(const Program& program, ValueId v, const std::vector<ValueId>& buffer,
                       const std::vector<bool>& written) {
  const Graph& g = *program.graph;
  const Value& value = g.value(v);
  if (value.kind != ValueKind::Computed) return "it is an argument, state or a constant";
  if (!value.type.device.is_cpu())
    return "on " + value.type.device.str() +
           " a CUDA graph's replay writes into fixed memory, so returned values are copied out";
  if (buffer[size_t(v)] != v) return "it shares another value's memory (a view, or written over)";
  if (written[size_t(v)]) return "a later node writes into its memory";
  for (const StateSlot& s : program.state)
    if (s.value == v || s.final_value == v) return "it is state the step updates";
  return "";
}

}  // namespace

Program return_without_copy(const Program& program, Explain& explain) {
  const char* pass = "returned values";
  const Graph& g = *program.graph;
  const std::vector<ValueId> buffer = buffers(program);
  std::vector<bool> written(size_t(g.num_values()), false);  // buffers an in-place node writes
  for (int32_t k = 0; k < g.num_nodes(); ++k)
    if (g.node(k).op->in_place)
      for (ValueId out : g.node(k).outputs) written[size_t(buffer[size_t(out)])] = true;

  Rewriter r(program);
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    if (!is_returned_copy(program, node)) {
      r.copy(k);
      continue;
    }
    const ValueId v = node.inputs[0];
    const std::string why = why_copied(program, v, buffer, written);
    if (!why.empty()) {
      explain.add(pass,
                  g.value_name(node.outputs[0]) + " = clone(" + g.value_name(v) + ") kept: " + why);
      r.copy(k);
      continue;
    }
    explain.add(pass, g.value_name(v) + " returned as computed, in memory of its own (the copy " +
                          g.value_name(node.outputs[0]) + " = clone dropped)");
    r.drop(k, {v});
  }
  if (program.returned.empty()) explain.add(pass, "(nothing returned)");
  Program out = r.finish();
  explain.after(pass, out);
  return out;
}

}  // namespace ember::autodiff::compile

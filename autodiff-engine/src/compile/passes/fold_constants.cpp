// fold_constants.cpp — constant folding (passes.h): a node that reads only constants computes the
// same every call, so it runs once, now, and its outputs become constants of the graph.
#include "../rewrite.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff::compile {

namespace {
// Ops whose result depends on their input's type alone (shape, dtype, device), not its values:
// known at compile time whatever the input.
bool depends_on_type_only(const std::string& op) {
  return op == "zeros_like" || op == "ones_like" || op == "full_like";
}
}  // namespace

Program fold_constants(const Program& program, Explain& explain) {
  const char* pass = "constant folding";
  const Graph& g = *program.graph;
  const std::vector<ValueId> buffer = buffers(program);
  // Buffers a result must not be folded into: written in place (a constant would carry one
  // call's writes into the next), or handed out (the caller gets fresh tensors every call).
  std::vector<bool> unfoldable(size_t(g.num_values()), false);
  for (int32_t k = 0; k < g.num_nodes(); ++k)
    if (g.node(k).op->in_place)
      for (ValueId out : g.node(k).outputs) unfoldable[size_t(buffer[size_t(out)])] = true;
  for (const StateSlot& s : program.state)
    if (s.final_value >= 0) unfoldable[size_t(buffer[size_t(s.final_value)])] = true;
  for (ValueId v : program.returned) unfoldable[size_t(buffer[size_t(v)])] = true;
  for (ValueId v : g.outputs()) unfoldable[size_t(buffer[size_t(v)])] = true;

  // The tensors known now: constants, and the outputs of the nodes folded so far.
  std::vector<Tensor> known(size_t(g.num_values()));
  for (ValueId v = 0; v < g.num_values(); ++v)
    if (g.value(v).kind == ValueKind::Constant) known[size_t(v)] = g.value(v).constant;

  // A folded value becomes a constant of the new graph only once a node that stays reads it.
  std::vector<bool> folded_value(size_t(g.num_values()), false);
  Rewriter r(program);
  auto copy = [&](int32_t k) {
    for (ValueId in : g.node(k).inputs)
      if (folded_value[size_t(in)] && r.map(in) < 0) r.constant_for(in, known[size_t(in)]);
    r.copy(k);
  };
  int folded = 0;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    bool foldable =
        !node.op->random && !node.op->collective && !node.op->in_place && !node.outputs.empty();
    int64_t bytes = 0;
    std::vector<Tensor> inputs;
    for (ValueId in : node.inputs) {
      Tensor t = known[size_t(in)];
      if (!t.defined() && depends_on_type_only(node.op->name)) {
        const TensorType& type = g.value(in).type;  // its values are never read
        t = Tensor::empty(type.shape, type.dtype, type.device);
      }
      foldable = foldable && t.defined();
      inputs.push_back(t);
    }
    for (ValueId out : node.outputs) {
      const TensorType& t = g.value(out).type;
      bytes += t.numel() * int64_t(itemsize(t.dtype));
      foldable = foldable && !unfoldable[size_t(buffer[size_t(out)])];
    }
    if (!foldable) {
      copy(k);
      continue;
    }
    if (bytes > kMaxFoldedBytes) {
      explain.add(pass, "kept " + node.op->name + " over constants: its " + bytes_text(bytes) +
                            " would be held for good (more than " + bytes_text(kMaxFoldedBytes) +
                            ")");
      copy(k);
      continue;
    }
    // Copied: a folded constant owns its memory (a view would share the constant it reads).
    std::vector<Tensor> outputs = node.op->run(inputs, node.attrs);
    std::string outs;
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      known[size_t(node.outputs[o])] = outputs[o].clone();
      folded_value[size_t(node.outputs[o])] = true;
      outs += (o ? ", " : "") + g.value_name(node.outputs[o]);
    }
    r.drop(k, {});
    explain.add(pass, "folded " + outs + " = " + node.op->name + ": its inputs are constants");
    ++folded;
  }
  explain.add(pass, std::to_string(folded) + " nodes computed at compile time");
  Program out = r.finish();
  explain.after(pass, out);
  return out;
}

}  // namespace ember::autodiff::compile

// fuse_gemm_epilogue.cpp — a linear followed by relu or gelu becomes one linear_act node, whose
// GEMM applies the activation in its epilogue (passes.h).
//
//   h = linear(x, w, b); y = relu(h)        ->   y = linear_act(x, w, b){relu}
//   h = linear(x, w, b); y = gelu(h)        ->   (y, h) = linear_act(x, w, b){gelu, pre}
//
// On CUDA the activation then runs inside cuBLASLt's GEMM (one pass over the output instead of
// a write, a read and another write); on the CPU linear_act is the library's GEMM followed by the
// activation's own kernel over the output, so the values are those of the two nodes bit for bit.
//
// The new node stands where the linear stood: its reads of x, w and b are unchanged, and the
// activation's read of h moves up to it, so no in-place node between the two may write h's
// buffer. Every other reader of h comes after the linear: it reads the node's second output
// (`pre`, the value h itself). In a training step gelu's backward (gelu_backward(g, h)) is such a
// reader; relu's backward reads relu's output, which the node computes. A relu whose input is
// read elsewhere is not joined: cuBLASLt keeps only a bit mask of relu's input, so the GEMM would
// write h anyway and then run relu's kernel, which gains nothing. A linear whose value is
// returned, kept in state, or outlives the step otherwise stays a linear (that value must exist
// as it is), as does one of an integer dtype (the activations need floats).
#include <algorithm>
#include <map>

#include "../rewrite.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff::compile {

namespace {

const char* kPass = "gemm epilogue";

// linear_act's activation attribute for an activation node, "" when the node is not one.
std::string activation_of(const Node& node) {
  if (node.op->in_place || node.inputs.size() != 1) return "";
  if (node.op->name == "relu") return "relu";
  if (node.op->name == "gelu") return node.attrs.s("approximate") == "tanh" ? "gelu_tanh" : "gelu";
  return "";
}

struct Join {
  int32_t linear;
  int32_t activation;
  bool pre;  // h is read by other nodes too: the node writes it as its second output
};

}  // namespace

Program fuse_gemm_epilogue(const Program& program, Explain& explain) {
  const Graph& g = *program.graph;
  const std::vector<ValueId> buffer = buffers(program);
  const std::vector<bool> outlives = outlives_step(program, buffer);
  std::vector<std::vector<int32_t>> readers(size_t(g.num_values()));
  for (int32_t k = 0; k < g.num_nodes(); ++k)
    for (ValueId in : g.node(k).inputs)
      if (readers[size_t(in)].empty() || readers[size_t(in)].back() != k)
        readers[size_t(in)].push_back(k);

  // Whether a node strictly between `from` and `to` writes `value`'s buffer in place.
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
  auto node_text = [&](int32_t k) {
    const Node& node = g.node(k);
    std::string text = g.value_name(node.outputs[0]) + " = " + node.op->name + "(";
    for (size_t i = 0; i < node.inputs.size(); ++i)
      text += (i ? ", " : "") + g.value_name(node.inputs[i]);
    return text + ")";
  };

  std::map<int32_t, Join> at_linear;
  std::map<int32_t, int32_t> at_activation;  // activation node -> its linear
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& linear = g.node(k);
    if (linear.op->name != "linear" || linear.outputs.size() != 1) continue;
    const ValueId h = linear.outputs[0];
    const std::vector<int32_t>& read_by = readers[size_t(h)];
    const auto act = std::find_if(read_by.begin(), read_by.end(),
                                  [&](int32_t r) { return !activation_of(g.node(r)).empty(); });
    if (act == read_by.end()) continue;  // no activation follows: nothing to say
    const int32_t a = *act;
    const std::string activation = activation_of(g.node(a));
    const std::string pair = node_text(k) + " then " + node_text(a);
    auto refuse = [&](const std::string& why) { explain.add(kPass, pair + " not joined: " + why); };
    std::vector<int32_t> others;
    for (int32_t r : read_by)
      if (r != a) others.push_back(r);
    const bool returned = std::any_of(others.begin(), others.end(), [&](int32_t r) {
      return is_returned_copy(program, g.node(r));
    });
    if (!is_floating(g.value(h).type.dtype)) {
      refuse("an integer linear (the activation needs a floating dtype)");
    } else if (returned || outlives[size_t(buffer[size_t(h)])]) {
      refuse(g.value_name(h) + " is returned or kept in state, so it must exist as it is");
    } else if (overwritten(h, k, a)) {
      refuse(g.value_name(h) + " is written in place before " + activation + " reads it");
    } else if (activation == "relu" && !others.empty()) {
      refuse(g.value_name(h) + " is also read by " + node_text(others[0]) +
             ": relu's epilogue keeps only a bit mask of its input, so the GEMM would write " +
             g.value_name(h) + " and run relu apart anyway");
    } else {
      at_linear[k] = Join{k, a, !others.empty()};
      at_activation[a] = k;
      std::string line = pair + " joined: linear_act(" + activation + ")";
      if (!others.empty())
        line += ", " + g.value_name(h) + " kept as its second output for " +
                std::to_string(others.size()) + " later reader" + (others.size() > 1 ? "s" : "") +
                " (" + g.node(others[0]).op->name + (others.size() > 1 ? ", ..." : "") + ")";
      explain.add(kPass, line);
    }
  }

  Rewriter r(program);
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    if (auto it = at_linear.find(k); it != at_linear.end()) {
      const Join& join = it->second;
      const Node& act = g.node(join.activation);
      const ValueId h = g.node(k).outputs[0];
      std::vector<ValueId> stands_for = {act.outputs[0]};
      if (join.pre) stands_for.push_back(h);
      r.replace(k, op_def("linear_act"), g.node(k).inputs,
                {{"activation", activation_of(act)}, {"pre", int64_t(join.pre)}}, stands_for);
    } else if (at_activation.count(k)) {
      // Computed by the linear_act above; its output already reads as that node's.
      r.drop(k, g.node(k).outputs);
    } else {
      r.copy(k);
    }
  }
  explain.add(kPass, std::to_string(at_linear.size()) + " linear + activation pairs joined");
  Program out = r.finish();
  explain.after(kPass, out);
  return out;
}

}  // namespace ember::autodiff::compile

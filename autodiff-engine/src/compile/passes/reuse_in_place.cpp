// reuse_in_place.cpp — in-place reuse (passes.h): an elementwise node whose input is read for the
// last time there writes its output over that input, so the step needs one buffer, not two.
//
// Which kernels may: those whose core-runtime `_out` form takes an `out` identical to an input
// (ember/ops/elementwise.h: "may be identical to an input (add_out(x, x, y) adds in place)"). They
// read element i of every input before writing element i of the output, in every backend. And
// batch norm's backward over its grad_out: its kernels first reduce grad_out per channel, then
// write grad_input[i] from grad_out[i] and x[i] alone (core-runtime's batch_norm_backward_input,
// CPU and CUDA). No other op is allowed: a matmul, a convolution or a reduction reads many
// elements per output.
#include <set>
#include <string>

#include "../rewrite.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff::compile {

namespace {

// The elementwise ops with an `_out` form over the same elements (elementwise.h's list); every
// input may be written over.
const std::set<std::string>& elementwise_out_ops() {
  static const std::set<std::string> ops = {
      // unary
      "neg", "abs", "sign", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
      "reciprocal", "floor", "ceil", "round", "trunc", "isnan", "isinf", "isfinite", "nan_to_num",
      "relu", "leaky_relu", "elu", "gelu", "silu", "softplus",
      // the activations' backward: (dy, x or y)
      "relu_backward", "leaky_relu_backward", "elu_backward", "gelu_backward", "silu_backward",
      "softplus_backward", "sigmoid_backward", "tanh_backward",
      // binary, and with a scalar
      "add", "sub", "mul", "div", "pow", "maximum", "minimum", "floor_divide", "remainder", "eq",
      "ne", "lt", "le", "gt", "ge", "add_scalar", "mul_scalar", "rsub_scalar", "div_scalar",
      "rdiv_scalar", "pow_scalar", "rpow_scalar", "maximum_scalar", "minimum_scalar", "eq_scalar",
      "ne_scalar", "lt_scalar", "le_scalar", "gt_scalar", "ge_scalar"};
  return ops;
}

}  // namespace

bool may_write_over_input(const std::string& op, int32_t input) {
  if (op == "batch_norm_backward") return input == 0;
  return input >= 0 && elementwise_out_ops().count(op) > 0;
}

Program reuse_in_place(const Program& program, Explain& explain) {
  const char* pass = "in-place reuse";
  const Graph& g = *program.graph;
  std::vector<ValueId> buffer = buffers(program);
  std::vector<int32_t> last = last_reads(program, buffer);
  const std::vector<bool> outlives = outlives_step(program, buffer);

  Program out = clone(program);
  int64_t saved = 0;
  int count = 0;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    if (node.outputs.empty() || node.op->view || node.op->in_place) continue;
    const ValueId y = node.outputs[0];
    // The output must be a buffer of the arena of its own (not returned, not state).
    if (buffer[size_t(y)] != y || outlives[size_t(y)]) continue;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueId x = node.inputs[i];
      const ValueId b = buffer[size_t(x)];
      // x must be its buffer's whole, contiguous self (not a view of it; itself written over an
      // earlier input is fine), computed in the step, read for the last time here, of exactly
      // the output's type.
      const bool whole = b == x || out.reuse.count(x) > 0;
      // No other input may read the buffer another way (add(x, transpose(x)) reads element j
      // of x for element i of the output, after it may have been written).
      bool alone = true;
      for (ValueId other : node.inputs) alone = alone && (other == x || buffer[size_t(other)] != b);
      if (!may_write_over_input(node.op->name, int32_t(i)) || !whole || !alone ||
          outlives[size_t(b)] || g.value(b).kind != ValueKind::Computed || last[size_t(b)] != k ||
          g.value(x).type != g.value(y).type)
        continue;
      out.reuse[y] = x;
      for (ValueId& v : buffer)
        if (v == y) v = b;
      last[size_t(b)] = last[size_t(y)];
      const TensorType& t = g.value(y).type;
      saved += t.numel() * int64_t(itemsize(t.dtype));
      ++count;
      explain.add(pass, g.value_name(y) + " = " + node.op->name + "(...) is written over " +
                            g.value_name(x) + ", read for the last time there");
      break;
    }
  }
  explain.add(pass, std::to_string(count) + " outputs written over an input (" + bytes_text(saved) +
                        " of buffers fewer)");
  explain.after(pass, out);
  return out;
}

}  // namespace ember::autodiff::compile

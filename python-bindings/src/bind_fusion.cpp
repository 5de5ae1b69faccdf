// bind_fusion.cpp — a private face of fused kernels for tests and benchmarks:
// ember._core._fused_elementwise runs a fusion group given as a list of nodes, _fused_source
// shows its generated source. (Compiled steps fuse by themselves; these make one group by hand.)
//
// Nodes are tuples, each naming earlier nodes by their position in the list:
//   ("input", i)                      inputs[i], with its shape, strides and dtype
//   ("constant", value, dtype)        a number
//   (op, a) / (op, a, b)              "neg", "exp", "gelu", "add", "lt", "gelu_backward", ...
//   ("where", cond, a, b), ("clamp", x, lo | None, hi | None), ("cast", x, dtype)
#include <ember/autodiff/compile/codegen.h>
#include <ember/jit.h>

#include <cmath>
#include <limits>
#include <map>

#include "bindings.h"

namespace ember::python {
namespace {

namespace cc = autodiff::compile;

cc::FusedOp op_named(const std::string& name) {
  static const std::map<std::string, cc::FusedOp> ops = [] {
    std::map<std::string, cc::FusedOp> m;
    for (int op = 0; op <= int(cc::FusedOp::Cast); ++op)
      m[cc::fused_op_name(cc::FusedOp(op))] = cc::FusedOp(op);
    return m;
  }();
  auto found = ops.find(name);
  if (found == ops.end()) throw ValueError("_fused_elementwise", "unknown op '" + name + "'");
  return found->second;
}

cc::FusedReduction reduction_named(const std::string& name) {
  for (cc::FusedReduction r : {cc::FusedReduction::None, cc::FusedReduction::Sum,
                               cc::FusedReduction::Mean, cc::FusedReduction::Max})
    if (name == cc::fused_reduction_name(r) || (name == "max" && r == cc::FusedReduction::Max))
      return r;
  throw ValueError("_fused_elementwise",
                   "unknown reduction '" + name + "'; expected none, sum, mean or max");
}

double bound(py::handle value, double if_none) {
  return value.is_none() ? if_none : scalar_value(value);
}

// The group the nodes describe over these inputs; its shape is the inputs' broadcast shape.
cc::FusionGroup build(const py::list& nodes, const std::vector<Tensor>& inputs,
                      const std::string& reduction, int dims, bool keepdim) {
  Shape shape;
  for (const Tensor& t : inputs) shape = broadcast_shapes(shape, t.shape(), "_fused_elementwise");
  cc::FusionGroup g(shape);
  constexpr double inf = std::numeric_limits<double>::infinity();
  for (py::handle item : nodes) {
    const py::tuple node = py::cast<py::tuple>(item);
    if (node.empty()) throw ValueError("_fused_elementwise", "an empty node");
    const cc::FusedOp op = op_named(py::cast<std::string>(node[0]));
    auto arg = [&](size_t i) {
      if (i >= node.size())
        throw ValueError("_fused_elementwise",
                         std::string(cc::fused_op_name(op)) + " needs more operands");
      return py::cast<int>(node[i]);
    };
    switch (op) {
      case cc::FusedOp::Input: {
        const int i = arg(1);
        if (i < 0 || i >= int(inputs.size()))
          throw IndexError("_fused_elementwise",
                           "input " + std::to_string(i) + " of " + std::to_string(inputs.size()));
        const Tensor& t = inputs[size_t(i)];
        g.input(t.shape(), t.strides(), t.dtype());
        break;
      }
      case cc::FusedOp::Constant:
        g.constant(scalar_value(node[1]), dtype_from_object(node[2]));
        break;
      case cc::FusedOp::Cast:
        g.cast(arg(1), dtype_from_object(node[2]));
        break;
      case cc::FusedOp::Where:
        g.where(arg(1), arg(2), arg(3));
        break;
      case cc::FusedOp::Clamp:
        g.clamp(arg(1), bound(node[2], -inf), bound(node[3], inf));
        break;
      default:
        if (cc::fused_op_arity(op) == 1) {
          g.unary(op, arg(1));
        } else {
          g.binary(op, arg(1), arg(2));
        }
    }
  }
  g.reduce(reduction_named(reduction), dims, keepdim);
  return g;
}

// The inputs of the group in the order of their "input" nodes.
std::vector<Tensor> group_inputs(const py::list& nodes, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> ordered;
  for (py::handle item : nodes) {
    const py::tuple node = py::cast<py::tuple>(item);
    if (py::cast<std::string>(node[0]) == "input")
      ordered.push_back(inputs[size_t(py::cast<int>(node[1]))]);
  }
  return ordered;
}

std::vector<Tensor> tensors(const std::vector<Variable>& inputs) {
  std::vector<Tensor> out;
  for (const Variable& v : inputs) out.push_back(v.data());
  return out;
}

}  // namespace

void bind_fusion(py::module_& m) {
  m.def(
      "_fused_elementwise",
      [](const py::list& nodes, const std::vector<Variable>& inputs, const std::string& reduction,
         int dims, bool keepdim, bool fuse) -> py::tuple {
        const std::vector<Tensor> in = tensors(inputs);
        const cc::FusionGroup g = build(nodes, in, reduction, dims, keepdim);
        const std::vector<Tensor> ordered = group_inputs(nodes, in);
        cc::FusedRun run;
        if (fuse) {
          run = cc::run_fused(g, ordered);
        } else {
          run.out = cc::run_unfused(g, ordered);
        }
        return py::make_tuple(Variable(run.out), run.fused, run.reason);
      },
      py::arg("nodes"), py::arg("inputs"), py::arg("reduction") = "none", py::arg("dims") = 0,
      py::arg("keepdim") = false, py::arg("fused") = true,
      "Runs a fusion group given as nodes over inputs: (out, fused, reason). fused=False runs it "
      "op by op with the library's kernels instead.");
  m.def(
      "_fused_source",
      [](const py::list& nodes, const std::vector<Variable>& inputs, const std::string& reduction,
         int dims, bool keepdim, const std::string& target) {
        const cc::FusionGroup g = build(nodes, tensors(inputs), reduction, dims, keepdim);
        if (target != "cpu" && target != "cuda")
          throw ValueError("_fused_source", "target '" + target + "'; expected cpu or cuda");
        return cc::render(g, target == "cuda" ? cc::Target::Cuda : cc::Target::Cpu).source;
      },
      py::arg("nodes"), py::arg("inputs"), py::arg("reduction") = "none", py::arg("dims") = 0,
      py::arg("keepdim") = false, py::arg("target") = "cpu",
      "The source of the kernel _fused_elementwise runs for these nodes and inputs.");
  m.def("_fused_forget_loaded", &jit::forget_loaded_kernels,
        "Forgets the fused kernels this process has loaded, so that the next call reads the "
        "disk cache (or compiles) again: for measuring compile times.");
}

}  // namespace ember::python

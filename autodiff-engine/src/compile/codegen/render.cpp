// render.cpp — a fusion group as the source of one kernel (see codegen.h). The element (the
// group's formulas at one position) is written once; the CPU wraps it in a loop over a range of
// items that walks the innermost dim without index arithmetic, CUDA in a grid-stride loop over
// items. A group ending in a reduction gets the loops of render_reduction.cpp instead.
#include <algorithm>
#include <limits>
#include <sstream>

#include "c_types.h"
#include "ember/autodiff/compile/codegen.h"
#include "ember/error.h"
#include "ember/jit.h"
#include "formulas.h"
#include "layout.h"
#include "prelude.h"
#include "render_parts.h"

namespace ember::autodiff::compile {

namespace codegen {

std::string num(int64_t n) { return std::to_string(n) + "LL"; }
std::string base(size_t input) { return "b" + std::to_string(input); }
// One output reads as before: "out", then "out1", "out2", ...
std::string out_name(size_t k) { return k == 0 ? "out" : "out" + std::to_string(k); }
std::string result(const FusionGroup& group) {
  return "v" + std::to_string(group.nodes().size() - 1);
}

std::string element(const FusionGroup& group, Target target, const std::string& indent,
                    const std::function<std::string(size_t)>& offset) {
  std::string text;
  for (size_t n = 0; n < group.nodes().size(); ++n) {
    const FusedNode& node = group.nodes()[n];
    const std::string load = node.op == FusedOp::Input ? "in" + std::to_string(node.input) + "[" +
                                                             offset(size_t(node.input)) + "]"
                                                       : "";
    text += indent + node_statement(group, int(n), load, target) + "\n";
  }
  return text;
}

// The outermost dim takes what is left of `index` (< the product of dims' sizes), without a
// division, so a contiguous group's offsets are the index itself; below 2^32 elements the
// divisions are 32-bit, which a GPU does in a few instructions where 64-bit ones take dozens.
std::string split_index(const std::vector<LoopDim>& dims, size_t inputs, const std::string& index,
                        const std::string& indent, const std::string& prefix,
                        const std::string& start) {
  int64_t count = 1;
  for (const LoopDim& d : dims) count *= d.size;
  const bool narrow = count <= int64_t(std::numeric_limits<uint32_t>::max());
  const std::string type = narrow ? "e_u32" : "e_i64";
  const std::string rest = prefix + "rest";
  std::string text = indent + type + " " + rest + " = (" + type + ")(" + index + ");\n";
  for (size_t i = 0; i < inputs; ++i)
    text += indent + "e_i64 " + prefix + std::to_string(i) + " = " +
            (start.empty() ? "0" : start + std::to_string(i)) + ";\n";
  for (size_t d = dims.size(); d-- > 0;) {
    const std::string size = std::to_string(dims[d].size) + (narrow ? "u" : "LL");
    text += indent + "{ const " + type + " c = " +
            (d == 0 ? rest + ";" : rest + " % " + size + "; " + rest + " /= " + size + ";");
    for (size_t i = 0; i < inputs; ++i)
      if (dims[d].steps[1 + i] != 0)
        text +=
            " " + prefix + std::to_string(i) + " += (e_i64)c * " + num(dims[d].steps[1 + i]) + ";";
    text += " }\n";
  }
  return text;
}

}  // namespace codegen

namespace {

using codegen::base;
using codegen::element;
using codegen::LoopDim;
using codegen::num;
using codegen::out_name;
using codegen::split_index;

// The kernel's pointers: data[0..K) the K outputs, data[K + i] input i.
std::string pointers(const FusionGroup& group, const std::string& data) {
  // The outputs are fresh tensors: no input or other output aliases one, which lets the loops
  // vectorise unchecked.
  const size_t outputs = group.outputs().size();
  std::string text;
  for (size_t k = 0; k < outputs; ++k) {
    const std::string type = codegen::storage_type(group.output_dtype(k));
    text += "  " + type + "* __restrict__ " + out_name(k) + " = (" + type + "*)" + data + "[" +
            std::to_string(k) + "];\n";
  }
  for (size_t i = 0; i < group.inputs().size(); ++i) {
    const char* type = codegen::storage_type(group.inputs()[i].dtype);
    text += "  const " + std::string(type) + "* in" + std::to_string(i) + " = (const " + type +
            "*)" + data + "[" + std::to_string(outputs + i) + "];\n";
  }
  return text;
}

// The stores of every output at `position` (an index expression into the outputs), given the
// name of output k's pointer.
template <class Name>
std::string stores(const FusionGroup& group, const std::string& indent, Name name,
                   const std::string& position) {
  std::string text;
  const std::vector<int> outs = group.outputs();
  for (size_t k = 0; k < outs.size(); ++k)
    text += indent + name(k) + "[" + position +
            "] = " + codegen::store(group.output_dtype(k), "v" + std::to_string(outs[k])) + ";\n";
  return text;
}

std::string cpu_body(const FusionGroup& group, const codegen::Layout& layout) {
  const size_t inputs = group.inputs().size();
  if (group.reduction() != FusedReduction::None) return codegen::cpu_reduction_body(group, layout);
  // Elementwise: a run of the innermost dim at a time, the index arithmetic once per run.
  const LoopDim& inner = layout.kept.back();
  const std::vector<LoopDim> outer(layout.kept.begin(), layout.kept.end() - 1);
  auto at = [&](size_t i) { return base(i) + " + j * " + num(inner.steps[1 + i]); };
  auto run_start = [](size_t k) { return "o" + std::string(k ? std::to_string(k) : ""); };
  std::string starts;
  for (size_t k = 0; k < group.outputs().size(); ++k)
    starts += "    " + std::string(codegen::storage_type(group.output_dtype(k))) + "* " +
              run_start(k) + " = " + out_name(k) + " + (i - first);\n";
  return "  for (e_i64 i = begin; i < end;) {\n"
         "    const e_i64 first = i % " +
         num(inner.size) + ";\n" + split_index(outer, inputs, "i / " + num(inner.size), "    ") +
         "    const e_i64 n = e_min64(end - i, " + num(inner.size) + " - first);\n" + starts +
         "    E_INDEPENDENT\n"
         "    for (e_i64 j = first; j < first + n; ++j) {\n" +
         element(group, Target::Cpu, "      ", at) + stores(group, "      ", run_start, "j") +
         "    }\n    i += n;\n  }\n";
}

std::string cuda_body(const FusionGroup& group, const codegen::Layout& layout) {
  if (group.reduction() != FusedReduction::None) return codegen::cuda_reduction_body(group, layout);
  const size_t inputs = group.inputs().size();
  return "  for (e_i64 item = (e_i64)blockIdx.x * blockDim.x + threadIdx.x; item < items;\n"
         "       item += (e_i64)blockDim.x * gridDim.x) {\n" +
         split_index(layout.kept, inputs, "item", "    ") +
         element(group, Target::Cuda, "    ", [](size_t i) { return base(i); }) +
         stores(group, "    ", out_name, "item") + "  }\n";
}

}  // namespace

RenderedKernel render(const FusionGroup& group, Target target) {
  if (group.nodes().empty()) throw ValueError("fusion group: render", "the group has no nodes");
  const size_t pointers_used = group.inputs().size() + group.outputs().size();
  if (pointers_used > size_t(jit::CudaPointers::kMax))
    throw NotSupportedError("fusion group: render", std::to_string(group.inputs().size()) +
                                                        " inputs and " +
                                                        std::to_string(group.outputs().size()) +
                                                        " outputs; a fused kernel takes at most " +
                                                        std::to_string(jit::CudaPointers::kMax) +
                                                        " pointers in all, so split the group");
  const codegen::Layout layout = codegen::plan_layout(group);
  RenderedKernel kernel;
  kernel.entry = "ember_fused";
  kernel.items = target == Target::Cuda && group.reduction() != FusedReduction::None
                     ? codegen::cuda_reduction_threads(layout)
                     : layout.items;
  kernel.cost_per_item = codegen::element_cost(group) * std::max<int64_t>(layout.reduced_count, 1);
  std::ostringstream source;
  source << "// Generated by Ember from a fusion group:\n";
  std::istringstream lines(group.str());
  for (std::string line; std::getline(lines, line);) source << "//   " << line << "\n";
  source << codegen::prelude(target) << "\n"
         << codegen::kernel_qualifier(target) << " void " << kernel.entry;
  if (target == Target::Cuda) {
    source << "(e_pointers p, e_i64 items) {\n"
           << pointers(group, "p.data") << cuda_body(group, layout);
  } else {
    source << "(char* const* data, e_i64 begin, e_i64 end) {\n"
           << pointers(group, "data") << cpu_body(group, layout);
  }
  source << "}\n";
  kernel.source = source.str();
  return kernel;
}

}  // namespace ember::autodiff::compile

// fused_kernels.h — the fused nodes of a compiled program (private to src/compile): the op
// "fused", whose node runs one generated kernel, and the table of kernels such nodes refer to.
//
// A fused node's attribute "kernel" is its kernel's number in a table this process keeps (an
// OpDef's run function sees only tensors and attributes, and a lookup by number keeps the
// replay's hot loop free of names). Kernels are built when the plan is made (the fusion pass,
// passes.h), never while a step replays; an entry lives as long as the process, like the shared
// object or cubin it holds.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/autodiff/compile/codegen.h"
#include "ember/autodiff/compile/fusion_group.h"
#include "ember/autodiff/op.h"
#include "ember/jit.h"

namespace ember::autodiff::compile {

struct FusedKernel {
  FusionGroup group;
  RenderedKernel rendered;
  Target target = Target::Cpu;
  std::shared_ptr<const jit::CpuKernel> cpu;  // Target::Cpu
  jit::CudaKernel cuda;                       // Target::Cuda: the loaded cubin's kernel
  std::vector<std::string> ops;               // the graph's ops it computes, in order
};

// Adds a built kernel to the table; returns its number.
int64_t add_fused_kernel(std::shared_ptr<const FusedKernel> kernel);
// The kernel of number `id`; ValueError naming "fused" for a number the table does not hold.
const FusedKernel& fused_kernel(int64_t id);

// The op of a fused node: inputs are the group's inputs (FusionGroup::inputs, in order), the
// outputs the values the group writes (FusionGroup::outputs, in order); attribute "kernel" is the
// kernel's number. An input laid out otherwise than the kernel was built for (contiguous: its
// strides are built into the source) is copied first, outside the memory plan's slots; the
// outputs are the node's allocations, in order.
const OpDef& fused_op();

}  // namespace ember::autodiff::compile

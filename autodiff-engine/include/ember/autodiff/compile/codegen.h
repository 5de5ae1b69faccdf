// codegen.h — fused kernels from fusion groups: the source a group renders to, and running it.
//
// One renderer (src/compile/codegen/) turns a FusionGroup into C-like source: the per-element
// formulas, the index arithmetic over the inputs' shapes and strides, broadcasting, dtype
// conversions and the trailing reduction. Only the prelude (types, bit casts) and the loop around
// the element differ between targets, so a later OpenCL target adds those two and nothing else.
// The source holds nothing but op names and numbers taken from the group (shapes, strides,
// dtypes, constants): no text from user data.
#pragma once
#include <string>
#include <vector>

#include "ember/autodiff/compile/fusion_group.h"
#include "ember/tensor.h"

namespace ember::autodiff::compile {

enum class Target { Cpu, Cuda };

struct RenderedKernel {
  std::string source;
  std::string entry;          // the kernel's name in source: "ember_fused"
  int64_t items = 0;          // work items: output elements (CUDA reductions: threads, 256 a row)
  int64_t cost_per_item = 1;  // the work of one item, in cheap elementwise ops (cpu/parallel.h)
};

// Throws NotSupportedError for a group with more inputs and outputs than a kernel takes (32).
RenderedKernel render(const FusionGroup& group, Target target);

// What run_fused did.
struct FusedRun {
  Tensor out;                // the first output (FusionGroup::outputs())
  std::vector<Tensor> outs;  // every output, in order (outs[0] is out)
  bool fused = false;        // false: the group ran as unfused library ops
  std::string reason;        // why it did not fuse (empty when fused)
  bool from_cache = false;
};

// Runs the group on `inputs` (one per FusionGroup::input, of those shapes, strides and dtypes,
// on one device) as one generated kernel; when the kernel cannot be built (EMBER_FUSION=0, no
// compiler, a failed compile), runs it unfused with the library's kernels, warns once on stderr
// with the reason, and says so in the result. Each output is a new contiguous tensor.
FusedRun run_fused(const FusionGroup& group, const std::vector<Tensor>& inputs);

// The group evaluated op by op with the library's eager kernels (the fallback, and the reference
// the fused kernel is tested against).
// run_unfused gives the first output, run_unfused_outputs every one.
Tensor run_unfused(const FusionGroup& group, const std::vector<Tensor>& inputs);
std::vector<Tensor> run_unfused_outputs(const FusionGroup& group,
                                        const std::vector<Tensor>& inputs);

}  // namespace ember::autodiff::compile

// layout.cpp — merging the loops of a fused kernel (see layout.h).
#include "layout.h"

namespace ember::autodiff::compile::codegen {
namespace {

// dims (outermost first) with the size-1 ones dropped and mergeable neighbours merged; one dim of
// size 1 when nothing is left, so that a kernel always has a loop to run.
std::vector<LoopDim> merge(const std::vector<LoopDim>& dims, size_t operands) {
  std::vector<LoopDim> merged;
  for (const LoopDim& d : dims) {
    if (d.size == 1) continue;
    bool fits = !merged.empty();
    for (size_t k = 0; fits && k < operands; ++k)
      fits = merged.back().steps[k] == d.steps[k] * d.size;
    if (fits) {
      merged.back().size *= d.size;
      merged.back().steps = d.steps;
    } else {
      merged.push_back(d);
    }
  }
  if (merged.empty()) merged.push_back({1, std::vector<int64_t>(operands, 0)});
  return merged;
}

}  // namespace

Layout plan_layout(const FusionGroup& group) {
  const Shape& shape = group.shape();
  const size_t rank = shape.size(), operands = group.inputs().size() + 1;
  const size_t first_reduced = rank - size_t(group.reduced_dims());
  std::vector<LoopDim> dims(rank, LoopDim{0, std::vector<int64_t>(operands, 0)});
  int64_t out_step = 1;  // the output is contiguous over the kept dims
  for (size_t d = rank; d-- > 0;) {
    dims[d].size = shape[d];
    if (d < first_reduced) {
      dims[d].steps[0] = out_step;
      out_step *= shape[d];
    }
  }
  for (size_t i = 0; i < group.inputs().size(); ++i) {
    const FusedInput& in = group.inputs()[i];
    const size_t lead = rank - in.shape.size();  // inputs align at the right
    for (size_t d = 0; d < in.shape.size(); ++d)
      dims[lead + d].steps[1 + i] = in.shape[d] == 1 ? 0 : in.strides[d];
  }
  Layout layout;
  layout.kept = merge({dims.begin(), dims.begin() + long(first_reduced)}, operands);
  if (group.reduction() != FusedReduction::None)
    layout.reduced = merge({dims.begin() + long(first_reduced), dims.end()}, operands);
  layout.items = 1;
  for (const LoopDim& d : layout.kept) layout.items *= d.size;
  for (const LoopDim& d : layout.reduced) layout.reduced_count *= d.size;
  return layout;
}

}  // namespace ember::autodiff::compile::codegen

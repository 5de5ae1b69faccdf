// layout.h — the loops of a fused kernel: the group's shape with the dims that can be walked as
// one merged and the dims of size 1 dropped, each with the step of the output and of every input
// along it (internal header).
#pragma once
#include <cstdint>
#include <vector>

#include "ember/autodiff/compile/fusion_group.h"

namespace ember::autodiff::compile::codegen {

struct LoopDim {
  int64_t size;
  std::vector<int64_t> steps;  // [0]: the output's (0 along reduced dims), [1 + i]: input i's
};

struct Layout {
  std::vector<LoopDim> kept;     // the output's dims, outermost first (at least one)
  std::vector<LoopDim> reduced;  // the reduced dims, outermost first (at least one if reducing)
  int64_t items = 0;             // output elements
  int64_t reduced_count = 1;     // elements reduced into each
};

// Two neighbouring dims merge when every operand steps over the inner one exactly as far as one
// step of the outer one (contiguous, or broadcast along both): a contiguous group becomes one
// loop of numel elements, whatever its rank. Kept and reduced dims never merge with each other.
Layout plan_layout(const FusionGroup& group);

}  // namespace ember::autodiff::compile::codegen

// join_gradients.h — gradients the driver (grad.cpp) adds up in fewer steps than one add per
// use, where an op family knows how its gradients fit together.
#pragma once
#include <vector>

#include "ember/autodiff/graph.h"

namespace ember::autodiff {

// The gradients of a split's pieces, in order along `dim`, when `uses` (the gradients of one
// value) are all slice_backward of one input shape along one dim with step 1 and the slices tile
// that dim (split's and chunk's pieces): their sum is then the cat of these. Empty otherwise, and
// the driver adds them. (rules/movement.cpp)
std::vector<Val> tiling_slice_gradients(const std::vector<Val>& uses, int64_t& dim);

}  // namespace ember::autodiff

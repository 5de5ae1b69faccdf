// join_gradients.h — gradients the driver (grad.cpp) adds up in fewer steps than one add per
// use, where an op family knows how its gradients fit together.
#pragma once
#include <vector>

#include "ember/autodiff/graph.h"

namespace ember::autodiff {

// The sum of `uses` (the gradients of one value) as one cat when they are all slice_backward of
// one input shape along one dim with step 1 and the slices tile that dim (split's and chunk's
// pieces); undefined otherwise, and the driver adds them. (rules/movement.cpp)
Val join_slice_gradients(const std::vector<Val>& uses);

}  // namespace ember::autodiff

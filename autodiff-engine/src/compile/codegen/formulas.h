// formulas.h — one node of a fusion group as a statement of generated source (internal header).
#pragma once
#include <string>

#include "ember/autodiff/compile/codegen.h"

namespace ember::autodiff::compile::codegen {

// The statement that defines node `index` as `v<index>`, of its dtype's compute type. `load` is
// what an Input node reads (an element expression of its input). The formulas are those of the
// library's kernels on the target, operation for operation, so that the same arithmetic gives
// the same bits: core-runtime/src/ops/elementwise_math.h, and on the CPU, in float, the
// vectorisable exp, log, tanh, sigmoid and erf that cpu/elementwise.cpp puts in their place.
std::string node_statement(const FusionGroup& group, int index, const std::string& load,
                           Target target);

// The cost of one element of the group's ops, in cheap elementwise ops (as the library's
// kernels count it): 8 for an op that evaluates exp, erf, tanh, log, sin or cos.
int64_t element_cost(const FusionGroup& group);

}  // namespace ember::autodiff::compile::codegen

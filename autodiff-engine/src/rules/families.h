// families.h — each op family's table of definitions, declared from families.def, and the
// shorthands they are written with. The registry (registry.cpp) asks each table once.
// families.def is generated into the build tree from the files that define a table,
// `std::vector<OpDef> <family>_ops() {` in src/rules/<family>.cpp (or src/eager/): a new family
// is its own file (cmake/EmberOpLists.cmake).
#pragma once
#include <vector>

#include "ember/autodiff/op.h"

namespace ember::autodiff {

// The shorthands the families' definitions are written with.
using Types = std::vector<TensorType>;  // an op's operand or result types (infer)
using Tensors = std::vector<Tensor>;    // its operands or results when it runs (run)
using Grads = std::vector<Val>;         // the gradients a rule returns (grad)

#define EMBER_OP_FAMILY(family) std::vector<OpDef> family##_ops();
#include "families.def"
#undef EMBER_OP_FAMILY

}  // namespace ember::autodiff

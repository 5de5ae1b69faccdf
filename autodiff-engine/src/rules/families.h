// families.h — each op family's table of definitions, declared from families.def. The registry
// (registry.cpp) asks each once; adding a family is one line in families.def.
#pragma once
#include <vector>

#include "ember/autodiff/op.h"

namespace ember::autodiff {

#define EMBER_OP_FAMILY(family) std::vector<OpDef> family##_ops();
#include "families.def"
#undef EMBER_OP_FAMILY

}  // namespace ember::autodiff

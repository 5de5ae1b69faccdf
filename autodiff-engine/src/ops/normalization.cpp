// normalization.cpp — the normalization family.
#include "families.h"

namespace ember::autodiff {

std::vector<OpDef> normalization_ops() { return {}; }

}  // namespace ember::autodiff

// conv_pool.cpp — the conv_pool family.
#include "families.h"

namespace ember::autodiff {

std::vector<OpDef> conv_pool_ops() { return {}; }

}  // namespace ember::autodiff

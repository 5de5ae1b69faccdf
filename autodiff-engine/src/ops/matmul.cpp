// matmul.cpp — the matmul family.
#include "families.h"

namespace ember::autodiff {

std::vector<OpDef> matmul_ops() { return {}; }

}  // namespace ember::autodiff

// register_kernels.cu — the CUDA backend's kernel list: each family of kernels.def fills its slots
// of the backend's KernelTable (kernels.h), which tests/test_backend_contract.cpp checks complete.
#include "kernels.h"

namespace ember::cuda {
// register_<family>, defined in cuda/<family>.cu.
#define EMBER_KERNEL_FAMILY(family, cpu_copies) void register_##family(KernelTable& table);
#include "kernels.def"
#undef EMBER_KERNEL_FAMILY
}  // namespace ember::cuda

namespace ember {
void register_cuda_kernels(KernelTable& table) {
#define EMBER_KERNEL_FAMILY(family, cpu_copies) cuda::register_##family(table);
#include "kernels.def"
#undef EMBER_KERNEL_FAMILY
}
}  // namespace ember

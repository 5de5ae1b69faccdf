// register_kernels.cu — the CUDA backend's kernel list: each family fills its slots of the
// backend's KernelTable (kernels.h), which tests/test_backend_contract.cpp checks complete.
#include "kernels.h"

namespace ember::cuda {
void register_copy_fill(KernelTable& table);
void register_elementwise(KernelTable& table);
void register_creation(KernelTable& table);
void register_reduction(KernelTable& table);
void register_softmax_loss(KernelTable& table);
void register_matmul(KernelTable& table);
void register_conv_pool(KernelTable& table);
void register_normalization(KernelTable& table);
void register_indexing(KernelTable& table);
void register_optimizer(KernelTable& table);
void register_masking(KernelTable& table);
void register_resample(KernelTable& table);
void register_scan_sort(KernelTable& table);
void register_index_check(KernelTable& table);
void register_attention(KernelTable& table);
}  // namespace ember::cuda

namespace ember {
void register_cuda_kernels(KernelTable& table) {
  cuda::register_copy_fill(table);
  cuda::register_elementwise(table);
  cuda::register_creation(table);
  cuda::register_reduction(table);
  cuda::register_softmax_loss(table);
  cuda::register_matmul(table);
  cuda::register_conv_pool(table);
  cuda::register_normalization(table);
  cuda::register_indexing(table);
  cuda::register_optimizer(table);
  cuda::register_masking(table);
  cuda::register_resample(table);
  cuda::register_scan_sort(table);
  cuda::register_index_check(table);
  cuda::register_attention(table);
}
}  // namespace ember

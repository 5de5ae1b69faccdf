// register_kernels.cpp — the CPU backend's kernel list: each family fills its slots of the
// backend's KernelTable (kernels.h), which tests/test_backend_contract.cpp checks complete.
#include "kernels.h"

namespace ember::cpu {
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
}  // namespace ember::cpu

namespace ember {
void register_cpu_kernels(KernelTable& table) {
  cpu::register_copy_fill(table);
  cpu::register_elementwise(table);
  cpu::register_creation(table);
  cpu::register_reduction(table);
  cpu::register_softmax_loss(table);
  cpu::register_matmul(table);
  cpu::register_conv_pool(table);
  cpu::register_normalization(table);
  cpu::register_indexing(table);
  cpu::register_optimizer(table);
  cpu::register_masking(table);
  cpu::register_resample(table);
  cpu::register_scan_sort(table);
  cpu::register_index_check(table);
}
}  // namespace ember

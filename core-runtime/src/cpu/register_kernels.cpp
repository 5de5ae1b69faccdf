// register_kernels.cpp — the CPU backend's kernel list: each family fills its kernel tables.
namespace ember::cpu {
void register_copy_fill();
void register_elementwise();
void register_creation();
void register_reduction();
void register_softmax_loss();
void register_matmul();
void register_conv_pool();
void register_normalization();
void register_indexing();
void register_optimizer();
// Deferred device errors: the index range check.
void register_index_check();
}  // namespace ember::cpu

namespace ember {
void register_cpu_kernels() {
  cpu::register_copy_fill();
  cpu::register_elementwise();
  cpu::register_creation();
  cpu::register_reduction();
  cpu::register_softmax_loss();
  cpu::register_matmul();
  cpu::register_conv_pool();
  cpu::register_normalization();
  cpu::register_indexing();
  cpu::register_optimizer();
  cpu::register_index_check();
}
}  // namespace ember

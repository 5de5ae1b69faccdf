// register_kernels.cu — the CUDA backend's kernel list: each family fills its kernel tables.
namespace ember::cuda {
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
}  // namespace ember::cuda

namespace ember {
void register_cuda_kernels() {
  cuda::register_copy_fill();
  cuda::register_elementwise();
  cuda::register_creation();
  cuda::register_reduction();
  cuda::register_softmax_loss();
  cuda::register_matmul();
  cuda::register_conv_pool();
  cuda::register_normalization();
  cuda::register_indexing();
  cuda::register_optimizer();
  cuda::register_index_check();
}
}  // namespace ember

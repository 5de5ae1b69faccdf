// conv_pool.cu — CUDA kernels of the conv_pool family (being written).
namespace ember::cuda {
void register_conv_pool() {}
}  // namespace ember::cuda

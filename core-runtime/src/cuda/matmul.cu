// matmul.cu — CUDA kernels of the matmul family (being written).
namespace ember::cuda {
void register_matmul() {}
}  // namespace ember::cuda

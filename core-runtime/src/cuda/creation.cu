// creation.cu — CUDA kernels of the creation family (being written).
namespace ember::cuda {
void register_creation() {}
}  // namespace ember::cuda

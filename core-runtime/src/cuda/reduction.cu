// reduction.cu — CUDA kernels of the reduction family (being written).
namespace ember::cuda {
void register_reduction() {}
}  // namespace ember::cuda
